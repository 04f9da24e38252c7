// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/swap_stage.h"

namespace boxproxy {

StageVerdict SwapStage::on_request(RequestContext& context) const {
  static const Placeholders kNone;
  const Placeholders& placeholders = context.placeholders != nullptr ? *context.placeholders : kNone;
  context.swapped = std::make_unique<SwappedHead>(context.head, context.endpoint, placeholders, context.secrets,
                                                  context.max_head_bytes);
  if (context.swapped->missing()) return StageVerdict::refuse(Reason::secret_missing);
  // SPEC §19a: a head that swapping grows past --max-head-bytes is refused before anything is
  // sent (777 placeholders of a 4 KiB secret made a 32 KiB head 3.1 MiB).
  if (context.swapped->too_large()) return StageVerdict::refuse(Reason::head_too_large);
  for (const std::string& swap : context.swapped->swaps()) context.trace.push_back({name(), swap});
  if (context.swapped->target_changed()) {
    const RequestJudgement again =
        judge_request(context.endpoint, context.head.method, context.swapped->head().target);
    if (again.verdict != context.verdict || again.rule != context.rule) return StageVerdict::refuse(Reason::bad_path);
  }
  return StageVerdict::proceed();
}

}  // namespace boxproxy
