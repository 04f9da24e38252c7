// SPDX-License-Identifier: Apache-2.0
// SPEC §18 "Each request", 2: the one Host header must name the decided host, its port the decided
// one (which it may leave out when that is the scheme's default), else `host mismatch`. What it
// stops: a box reaching an inspected endpoint's address and asking it, by Host, for another site
// the rules never saw.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class HostStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "host"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
