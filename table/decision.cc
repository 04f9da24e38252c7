// SPDX-License-Identifier: Apache-2.0
#include "table/decision.h"

#include <algorithm>
#include <utility>

#include "table/address_rule.h"

namespace boxproxy {
namespace {

// Keeps the first of each address, in order: a name that answers 1.1.1.1 twice is dialled once,
// and check prints it once. Quadratic over a short list: an operator's --resolve answers, or one
// DNS reply (evdns reads a reply into 1,500 bytes: fewer than a hundred addresses).
void remove_repeats(std::vector<IpAddress>& answers) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto first_kept = answers.begin();
    const auto end_kept = answers.begin() + static_cast<std::ptrdiff_t>(kept);
    if (std::find(first_kept, end_kept, answers[i]) != end_kept) continue;
    if (kept != i) answers[kept] = std::move(answers[i]);
    ++kept;
  }
  answers.erase(answers.begin() + static_cast<std::ptrdiff_t>(kept), answers.end());
}

// Whether the host's own addresses could still refuse an answer that the rest of the rule lets
// through. This-host is the rule's last step, and --permit is final (an operator's grant is never
// this-host), so only an answer outside every --permit range reaches it. Reading the interface
// list only then keeps it off the path of a permitted or refused target (a netlink check per
// decision, and a dozen system calls when the list changed).
bool may_be_this_host(const AddressRule& rule, const IpAddress& answer) noexcept {
  return std::none_of(rule.permit.begin(), rule.permit.end(), [&](const Cidr& range) { return range.contains(answer); });
}

}  // namespace

Decision::Step Decision::start(const Policy& policy, const Target& target, Asking asking) {
  policy_ = &policy;
  answers_.clear();
  verdicts_.clear();
  refused_index_ = kNone;
  // Step 2 before any lookup: a name off the list never leaves the machine, not even as a query
  // (a box could otherwise spell data into names a DNS server it controls would read).
  if (const auto match = check_host_list(policy, target)) {
    not_listed_match_ = *match;
    // SPEC §15: with --ask, a *name* the list does not cover is asked about rather than refused
    // at once. Never an IP literal: a box could otherwise get an address approved that no name
    // on the list stands for, and a person asked "may it reach 10.0.0.1?" cannot judge it.
    if (asking == Asking::on && target.is_name()) {
      step_ = Step::ask;
      return step_;
    }
    return refuse(Reason::not_listed);
  }
  return after_host_list(target);
}

Decision::Step Decision::asked(bool approved, const Target& target) {
  if (step_ != Step::ask) return step_;  // not asked for: nothing changes
  // Approved, the name is resolved and every answer judged as for a listed name: an approval
  // opens a name, never the address rule.
  return approved ? after_host_list(target) : refuse(Reason::not_listed);
}

// Step 3: an IP literal is its bytes; a name takes its --resolve answers, else DNS.
Decision::Step Decision::after_host_list(const Target& target) {
  if (target.address) {
    answers_.push_back(*target.address);
    return answers_known();
  }
  if (const auto* fixed = fixed_answers_for(*policy_, target.host)) {
    answers_.assign(fixed->begin(), fixed->end());
    return answers_known();
  }
  step_ = Step::need_lookup;
  return step_;
}

Decision::Step Decision::answers_found(std::vector<IpAddress> answers) {
  if (step_ != Step::need_lookup) return step_;  // not asked for: nothing changes
  answers_ = std::move(answers);
  return answers_known();
}

Decision::Step Decision::answers_known() {
  // No answer at all is never "every answer is fine": there is nothing checked to dial.
  if (answers_.empty()) return refuse(Reason::name_not_resolved);
  remove_repeats(answers_);
  if (detail_ == Detail::every_answer) verdicts_.assign(answers_.size(), std::nullopt);
  return judge({}, false);
}

Decision::Step Decision::local_addresses_read(std::span<const IpAddress> local_addresses) {
  if (step_ != Step::need_local_addresses) return step_;  // not asked for: nothing changes
  return judge(local_addresses, true);
}

// Step 4: every answer is judged, and only judged answers are ever dialled, so a name cannot point
// somewhere else between the check and the dial. The first refused answer refuses the target with
// its class. The host's own addresses are asked for only when they can change that: when an answer
// before the first refused one (or, for every_answer, any answer) could still be this-host.
Decision::Step Decision::judge(std::span<const IpAddress> local_addresses, bool have_local_addresses) {
  const AddressRule& rule = policy_->rule;
  refused_index_ = kNone;
  bool local_addresses_matter = false;
  for (std::size_t i = 0; i < answers_.size(); ++i) {
    const std::optional<Reason> refusal = judge_address(rule, answers_[i], local_addresses);
    if (detail_ == Detail::every_answer) verdicts_[i] = refusal;
    if (!refusal && !have_local_addresses && may_be_this_host(rule, answers_[i])) local_addresses_matter = true;
    if (refusal && refused_index_ == kNone) {
      refused_index_ = i;
      reason_ = *refusal;
      if (detail_ == Detail::first_refusal) break;
    }
  }
  if (local_addresses_matter) {
    step_ = Step::need_local_addresses;
  } else {
    step_ = refused_index_ == kNone ? Step::dial : Step::refuse;
  }
  return step_;
}

Decision::Step Decision::refuse(Reason reason) noexcept {
  reason_ = reason;
  step_ = Step::refuse;
  return step_;
}

const IpAddress* Decision::refused_address() const noexcept {
  if (step_ != Step::refuse || refused_index_ == kNone) return nullptr;
  return &answers_[refused_index_];
}

std::optional<Reason> Decision::verdict(std::size_t i) const noexcept {
  if (i < verdicts_.size()) return verdicts_[i];
  if (i == refused_index_) return reason_;
  return std::nullopt;
}

}  // namespace boxproxy
