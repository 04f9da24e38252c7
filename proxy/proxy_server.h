// SPDX-License-Identifier: Apache-2.0
// The proxy for one session: accepts clients on the session socket, owns every connection, and
// holds what they share (the policy, the resolver, the log, the tunnel cap and budget, stats).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "proxy/acceptor.h"
#include "proxy/ask_registry.h"
#include "proxy/decision_log.h"
#include "proxy/connection_list.h"
#include "proxy/defaults.h"
#include "proxy/event_owners.h"
#include "proxy/held_count.h"
#include "proxy/inspector_link.h"
#include "proxy/local_addresses.h"
#include "proxy/resolver.h"
#include "proxy/session_control.h"
#include "table/placeholder.h"
#include "table/policy.h"

namespace boxproxy {

class ClientConnection;

struct ProxyConfig {
  Policy policy;
  std::string allow_hint;
  // Every default from proxy/defaults.h, serve's and the manual's.
  std::uint32_t max_tunnels = defaults::kMaxTunnels;
  std::uint64_t max_connections = defaults::kMaxConnections;
  double head_timeout = defaults::kHeadTimeoutSeconds;
  double dns_timeout = defaults::kDnsTimeoutSeconds;
  double connect_timeout = defaults::kConnectTimeoutSeconds;
  double idle_timeout = defaults::kIdleTimeoutSeconds;  // 0: never
  std::size_t max_head_bytes = defaults::kMaxHeadBytes;
  std::size_t max_held_body = defaults::kMaxHeldBody;  // SPEC §20: only the inspector holds bodies
  std::optional<std::string> auth_token;
  bool sni_check = true;  // SPEC §16; off with --no-sni-check
  bool log_paths = false;  // SPEC §18: request lines carry path= (never the query)
};

// Clients not yet decided at once: in their handshake (head or SOCKS negotiation), or with their
// request complete and waiting on DNS or on a dial. Past this, a new client is closed as soon as
// it is accepted. One cap for both, not one each: a box controls how long either waits (a silent
// head for --head-timeout, a name whose DNS server never answers for --dns-timeout, a dial for
// --connect-timeout), and a cap of their own for the waiting ones would only add a second worst
// case without letting more through. Each holds at most max(--max-head-bytes + 1, 16 KiB) of
// buffers (the head while it is read; after the decision only early data and, for plain HTTP,
// the head rewritten for the origin), so 1024 hold at most 1024 * (32 KiB + ~3 KiB) with the
// defaults (RESOURCE BOUNDS in the man page has the measured figures).
inline constexpr std::size_t kMaxHandshakingClients = 1024;

struct ProxyStats {
  std::uint64_t open = 0;     // upstream connections open now (slots taken)
  std::uint64_t used = 0;     // upstream connections used in all (budget spent)
  std::uint64_t clients = 0;  // client connections open now
  std::uint64_t undecided = 0;  // clients counted against kMaxHandshakingClients
  std::map<std::string, std::uint64_t, std::less<>> refused;  // by log class
  std::uint64_t reported = 0;  // report mode's would-be denials, let through (never in refused)
  std::uint64_t up = 0;
  std::uint64_t down = 0;
};

class ProxyServer {
 public:
  ProxyServer(event_base* base, ProxyConfig config, Resolver& resolver, DecisionLog& log);
  ~ProxyServer();
  ProxyServer(const ProxyServer&) = delete;
  ProxyServer& operator=(const ProxyServer&) = delete;

  // Starts accepting on `listen_fd` (a listening, non-blocking socket), taking ownership.
  // Throws std::runtime_error at start-up on failure.
  void start(int listen_fd);
  // Stops accepting and ends every connection (SIGTERM).
  void stop() noexcept;
  // SIGHUP and the control channel's "allow": the new host list (nullopt: none).
  void replace_host_list(std::optional<HostList> list);
  // The control channel's "inspect" (SessionControl::replace_inspect_table): nullopt when done,
  // else why not, with nothing changed.
  [[nodiscard]] std::optional<std::string> replace_inspect_table(InspectTable table);
  // A control channel's asks, each for at most `timeout` seconds (--ask-timeout): SPEC §20's
  // request asks, and with `names` (--ask, SPEC §15) names off the host list too.
  void enable_asking(double timeout, bool names);
  // The asks, or null without a control channel.
  [[nodiscard]] AskRegistry* asks() noexcept { return asks_.get(); }
  // --ask: names off the host list are asked about (SPEC §15); null without it.
  [[nodiscard]] AskRegistry* name_asks() noexcept { return ask_names_ ? asks_.get() : nullptr; }
  // Request inspection (SPEC §18): the link to the inspector serve started, or null without one.
  void set_inspector(std::unique_ptr<InspectorLink> link, std::string ca_pem) noexcept {
    inspector_ = std::move(link);
    inspection_ca_ = std::move(ca_pem);
  }
  [[nodiscard]] std::string_view inspection_ca() const noexcept { return inspection_ca_; }
  [[nodiscard]] InspectorLink* inspector() noexcept { return inspector_.get(); }
  // SPEC §19: the session's placeholders (serve --placeholder, run --secret-env), made at start.
  [[nodiscard]] const Placeholders& placeholders() const noexcept { return placeholders_; }
  void set_placeholders(Placeholders placeholders) noexcept { placeholders_ = std::move(placeholders); }
  // SPEC §19: sets or revokes (null) a secret in the inspector. nullopt when done, else why not.
  [[nodiscard]] std::optional<std::string> set_secret(std::string_view name, const SecretText* value);
  // The control channel's "drain": stops accepting now; `drained` runs (from the loop, never
  // inside a connection's teardown) once the last client connection has ended.
  void drain(std::function<void()> drained);
  // The counters of the SIGUSR1 stats line and of the control channel's "stats" (SPEC §12).
  [[nodiscard]] SessionStats session_stats() const;
  // The SIGUSR1 stats line (SPEC §12).
  [[nodiscard]] std::string stats_json() const;

  // --- for connections ---
  [[nodiscard]] event_base* base() const noexcept { return base_; }
  [[nodiscard]] const ProxyConfig& config() const noexcept { return config_; }
  [[nodiscard]] Resolver& resolver() noexcept { return resolver_; }
  [[nodiscard]] DecisionLog& log() noexcept { return log_; }
  [[nodiscard]] ProxyStats& stats() noexcept { return stats_; }
  [[nodiscard]] LocalAddresses& local_addresses() noexcept { return local_addresses_; }
  // §5 step 5: takes a slot (and spends one of the budget) or says why not (tunnel_cap,
  // connection_budget). The slot is given back when the token is released or dies.
  [[nodiscard]] std::variant<TunnelSlot, Reason> take_slot() noexcept;
  // Counts a client among the undecided until the mark is released or dies.
  [[nodiscard]] UndecidedMark mark_undecided() noexcept { return UndecidedMark(stats_.undecided); }
  // Counts an open client connection until the token dies.
  [[nodiscard]] HeldCount count_client() noexcept { return HeldCount(stats_.clients); }
  // A new client connection's number (SPEC §12 `id=`): counted from 1, never reused in the
  // process's life (a 64-bit count does not wrap).
  [[nodiscard]] ConnectionId next_connection_id() noexcept { return ++last_connection_id_; }
  [[nodiscard]] bool stopping() const noexcept { return stopping_; }
  void count_refusal(Reason reason);
  // Called by a connection's destructor.
  void forget(ClientConnection* connection) noexcept;

 private:
  static void on_client(void* self, int fd) noexcept;
  static void on_accept_paused(void* self, int error) noexcept;
  static void on_drain_check(evutil_socket_t, short, void* self) noexcept;

  event_base* base_;
  ProxyConfig config_;
  Resolver& resolver_;
  DecisionLog& log_;
  ProxyStats stats_;
  ConnectionId last_connection_id_ = 0;
  LocalAddresses local_addresses_;
  std::unique_ptr<Acceptor> acceptor_;
  std::unique_ptr<AskRegistry> asks_;  // before the connections: their tickets leave it as they die
  bool ask_names_ = false;             // --ask
  std::unique_ptr<InspectorLink> inspector_;  // likewise: connections handed over leave it as they die
  std::string inspection_ca_;                 // its CA's certificate, PEM
  Placeholders placeholders_;                 // SPEC §19: plain requests carrying one are refused
  std::function<void()> drained_;      // set by drain()
  EventPtr drain_check_;               // made active as each client leaves while draining
  ConnectionList<ClientConnection> connections_;
  bool stopping_ = false;
};

// The control channel's port onto a server (SPEC §15). The drain is the process's, not only the
// server's (it also removes the session socket and says so in the log): its owner gives it.
class ServerControl final : public SessionControl {
 public:
  ServerControl(ProxyServer& server, std::function<void()> drain)
      : server_(server), drain_(std::move(drain)) {}

  [[nodiscard]] const std::optional<HostList>& host_list() const override { return server_.config().policy.allow; }
  void replace_host_list(std::optional<HostList> list) override { server_.replace_host_list(std::move(list)); }
  [[nodiscard]] const InspectTable& inspect_table() const override { return server_.config().policy.inspect; }
  [[nodiscard]] std::optional<std::string> replace_inspect_table(InspectTable table) override {
    return server_.replace_inspect_table(std::move(table));
  }
  [[nodiscard]] SessionStats stats() const override { return server_.session_stats(); }
  [[nodiscard]] AskRegistry* asks() override { return server_.asks(); }
  void drain() override { drain_(); }
  [[nodiscard]] std::string_view inspection_ca() const override { return server_.inspection_ca(); }
  [[nodiscard]] std::optional<std::string> set_secret(std::string_view name, const SecretText* value) override {
    return server_.set_secret(name, value);
  }

 private:
  ProxyServer& server_;
  std::function<void()> drain_;
};

}  // namespace boxproxy
