// SPDX-License-Identifier: Apache-2.0
// The response scrubber's search, its work independent of the secrets (proxy/wire/scrub_automaton.h).
#include "proxy/wire/scrub_automaton.h"

#include <algorithm>
#include <cstring>

#include <string.h>  // explicit_bzero

namespace boxproxy {
namespace {

// Overwrites a vector's whole buffer: the table and the matches spell the patterns.
void wipe(std::vector<std::uint32_t>& v) noexcept {
  if (v.capacity() > 0) ::explicit_bzero(v.data(), v.capacity() * sizeof(std::uint32_t));
  v.clear();
}

}  // namespace

ScrubAutomaton::ScrubAutomaton(const std::vector<std::string_view>& patterns) {
  std::size_t total = 0;
  for (const std::string_view pattern : patterns) total += pattern.size();
  // The trie first, in the table itself (0: no child yet; the start is never a child), rows
  // reserved for the most states the patterns can make, so no growth leaves a copy behind.
  table_.reserve((total + 1) * kClasses);
  match_.reserve(total + 1);
  table_.assign(kClasses, 0);
  match_.push_back(kNoMatch);
  for (std::uint32_t index = 0; index < patterns.size(); ++index) {
    const std::string_view pattern = patterns[index];
    sizes_.push_back(static_cast<std::uint32_t>(pattern.size()));
    const bool visible = std::none_of(pattern.begin(), pattern.end(),
                                      [](char c) { return kClassOf[static_cast<unsigned char>(c)] == 0; });
    if (pattern.empty() || !visible) continue;  // never matched (every spelling is visible)
    window_ = window_ == 0 ? pattern.size() : std::min(window_, pattern.size());
    std::uint32_t state = 0;
    for (const char c : pattern) {
      std::uint32_t& next = table_[state + kClassOf[static_cast<unsigned char>(c)]];
      if (next == 0) {
        next = static_cast<std::uint32_t>(table_.size());
        table_.resize(table_.size() + kClasses, 0);
        match_.push_back(kNoMatch);
      }
      state = next;
    }
    if (match_[state / kClasses] == kNoMatch) match_[state / kClasses] = index;
  }
  // Breadth first: each state's failure (the longest proper suffix that is a prefix) and its row
  // completed from its failure's, which is shallower and so complete already. A state with no
  // pattern of its own ends the longest one its failure ends. Class 0 stays 0: the start.
  std::vector<std::uint32_t> fail(match_.size(), 0);
  std::vector<std::uint32_t> queue;
  queue.reserve(match_.size());
  for (std::size_t cls = 1; cls < kClasses; ++cls) {
    if (table_[cls] != 0) queue.push_back(table_[cls]);
  }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::uint32_t state = queue[head];
    const std::uint32_t failure = fail[state / kClasses];
    if (match_[state / kClasses] == kNoMatch) match_[state / kClasses] = match_[failure / kClasses];
    for (std::size_t cls = 1; cls < kClasses; ++cls) {
      std::uint32_t& next = table_[state + cls];
      if (next != 0) {
        fail[next / kClasses] = table_[failure + cls];
        queue.push_back(next);
      } else {
        next = table_[failure + cls];
      }
    }
  }
  wipe(fail);
  wipe(queue);
  number_accepting_last();
}

// Renumbers the states so that those that end a pattern come last (each group in its order, so
// the start stays 0): whether a step matched is then one compare of the state it gives, off the
// chain of loads (a flag bit in the entry would have to be masked off on it). In place: the rows
// and matches are permuted by swapping along the permutation's cycles, so the table is never
// copied (no second 32 MiB at the cap, and no copy of the patterns' rows to overwrite).
void ScrubAutomaton::number_accepting_last() {
  const std::size_t states = match_.size();
  std::vector<std::uint32_t> number(states);  // by old state: the new one
  std::uint32_t count = 0;
  for (std::size_t s = 0; s < states; ++s) {
    if (match_[s] == kNoMatch) number[s] = count++;
  }
  first_accepting_ = count * static_cast<std::uint32_t>(kClasses);
  for (std::size_t s = 0; s < states; ++s) {
    if (match_[s] != kNoMatch) number[s] = count++;
  }
  for (std::uint32_t& entry : table_) entry = number[entry / kClasses] * static_cast<std::uint32_t>(kClasses);
  for (std::size_t s = 0; s < states; ++s) {
    while (number[s] != s) {  // the row at s belongs at number[s]: swapped there, and s judged again
      const std::size_t to = number[s];
      std::swap_ranges(table_.begin() + static_cast<std::ptrdiff_t>(s * kClasses),
                       table_.begin() + static_cast<std::ptrdiff_t>((s + 1) * kClasses),
                       table_.begin() + static_cast<std::ptrdiff_t>(to * kClasses));
      std::swap(match_[s], match_[to]);
      std::swap(number[s], number[to]);
    }
  }
  wipe(number);
}

ScrubAutomaton::~ScrubAutomaton() {
  wipe(table_);
  wipe(match_);
}

}  // namespace boxproxy
