// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/misdirected_stage.h"

namespace boxproxy {

StageVerdict MisdirectedStage::on_request(RequestContext& context) const {
  if (context.placeholders == nullptr) return StageVerdict::proceed();
  context.misdirected = misdirected_placeholder(context.head, context.endpoint, *context.placeholders);
  return context.misdirected ? StageVerdict::refuse(Reason::secret_misdirected) : StageVerdict::proceed();
}

}  // namespace boxproxy
