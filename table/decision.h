// SPDX-License-Identifier: Apache-2.0
// The decision of SPEC §5 for one target, steps 2 to 4: the host list, the answers, the address
// rule. One decision for every driver: serve's connection (proxy/client_decision.cc, which also
// drives the ask step of SPEC §15) and `boxproxy check` (socketd/check_command.cc).
//
// Pure and resumable: it does no I/O. When it needs what only its driver can get (a name's DNS
// answers, the host's own interface addresses), it says so and waits to be fed it; the driver
// decides how to wait (serve on its event loop, check on its own). Step 1 (parsing the target) is
// the protocol's that carried it; step 5 (admission: the tunnel cap, the budget) and step 6 (the
// dial) are the server's.
//
//   Decision decision;
//   Decision::Step step = decision.start(policy, target);
//   while (true) switch (step) {
//     case need_lookup:          step = decision.answers_found(<A and AAAA of target.host>); break;
//     case need_local_addresses: step = decision.local_addresses_read(<the host's addresses>); break;
//     case refuse:               <decision.reason(), decision.refused_address()>; return;
//     case ask:                  step = decision.asked(<the supervisor's verdict>, target); break;
//     case dial:                 <dial decision.answers() in order>; return;
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "table/address.h"
#include "table/host_list.h"
#include "table/policy.h"
#include "table/reason.h"
#include "table/target.h"

namespace boxproxy {

class Decision {
 public:
  enum class Step : std::uint8_t {
    refuse,                // refused: reason(), refused_address(), and for not_listed not_listed_match()
    need_lookup,           // resolve the target's name (A and AAAA), then call answers_found()
    need_local_addresses,  // read the host's own addresses, then call local_addresses_read()
    dial,                  // allowed: dial answers(), in order; every one of them was checked
    ask,                   // a name the list does not cover, and asking is on (SPEC §15): ask the
                           // supervisor about it, then call asked()
  };

  // Whether a name off the host list is asked about (serve with --ask and a control channel)
  // rather than refused at once.
  enum class Asking : std::uint8_t { off, on };

  // How much the driver wants to know. The verdict is the same either way (the first refused
  // answer refuses the target); only what is judged to reach it differs.
  enum class Detail : std::uint8_t {
    first_refusal,  // serve: judging stops at the first refused answer
    every_answer,   // check: every answer is judged, for verdict(i), which prints each one
  };

  explicit Decision(Detail detail = Detail::first_refusal) noexcept : detail_(detail) {}

  // Begins a decision (any earlier one is forgotten; the answers' storage is kept for reuse).
  // `policy` must stay alive, at the same address, until the decision answers refuse or dial;
  // `target` is read only during this call.
  [[nodiscard]] Step start(const Policy& policy, const Target& target, Asking asking = Asking::off);

  // After ask: the supervisor's verdict. Approved, the decision goes on from step 3 (the address
  // rule still applies: an approval names a host, never an address); otherwise it is refused as
  // not-listed. `target` is the one given to start(), read only during this call.
  [[nodiscard]] Step asked(bool approved, const Target& target);

  // After need_lookup: what DNS answered (empty: no answer, a failed lookup, none in time).
  [[nodiscard]] Step answers_found(std::vector<IpAddress> answers);

  // After need_local_addresses: the host's own interface addresses, read now (SPEC §5 step 4).
  // Only read during this call.
  [[nodiscard]] Step local_addresses_read(std::span<const IpAddress> local_addresses);

  // After refuse.
  [[nodiscard]] Reason reason() const noexcept { return reason_; }
  // The answer that refused the target; nullptr when none did (not-listed, name not resolved).
  [[nodiscard]] const IpAddress* refused_address() const noexcept;
  // How the host list refused it, for not_listed_words(); meaningful when reason() is not_listed.
  [[nodiscard]] HostList::Match not_listed_match() const noexcept { return not_listed_match_; }

  // The answers, de-duplicated, in the order given: after dial, the addresses to dial; after a
  // refusal by an answer, every answer (with Detail::every_answer each has its verdict()).
  [[nodiscard]] std::span<const IpAddress> answers() const noexcept { return answers_; }
  // With Detail::every_answer, after refuse or dial: answer i's class, or nullopt when it may be
  // dialled. With Detail::first_refusal, answers after the first refused one are not judged.
  [[nodiscard]] std::optional<Reason> verdict(std::size_t i) const noexcept;

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  [[nodiscard]] Step after_host_list(const Target& target);
  [[nodiscard]] Step answers_known();
  [[nodiscard]] Step judge(std::span<const IpAddress> local_addresses, bool have_local_addresses);
  [[nodiscard]] Step refuse(Reason reason) noexcept;

  Detail detail_;
  Step step_ = Step::refuse;
  const Policy* policy_ = nullptr;
  std::vector<IpAddress> answers_;
  std::vector<std::optional<Reason>> verdicts_;  // Detail::every_answer only, one per answer
  std::size_t refused_index_ = kNone;            // the answer that refused the target
  Reason reason_ = Reason::invalid_target;
  HostList::Match not_listed_match_ = HostList::Match::not_listed;
};

}  // namespace boxproxy
