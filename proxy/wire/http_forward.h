// SPDX-License-Identifier: Apache-2.0
// Plain HTTP forwarding (SPEC §8): judging an absolute-form request and rewriting it for the
// origin, and rewriting the origin's response head for the client.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/http_message.h"
#include "table/target.h"

namespace boxproxy {

struct ForwardRequest {
  Target target;            // from the URI's authority (port 80 when absent)
  std::string upstream_head;  // origin-form request line, Host, the kept headers, Connection: close, blank line
  BodyFraming framing;      // the request body as framed (never until_close)
};

// Judges a plain request's head and builds what goes upstream. Refusals, checked in this order:
// not_absolute_uri (origin form), not_http_uri (a scheme other than http, compared without regard
// to case), invalid_target (userinfo, a backslash or '#' anywhere in the target, an authority
// that will not split), invalid_host, host_mismatch (a Host header naming another host or port;
// port 80 when absent), upgrade_not_supported (an Upgrade header), bad_framing (request_framing).
// Hop-by-hop headers are removed (Connection, Proxy-Connection, Keep-Alive, Proxy-Authorization,
// Proxy-Authenticate, TE, Trailer, Upgrade, and every name Connection lists except Host,
// Content-Length and Transfer-Encoding); Host is set from the URI; "Connection: close" is added.
[[nodiscard]] std::variant<ForwardRequest, Reason> prepare_forward_request(const RequestHead& head);

// The origin-form target (path and query) of a head prepare_forward_request built: what its
// request line asks the origin for, and so what an inspected endpoint's rules judge (SPEC §18).
[[nodiscard]] std::string_view origin_target_of(std::string_view upstream_head) noexcept;

// The origin's response head as the client gets it: the same hop-by-hop headers removed, every
// x-egress-refused removed (that header always means this proxy refused), and a Connection header
// that says whether the client connection stays open (`keep_alive`).
[[nodiscard]] std::string rewrite_response_head(const ResponseHead& head, bool keep_alive);
// The same head as a message (http_message.h: its text() is rewrite_response_head's, byte for
// byte), for a box that does not take HTTP/1.1 text (the inspector's HTTP/2 front).
[[nodiscard]] ResponseMessage rewrite_response_message(const ResponseHead& head, bool keep_alive);

// Whether a request asks to keep the client connection open afterwards: HTTP/1.1 unless
// "Connection: close"; HTTP/1.0 only with "Connection: keep-alive" (or Proxy-Connection).
[[nodiscard]] bool client_wants_keep_alive(const RequestHead& head);

// ---- request inspection (SPEC §18): origin-form requests inside TLS, judged one by one ----------

// Whether a request asks to become a WebSocket (RFC 6455 §4.1): HTTP/1.1, one Upgrade header
// whose value is "websocket" (any case), and "upgrade" among Connection's tokens. Any other
// Upgrade is hop-by-hop and removed like the rest: only a WebSocket is relayed past its 101.
[[nodiscard]] bool is_websocket_upgrade(const RequestHead& head);

// An origin-form request's head as an inspected connection sends it to the origin: the request
// line as sent but for its version (HTTP/1.1, as the proxy speaks to the origin), then
// "Host: <host_field>" in place of the client's Host (so the origin routes by the host that was
// judged, spelled one way), the other headers without the hop-by-hop ones (as
// prepare_forward_request removes them) and with one Content-Length where the box sent several
// equal ones, then "Connection: Upgrade" and "Upgrade: websocket" when `websocket`, else
// "Connection: close" when `close`, and the blank line.
[[nodiscard]] std::string forward_origin_form_head(const RequestHead& head, std::string_view host_field,
                                                   bool websocket, bool close);

// Whether an origin's 101 switches to a WebSocket: one Upgrade header whose value is
// "websocket" (any case). A 101 to anything else was never asked for and is not passed on.
[[nodiscard]] bool switches_to_websocket(const ResponseHead& head);

// An origin's 101 as the client gets it: the headers rewrite_response_head keeps, then
// "Connection: Upgrade" and "Upgrade: websocket" (the two hop-by-hop headers a 101 needs).
[[nodiscard]] std::string rewrite_switching_head(const ResponseHead& head);

// Whether an origin lets its connection be used for another request after this response:
// HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "Connection: keep-alive". (The framing
// must end the body too: a body read to the close never leaves a connection to reuse.)
[[nodiscard]] bool origin_keeps_alive(const ResponseHead& head);

}  // namespace boxproxy
