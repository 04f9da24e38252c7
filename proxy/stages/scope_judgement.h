// SPDX-License-Identifier: Apache-2.0
// The request pipeline run where no secret is held: plain HTTP to an inspected endpoint's port, in
// serve (StageScope::plain), and `boxproxy check` (StageScope::check). Both read the same stages'
// answer the inspector would give, as far as their scope reaches.
#pragma once

#include <optional>
#include <string>

#include "proxy/stages/request_stage.h"

namespace boxproxy {

// A secret lookup that holds none: serve's and check's (an "inject" naming any secret is then
// `secret missing`).
[[nodiscard]] const SecretLookup& no_secrets() noexcept;

struct ScopeJudgement {
  std::optional<Reason> refusal;  // set: refused by a stage
  std::string rule = "-";         // the deciding rule's label
  bool report = false;            // a report-mode denial let through
  // SPEC §20: a request an "ask" rule allows. Plain HTTP is not held for the supervisor (see
  // judge_in_scope): it is refused with asked=none.
  std::optional<RequestAsked> asked;
  bool ask = false;  // the rules' grant says "ask": serve would hold it for the supervisor
};

// Runs `scope`'s stages over `head` for `endpoint`, with no secret and no placeholder.
[[nodiscard]] ScopeJudgement judge_in_scope(StageScope scope, const RequestHead& head, const InspectEndpoint& endpoint,
                                            const DecidedOrigin& origin);

}  // namespace boxproxy
