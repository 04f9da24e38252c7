// SPDX-License-Identifier: Apache-2.0
// The first stage (SPEC §18 "Each request", 1): the request's framing, as §8 reads it. A body whose
// end is ambiguous or broken is `bad framing`; two Host headers are `bad request` (which one an
// origin would read is anyone's guess); a GET or HEAD with a body is `bad framing` unless the
// endpoint says "get-bodies" (SPEC §19a). It also notes what the connection needs of every request,
// judged or not: keep-alive, HTTP/1.0, and whether a refusal can leave the connection usable.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class FramingStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "framing"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
