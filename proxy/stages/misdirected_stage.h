// SPDX-License-Identifier: Apache-2.0
// SPEC §19's tripwire: a placeholder of a secret the endpoint is not listed for, anywhere in the
// request, in any spelling, is `secret misdirected` (403, nothing sent; the line names the
// secret). It runs before the path and the rules, so that the tripwire is never hidden behind
// another refusal.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class MisdirectedStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "misdirected"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
