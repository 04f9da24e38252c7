// SPDX-License-Identifier: Apache-2.0
// proxy/wire/scrub_automaton: the response scrubber's search on its own. Its loop steps two runs
// of visible bytes at once and, at a match in either, steps the rest one at a time: every match
// must still be reported, once, in the order of the text, however the text is cut into pieces.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "proxy/wire/scrub_automaton.h"

using namespace boxproxy;

namespace {

using Match = std::pair<std::size_t, std::uint32_t>;  // the index a pattern ends at, the pattern

// At each index, in order, the longest pattern ending there (the first given of equal ones).
std::vector<Match> plain_search(std::string_view text, const std::vector<std::string_view>& patterns) {
  std::vector<Match> out;
  for (std::size_t end = 1; end <= text.size(); ++end) {
    std::size_t best = 0;
    std::uint32_t which = 0;
    for (std::uint32_t p = 0; p < patterns.size(); ++p) {
      const std::size_t n = patterns[p].size();
      if (n > best && n <= end && text.substr(end - n, n) == patterns[p]) {
        best = n;
        which = p;
      }
    }
    if (best > 0) out.emplace_back(end - 1, which);
  }
  return out;
}

}  // namespace

TEST_CASE("scrub automaton: matches in runs stepped two at a time are all reported, in order") {
  // Runs mostly as long as the shortest pattern or longer (so most are stepped, in pairs of
  // unequal lengths), of a small alphabet (matches, overlaps and near misses common), cut by
  // spaces and line ends, fed whole and in random pieces with the cursor carried.
  const std::vector<std::string_view> patterns{"abcab", "cabca", "bbbbbbb", "abcabcab", "cab"};
  const ScrubAutomaton automaton(patterns);
  REQUIRE(automaton.shortest_pattern() == 3);
  std::mt19937 random(23);
  std::size_t total = 0;
  for (int round = 0; round < 500; ++round) {
    std::string text;
    for (int run = static_cast<int>(random() % 12); run > 0; --run) {
      for (std::size_t i = random() % 16; i > 0; --i) text.push_back("abc"[random() % 3]);
      text.push_back(" \n"[random() % 2]);
    }
    const std::vector<Match> expected = plain_search(text, patterns);
    total += expected.size();
    ScrubAutomaton::Cursor cursor;
    ScrubAutomaton::Work work;
    std::vector<Match> got;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t n = round % 3 == 0 ? text.size() : 1 + random() % 24;
      automaton.for_each_match(cursor, std::string_view(text).substr(at, n), work, [&](std::size_t i, std::uint32_t p) {
        got.emplace_back(at + i, p);
      });
      at += n;
    }
    CAPTURE(text);
    CHECK(got == expected);
  }
  CHECK(total > 400);  // the texts do hit (584 matches)
}
