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
//   3. Made fast without changing which bytes are stepped or passed over (a step is a load whose
//      address needs the last step's result, so one run waits on the loads' latency): four runs
//      the skip keeps are stepped at once, their chains of loads overlapping; a step is that one
//      load and nothing else on its chain (the class's column is added off it, and the states
//      that end a pattern are numbered last, so a match is a compare of the state, not a flag to
//      mask off); the skip and the runs' ends test eight or sixteen bytes at once, exactly
//      (class0_bits), and most windows the skip judges take one branch, not one a byte.
//      Whether runs are stepped together (a piece's only run is stepped alone), and how many
//      bytes they step together (the shortest of the four's length), are the text's facts again.
// What still differs: a match (the box sent a whole spelling: it knew the value) calls on_match,
// which costs more (the four runs stop, and the rest of each is stepped one at a time, in order);
// and which rows of the table a text touches, so a cache line's timing is not hidden (the rows a
// text of one repeated unit touches are a handful either way).
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

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// Eight bytes at once, for the skip and the runs' ends: bit 7 of each byte of the result set where
// that byte of `word` is of class 0 (outside 0x21 to 0x7e), exactly, byte by byte (no sum carries
// out of its byte: the low 7 bits plus 1 or 0x5f stay below 0x100).
constexpr std::uint64_t class0_bits(std::uint64_t word) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101u;
  const std::uint64_t low = word & (kOnes * 0x7f);
  const std::uint64_t above = word | (low + kOnes);  // bit 7: the byte is 0x7f or more
  const std::uint64_t below = ~(low + kOnes * 0x5f);  // bit 7: its low 7 bits are below 0x21
  return (above | below) & (kOnes * 0x80);
}
// The eight bytes at `p` as a word, the first in the lowest bits whatever the machine's order.
inline std::uint64_t load8(const unsigned char* p) noexcept {
  std::uint64_t word;
  std::memcpy(&word, p, sizeof word);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  return word;
}

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
    std::uint64_t steps = 0;  // bytes stepped, a table lookup each
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
  // byte at which a pattern ends (the longest one ending there: every shorter one is its suffix), in
  // the order of the text. Up to kLanes runs of visible bytes are stepped at once (see the top).
  template <class OnMatch>
  void for_each_match(Cursor& cursor, std::string_view text, Work& work, OnMatch&& on_match) const {
    const auto* data = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t size = text.size();
    std::size_t i = 0;
    while (i < size) {
      // The next runs the skip keeps, the first the one a chunk ended in if it did (its state
      // carried), each after the last's class-0 byte (so from the start). A lane with no run of
      // its own steps the first's again, its result unused: the loop below has no lane count.
      Lanes from{};
      Lanes to{};
      std::size_t runs = 0;
      for (bool carried = cursor.stepping; runs < kLanes && i < size; carried = false) {
        const std::size_t start = carried ? i : skip(data, size, i);
        work.skips += start - i;
        i = start;
        if (start == size) break;
        i = run_end(data, size, verified(size, start, carried));
        from[runs] = start;
        to[runs] = i;
        work.steps += i - start;
        ++runs;
      }
      if (runs == 0) break;
      Lanes states{};
      states[0] = cursor.state;
      std::size_t count = SIZE_MAX;
      for (std::size_t lane = 0; lane < kLanes; ++lane) {
        if (lane >= runs) {
          from[lane] = from[0];
          to[lane] = to[0];
          states[lane] = states[0];
        }
        count = std::min(count, to[lane] - from[lane]);
      }
      // One run alone is stepped alone (three copies of its chain would only slow it).
      const std::size_t stepped = runs > 1 ? step_lanes(states, data, from, count) : 0;
      for (std::size_t lane = 0; lane < runs; ++lane) {
        if (stepped > 0 && states[lane] >= first_accepting_) {  // the step that stopped the lanes
          on_match(from[lane] + stepped - 1, match_[states[lane] / kClasses]);
        }
        states[lane] = step_run(states[lane], data, from[lane] + stepped, to[lane], on_match);
      }
      // Where the text stands: in a run a chunk end cut (stepped on), or at the start (skipped on).
      // Judged by the last byte's class, never by the state (the state depends on the values).
      cursor.stepping = kClassOf[data[i - 1]] != 0;
      cursor.state = static_cast<std::uint32_t>(states[runs - 1]);
    }
  }
  [[nodiscard]] std::size_t pattern_size(std::uint32_t pattern) const noexcept { return sizes_[pattern]; }
  [[nodiscard]] std::size_t state_count() const noexcept { return match_.size(); }
  [[nodiscard]] std::size_t shortest_pattern() const noexcept { return window_; }

 private:
  // How many runs are stepped at once: enough chains of loads to keep the loads' latency hidden.
  static constexpr std::size_t kLanes = 4;
  using Lanes = std::array<std::size_t, kLanes>;
  void number_accepting_last();
  // One step: the next state's offset. The class's column is found off the dependent chain (the
  // byte is known ahead), so the chain from one state to the next is one load and nothing else:
  // the empty asm keeps the compiler from adding the state and the class first (an add on the
  // chain, a cycle of every step's five). States are carried as size_t: no zero extension either.
  [[nodiscard]] static std::size_t next(const std::uint32_t* table, std::size_t state, unsigned char byte) noexcept {
    const std::uint32_t* column = table + kClassOf[byte];
#if defined(__GNUC__)
    asm("" : "+r"(column));
#endif
    return column[state];
  }
  // Steps kLanes runs at once, `count` bytes each from `from` (the processor overlaps the chains
  // of loads), until a step leaves a lane in an accepting state: how many it stepped (`count`, or
  // the steps up to and with that one, whose matches the caller reports, in order).
  [[nodiscard]] std::size_t step_lanes(Lanes& states, const unsigned char* data, const Lanes& from,
                                       std::size_t count) const noexcept {
    // Written out for four lanes, one pointer and three distances, so that every value stays in
    // a register (arrays stayed in memory; more registers spilled the states, a store and a
    // reload on each chain).
    static_assert(kLanes == 4);
    const unsigned char* p = data + from[0];
    const unsigned char* const start = p;
    const unsigned char* const end = p + count;
    const std::ptrdiff_t d1 = static_cast<std::ptrdiff_t>(from[1] - from[0]);
    const std::ptrdiff_t d2 = static_cast<std::ptrdiff_t>(from[2] - from[0]);
    const std::ptrdiff_t d3 = static_cast<std::ptrdiff_t>(from[3] - from[0]);
    const std::uint32_t* const table = table_.data();
    const std::size_t accepting = first_accepting_;  // accepting states are numbered last
    std::size_t s0 = states[0];
    std::size_t s1 = states[1];
    std::size_t s2 = states[2];
    std::size_t s3 = states[3];
    while (p != end) {
      s0 = next(table, s0, p[0]);  // four loads, none waiting on another
      s1 = next(table, s1, p[d1]);
      s2 = next(table, s2, p[d2]);
      s3 = next(table, s3, p[d3]);
      ++p;
      if ((s0 >= accepting) | (s1 >= accepting) | (s2 >= accepting) | (s3 >= accepting)) break;
    }
    states = {s0, s1, s2, s3};
    return static_cast<std::size_t>(p - start);
  }
  // Steps data[from, to) from `state`, one chain, reporting each match: the state after.
  template <class OnMatch>
  std::size_t step_run(std::size_t state, const unsigned char* data, std::size_t from, std::size_t to,
                       OnMatch& on_match) const {
    const std::uint32_t* const table = table_.data();  // a local: on_match cannot move it
    for (std::size_t i = from; i < to; ++i) {
      state = next(table, state, data[i]);
      if (state >= first_accepting_) on_match(i, match_[state / kClasses]);
    }
    return state;
  }
  // The end of the run of visible bytes at `at`: one past its first class-0 byte, or the text's end.
  // Eight bytes a test; the caller may start it past bytes it knows are visible.
  [[nodiscard]] static std::size_t run_end(const unsigned char* data, std::size_t size, std::size_t at) noexcept {
    for (; size - at >= 8; at += 8) {
      const std::uint64_t bits = scrub_detail::class0_bits(scrub_detail::load8(data + at));
      if (bits != 0) return at + static_cast<std::size_t>(std::countr_zero(bits)) / 8 + 1;
    }
    while (at < size && kClassOf[data[at]] != 0) ++at;
    return at < size ? at + 1 : size;
  }
  // Where a run's end is looked for from: past the window the skip found all visible, if it did
  // (it judges a whole window when the text holds one from `at`), else `at`.
  [[nodiscard]] std::size_t verified(std::size_t size, std::size_t at, bool carried) const noexcept {
    return !carried && size - at >= window_ ? at + window_ : at;
  }
  // From the start before data[at], a run not being stepped: the first position at or after `at`
  // at which a match may begin (size when none is judged possible before the end), by the fixed
  // class alone: the window [at, at + window_) is read back from its end to its last class-0 byte,
  // sixteen bytes a test, then eight (a word may begin before `at`: text, read and not judged), and
  // everything up to that byte is passed over. A window that reaches past the text's end is not
  // judged (stepped: the next chunk may complete it). Linear: a window read to its start without a
  // class-0 byte is stepped next (run_end starts past it), so a byte is read about twice at most.
  [[nodiscard]] std::size_t skip(const unsigned char* data, std::size_t size, std::size_t at) const noexcept {
    while (size - at >= window_) {
      std::size_t end = at + window_;
      for (;;) {  // back from end
        if (end - at >= 16 && end >= 16) {  // sixteen at first: one branch, which most windows take
          const std::uint64_t high = scrub_detail::class0_bits(scrub_detail::load8(data + end - 8));
          const std::uint64_t low = scrub_detail::class0_bits(scrub_detail::load8(data + end - 16));
          if ((high | low) != 0) {  // past the last class-0 byte
            at = high != 0 ? end - 8 + after_last(high) : end - 16 + after_last(low);
            break;
          }
          end -= 16;
          if (end == at) return at;  // a window of visible bytes: stepped
          continue;
        }
        const std::size_t n = std::min<std::size_t>(end - at, 8);
        if (end < 8) {  // too near the text's start to read eight: a byte a test
          while (end > at && kClassOf[data[end - 1]] != 0) --end;
          if (end == at) return at;
          at = end;
          break;
        }
        const std::uint64_t last_n = ~std::uint64_t{0} << (8 * (8 - n));  // the word's last n bytes
        const std::uint64_t bits = scrub_detail::class0_bits(scrub_detail::load8(data + end - 8)) & last_n;
        if (bits != 0) {  // past the last class-0 byte
          at = end - 8 + after_last(bits);
          break;
        }
        end -= n;
        if (end == at) return at;  // a window of visible bytes: stepped
      }
    }
    return at;
  }
  // Of a class0_bits word with a bit set: one past its last class-0 byte (an index in the word).
  static std::size_t after_last(std::uint64_t bits) noexcept {
    return static_cast<std::size_t>(63 - std::countl_zero(bits)) / 8 + 1;
  }
  static constexpr const std::array<std::uint8_t, 256>& kClassOf = scrub_detail::kByteClass;

  std::vector<std::uint32_t> table_;  // by state offset (state x kClasses) + class: the next state's offset
  std::vector<std::uint32_t> match_;  // by state: the longest pattern ending there, or kNoMatch
  std::uint32_t first_accepting_ = 0; // the offset of the first state that ends a pattern (all after it do)
  std::vector<std::uint32_t> sizes_;
  std::size_t window_ = 0;            // the shortest pattern (0: none)
};

}  // namespace boxproxy
