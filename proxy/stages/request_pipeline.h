// SPDX-License-Identifier: Apache-2.0
// The request pipeline: the stages (request_stage.h) an inspected endpoint's requests go through,
// in order, and the one driver that runs them, for the inspector, for plain HTTP to an inspected
// endpoint's port (in serve) and for `boxproxy check`. The stages and the scopes each runs in are
// listed once, in request_pipeline.cc's table: adding a request-level feature is one stage file,
// one row there, and its tests.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

#include "proxy/stages/request_stage.h"

namespace boxproxy {

struct PipelineOutcome {
  StageVerdict verdict;   // proceed: every stage let the request go on
  std::size_t stage = 0;  // refuse: the stage that refused; wait: the one to resume at
};

class RequestPipeline {
 public:
  // The stages listed for `scope`, in the table's order.
  [[nodiscard]] static const RequestPipeline& for_scope(StageScope scope);

  // A pipeline of the given stages (which must outlive it), in order: for tests of the driver.
  explicit RequestPipeline(std::vector<const RequestStage*> stages) : stages_(std::move(stages)) {}

  // Runs the stages from index `from` (0: the first; a waiting request's outcome.stage to resume
  // it) until one refuses or waits, or all let the request go on.
  [[nodiscard]] PipelineOutcome run(RequestContext& context, std::size_t from = 0) const;

  [[nodiscard]] std::span<const RequestStage* const> stages() const noexcept { return stages_; }

 private:
  std::vector<const RequestStage*> stages_;
};

}  // namespace boxproxy
