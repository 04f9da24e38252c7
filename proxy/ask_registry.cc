// SPDX-License-Identifier: Apache-2.0
#include "proxy/ask_registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "table/ascii.h"

namespace boxproxy {

std::optional<AskVerdict> parse_verdict(std::string_view text) noexcept {
  if (text == "once") return AskVerdict::once;
  if (text == "always") return AskVerdict::always;
  if (text == "deny") return AskVerdict::deny;
  return std::nullopt;  // "timeout" and "closed" are the proxy's, never a supervisor's
}

std::string_view asked_name(AskVerdict verdict) noexcept {
  switch (verdict) {
    case AskVerdict::once: return "once";
    case AskVerdict::always: return "always";
    case AskVerdict::deny: return "deny";
    case AskVerdict::timeout:
    case AskVerdict::closed: return "timeout";
  }
  return "timeout";
}

AskRegistry::AskRegistry(event_base* base, double timeout_seconds, AddToList add_to_list)
    : base_(base), timeout_seconds_(timeout_seconds), add_to_list_(std::move(add_to_list)) {}

AskRegistry::~AskRegistry() = default;

namespace {

// A request ask's key: the endpoint, the method and the path, exactly as sent (SPEC §20: `always`
// covers the same method and path, case as sent).
std::string request_key(const RequestQuestion& question) {
  return fmt::format("R {}:{} {} {}", ascii_lower(question.host), question.port, question.method, question.path);
}

}  // namespace

template <class Event>
AskRegistry::Ticket AskRegistry::join_or_ask(std::string key, std::string list_entry, const Event& event,
                                             void* waiter, OnVerdict on_verdict) {
  try {
    if (const auto pending = by_key_.find(key); pending != by_key_.end()) {
      // One question for a burst of connections (or requests) to one place.
      asks_.at(pending->second)->waiters.push_back({waiter, on_verdict});
      return Ticket(this, pending->second, waiter);
    }
    if (!publish_) return {};
    auto ask = std::make_unique<Ask>();
    ask->registry = this;
    ask->number = last_number_ + 1;
    ask->key = key;
    ask->list_entry = std::move(list_entry);
    ask->event_line = event(ask->number);
    ask->timer.emplace(base_, &AskRegistry::on_timeout, ask.get());
    if (!ask->timer->valid()) return {};
    // Nobody to ask: refused at once (SPEC §15, §20), and the number is not spent.
    if (publish_(ask->event_line) == 0) return {};
    ++last_number_;
    ask->timer->arm(timeout_seconds_);
    ask->waiters.push_back({waiter, on_verdict});
    const std::uint64_t number = ask->number;
    by_key_.emplace(std::move(key), number);
    asks_.emplace(number, std::move(ask));
    return Ticket(this, number, waiter);
  } catch (const std::bad_alloc&) {
    return {};
  }
}

AskRegistry::Ticket AskRegistry::ask(std::string_view host, std::uint16_t port, ClientKind kind, ConnectionId id,
                                     void* waiter, OnVerdict on_verdict) {
  std::string name = ascii_lower(host);
  if (!name.empty() && name.back() == '.') name.pop_back();
  std::string entry = fmt::format("{}:{}", name, port);
  const auto event = [&](std::uint64_t number) {
    return fmt::format(R"({{"event":"ask","ask":{},"host":{},"port":{},"kind":"{}","id":{}}})", number,
                       json_quote(name), port, kind_name(kind), id);
  };
  return join_or_ask("C " + entry, entry, event, waiter, on_verdict);
}

AskRegistry::Ticket AskRegistry::ask_request(const RequestQuestion& question, void* waiter, OnVerdict on_verdict) {
  const auto event = [&](std::uint64_t number) {
    // Every string quoted as a host is: the inspector checked them (printable ASCII), and the
    // supervisor's parser must never be the first to see a byte that could break a line.
    return fmt::format(
        R"({{"event":"ask","ask":{},"kind":"request","host":{},"port":{},"method":{},"path":{},"rule":{},"id":{}{}}})",
        number, json_quote(question.host), question.port, json_quote(question.method, 32),
        json_quote(question.path, 8192), json_quote(question.rule, 80), question.id,
        question.query ? R"(,"query":true)" : "");
  };
  return join_or_ask(request_key(question), std::string(), event, waiter, on_verdict);
}

bool AskRegistry::always_allows(const RequestQuestion& question) const {
  return !always_requests_.empty() && always_requests_.contains(request_key(question));
}

std::optional<std::string> AskRegistry::answer(std::uint64_t ask, AskVerdict verdict) {
  if (asks_.find(ask) == asks_.end()) {
    if (ask == 0 || ask > last_number_) return fmt::format("no ask {}", ask);
    return fmt::format("ask {} is no longer pending (it was answered, timed out, or every client waiting on it left)",
                       ask);
  }
  finish(ask, verdict);
  return std::nullopt;
}

void AskRegistry::channels_closed() {
  while (!asks_.empty()) finish(asks_.begin()->first, AskVerdict::closed);
}

std::vector<std::string> AskRegistry::pending_events() const {
  std::vector<std::string> events;
  for (const auto& [number, ask] : asks_) events.push_back(ask->event_line);
  return events;
}

void AskRegistry::leave(std::uint64_t ask, void* waiter) noexcept {
  const auto it = asks_.find(ask);
  if (it == asks_.end()) return;  // answered already
  auto& waiters = it->second->waiters;
  waiters.erase(std::remove_if(waiters.begin(), waiters.end(), [&](const Waiter& w) { return w.waiter == waiter; }),
                waiters.end());
  if (waiters.empty()) {
    // Nobody waits any more: forgotten, so asks never outnumber the clients waiting on them.
    by_key_.erase(it->second->key);
    asks_.erase(it);
  }
}

void AskRegistry::finish(std::uint64_t number, AskVerdict verdict) noexcept {
  const auto it = asks_.find(number);
  if (it == asks_.end()) return;
  // Forgotten first: a waiter told below may end, and its ticket then finds nothing to leave.
  std::unique_ptr<Ask> ask = std::move(it->second);
  asks_.erase(it);
  by_key_.erase(ask->key);
  if (verdict == AskVerdict::always) {
    try {
      if (!ask->list_entry.empty()) {
        if (add_to_list_) add_to_list_(ask->list_entry);
      } else if (always_requests_.size() < kMaxAlwaysRequests) {
        always_requests_.insert(ask->key);
      }
    } catch (...) {
      // Out of memory: this decision (or request) still goes on as "once".
    }
  }
  const std::vector<Waiter> waiters = std::move(ask->waiters);
  ask.reset();  // its timer too
  for (const Waiter& waiter : waiters) waiter.on_verdict(waiter.waiter, verdict);
}

void AskRegistry::on_timeout(void* arg) noexcept {
  auto* ask = static_cast<Ask*>(arg);
  ask->registry->finish(ask->number, AskVerdict::timeout);
}

}  // namespace boxproxy
