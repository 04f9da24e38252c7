// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/coding_stage.h"

#include "proxy/wire/http_forward.h"
#include "table/ascii.h"

namespace boxproxy {

bool carries_credentials(const InspectEndpoint& endpoint) noexcept {
  return endpoint.injects_or_swaps();  // "secrets" in its object form lists its names in `secrets` too
}

StageVerdict CodingStage::on_request(RequestContext& context) const {
  if (!carries_credentials(context.endpoint)) return StageVerdict::proceed();
  const RequestHead& head = context.head;
  if (iequals(head.method, "TRACE")) return StageVerdict::refuse(Reason::request_denied);
  for (const HeaderField& field : head.headers) {
    if (iequals(field.name, "Upgrade") && !is_websocket_upgrade(head)) return StageVerdict::refuse(Reason::request_denied);
  }
  // Range and If-Range go too: two ranges of a stored text would hand the box a value in two
  // pieces, neither of which the scrubber can recognise (found in review).
  context.dropped_fields = {"accept-encoding", "sec-websocket-extensions", "grpc-accept-encoding", "range", "if-range"};
  context.added_fields = {{"Accept-Encoding", "identity"}, {"grpc-accept-encoding", "identity"}};
  return StageVerdict::proceed();
}

}  // namespace boxproxy
