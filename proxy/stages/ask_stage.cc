// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/ask_stage.h"

namespace boxproxy {

StageVerdict AskStage::on_request(RequestContext& context) const {
  // A report-mode denial let through is not the rules' grant: nothing to ask about.
  if (!context.ask || context.verdict != RequestVerdict::allowed) return StageVerdict::proceed();
  if (!context.asked) return StageVerdict::wait();
  context.trace.push_back({name(), std::string(asked_text(*context.asked))});
  switch (*context.asked) {
    case RequestAsked::once:
    case RequestAsked::always:
      return StageVerdict::proceed();
    case RequestAsked::deny:
    case RequestAsked::timeout:
    case RequestAsked::none:
      break;
  }
  // Fail closed: no answer is never a yes (the supervisor may be a person who stepped away).
  return StageVerdict::refuse(Reason::request_denied);
}

}  // namespace boxproxy
