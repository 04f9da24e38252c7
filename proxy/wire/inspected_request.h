// SPDX-License-Identifier: Apache-2.0
// One request on an inspected connection (SPEC §18), judged alone, in the spec's order, and what
// the connection does with it. Pure: the connection (proxy/inspect/inspected_connection.h) parses
// the head (http_head.h), calls this, and sends what it says. Nothing here knows TLS, so plain
// HTTP to an inspected endpoint's port can be judged by the same code (with default port 80).
//
// The order (the first that applies decides):
//   1. framing as §8: request_framing's refusal is `bad framing`; two Host headers `bad request`;
//   2. Host: exactly one, naming the decided host, its port the decided one (which it may leave
//      out when that is the scheme's default), else `host mismatch`;
//   3. a placeholder (SPEC §19) of a secret the endpoint's "secrets" does not list, in the target
//      or any header, in any spelling: `secret misdirected` (before the rules, so that this
//      tripwire never hides behind another refusal);
//   4. the path and the rules (table/inspect_endpoint.h's judge_request): `bad path`, then
//      `request denied`; in report mode a denial is let through, marked `report`;
//   5. credentials (SPEC §19, proxy/wire/header_inject.h), in both modes (a report-mode denial
//      too: a request is never sent with an empty credential): each placeholder of a listed
//      secret swapped for its value in the target and the header values, then the "inject"
//      templates expanded; a secret not set is `secret missing`; a target whose swapped value
//      changes what the rules answer is `bad path`. Every box header of an injected name is
//      dropped and the expanded ones go in the head the origin gets.
// An absolute-form target ("https://host/x") or "*" is `bad path` (judge_request refuses every
// target that is not origin-form): inside an inspected connection the host is decided already, and
// a target naming one again could only disagree with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/wire/http_body.h"
#include "proxy/wire/header_inject.h"
#include "proxy/wire/http_head.h"
#include "table/inspect_endpoint.h"
#include "table/target.h"

namespace boxproxy {

// Every refusal of an inspected connection, each a row of one table (inspected_request.cc).
enum class InspectRefusal : std::uint8_t {
  not_tls,         // the client's first byte is not a TLS handshake record: closed, no answer
  sni_mismatch,    // the ClientHello names another host than the decided one: closed, no answer
  bad_request,     // a head that does not parse, or two Host headers: 400, then closed
  head_too_large,  // no end of head within the bound: 431, then closed
  bad_framing,     // a body whose end is ambiguous or broken: 400, then closed
  host_mismatch,   // Host names another host or port, or is missing: 400
  bad_path,        // a path the rules will not guess about (table/request_path.h): 400
  request_denied,  // the rules refuse it: 403 (in report mode: logged, and let through)
  dial_failed,     // serve could not make a new connection to the checked address: 502
  upstream_tls,    // the origin's TLS handshake or certificate failed: 502, then closed
  secret_missing,  // an "inject" template or a placeholder names a secret that is not set: 403, nothing sent
  secret_misdirected,  // a placeholder of a secret this endpoint is not listed for: 403, nothing sent
};

struct InspectRefusalInfo {
  InspectRefusal refusal;
  std::string_view log_class;  // the request line's class=, the x-egress-refused header's value
  std::uint16_t status;        // 0: no HTTP answer is possible (the connection is just closed)
};

[[nodiscard]] const InspectRefusalInfo& inspect_refusal_info(InspectRefusal refusal) noexcept;

// The answer to a refused request, inside the connection: "HTTP/1.1 <status> egress refused:
// <class>", x-egress-refused: <class>, content-type text/plain, a content-length, "connection:
// close" only when `close`, and the one-line body "egress refused: <class>\n". Only for a refusal
// with a status.
[[nodiscard]] std::string inspect_refusal_response(InspectRefusal refusal, bool close);

struct InspectedRequest {
  std::optional<InspectRefusal> refusal;  // set: answer it instead of sending the request on
  std::string rule = "-";                 // the deciding rule's label (the request line's rule=)
  bool report = false;                    // a report-mode denial let through (class request denied)
  BodyFraming framing;                    // the request's body, when its framing is sound
  // A refusal leaves the connection usable: the framing is sound, the client keeps its
  // connection alive, and the body (if any) comes without waiting for a 100 Continue that a
  // refusal never sends. The body is then read and dropped, and the next request read.
  bool keep_after_refusal = false;
  bool websocket = false;          // an allowed WebSocket upgrade (is_websocket_upgrade)
  bool client_keep_alive = false;  // the client keeps its connection after this request
  bool client_http10 = false;      // an HTTP/1.0 request: no interim (1xx) response goes back
  std::optional<std::string> misdirected;  // secret_misdirected: the secret whose placeholder it was
  // Allowed: the head the origin gets (forward_origin_form_head, with the injected headers). It
  // may hold a secret's value: its holder scrubs it (table/secret_value.h) once it is sent.
  std::string upstream_head;
};

// The host and port a connection was decided for, and its scheme's default port (443 under TLS,
// 80 for plain HTTP): a Host header may leave the port out only when it is that one.
struct DecidedOrigin {
  Target target;  // its host as parse_host reads the decided host
  std::uint16_t default_port = 443;
};

// Judges `head` (a parsed request head) for an inspected connection decided for `origin`, by
// `endpoint`'s rules, in the order above; `secrets` gives the values its "inject" templates name,
// read now (a secret replaced or revoked meanwhile applies from the next request on);
// `placeholders` (null: none) are the session's stand-ins for them.
[[nodiscard]] InspectedRequest judge_inspected_request(const RequestHead& head, const InspectEndpoint& endpoint,
                                                       const DecidedOrigin& origin, const SecretLookup& secrets,
                                                       const Placeholders* placeholders = nullptr);

// The Host header the origin gets: the decided host (an IPv6 literal in brackets), and ":port"
// unless the port is the default.
[[nodiscard]] std::string origin_host_field(const DecidedOrigin& origin);

}  // namespace boxproxy
