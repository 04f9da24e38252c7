// SPDX-License-Identifier: Apache-2.0
// The response scrubber's search (proxy/wire/response_scrubber.h, SPEC §19a) done so that its work
// does not depend on the secrets' bytes: what it does for a text depends on the text and on public
// facts only (the patterns' lengths, the fixed byte class below), never on which bytes the values
// hold. Why: the box chooses the text (an origin that echoes) and can time the responses. A search
// that skips windows whose byte pair no spelling holds (Wu and Manber) tells, over a 1 MiB body of
// one pair repeated, whether the pair is in a key; one that walks Aho-Corasick failure links does
// more work where the text begins a spelling, so a body of a known prefix plus a guessed character,
// repeated, tells whether the guess is right, and extends the prefix a character at a time.
//
// How:
//   1. A skip by a FIXED class: every pattern is visible ASCII (0x21 to 0x7e: check_secret_value
//      allows no other byte in a value, and every spelling's encoding writes only such bytes), so a
//      window as long as the shortest pattern that holds any other byte (a space, a line end, a
//      control byte, a byte above 0x7e) cannot hold a match that begins before that byte: it is
//      passed over. Whether a window is passed over depends on the text and the shortest length.
//   2. Over the rest, a deterministic automaton (Aho-Corasick's, every failure link resolved when
//      it is built) with a full table: a byte is one of kClasses classes (each visible ASCII byte
//      its own, every other byte class 0, which always leads back to the start), and each byte is
//      one table lookup, whatever state it leaves the automaton in: no failure-link loop at run
//      time. Stepping stops at the run's first class-0 byte (the start again) and the skip resumes.
//      The number of steps and of bytes passed over is thus a function of the text and of the
//      shortest pattern's length alone (ResponseScrubber::work counts both for the tests).
// What still differs: a match (the box sent a whole spelling: it knew the value) calls on_match,
// which costs more; and which rows of the table a text touches, so a cache line's timing is not
// hidden (the rows a text of one repeated unit touches are a handful either way).
//
// Memory: a row of kClasses 32-bit entries (380 bytes) per distinct pattern prefix, plus 4 bytes
// of match per state. For 3 secrets of 40 bytes and all their spellings (about 360 to 720 bytes
// of spellings each), about 0.5 to 0.7 MB (measured: 1,694 states, 644 KB, for the bench's
// AWS-style key, a GitHub token and a value full of escapes). At most kMaxStates states (kMaxTableBytes of table):
// whether the patterns fit is judged from their lengths alone (fits()), and the scrubber keeps the
// older search (table/multi_match.h) for a set that does not (the manual says so). The table
// spells the patterns (its rows are their prefixes), and the patterns are secrets: it is
// overwritten when the automaton goes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace boxproxy {
namespace scrub_detail {

// A byte's class: each visible ASCII byte its own (1 to 94), every other byte 0. Fixed: it does
// not depend on the patterns, so neither does which bytes the skip passes over.
constexpr std::array<std::uint8_t, 256> byte_classes() noexcept {
  std::array<std::uint8_t, 256> out{};
  for (unsigned byte = 0x21; byte <= 0x7e; ++byte) out[byte] = static_cast<std::uint8_t>(byte - 0x20);
  return out;
}
inline constexpr std::array<std::uint8_t, 256> kByteClass = byte_classes();

}  // namespace scrub_detail

class ScrubAutomaton {
 public:
  // Where a search stands between chunks: the state (a row's offset in the table) and whether a
  // run of visible bytes is being stepped (else the state is the start, and the skip judges next).
  struct Cursor {
    std::uint32_t state = 0;
    bool stepping = false;
  };
  // What a search did (tests compare it between two sets of values of the same lengths).
  struct Work {
    std::uint64_t steps = 0;  // table lookups
    std::uint64_t skips = 0;  // bytes passed over by the fixed-class skip
    bool operator==(const Work&) const = default;
  };
  static constexpr std::uint32_t kNoMatch = 0xffffffffu;
  static constexpr std::size_t kClasses = 95;  // 0: every byte no pattern holds; 1 to 94: 0x21 to 0x7e
  // The table's budget: 32 MiB, 88,301 states: spellings of 88,300 bytes together. A value
  // like an AWS secret key spells 12 bytes a byte (raw, percent-encoded 4 ways, JSON-escaped,
  // hex 2 ways, base64 6 ways), one full of quotes 18, the most any can about 52 (every escape of
  // its longest): so about 7,000 bytes of such values, of the 64 x 4,096 a session may hold
  // (table/secret_value.h: kMaxSecrets, kMaxSecretValueBytes). Beyond it the scrubber keeps the
  // older search (response_scrubber.h), and the manual says its time then depends on the values.
  static constexpr std::size_t kMaxTableBytes = std::size_t{32} << 20;
  static constexpr std::size_t kMaxStates = kMaxTableBytes / (kClasses * sizeof(std::uint32_t));
  // Whether patterns of these total lengths fit: a state per pattern byte at most, plus the start.
  [[nodiscard]] static bool fits(std::size_t total_pattern_bytes) noexcept {
    return total_pattern_bytes < kMaxStates;
  }

  // The patterns (indexes into `patterns`), which must fit(); an empty one, or one with a byte of
  // class 0, is never matched. A pattern given twice matches as its first index.
  explicit ScrubAutomaton(const std::vector<std::string_view>& patterns);
  ~ScrubAutomaton();
  ScrubAutomaton(const ScrubAutomaton&) = delete;
  ScrubAutomaton& operator=(const ScrubAutomaton&) = delete;
  ScrubAutomaton(ScrubAutomaton&&) noexcept = default;
  ScrubAutomaton& operator=(ScrubAutomaton&&) noexcept = default;

  // Runs `text` from `cursor` (left where the text ends), calling on_match(index, pattern) for each
  // byte at which a pattern ends (the longest one ending there: every shorter one is its suffix).
  template <class OnMatch>
  void for_each_match(Cursor& cursor, std::string_view text, Work& work, OnMatch&& on_match) const {
    const auto* data = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t size = text.size();
    const std::uint32_t* const table = table_.data();  // a local: on_match cannot move it
    const std::uint8_t* const classes = kClassOf.data();
    std::size_t i = 0;
    while (i < size) {
      if (!cursor.stepping) {
        const std::size_t to = skip(data, size, i);
        work.skips += to - i;
        i = to;
        if (i == size) break;
        cursor.stepping = true;
      }
      const std::size_t from = i;
      std::uint32_t state = cursor.state;
      while (i < size) {
        const std::uint8_t cls = classes[data[i]];
        const std::uint32_t entry = table[state + cls];
        state = entry & kStateMask;
        if ((entry & kMatchBit) != 0) on_match(i, match_[state / kClasses]);
        ++i;
        if (cls == 0) {  // the start again: the skip judges what follows
          cursor.stepping = false;
          break;
        }
      }
      work.steps += i - from;
      cursor.state = state;
    }
  }
  [[nodiscard]] std::size_t pattern_size(std::uint32_t pattern) const noexcept { return sizes_[pattern]; }
  [[nodiscard]] std::size_t state_count() const noexcept { return match_.size(); }
  [[nodiscard]] std::size_t shortest_pattern() const noexcept { return window_; }

 private:
  // From the start before data[at], a run not being stepped: the first position at or after `at`
  // at which a match may begin (size when none is judged possible before the end), by the fixed
  // class alone: the window [at, at + window_) is read back from its end to its last class-0 byte,
  // and everything up to that byte is passed over. A window that reaches past the text's end is
  // not judged (stepped: the next chunk may complete it). Linear: a window read to its start
  // without a class-0 byte is stepped next, so a byte is read at most twice.
  [[nodiscard]] std::size_t skip(const unsigned char* data, std::size_t size, std::size_t at) const noexcept {
    while (size - at >= window_) {
      std::size_t end = at + window_;
      while (end > at && kClassOf[data[end - 1]] != 0) --end;
      if (end == at) return at;  // a window of visible bytes: stepped
      at = end;                  // past the class-0 byte
    }
    return at;
  }
  static constexpr const std::array<std::uint8_t, 256>& kClassOf = scrub_detail::kByteClass;
  static constexpr std::uint32_t kMatchBit = 0x80000000u;
  static constexpr std::uint32_t kStateMask = 0x7fffffffu;

  std::vector<std::uint32_t> table_;  // by state offset (state x kClasses) + class: the next state's offset
  std::vector<std::uint32_t> match_;  // by state: the longest pattern ending there, or kNoMatch
  std::vector<std::uint32_t> sizes_;
  std::size_t window_ = 0;            // the shortest pattern (0: none)
};

}  // namespace boxproxy
