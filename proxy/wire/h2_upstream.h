// SPDX-License-Identifier: Apache-2.0
// HTTP/2 toward the origin (SPEC §19, HTTP/2 "in any pairing"; issue 25 item 4, stage 2), the
// pure half: the HTTP/1.1 request head an inspected connection sends (judged, injected, rewritten
// by the one HTTP/1.1 path; given as fields, never as text) as an HTTP/2 header list, and an
// HTTP/2 response's header list and trailers back as an HTTP/1.1 head (fields) and chunked trailer
// section. proxy/inspect/h2_back.h runs them
// over an nghttp2 client session. No nghttp2, no I/O.
//
// Both ways drop what is connection-specific (RFC 9113 §8.2.2): an HTTP/2 peer would call the
// message malformed, and an HTTP/1.1 reader would take it as framing or hop-by-hop instructions
// nobody judged. Nothing here repairs a field HTTP/1.1 cannot carry exactly (CR, LF, NUL, white
// space at an end): the response is refused instead, as h2_request.h refuses such a request.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/h2_request.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/http_message.h"

namespace boxproxy {

struct H2UpstreamRequest {
  std::vector<H2Field> fields;  // :method, :scheme "https", :authority, :path, then the regular fields, lowercase
  BodyFraming framing;          // the HTTP/1.1 body as framed: none, length or chunked (sent as DATA, decoded)
  std::string method;           // for the response's framing (HEAD)
};

// The header list for `head` (a head the inspected connection wrote: origin-form, one Host). Every
// field goes, its name lowercased, but Host (it becomes :authority), Connection and every name it
// lists, Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, HTTP2-Settings and TE; then
// "te: trailers" is added (the proxy carries trailers back either way: to an HTTP/1.1 box in the
// chunked body, to an HTTP/2 box as trailing HEADERS; gRPC servers want it). A content-length
// stays (the DATA frames carry exactly that many bytes). nullopt when the head cannot be carried:
// no Host or two, a framing request_framing refuses, CONNECT, a target neither origin-form nor "*".
[[nodiscard]] std::optional<H2UpstreamRequest> h2_upstream_request(const RequestHead& head);

struct H1Response {
  ResponseMessage head;  // "HTTP/1.1", the status, its reason phrase, the fields an HTTP/1.1 head carries
  BodyFraming framing;   // none, length, or chunked (its field "transfer-encoding: chunked")
  bool interim = false;  // a 1xx other than 101: another head follows
};

// The HTTP/1.1 head (as fields: the connection takes it as it is, issue 34 item 2) for an HTTP/2
// response header list (`fields` in order, pseudo-headers first),
// to a request of `method`; `end_stream`: the HEADERS ended the stream (no DATA follows). The
// framing: none for 1xx, 204, 304 and HEAD (a content-length kept for HEAD and 304, where it
// describes the representation); a content-length the origin gave; "content-length: 0" when the
// stream ended with its head; else chunked, so the box's connection stays reusable whatever the
// origin's length (and trailers can follow). Dropped: the connection-specific fields (as above),
// and x-egress-refused (only this proxy says that). nullopt (the request is answered 502):
// :status missing, twice, not three digits, or 101; another pseudo-header, or one after a regular
// field; a name that is not a lowercase token; a value HTTP/1.1 cannot carry; two content-lengths
// that differ, or one that is not plain digits.
// `fields` is taken: what the head keeps of it is moved, not copied.
[[nodiscard]] std::optional<H1Response> h1_response_head(std::vector<H2Field> fields, std::string_view method,
                                                         bool end_stream);

// The end of a chunked body carrying an HTTP/2 response's trailing HEADERS: "0\r\n", the fields
// trailer_field_passes lets through ("name: value\r\n", a field whose name or value HTTP/1.1
// cannot carry dropped), and the blank line. A section (field lines and blank line) longer than
// kMaxTrailerSection is dropped whole ("0\r\n\r\n"): ChunkedScanner, which the connection reads
// the answer with, would call the body malformed and cut the box's connection; a part of the
// trailers would be a different answer (a gRPC status without its message).
[[nodiscard]] std::string h1_last_chunk_with_trailers(const std::vector<H2Field>& trailers);

// A chunked body's trailer section ("name: value\r\n" lines, its blank line optional) as fields
// for trailing HEADERS: names lowercased, values trimmed; a line that is not a field, or whose
// name trailer_field_passes refuses, is dropped.
[[nodiscard]] std::vector<H2Field> h2_trailers_from_section(std::string_view section);

}  // namespace boxproxy
