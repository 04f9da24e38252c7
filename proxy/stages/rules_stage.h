// SPDX-License-Identifier: Apache-2.0
// SPEC §18 "Each request", 4: the path and the endpoint's rules (table/inspect_endpoint.h's
// judge_request): `bad path`, then `request denied`; in report mode a denial is let through,
// marked `report` (and logged with report=1). Every other stage's refusal holds in both modes.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class RulesStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "rules"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
