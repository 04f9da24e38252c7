// SPDX-License-Identifier: Apache-2.0
// One request on an inspected connection (SPEC §18-§19), judged alone by the request pipeline
// (request_pipeline.h: its stages, in order, are listed there), and what the connection does with
// it. Pure: the connection (proxy/inspect/inspected_connection.h) parses the head (http_head.h),
// calls this, and sends what it says. Nothing here knows TLS, so plain HTTP to an inspected
// endpoint's port and `boxproxy check` run the same stages (their scopes' share of them).
//
// An absolute-form target ("https://host/x") or "*" is `bad path` (judge_request refuses every
// target that is not origin-form): inside an inspected connection the host is decided already, and
// a target naming one again could only disagree with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/stages/request_context.h"
#include "proxy/wire/http_message.h"
#include "table/reason.h"

namespace boxproxy {

// The answer to a refused request, inside the connection: "HTTP/1.1 <status> egress refused:
// <class>", x-egress-refused: <class>, content-type text/plain, a content-length, "connection:
// close" only when `close`, and the one-line body "egress refused: <class>", then `detail` (empty,
// or refusal_detail.h's hint for an endpoint that says "hint": true), then "\n". Only for a refusal
// with an HTTP status (SPEC §6's table).
[[nodiscard]] std::string inspect_refusal_response(Reason refusal, bool close, std::string_view detail = {});
// The same answer as a head and its body (head.text() + body is inspect_refusal_response's), for a
// box that takes the head as a message (the inspector's HTTP/2 front).
struct RefusalAnswer {
  ResponseMessage head;
  std::string body;
};
[[nodiscard]] RefusalAnswer inspect_refusal_answer(Reason refusal, bool close, std::string_view detail = {});

struct InspectedRequest {
  std::optional<Reason> refusal;  // set: answer it instead of sending the request on
  // Held for the supervisor (SPEC §20): judge it again with the answer (`asked`) once it comes;
  // nothing of it is sent or answered meanwhile.
  bool wait = false;
  std::optional<RequestAsked> asked;  // what the supervisor said of it (the request line's asked=)
  std::string rule = "-";         // the deciding rule's label (the request line's rule=)
  bool report = false;            // a report-mode denial let through (class request denied)
  BodyFraming framing;            // the request's body, when its framing is sound
  // A refusal leaves the connection usable: the framing is sound, the client keeps its
  // connection alive, and the body (if any) comes without waiting for a 100 Continue that a
  // refusal never sends. The body is then read and dropped, and the next request read.
  bool keep_after_refusal = false;
  bool websocket = false;          // an allowed WebSocket upgrade (is_websocket_upgrade)
  bool client_keep_alive = false;  // the client keeps its connection after this request
  bool client_http10 = false;      // an HTTP/1.0 request: no interim (1xx) response goes back
  // Allowed: the origin was asked to close after this request (Connection: close, an HTTP/1.0 box
  // that does not keep alive), so its connection is never kept for another box connection, even
  // when its answer does not echo the close (found in review).
  bool origin_asked_to_close = false;
  std::optional<std::string> misdirected;  // secret_misdirected: the secret whose placeholder it was
  std::vector<TraceEntry> trace;           // what the stages did (never a value)
  // SPEC §20: the signer needs the body's SHA-256. Nothing is refused or composed yet: the caller
  // holds the body (at most --max-held-body, else `body too large`), hashes it, and judges the head
  // again with the hash (the stages are pure: the same head judges the same up to the sign stage).
  bool hold_body = false;
  // Allowed: the head the origin gets (forward_origin_form_message, with the added and injected
  // fields; empty method otherwise), as fields: its text (text()) is written only to an HTTP/1.1
  // origin (issue 34 item 2). It may hold a secret's value: its holder scrubs it (scrub) once sent.
  RequestMessage upstream;
};

// Judges `head` (a parsed request head) for an inspected connection decided for `origin`, by
// `endpoint`'s rules, through the inspector's stages; `secrets` gives the values its "inject"
// templates name, read now (a secret replaced or revoked meanwhile applies from the next request
// on); `placeholders` (null: none) are the session's stand-ins for them; `asked` is the
// supervisor's answer when the request was held for one (InspectedRequest::wait).
// `signer` (null: none, a signing endpoint's request is `secret missing`) signs a "sign"
// endpoint's requests; `payload_hash` is the held body's hash when judging it again (hold_body).
[[nodiscard]] InspectedRequest judge_inspected_request(const RequestHead& head, const InspectEndpoint& endpoint,
                                                       const DecidedOrigin& origin, const SecretLookup& secrets,
                                                       const Placeholders* placeholders = nullptr,
                                                       std::size_t max_head_bytes = SIZE_MAX,
                                                       std::optional<RequestAsked> asked = std::nullopt,
                                                       const RequestSigner* signer = nullptr,
                                                       std::optional<std::string> payload_hash = std::nullopt);

}  // namespace boxproxy
