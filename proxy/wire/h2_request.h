// SPDX-License-Identifier: Apache-2.0
// One HTTP/2 request's header list turned into the request head (a RequestMessage, never text) that
// an inspected connection judges and forwards (SPEC §19, HTTP/2): the box-facing HTTP/2 side
// (proxy/inspect/h2_front.h) hands every stream's HEADERS to this, and gives what it builds to the
// same judge (inspected_request.h) and the same head rewrite (http_forward.h) as an HTTP/1.1
// request, so every rule, check and injection applies to a stream with no second copy. Pure: no
// nghttp2, no I/O.
//
// Why so strict: an HTTP/2 field may hold bytes an HTTP/1.1 line cannot (CR, LF, NUL, a colon in a
// name), and some HTTP/1.1 headers mean nothing or something dangerous in HTTP/2 (Connection,
// Transfer-Encoding). A translation that let any of them through would let a box write a second
// request, or a second body framing, into the head the origin reads (request smuggling through
// the h2-to-h1 step). So anything HTTP/1.1 cannot carry exactly, or HTTP/2 calls malformed
// (RFC 9113 §8.2, §8.3), is refused here as `bad request`, never repaired.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proxy/wire/http_body.h"
#include "proxy/wire/http_message.h"
#include "table/reason.h"

namespace boxproxy {

// One field of an HTTP/2 header list as received (after HPACK), in order.
struct H2Field {
  std::string name;
  std::string value;
};

// How the stream's body goes into the HTTP/1.1 request.
enum class H2BodyMode : std::uint8_t {
  none,     // END_STREAM came with HEADERS: no body, and no framing header is written
  length,   // content-length given: the DATA bytes as they are, exactly that many
  chunked,  // no content-length: the DATA bytes in chunks ("transfer-encoding: chunked" written)
};

struct H2Request {
  // The head, as fields (no HTTP/1.1 text is written: http_message.h): host first, the regular
  // fields kept, one cookie, then the body's framing (content-length, or transfer-encoding:
  // chunked when the stream gave no length: the front writes the DATA bytes in chunks).
  RequestMessage message;
  std::string method;    // :method, for the response's framing (HEAD) and the record
  std::string path;      // :path as sent, for the record (--log-paths)
  H2BodyMode body = H2BodyMode::none;
  std::uint64_t length = 0;  // with H2BodyMode::length
};

// Builds the request head for a stream whose HEADERS carried `fields`; `end_stream`: the stream
// has no body. Refused (a refusal of Reason's table, answered on the stream):
//   bad_request: a pseudo-header other than :method, :scheme, :authority, :path, or one twice, or
//     one after a regular field; :method missing or not a token; CONNECT (nothing here can carry a
//     tunnel); :scheme missing or not "https"; :path missing or empty, or holding anything but
//     visible ASCII; neither :authority nor host, or both differing, or either not one plain
//     authority (no userinfo, no white space); a name that is not a lowercase token; a value with
//     CR, LF, NUL, another control character but HTAB, or white space at either end; connection,
//     keep-alive, proxy-connection, transfer-encoding or upgrade (connection-specific, malformed
//     in HTTP/2); te other than "trailers"; more than one content-length, or one that is not
//     plain digits, or a non-zero one with END_STREAM on HEADERS;
//   head_too_large: the head built, counted as its HTTP/1.1 text (text_size), is longer than
//     `max_head_bytes`.
// Dropped (never forwarded): te (hop-by-hop) and expect (no interim response goes back to an
// HTTP/2 client). Several cookie fields are joined into one with "; " (RFC 9113 §8.2.3); an empty one is dropped.
[[nodiscard]] std::variant<H2Request, Reason> translate_h2_request(const std::vector<H2Field>& fields,
                                                                          bool end_stream,
                                                                          std::size_t max_head_bytes);

// One chunk of a chunked body, as written for a DATA frame's bytes (none for an empty one), and
// the last chunk that ends the body.
[[nodiscard]] std::string h2_chunk_prefix(std::size_t length);
inline constexpr std::string_view kH2ChunkSuffix = "\r\n";
inline constexpr std::string_view kH2LastChunk = "0\r\n\r\n";

// An origin's chunked answer (as the connection passes it: ChunkedScanner checked it and filtered
// its trailers) decoded back to its bytes, for DATA frames. Extensions are skipped; the trailer
// section is kept (at most kMaxTrailerSection bytes, counted as ChunkedScanner counts them
// (http_body.h), past which the body is malformed) for the trailing HEADERS
// (h2_trailers_from_section).
class ChunkedDecoder {
 public:
  // Takes bytes of `in` and appends the body bytes they carry to `out`; returns how many it took
  // (none past the body's end). `done()`: the last chunk and the closing line were read.
  std::size_t feed(std::string_view in, std::string& out);
  [[nodiscard]] bool done() const noexcept { return state_ == State::done; }
  [[nodiscard]] bool malformed() const noexcept { return state_ == State::malformed; }
  // The trailer section read so far ("name: value\r\n" lines), complete once done().
  [[nodiscard]] const std::string& trailer_section() const noexcept { return trailers_; }

 private:
  enum class State : std::uint8_t { size, extension, size_lf, data, data_cr, data_lf, line_start, line, line_lf,
                                    done, malformed };
  [[nodiscard]] State after(State state, char c) noexcept;
  [[nodiscard]] bool take_digit(char c) noexcept;
  State state_ = State::size;
  std::uint64_t size_ = 0;
  unsigned digits_ = 0;
  std::string trailers_;
};

}  // namespace boxproxy
