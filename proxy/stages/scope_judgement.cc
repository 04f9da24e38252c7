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
  const PipelineOutcome outcome = RequestPipeline::for_scope(scope).run(context);
  ScopeJudgement judged;
  judged.rule = context.rule;
  if (outcome.verdict.action != StageVerdict::Action::proceed) {
    judged.refusal = outcome.verdict.reason;  // no stage of these scopes waits
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
