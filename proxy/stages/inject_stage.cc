// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/inject_stage.h"

namespace boxproxy {

StageVerdict InjectStage::on_request(RequestContext& context) const {
  if (context.endpoint.inject.empty()) return StageVerdict::proceed();
  context.injected = expand_endpoint_inject(context.endpoint, context.secrets);
  if (context.injected.missing) return StageVerdict::refuse(Reason::secret_missing);
  for (const auto& [name, value] : context.injected.fields) context.trace.push_back({this->name(), name});
  return StageVerdict::proceed();
}

}  // namespace boxproxy
