// SPDX-License-Identifier: Apache-2.0
// SPEC §19 "Injection": the endpoint's "inject" templates expanded with the session's secrets
// (read now, so a rotation applies from the next request); every box header of an injected name
// is dropped when the head is composed. A template naming a secret that is not set is `secret
// missing`, in both modes: a request is never sent with an empty credential. In serve (plain HTTP,
// which holds no secret) every injecting endpoint's request is refused so: a credential never
// crosses the network in clear text.
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class InjectStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "inject"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
