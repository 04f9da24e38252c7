// SPDX-License-Identifier: Apache-2.0
// The request stages, in order, and where each runs: the one table (SPEC §18-§20's order).
#include "proxy/stages/request_pipeline.h"

#include <array>

#include "proxy/stages/ask_stage.h"
#include "proxy/stages/coding_stage.h"
#include "proxy/stages/framing_stage.h"
#include "proxy/stages/host_stage.h"
#include "proxy/stages/inject_stage.h"
#include "proxy/stages/misdirected_stage.h"
#include "proxy/stages/rules_stage.h"
#include "proxy/stages/sign_stage.h"
#include "proxy/stages/swap_stage.h"

namespace boxproxy {
namespace {

constexpr unsigned kInspector = static_cast<unsigned>(StageScope::inspector);
constexpr unsigned kPlain = static_cast<unsigned>(StageScope::plain);
constexpr unsigned kCheck = static_cast<unsigned>(StageScope::check);

struct StageRow {
  const RequestStage& stage;
  unsigned scopes;  // StageScope bits
};

const FramingStage kFraming;
const HostStage kHost;
const PresignedStage kPresigned;
const MisdirectedStage kMisdirected;
const CodingStage kCoding;
const RulesStage kRules;
const AskStage kAsk;
const SwapStage kSwap;
const InjectStage kInject;
const SignStage kSign;  // after every other change (SPEC §20)

// Plain HTTP: serve read the framing and the Host of the absolute URI already (SPEC §8), and
// refused every placeholder before the decision (no plain request may carry one); it holds no
// secret, so its inject and sign stages refuse every injecting or signing endpoint's request. check
// judges a method and a URL: only the stages that read no more than those (no supervisor to ask either).
const std::array<StageRow, 10> kStages = {{
    {kFraming, kInspector},
    {kHost, kInspector},
    {kPresigned, kInspector},
    {kMisdirected, kInspector},
    {kCoding, kInspector | kCheck},
    {kRules, kInspector | kPlain | kCheck},
    {kAsk, kInspector | kPlain},  // before anything is put into a request that may wait
    {kSwap, kInspector},
    {kInject, kInspector | kPlain},
    {kSign, kInspector | kPlain},
}};

RequestPipeline make_pipeline(StageScope scope) {
  std::vector<const RequestStage*> stages;
  for (const StageRow& row : kStages) {
    if ((row.scopes & static_cast<unsigned>(scope)) != 0) stages.push_back(&row.stage);
  }
  return RequestPipeline(std::move(stages));
}

}  // namespace

const RequestPipeline& RequestPipeline::for_scope(StageScope scope) {
  static const RequestPipeline inspector = make_pipeline(StageScope::inspector);
  static const RequestPipeline plain = make_pipeline(StageScope::plain);
  static const RequestPipeline check = make_pipeline(StageScope::check);
  switch (scope) {
    case StageScope::inspector:
      return inspector;
    case StageScope::plain:
      return plain;
    case StageScope::check:
      return check;
  }
  return inspector;
}

PipelineOutcome RequestPipeline::run(RequestContext& context, std::size_t from) const {
  for (std::size_t i = from; i < stages_.size(); ++i) {
    const StageVerdict verdict = stages_[i]->on_request(context);
    if (verdict.action != StageVerdict::Action::proceed) return {verdict, i};
  }
  return {StageVerdict::proceed(), stages_.size()};
}

}  // namespace boxproxy
