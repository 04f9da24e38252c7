// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/rules_stage.h"

namespace boxproxy {

StageVerdict RulesStage::on_request(RequestContext& context) const {
  const RequestJudgement judged = judge_request(context.endpoint, context.head.method, context.head.target);
  context.rule = judged.rule;
  context.verdict = judged.verdict;
  context.ask = judged.ask;
  switch (judged.verdict) {
    case RequestVerdict::allowed:
      return StageVerdict::proceed();
    case RequestVerdict::bad_path:
      return StageVerdict::refuse(Reason::bad_path);
    case RequestVerdict::request_denied:
      if (context.endpoint.mode != InspectMode::report) return StageVerdict::refuse(Reason::request_denied);
      context.report = true;  // logged as denied, with report=1, and sent on (SPEC §18)
      return StageVerdict::proceed();
  }
  return StageVerdict::refuse(Reason::request_denied);
}

}  // namespace boxproxy
