// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/framing_stage.h"

#include <variant>

#include "proxy/wire/http_forward.h"
#include "table/ascii.h"
#include "table/inspect_request_checks.h"

namespace boxproxy {
namespace {

bool has_body(const BodyFraming& framing) noexcept {
  return framing.kind == BodyFraming::Kind::chunked ||
         (framing.kind == BodyFraming::Kind::length && framing.length > 0);
}

bool expects_continue(const RequestHead& head) {
  for (const auto& field : head.headers) {
    if (iequals(field.name, "Expect") && iequals(field.value, "100-continue")) return true;
  }
  return false;
}

std::size_t host_fields(const RequestHead& head) {
  std::size_t count = 0;
  for (const auto& field : head.headers) count += iequals(field.name, "Host") ? 1 : 0;
  return count;
}

}  // namespace

StageVerdict FramingStage::on_request(RequestContext& context) const {
  const RequestHead& head = context.head;
  context.client_keep_alive = client_wants_keep_alive(head);
  context.client_http10 = head.version == "HTTP/1.0";
  auto framing = request_framing(head);
  if (std::holds_alternative<Reason>(framing)) return StageVerdict::refuse(Reason::bad_framing);
  context.framing = std::get<BodyFraming>(framing);
  // SPEC §19a: a GET or HEAD with a body, unless the endpoint says "get-bodies": an origin that
  // ignores the body would read it as a next request that no rule judged.
  const bool chunked = context.framing.kind == BodyFraming::Kind::chunked;
  const std::uint64_t length = context.framing.kind == BodyFraming::Kind::length ? context.framing.length : 0;
  if (get_body_refused(context.endpoint, head.method, length, chunked)) return StageVerdict::refuse(Reason::bad_framing);
  if (host_fields(head) > 1) return StageVerdict::refuse(Reason::bad_request);
  // From here on the body can be found, so a refusal need not end the connection.
  context.keep_after_refusal = context.client_keep_alive && !(has_body(context.framing) && expects_continue(head));
  return StageVerdict::proceed();
}

}  // namespace boxproxy
