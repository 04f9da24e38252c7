// SPDX-License-Identifier: Apache-2.0
// Responses scrubbed (SPEC §19a): everything an origin sends back to the box searched, as it
// streams, for every spelling (table/secret_spellings.h) of every secret the session holds. In a
// body or a stream a match becomes '*' byte for byte, so Content-Length, chunk sizes, HTTP/2 DATA
// lengths and WebSocket frame lengths all stay right; in a head or a trailer it becomes the
// placeholder of that secret (the box holds it anyway, so a redirect or a next-page link still
// works). Pure: the caller owns the bytes, the timer and the connection.
//
// What is held back between chunks, and why it does not depend on the secrets: only the trailing
// run of printable, non-space ASCII bytes (0x21 to 0x7e) of what has come so far, at most
// hold_limit() bytes, whatever the secrets' bytes are. Every spelling is made of such bytes only,
// so a match that a later chunk completes can only start within that run; and what is held is a
// function of the text and of the secrets' lengths alone. Were the hold to depend on the secrets'
// contents (hold exactly while the text is a prefix of a spelling), it would be an oracle: a box
// sending text through an echoing origin would learn, from what comes back at once, whether its
// text begins the key, and could guess the key byte by byte.
//
// Time, too, must not depend on the secrets' bytes: the box chooses the text (an origin that
// echoes) and can time the responses, amplifying over large bodies. The search (proxy/wire/
// scrub_automaton.h) passes over windows by a fixed class of bytes no spelling holds and steps the
// rest one table lookup a byte, so its work is a function of the text and the spellings' lengths;
// a match (the box sent a whole spelling: it knew the value) costs more. A set of values whose
// spellings are too long together for the automaton's table (ScrubAutomaton::fits) is searched
// the older way (table/multi_match.h), whose time does depend on them (the manual says so);
// which way a set takes depends on its spellings' total length, so on how many of its bytes need
// escaping (one fact about the operator's values, near the cap only).
//
// Not caught (the manual says so): a value the origin cuts, splits across fields or frames or
// across a flush() (the caller flushes when the origin has sent nothing for 50 ms, so a stream
// never stalls), or transforms (hashes, changes the case of, re-encodes otherwise).
//
// Bounds: the search is built once per set of secrets and shared by every scrubber (scrub_
// automaton.h: 380 bytes per distinct spelling prefix, at most 32 MiB; beyond, multi_match.h: about
// 20 bytes per prefix, and 16 KiB of shifts); a scrubber holds at most hold_limit() bytes (6 x the
// longest value, less one: 24,575 bytes at the 4,096-byte maximum), twice that while it makes the
// next hold, and a copy of a chunk in which a match is to be starred. Time: linear in the bytes
// fed (a table lookup a byte at most; a run of visible bytes that a space or a line end cuts short
// of the shortest spelling passed over); a body that needs no change is not copied (BodySink).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/body_sink.h"
#include "proxy/wire/scrub_automaton.h"
#include "table/multi_match.h"

namespace boxproxy {

// One secret as the scrubber is given it: its name, its value (read while the patterns are built,
// not kept) and its placeholder (what replaces it in a head; empty: '*' as in a body).
struct ScrubSecret {
  std::string name;
  std::string_view value;
  std::string placeholder;
};

// Every spelling of every secret, ready to be searched for; immutable once built, so one may be
// shared (std::shared_ptr<const ScrubPatterns>) by every response of the session while the
// secrets stay as they are. A new set of secrets is a new ScrubPatterns.
class ScrubPatterns {
 public:
  explicit ScrubPatterns(const std::vector<ScrubSecret>& secrets);

  [[nodiscard]] bool empty() const noexcept { return names_.empty(); }
  // The search: the automaton, or (null) the older matcher for a set too long for its table.
  [[nodiscard]] const ScrubAutomaton* automaton() const noexcept { return automaton_ ? &*automaton_ : nullptr; }
  [[nodiscard]] const MultiMatcher& matcher() const noexcept { return matcher_; }
  [[nodiscard]] std::size_t pattern_size(std::uint32_t pattern) const noexcept {
    return automaton_ ? automaton_->pattern_size(pattern) : matcher_.pattern_size(pattern);
  }
  // The secret (an index into the list given) a pattern of matcher() spells.
  [[nodiscard]] std::size_t secret_of(std::uint32_t pattern) const noexcept { return secret_of_[pattern]; }
  [[nodiscard]] const std::string& name(std::size_t secret) const noexcept { return names_[secret]; }
  [[nodiscard]] const std::string& placeholder(std::size_t secret) const noexcept { return placeholders_[secret]; }
  [[nodiscard]] std::size_t secret_count() const noexcept { return names_.size(); }
  // The most a scrubber holds back: longest_spelling_bound of the longest value, less one. It
  // depends on the values' lengths only, never on their bytes (see the top of this file).
  [[nodiscard]] std::size_t hold_limit() const noexcept { return hold_limit_; }

 private:
  std::optional<ScrubAutomaton> automaton_;
  MultiMatcher matcher_;  // empty while automaton_ is set
  std::vector<std::size_t> secret_of_;
  std::vector<std::string> names_;
  std::vector<std::string> placeholders_;
  std::size_t hold_limit_ = 0;
};

// The names of the secrets found in one response (its heads, body and trailers), each once, in
// the order first found: the request line's scrub=NAME.
class ScrubFound {
 public:
  void add(const std::string& name);
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }
  [[nodiscard]] bool empty() const noexcept { return names_.empty(); }

 private:
  std::vector<std::string> names_;
};

// A head or a trailer, or any one field of one (a value, a name, a status line): `text` with every
// match replaced by the placeholder of its secret (a run of overlapping or touching matches by the
// placeholders of each secret in it, in order). nullopt when nothing matched (nothing to copy);
// every secret found is added to `found`. Whole, not streamed: a head is held until it ends anyway.
[[nodiscard]] std::optional<std::string> scrub_head_text(std::string_view text, const ScrubPatterns& patterns,
                                                         ScrubFound& found);

// A body or a stream, fed chunk by chunk.
class ResponseScrubber {
 public:
  explicit ResponseScrubber(std::shared_ptr<const ScrubPatterns> patterns);

  // Reads `chunk` where it lies, and gives `out`, in order, every byte before the hold (see the top
  // of this file): bytes no later chunk can make part of a match, each match in them already '*'.
  // The chunk's bytes that need no change are passed (out.pass), not copied; what is held is
  // copied before `out` is called, so the sink may move or free the chunk's bytes as it goes.
  void feed(std::string_view chunk, BodySink& out);
  // The same, appending to a string.
  void feed(std::string_view chunk, std::string& out);
  // Gives `out` everything held (matched parts '*'), and starts afresh: a spelling that begins
  // before a flush and ends after it is not caught. Call it when the response or the stream ends,
  // and when the origin has sent nothing more for 50 ms.
  void flush(std::string& out);

  // What is held now (never more than patterns().hold_limit() bytes).
  [[nodiscard]] std::string_view held() const noexcept { return held_; }
  [[nodiscard]] const ScrubFound& found() const noexcept { return found_; }
  // The search's work so far (for tests; see the top of this file): table lookups, and bytes
  // passed over. Kept always: two additions a run of bytes, not a byte.
  using Work = ScrubAutomaton::Work;
  [[nodiscard]] Work work() const noexcept { return work_; }

 private:
  void scan(std::string_view chunk);
  void star(std::uint64_t from, std::uint64_t to);  // absolute offsets, `to` inclusive
  void write_stars(std::uint64_t from, std::uint64_t to);
  void matched(std::uint64_t end, std::uint32_t pattern);

  std::shared_ptr<const ScrubPatterns> patterns_;
  std::string held_;          // the hold, its matched bytes already '*'
  std::string next_held_;     // the next hold, made before the chunk is handed on (reused)
  std::uint64_t base_ = 0;    // the absolute offset of held_[0]
  // The chunk being fed: where it lies, its absolute offset, and its copy once a match in it is to
  // be starred (it is not the scrubber's to write to).
  std::string_view chunk_;
  std::uint64_t chunk_base_ = 0;
  std::string chunk_copy_;
  bool copied_ = false;
  ScrubAutomaton::Cursor cursor_;                    // the automaton's
  MultiMatcher::State state_ = MultiMatcher::kStart;  // the older matcher's
  std::size_t run_ = 0;       // the length of the trailing run of printable bytes (capped)
  bool starred_ = false;      // whether [star_from_, star_to_] is a run of matched bytes
  std::uint64_t star_from_ = 0;
  std::uint64_t star_to_ = 0;
  ScrubFound found_;
  Work work_;
};

}  // namespace boxproxy
