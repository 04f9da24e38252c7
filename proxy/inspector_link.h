// SPDX-License-Identifier: Apache-2.0
// serve's end of the channel to its inspector (proxy/inspect/DESIGN.md): hands it the sockets of
// each connection to an inspected endpoint, and routes what it reports (each request's line, a
// request for a new upstream connection, the connection's end) back to the client connection that
// holds that connection's slot. No OpenSSL here: this is serve's side.
//
// The inspector is trusted no further than a box (it parses hostile TLS): its reports are checked
// (proxy/inspector_messages.h), an id it names must be one handed to it and still held, and one
// bad message ends the channel. When the channel ends, every connection handed over ends (as an
// error), and no connection to an inspected endpoint is let through uninspected again: they are
// refused (upstream tls, 502) until serve is restarted.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/decision_log.h"
#include "proxy/event_owners.h"
#include "proxy/fd_channel.h"
#include "proxy/loop_pass_closer.h"
#include "proxy/timer.h"
#include "proxy/inspector_messages.h"
#include "proxy/origin_ledger.h"

namespace boxproxy {

class ClientConnection;

class InspectorLink {
 public:
  // `channel`: the socketpair end whose peer is the running inspector, which has already said
  // "ready". `log` is where a broken channel is reported.
  InspectorLink(event_base* base, UniqueFd channel, DecisionLog& log);
  InspectorLink(const InspectorLink&) = delete;
  InspectorLink& operator=(const InspectorLink&) = delete;

  // Whether connections can be handed over (the channel is up).
  [[nodiscard]] bool alive() const noexcept { return alive_; }

  // Hands `connection`'s sockets to the inspector, whose events the caller has freed. serve's own
  // copies are closed here, after the loop's next pass (proxy/loop_pass_closer.h). False when the
  // channel is down or full: the caller refuses the connection. `upstream` may be invalid (a kept
  // origin connection taken, `what.pooled`, or none yet): the client's socket goes alone.
  [[nodiscard]] bool hand_over(ClientConnection& connection, const InspectorConnection& what, UniqueFd client,
                               UniqueFd upstream);
  // The answer to a connection's "dial": a new upstream socket, or none (-1).
  void dialled(ConnectionId id, int upstream_fd);
  // SPEC §20: the answer to a connection's ask.
  void answer(const InspectorAnswer& answer);
  // A connection handed over is going (serve stops): nothing more is routed to it.
  void forget(ConnectionId id) noexcept { held_.erase(id); }
  // ---- kept origin connections (proxy/origin_ledger.h) ----
  // `id` ended with its origin connection kept by the inspector: its slot filed under the decided
  // host, port and `address` (null: not filed, and the inspector told to close it).
  void keep_pooled(ConnectionId id, std::string_view host, std::uint16_t port, const IpAddress* address,
                   TunnelSlot slot);
  // `id`'s kept connection closed by the inspector, its slot held until it says it has.
  void close_kept(ConnectionId id, TunnelSlot slot) noexcept;
  // A kept connection for `host`, `port` and one of `answers` (SPEC §5's checked answers), taken
  // out with its slot; nullopt when none (or the channel is down).
  [[nodiscard]] std::optional<OriginLedger::Taken> take_pooled(std::string_view host, std::uint16_t port,
                                                               std::span<const IpAddress> answers);
  // At the tunnel cap: the oldest kept connection's slot, the inspector told to close it first
  // (the channel keeps order, so it closes before any dial the taker asks for); nullopt when none.
  [[nodiscard]] std::optional<TunnelSlot> evict_oldest();
  // The live endpoints changed: kept connections whose host and port `inspected` no longer names
  // are evicted (their slots freed).
  void evict_uninspected(const std::function<bool(const std::string&, std::uint16_t)>& inspected);

  // At the tunnel cap, for a connection that opens its own upstream socket (not inspected): the
  // oldest kept connection is asked closed, its slot held; `waiter` gets it through
  // ClientConnection::evicted once the inspector says it closed it, so the new socket never
  // overlaps it. False (nothing asked) when none is kept; else `id` is the one asked closed.
  [[nodiscard]] bool evict_for(ClientConnection& waiter, std::uint64_t& id);
  // The waiter of `id`'s close went (its slot is freed when the close is said).
  void forget_waiter(std::uint64_t id) noexcept { waiters_.erase(id); }
  // The inspector closes kept connection `id`, whose slot serve no longer holds for it.
  void evict(std::uint64_t id) noexcept;

  // A live change of the endpoints (the "inspect" array, as --check-config writes it).
  void endpoints_changed(std::string endpoints_json);
  // SPEC §19: sets NAME (a checked name) to `value` (a checked value), or revokes it (null), in
  // the inspector; every connection's next request reads it. nullopt when sent; else why not
  // (the channel is down, or NAME would be one secret more than kMaxSecrets), nothing changed.
  [[nodiscard]] std::optional<std::string> set_secret(std::string_view name, const SecretText* value);
  // SPEC §19: NAME's placeholder, made at start. False when the channel is down.
  [[nodiscard]] bool placeholder_made(std::string_view name, std::string_view value);

 private:
  static void on_message(void* self, ChannelMessage message) noexcept;
  static void on_closed(void* self) noexcept;
  void route(ChannelMessage message) noexcept;
  void broken(std::string_view why) noexcept;
  static void on_teardown(void* self) noexcept;

  DecisionLog& log_;
  FdChannel channel_;
  bool alive_ = true;
  std::unordered_map<ConnectionId, ClientConnection*> held_;
  OriginLedger ledger_;  // the kept origin connections' slots (ProxyStats::open outlives this link)
  // Connections waiting for a kept connection's close to take its slot (evict_for): at most one a
  // kept connection, so at most kMaxLedgerEntries.
  std::unordered_map<std::uint64_t, ClientConnection*> waiters_;
  LoopPassCloser closer_;  // serve's copies of the sockets sent to the inspector
  std::vector<std::string> secret_names_;  // the secrets set in the inspector (never their values)
  // Ends the connections held when the channel broke, on the loop's next pass: broken() is called
  // from inside a connection's own call (answer, dialled) and from loops over many connections (an
  // ask's waiters), which must not see a connection deleted under them.
  Timer teardown_;
};

}  // namespace boxproxy
