// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/swap_stage.h"

namespace boxproxy {

StageVerdict SwapStage::on_request(RequestContext& context) const {
  static const Placeholders kNone;
  const Placeholders& placeholders = context.placeholders != nullptr ? *context.placeholders : kNone;
  context.swapped = std::make_unique<SwappedHead>(context.head, context.endpoint, placeholders, context.secrets);
  if (context.swapped->missing()) return StageVerdict::refuse(Reason::secret_missing);
  if (context.swapped->target_changed()) {
    const RequestJudgement again =
        judge_request(context.endpoint, context.head.method, context.swapped->head().target);
    if (again.verdict != context.verdict || again.rule != context.rule) return StageVerdict::refuse(Reason::bad_path);
  }
  return StageVerdict::proceed();
}

}  // namespace boxproxy
