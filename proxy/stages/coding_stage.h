// SPDX-License-Identifier: Apache-2.0
// SPEC §19a, on an endpoint that injects or swaps a credential: what would let the value come back
// in a form the response scrubber cannot read, or be echoed whole, is kept out. `TRACE` (an origin
// echoes the request, credential and all) and an `Upgrade` other than websocket (a protocol whose
// bytes nobody reads) are `request denied`, whatever the rules say and in report mode too; the box's
// `Accept-Encoding` becomes `identity`, `Sec-WebSocket-Extensions` goes (no compressed frames), and
// `grpc-accept-encoding: identity` asks a gRPC origin for uncompressed messages, so what comes back
// is searched as the bytes it is. Every other endpoint keeps the box's headers.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

// Whether `endpoint` puts a credential into requests ("inject", or "secrets" to swap).
[[nodiscard]] bool carries_credentials(const InspectEndpoint& endpoint) noexcept;

class CodingStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "coding"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
