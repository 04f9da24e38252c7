// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/scope_judgement.h"

#include "proxy/stages/request_pipeline.h"

namespace boxproxy {
namespace {

struct NoSecrets final : SecretLookup {
  std::optional<std::string_view> secret(std::string_view) const override { return std::nullopt; }
};

}  // namespace

const SecretLookup& no_secrets() noexcept {
  static const NoSecrets none;
  return none;
}

ScopeJudgement judge_in_scope(StageScope scope, const RequestHead& head, const InspectEndpoint& endpoint,
                              const DecidedOrigin& origin) {
  RequestContext context(head, endpoint, origin, no_secrets(), nullptr);
  const RequestPipeline& pipeline = RequestPipeline::for_scope(scope);
  PipelineOutcome outcome = pipeline.run(context);
  if (outcome.verdict.action == StageVerdict::Action::wait) {
    // The ask stage (SPEC §20). Plain HTTP to an endpoint that asks is refused, not held: its
    // request and body would cross the network in clear text on the supervisor's say-so, and the
    // operator who asks to be asked wants the TLS path, where the proxy sees what it lets go.
    context.asked = RequestAsked::none;
    outcome = pipeline.run(context, outcome.stage);
  }
  ScopeJudgement judged;
  judged.rule = context.rule;
  judged.ask = context.ask && context.verdict == RequestVerdict::allowed;
  if (context.asked) judged.asked = context.asked;
  if (outcome.verdict.action != StageVerdict::Action::proceed) {
    judged.refusal = outcome.verdict.reason;
  } else if (scope == StageScope::plain && (!endpoint.inject.empty() || endpoint.sign)) {
    // serve holds no secret, and a credential never crosses the network in clear text: every
    // plain request to an injecting (or signing) endpoint is refused, even one whose templates name no secret.
    judged.refusal = Reason::secret_missing;
  } else {
    judged.report = context.report;
  }
  return judged;
}

}  // namespace boxproxy
