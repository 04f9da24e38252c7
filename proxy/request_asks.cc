// SPDX-License-Identifier: Apache-2.0
#include "proxy/request_asks.h"

#include <algorithm>

namespace boxproxy {
namespace {

RequestAsked asked_of(AskVerdict verdict) noexcept {
  switch (verdict) {
    case AskVerdict::once: return RequestAsked::once;
    case AskVerdict::always: return RequestAsked::always;
    case AskVerdict::deny: return RequestAsked::deny;
    case AskVerdict::timeout:
    case AskVerdict::closed: return RequestAsked::timeout;  // no answer came
  }
  return RequestAsked::timeout;
}

}  // namespace

void RequestAsks::ask(const InspectorAsk& ask) {
  const RequestQuestion question{host_, port_, ask.method, ask.path, ask.query, ask.rule, ask.id};
  if (registry_ == nullptr) return answer_(ask.n, RequestAsked::none);
  if (registry_->always_allows(question)) return answer_(ask.n, RequestAsked::always);
  const bool taken = std::any_of(held_.begin(), held_.end(), [&](const auto& held) { return held->n == ask.n; });
  // An inspector naming an ask twice, or more than a box can have open, is answered `none`: the
  // request is refused, and serve holds no more.
  if (taken || held_.size() >= kMaxAsksPerConnection) return answer_(ask.n, RequestAsked::none);
  auto held = std::make_unique<Held>();
  held->owner = this;
  held->n = ask.n;
  held->ticket = registry_->ask_request(question, held.get(), &on_verdict);
  // Nobody to ask (no control client open): refused at once, asked=none (SPEC §20).
  if (!held->ticket.held()) return answer_(ask.n, RequestAsked::none);
  held_.push_back(std::move(held));
}

void RequestAsks::on_verdict(void* context, AskVerdict verdict) noexcept {
  auto* held = static_cast<Held*>(context);
  RequestAsks* owner = held->owner;
  const std::uint64_t n = held->n;
  // Forgotten first (the registry has let it go already, so its ticket leaves nothing).
  std::erase_if(owner->held_, [&](const auto& each) { return each.get() == held; });
  try {
    owner->answer_(n, asked_of(verdict));
  } catch (...) {
    // Out of memory sending it: the inspector's request waits on; its connection's own timers and
    // the box end it.
  }
}

}  // namespace boxproxy
