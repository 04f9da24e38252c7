// SPDX-License-Identifier: Apache-2.0
// A request stage: one request-level feature of an inspected endpoint (SPEC §18-§20), as one type
// in one file, listed once in the pipeline's table (request_pipeline.cc). A stage reads the
// request context (request_context.h) and answers: go on to the next stage, refuse the request
// (with the refusal of SPEC §6's table it stands for), or wait (its answer comes later: the driver
// is resumed at the same stage, which then runs again). Stages never do I/O; one that waits
// (an ask) has its caller do it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/stages/request_context.h"
#include "table/reason.h"

namespace boxproxy {

struct StageVerdict {
  enum class Action : std::uint8_t {
    proceed,  // the next stage runs
    refuse,   // the request is answered with `reason` and never sent
    wait,     // held: the caller resumes the pipeline at this stage when its answer comes
  };
  Action action = Action::proceed;
  Reason reason = Reason::request_denied;  // with refuse

  [[nodiscard]] static constexpr StageVerdict proceed() noexcept { return {}; }
  [[nodiscard]] static constexpr StageVerdict refuse(Reason why) noexcept { return {Action::refuse, why}; }
  [[nodiscard]] static constexpr StageVerdict wait() noexcept { return {Action::wait, Reason::request_denied}; }
};

// Where a pipeline runs (the scopes a stage is listed for in request_pipeline.cc).
enum class StageScope : std::uint8_t {
  inspector = 1,  // every request of an inspected connection, inside TLS (the inspecting process)
  plain = 2,      // plain HTTP to an inspected endpoint's port, in serve (which holds no secret)
  check = 4,      // `boxproxy check` (no network, no secrets, no supervisor)
};

class RequestStage {
 public:
  virtual ~RequestStage() = default;
  // The stage's word: what the trace and the tests call it.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  // Its judgement of (and changes to) the request in `context`.
  [[nodiscard]] virtual StageVerdict on_request(RequestContext& context) const = 0;

 protected:
  RequestStage() = default;
  RequestStage(const RequestStage&) = default;
  RequestStage& operator=(const RequestStage&) = default;
};

}  // namespace boxproxy
