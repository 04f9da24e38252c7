// SPDX-License-Identifier: Apache-2.0
// serve's end of the channel to its inspector (proxy/inspector_link.h).
#include "proxy/inspector_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <vector>

#include "proxy/client_connection.h"

namespace boxproxy {

InspectorLink::InspectorLink(event_base* base, UniqueFd channel, DecisionLog& log)
    : log_(log),
      channel_(base, std::move(channel), &on_message, &on_closed, this),
      closer_(base),
      teardown_(base, &on_teardown, this) {
  alive_ = channel_.valid() && closer_.valid() && teardown_.valid();
}

bool InspectorLink::hand_over(ClientConnection& connection, const InspectorConnection& what, UniqueFd client,
                              UniqueFd upstream) {
  const int fds[] = {client.get(), upstream.get()};
  const bool sent = alive_ && channel_.send(serve_message(what), std::span<const int>(fds, upstream.valid() ? 2 : 1));
  // serve's copies close after the loop's next pass (proxy/loop_pass_closer.h says why).
  closer_.close_after_loop_pass(std::move(client));
  closer_.close_after_loop_pass(std::move(upstream));
  if (sent) held_[what.id] = &connection;
  return sent;
}

void InspectorLink::keep_pooled(ConnectionId id, std::string_view host, std::uint16_t port, const IpAddress* address,
                                TunnelSlot slot) {
  if (!alive_) return;  // the slot goes with the token: the inspector and its pool are gone
  if (address == nullptr) return close_kept(id, std::move(slot));  // cannot be matched
  try {
    if (const auto pushed_out = ledger_.file(id, host, port, *address, std::move(slot))) evict(*pushed_out);
  } catch (const std::bad_alloc&) {
    evict(id);  // not filed: its slot is freed, so the inspector must close it
  }
}

void InspectorLink::close_kept(ConnectionId id, TunnelSlot slot) noexcept {
  if (!alive_) return;  // the slot goes with the token: the inspector and its pool are gone
  try {
    ledger_.closing(id, std::move(slot));  // held until the inspector's "unpooled"
  } catch (const std::bad_alloc&) {
    // Not held: freed as the token goes, a moment before the inspector closes it.
  }
  evict(id);
}

std::optional<OriginLedger::Taken> InspectorLink::take_pooled(std::string_view host, std::uint16_t port,
                                                              std::span<const IpAddress> answers) {
  if (!alive_) return std::nullopt;
  return ledger_.take_match(host, port, answers);
}

std::optional<TunnelSlot> InspectorLink::evict_oldest() {
  if (!alive_) return std::nullopt;
  auto oldest = ledger_.take_oldest();
  if (!oldest) return std::nullopt;
  evict(oldest->id);
  return std::move(oldest->slot);
}

bool InspectorLink::evict_for(ClientConnection& waiter, std::uint64_t& id) {
  if (!alive_) return false;
  auto oldest = ledger_.take_oldest();
  if (!oldest) return false;
  id = oldest->id;
  try {
    ledger_.closing(id, std::move(oldest->slot));
    waiters_[id] = &waiter;
  } catch (const std::bad_alloc&) {
    evict(id);  // its slot (wherever it is now) is freed; the waiter is refused as at the cap
    return false;
  }
  evict(id);
  return true;
}

void InspectorLink::evict_uninspected(const std::function<bool(const std::string&, std::uint16_t)>& inspected) {
  for (const std::uint64_t id : ledger_.drop_if([&](const std::string& host, std::uint16_t port) {
         return !inspected(host, port);
       })) {
    evict(id);
  }
}

// SPEC §5: the inspector closes `id` and says "unpooled" when it has (the slot, if serve holds one
// for it still, is freed then).
void InspectorLink::evict(std::uint64_t id) noexcept {
  if (alive_ && !channel_.send(serve_message(InspectorEvict{id}))) broken("the channel is full");
}

void InspectorLink::dialled(ConnectionId id, int upstream_fd) {
  if (!alive_) return;
  const bool ok = upstream_fd >= 0;
  const int fds[] = {upstream_fd};
  if (!channel_.send(serve_message(InspectorDialled{id, ok}), ok ? std::span<const int>(fds) : std::span<const int>())) {
    broken("the channel is full");
  }
}

void InspectorLink::answer(const InspectorAnswer& answer) {
  if (alive_ && held_.contains(answer.id) && !channel_.send(serve_message(answer))) broken("the channel is full");
}

void InspectorLink::endpoints_changed(std::string endpoints_json) {
  if (alive_ && !channel_.send(serve_message(InspectorEndpoints{std::move(endpoints_json)}))) {
    broken("the channel is full");
  }
}

std::optional<std::string> InspectorLink::set_secret(std::string_view name, const SecretText* value) {
  if (!alive_) return std::string("the request inspector has stopped");
  const auto known = std::find(secret_names_.begin(), secret_names_.end(), name);
  if (value != nullptr && known == secret_names_.end() && secret_names_.size() >= kMaxSecrets) {
    return fmt::format("{} secrets are set already, the most a session holds (revoke one first)", kMaxSecrets);
  }
  InspectorSecret secret{std::string(name), std::nullopt};
  if (value != nullptr) secret.value.emplace(value->view());
  std::string message = serve_message(std::move(secret));
  const bool sent = channel_.send(message);
  scrub(message);  // FdChannel keeps its own copy until sent, and scrubs that one
  if (!sent) {
    broken("the channel is full");
    return std::string("the request inspector has stopped");
  }
  if (value == nullptr && known != secret_names_.end()) secret_names_.erase(known);
  if (value != nullptr && known == secret_names_.end()) secret_names_.emplace_back(name);
  return std::nullopt;
}

bool InspectorLink::placeholder_made(std::string_view name, std::string_view value) {
  return alive_ && channel_.send(serve_message(InspectorPlaceholder{std::string(name), std::string(value)}));
}

void InspectorLink::on_message(void* self, ChannelMessage message) noexcept {
  static_cast<InspectorLink*>(self)->route(std::move(message));
}

void InspectorLink::on_closed(void* self) noexcept { static_cast<InspectorLink*>(self)->broken("it closed the channel"); }

// Each report goes to the connection it names, which must be one handed over and still held: an
// inspector made to name another box's connection (or one long gone) is cut off instead.
void InspectorLink::route(ChannelMessage message) noexcept {
  if (!alive_) return;  // broken: nothing it says is believed (its connections end next pass)
  if (!message.fds.empty()) return broken("it sent descriptors");
  auto parsed = parse_inspector_report(message.bytes);
  if (auto* why = std::get_if<std::string>(&parsed)) return broken(*why);
  const InspectorReport& report = std::get<InspectorReport>(parsed);
  if (std::holds_alternative<InspectorReady>(report)) return broken("it said ready twice");
  if (const auto* unpooled = std::get_if<InspectorUnpooled>(&report)) {
    // A kept connection closed: its slot is free, or goes to the connection waiting for it. One
    // serve has moved on (taken, or its slot given at the cap) is not filed: nothing to do.
    if (const auto waiter = waiters_.find(unpooled->id); waiter != waiters_.end()) {
      ClientConnection* connection = waiter->second;
      waiters_.erase(waiter);
      if (auto slot = ledger_.take_closing(unpooled->id)) {
        return ClientConnection::evicted(connection, std::move(*slot));  // may delete it
      }
    }
    ledger_.drop(unpooled->id);
    return;
  }
  const ConnectionId id = std::visit(
      [](const auto& r) -> ConnectionId {
        if constexpr (requires { r.id; }) {
          return r.id;
        } else {
          return 0;
        }
      },
      report);
  const auto held = held_.find(id);
  if (held == held_.end()) return broken(fmt::format("it named connection {}, which it does not hold", id));
  ClientConnection* connection = held->second;
  if (const auto* request = std::get_if<InspectorRequest>(&report)) {
    ClientConnection::inspected_request(connection, *request);
  } else if (const auto* ask = std::get_if<InspectorAsk>(&report)) {
    ClientConnection::inspected_ask(connection, *ask);
  } else if (std::holds_alternative<InspectorDial>(report)) {
    ClientConnection::inspected_dial(connection);
  } else if (const auto* ended = std::get_if<InspectorEnded>(&report)) {
    held_.erase(held);
    ClientConnection::inspected_ended(connection, *ended);  // deletes it
  }
}

// The inspector is gone or cannot be believed: every connection it held ends, and none is handed
// over again (alive() is false from now on).
void InspectorLink::broken(std::string_view why) noexcept {
  if (!alive_) return;
  alive_ = false;
  // The inspector is made to end (it ends when its channel does): a full channel or a word serve
  // cannot believe does not mean it has, and the kept connections whose slots are freed next, and
  // the held ones serve ends, must not stay open uncounted (SPEC §5; found in review).
  channel_.shut_down();
  ledger_.clear();  // the inspector's kept connections die with it
  waiters_.clear();  // they wait no more than --connect-timeout (dial timed out)
  log_.message(fmt::format("the request inspector stopped ({}): its connections end, and connections to "
                           "inspected endpoints are refused from now on",
                           why));
  // Not now: the caller may be one of the connections held, or a loop over several (found in
  // review: an ask's waiters answered while the channel filled, each deleted under the loop).
  constexpr double kNextPass = 1e-6;
  teardown_.arm(kNextPass);
}

void InspectorLink::on_teardown(void* self) noexcept {
  auto* link = static_cast<InspectorLink*>(self);
  std::vector<ClientConnection*> held;
  held.reserve(link->held_.size());
  for (const auto& [id, connection] : link->held_) held.push_back(connection);
  link->held_.clear();
  for (ClientConnection* connection : held) {
    ClientConnection::inspected_ended(connection, InspectorEnded{0, 0, 0, TunnelEnd::error});
  }
}

}  // namespace boxproxy
