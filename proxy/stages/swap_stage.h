// SPDX-License-Identifier: Apache-2.0
// SPEC §19: each placeholder of a secret the endpoint's "secrets" lists is swapped for the
// secret's value (proxy/wire/header_inject.h's SwappedHead). A secret not set is `secret missing`
// (a request is never sent with a placeholder where its credential belongs); a value in the target
// that changes what the rules answer is `bad path`, so a value never opens a path its placeholder
// did not. Runs in both modes, after the rules: a report-mode denial is still sent with its values.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class SwapStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "swap"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
