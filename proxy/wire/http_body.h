// SPDX-License-Identifier: Apache-2.0
// Body framing for plain HTTP (SPEC §8): how long a body is, and where a chunked one ends.
//
// The proxy passes a body exactly as framed, byte for byte; it only needs to know where the body
// ends so that nothing after it is taken for part of it (or a next message taken for body).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "proxy/wire/http_head.h"
#include "table/reason.h"

namespace boxproxy {

struct BodyFraming {
  enum class Kind {
    none,            // no body
    length,          // exactly `length` bytes
    chunked,         // chunked transfer coding, ended by the last chunk and trailers
    until_close,     // a response read until the origin closes (never a request)
  };
  Kind kind = Kind::none;
  std::uint64_t length = 0;
};

// A request's framing from its headers. Refused (bad_framing): Content-Length together with
// Transfer-Encoding; two different Content-Lengths; a Content-Length that is not one to eighteen
// plain digits; a Transfer-Encoding whose value, trimmed, is not "chunked" without regard to
// case; two Transfer-Encoding lines.
[[nodiscard]] std::variant<BodyFraming, Reason> request_framing(const RequestHead& head);

// A response's framing, given the request's method and the status (SPEC: RFC 9112 §6.3):
// HEAD, 1xx, 204 and 304 have none; then chunked; then Content-Length; else until close.
// Malformed framing is refused (bad_framing): the proxy will not pass on what it cannot delimit.
[[nodiscard]] std::variant<BodyFraming, Reason> response_framing(std::string_view request_method,
                                                                 const ResponseHead& head);

// Whether a trailer field named `name` may pass from an origin to the box (an inspected
// connection's responses, SPEC §19: gRPC's status travels in trailers). Refused, without regard to
// case: what frames, routes or ends a message (Connection, Keep-Alive, Proxy-Connection,
// Transfer-Encoding, Upgrade, TE, Trailer, Content-Length, Host), what the box would take for
// authentication or state (Authorization, Proxy-Authorization, Proxy-Authenticate,
// WWW-Authenticate, Cookie, Set-Cookie), how the content is to be read (Content-Encoding,
// Content-Type, Content-Range), where to go (Location, Cache-Control), and x-egress-refused (only
// this proxy says that). RFC 9110 §6.5.1 forbids a sender most of these; a recipient that merged
// them into the head would be fooled, so they never reach it.
[[nodiscard]] bool trailer_field_passes(std::string_view name) noexcept;

// The longest trailer section of a chunked body, counted as every byte after the last chunk's
// size line: each field line with its CRLF, and the empty line's CRLF that ends the section. One
// bound, counted the same way, for every place that reads or writes a section: ChunkedScanner
// refuses a longer one (malformed), ChunkedDecoder (h2_request.h) too, and H2Back never writes one
// (h1_last_chunk_with_trailers drops trailers that would not fit), so that what one passes the
// next never refuses. The same as the default --max-head-bytes.
inline constexpr std::size_t kMaxTrailerSection = 32 * 1024;

// Follows a chunked body as its bytes go by, and says which of them to pass on.
//
// Every byte is passed on unchanged except the trailer section (the field lines after the last
// chunk): trailers are dropped, never forwarded. A trailer field is a header that arrives after
// the proxy has filtered the head, so passing it would let an origin forge `x-egress-refused`,
// `Connection` or `Proxy-Authenticate` to the client, and a client carry `Proxy-Authorization` or
// `Host` upstream (RFC 9112 §7.1.2 lets a recipient discard trailers). The body is then closed with
// the empty line that ends a trailer section with no fields.
//
// With Trailers::filtered (an inspected connection's responses only), the trailer section is kept
// instead, at most kMaxTrailerSection of it, and passed on as `ending` with only the fields
// trailer_field_passes allows: the head was filtered, so the trailers are too. Requests never
// keep theirs: a trailer would carry a credential or a placeholder past injection's checks.
class ChunkedScanner {
 public:
  enum class Trailers : std::uint8_t { dropped, filtered };
  ChunkedScanner() noexcept = default;
  explicit ChunkedScanner(Trailers trailers) noexcept : keep_trailers_(trailers == Trailers::filtered) {}

  struct Step {
    std::size_t consumed = 0;  // bytes of `data` that belong to the body
    std::size_t passed = 0;    // of those, how many to pass on: a prefix, stopping before trailers
    std::string_view ending;   // when finished, what to pass on after them: the closing CRLF
    bool finished = false;     // the body (last chunk and trailers) ended within `consumed`
    bool malformed = false;    // a bad chunk size, extension or line ending: bad_framing
  };
  // Feeds the next bytes. Bytes past the end of the body are not consumed.
  [[nodiscard]] Step feed(std::string_view data) noexcept;

 private:
  [[nodiscard]] bool in_trailer_section() const noexcept;
  // One byte of a line (a chunk size, an extension, a line end, a trailer); false: malformed.
  [[nodiscard]] bool take_line_byte(unsigned char c) noexcept;
  [[nodiscard]] bool take_size_byte(unsigned char c) noexcept;
  [[nodiscard]] bool take_extension_byte(unsigned char c) noexcept;
  [[nodiscard]] bool take_trailer_byte(unsigned char c) noexcept;
  enum class State : std::uint8_t {
    size,             // reading hex digits of a chunk size
    extension,        // reading a chunk extension after ';'
    size_lf,          // after CR of the size line
    data,             // inside chunk data; `remaining_` bytes left
    data_cr,          // expecting CR after chunk data
    data_lf,          // expecting LF after chunk data
    trailer_start,    // at the start of a trailer line (or the final CRLF)
    trailer_line,     // inside a trailer field line
    trailer_lf,       // after CR of a trailer line
    final_lf,         // after CR of the final empty line
    done,
    malformed,        // refused; every later feed says malformed again
  };
  State state_ = State::size;
  std::uint64_t remaining_ = 0;
  unsigned size_digits_ = 0;
  std::size_t line_length_ = 0;    // bounds an extension
  std::size_t trailer_bytes_ = 0;  // of the trailer section so far, every byte: kMaxTrailerSection
  // Within an extension, the byte before this one (its grammar depends on it); within a trailer
  // line, whether its ':' has been seen (the name before it must be a token).
  char previous_ = 0;
  bool in_value_ = false;
  bool keep_trailers_ = false;
  std::string trailers_;  // with Trailers::filtered: the section as read, then as passed on
};

}  // namespace boxproxy
