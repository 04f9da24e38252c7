// SPDX-License-Identifier: Apache-2.0
// Many byte strings looked for at once, in one pass (Aho-Corasick, 1975): the placeholder tripwire
// (table/placeholder.h) over a request, and the response scrubber's search (proxy/wire/
// response_scrubber.h) only for a set of values too large for its constant-time automaton
// (proxy/wire/scrub_automaton.h): this one's time depends on the patterns' bytes. Pure.
//
// Time: one step per byte of text, amortized constant (a failure link followed at most as often as
// a byte was consumed), whatever the patterns are and whatever the text is, so a box cannot make a
// response cost more than its length. Memory: a node per distinct pattern prefix (about 20 bytes
// each), a dense table for the start state and a 16 KiB table of shifts (skip_from_start); patterns
// are not kept. The nodes and the shifts are overwritten when the matcher goes: they spell the
// patterns (the shifts, which pairs of bytes they hold), and the patterns are secrets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace boxproxy {

class MultiMatcher {
 public:
  using State = std::uint32_t;
  static constexpr State kStart = 0;
  static constexpr std::uint32_t kNoMatch = 0xffffffffu;

  // The patterns, each an index into `patterns`; an empty one is never matched. A pattern given
  // twice matches as its first index.
  explicit MultiMatcher(const std::vector<std::string_view>& patterns);
  MultiMatcher() : MultiMatcher(std::vector<std::string_view>{}) {}
  ~MultiMatcher();
  MultiMatcher(const MultiMatcher& other) = default;
  MultiMatcher& operator=(const MultiMatcher& other) = default;
  MultiMatcher(MultiMatcher&& other) noexcept = default;
  MultiMatcher& operator=(MultiMatcher&& other) noexcept = default;

  // The state after `state` reads `byte`.
  [[nodiscard]] State step(State state, unsigned char byte) const noexcept;
  // The longest pattern that ends with the byte that led to `state` (every shorter one ending
  // there is a suffix of it), or kNoMatch.
  [[nodiscard]] std::uint32_t match(State state) const noexcept { return nodes_[state].match; }
  // Whether some pattern starts with `byte`: from kStart, any other byte leads back to kStart.
  [[nodiscard]] bool starts_with(unsigned char byte) const noexcept { return start_[byte] != 0; }
  // In kStart before text[at]: the first position at or after `at` at which a pattern may begin
  // (size when none), every byte before it passed over without a step, the state still kStart
  // there. Wu and Manber's shift (1994): a window as long as the shortest pattern (at most
  // kMaxWindow) is judged by its last two bytes; a pattern that begins within the window's first
  // `shift` bytes would hold that pair at an offset no pattern holds it at, so those are passed
  // over at once. Each probe passes at least one byte: never slower than a step a byte, and about
  // the window's length a probe over text unlike the patterns (a body of JSON: ~30 bytes a probe).
  [[nodiscard]] std::size_t skip_from_start(const unsigned char* text, std::size_t size,
                                            std::size_t at) const noexcept;
  // Runs `text` from `state` (left where the text ends), calling on_match(index, pattern) for each
  // byte at which a pattern ends (the longest: match()), skipping from the start state.
  template <class OnMatch>
  void for_each_match(State& state, std::string_view text, OnMatch&& on_match) const {
    const auto* data = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t size = text.size();
    State at_state = state;
    for (std::size_t i = 0; i < size; ++i) {
      if (at_state == kStart) {
        i = skip_from_start(data, size, i);
        if (i == size) break;
      }
      at_state = step(at_state, data[i]);
      if (nodes_[at_state].match != kNoMatch) on_match(i, nodes_[at_state].match);
    }
    state = at_state;
  }
  [[nodiscard]] std::size_t pattern_size(std::uint32_t pattern) const noexcept { return sizes_[pattern]; }
  [[nodiscard]] std::size_t pattern_count() const noexcept { return sizes_.size(); }
  [[nodiscard]] std::size_t longest_pattern() const noexcept { return longest_; }
  // The longest window skip_from_start judges at once (a shift fits in a byte).
  static constexpr std::size_t kMaxWindow = 128;
  [[nodiscard]] std::size_t node_count() const noexcept { return nodes_.size(); }

 private:
  struct Node {
    std::uint32_t first_child = 0;   // 0: none (the start state is never a child)
    std::uint32_t next_sibling = 0;  // 0: none
    std::uint32_t fail = 0;          // the longest proper suffix of this prefix that is a prefix
    std::uint32_t match = kNoMatch;
    unsigned char byte = 0;          // the byte that leads here from the parent
  };
  [[nodiscard]] std::uint32_t child(std::uint32_t node, unsigned char byte) const noexcept;
  std::uint32_t add_child(std::uint32_t node, unsigned char byte);
  void link();
  void build_shifts(const std::vector<std::string_view>& patterns);
  // The pair (a, b) as an index of shifts_: 7 bits of each, so a pair with a byte above 0x7f shares
  // an entry with an ASCII one; the entry holds the smaller shift of the two, which is safe.
  static constexpr std::size_t pair_index(unsigned char a, unsigned char b) noexcept {
    return (static_cast<std::size_t>(a & 0x7f) << 7) | (b & 0x7f);
  }

  std::vector<Node> nodes_;
  std::array<std::uint32_t, 256> start_{};  // the start state's step, dense: the common case
  std::vector<std::uint32_t> sizes_;
  std::size_t longest_ = 0;
  std::size_t window_ = 0;               // 0: no shifts (a pattern shorter than two bytes)
  std::vector<std::uint8_t> shifts_;     // by pair_index; empty when window_ is 0
};

}  // namespace boxproxy
