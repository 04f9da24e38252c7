// SPDX-License-Identifier: Apache-2.0
// SPEC §20 "Ask per request": a request that a rule (or endpoint) with "ask": true allows is held
// until the supervisor answers. The stage itself does no I/O: it waits until its caller puts the
// answer in the context (RequestContext::asked), then lets the request go (once, always) or refuses
// it as `request denied` (deny, timeout, none), and records asked= in the trace either way.
// It sits right after the rules: nothing is swapped or injected into a request that waits, so a
// held request holds no secret.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class AskStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "asked"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
