// SPDX-License-Identifier: Apache-2.0
// What the request stages (proxy/stages/request_stage.h) share: the request as the box sent it,
// where it was decided to go, the endpoint whose rules apply, and what each stage before decided
// or changed. One context per request; the driver (request_pipeline.h) hands it from stage to
// stage in order, and the caller reads it when they are done. Pure: no TLS, no socket, no clock.
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/header_inject.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "table/inspect_endpoint.h"
#include "table/placeholder.h"
#include "table/target.h"

namespace boxproxy {

// The host and port a connection was decided for, and its scheme's default port (443 under TLS,
// 80 for plain HTTP): a Host header may leave the port out only when it is that one.
struct DecidedOrigin {
  Target target;  // its host as parse_host reads the decided host
  std::uint16_t default_port = 443;
};

// The Host header the origin gets: the decided host (an IPv6 literal in brackets), and ":port"
// unless the port is the default.
[[nodiscard]] std::string origin_host_field(const DecidedOrigin& origin);

// What a stage did to a request, for the request line (SPEC §20's trace): the stage's word
// ("swap", "inject", ...) and what it acted on (a secret's NAME@PLACE, a header's name), never a
// value.
struct TraceEntry {
  std::string_view stage;
  std::string what;
};

class RequestSigner;

// SPEC §20: what became of a request held for the supervisor (the request line's asked=).
enum class RequestAsked : std::uint8_t {
  once,     // the supervisor let this one go
  always,   // ... and every later one of the same method and path, this session
  deny,     // the supervisor refused it
  timeout,  // no answer within --ask-timeout (or the control channel closed meanwhile)
  none,     // no control client to ask: refused at once
};

// "once", "always", "deny", "timeout", "none".
[[nodiscard]] std::string_view asked_text(RequestAsked asked) noexcept;
// The words above back; nullopt for any other.
[[nodiscard]] std::optional<RequestAsked> parse_asked(std::string_view text) noexcept;

struct RequestContext {
  // ---- what the stages read (the caller's; each outlives the context) ----
  const RequestHead& head;          // as the box sent it
  const InspectEndpoint& endpoint;  // whose rules judge it
  const DecidedOrigin& origin;
  const SecretLookup& secrets;      // values, read when a stage needs them (a rotation applies next request)
  const Placeholders* placeholders;  // the session's stand-ins; null: none
  std::size_t max_head_bytes = SIZE_MAX;  // --max-head-bytes: what a head may grow to by swapping
  // SPEC §20: signs a "sign" endpoint's requests (the inspector's; null elsewhere: secret missing),
  // and the held body's SHA-256 (lower-case hex) once the caller has it.
  const RequestSigner* signer = nullptr;
  std::optional<std::string> payload_hash;

  // ---- what the stages decide ----
  BodyFraming framing;             // the request's body (the framing stage)
  bool client_keep_alive = false;  // the client keeps its connection after this request
  bool client_http10 = false;      // an HTTP/1.0 request: no interim (1xx) response goes back
  // A refusal leaves the connection usable: the framing is sound, the client keeps its connection
  // alive, and the body (if any) comes without waiting for a 100 Continue a refusal never sends.
  bool keep_after_refusal = false;
  std::string rule = "-";          // the deciding rule's label (the request line's rule=)
  RequestVerdict verdict = RequestVerdict::allowed;  // the rules' answer to the request as sent
  bool report = false;             // a report-mode denial let through (class request denied)
  bool websocket = false;          // an allowed WebSocket upgrade
  std::optional<std::string> misdirected;  // secret misdirected: the secret whose placeholder it was
  bool ask = false;  // the rule (or endpoint) that allowed it says "ask": true (SPEC §20)
  // The supervisor's answer to this request's ask, once the caller has it (the ask stage waits
  // until then).
  std::optional<RequestAsked> asked;

  // ---- what the stages change: the head the origin gets is composed from these ----
  std::unique_ptr<SwappedHead> swapped;  // set when the swap stage ran: the head with values in
  InjectedFields injected;               // the "inject" headers, expanded
  std::vector<std::string> dropped_fields;  // names (lower case) of the box's headers not sent on
  std::vector<std::pair<std::string, std::string>> added_fields;  // headers the stages add (no secret)

  std::vector<TraceEntry> trace;  // in the order the stages acted

  RequestContext(const RequestHead& head_, const InspectEndpoint& endpoint_, const DecidedOrigin& origin_,
                 const SecretLookup& secrets_, const Placeholders* placeholders_)
      : head(head_), endpoint(endpoint_), origin(origin_), secrets(secrets_), placeholders(placeholders_) {}

  // The head as it stands after the stages' edits (views into `head` and `swapped`).
  [[nodiscard]] const RequestHead& outgoing() const noexcept { return swapped ? swapped->head() : head; }
};

}  // namespace boxproxy
