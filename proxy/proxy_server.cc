// SPDX-License-Identifier: Apache-2.0
#include "proxy/proxy_server.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

#include "proxy/client_connection.h"
#include "proxy/fd_channel.h"
#include "proxy/inspect_array.h"
#include "proxy/inspector_messages.h"
#include "proxy/stats_line.h"

namespace boxproxy {

ProxyServer::ProxyServer(event_base* base, ProxyConfig config, Resolver& resolver, DecisionLog& log)
    : base_(base), config_(std::move(config)), resolver_(resolver), log_(log) {}

ProxyServer::~ProxyServer() { stop(); }

void ProxyServer::start(int listen_fd) {
  acceptor_ = std::make_unique<Acceptor>(base_, this, &ProxyServer::on_client, &ProxyServer::on_accept_paused);
  acceptor_->add(listen_fd, "the session socket");
}

void ProxyServer::stop() noexcept {
  stopping_ = true;
  drained_ = nullptr;  // a drain ends here, as a SIGTERM
  if (acceptor_) acceptor_->stop();
  connections_.delete_all();
}

void ProxyServer::replace_host_list(std::optional<HostList> list) { config_.policy.allow = std::move(list); }

std::optional<std::string> ProxyServer::set_secret(std::string_view name, const SecretText* value) {
  // Only the inspector ever holds a secret: serve keeps none, and one it cannot hand on would be
  // a credential the operator believes is in use.
  if (!inspector_) return std::string(kNoInspectorForSecrets);
  return inspector_->set_secret(name, value);
}

std::optional<std::string> ProxyServer::replace_inspect_table(InspectTable table) {
  // The inspector is started with serve, before serve confines itself (its seccomp filter allows
  // no new process after that), and its CA is handed out then (--ca-out, hello, run's trust
  // store). With none, an endpoint named now could only be refused at every connection.
  if (!inspector_ && !table.empty()) {
    return "inspection was not enabled at start: name an endpoint with --inspect or the config's inspect array";
  }
  if (inspector_) {
    std::string endpoints = inspect_array(table.endpoints()).dump();
    // A message the channel cannot carry would end the inspector, and with it every inspected
    // connection: refused here instead, with nothing changed.
    if (serve_message(InspectorEndpoints{endpoints}).size() > kMaxChannelMessageBytes) {
      return fmt::format("the endpoints would take more than the {} bytes the inspector's channel carries",
                         kMaxChannelMessageBytes);
    }
    // Both sides in one turn of the loop: serve decides every later connection by the new table,
    // and the inspector reads the change before any connection serve hands it from now on (the
    // channel keeps order), so no connection is decided by one table and judged by the other.
    inspector_->endpoints_changed(std::move(endpoints));
  }
  config_.policy.inspect = std::move(table);
  // Kept origin connections of endpoints no longer inspected close, their slots freed (they would
  // only ever be taken by connections decided by the old table).
  if (inspector_) {
    inspector_->evict_uninspected([this](const std::string& host, std::uint16_t port) {
      return config_.policy.inspect.find(host, port) != nullptr;
    });
  }
  return std::nullopt;
}

void ProxyServer::enable_asking(double timeout, bool names) {
  ask_names_ = names;
  asks_ = std::make_unique<AskRegistry>(base_, timeout, [this](std::string_view entry) {
    // "always": host:port joins the list, as an "allow" "add" would; a list that has gone since
    // (set to null: everything public) needs nothing.
    if (!config_.policy.allow) return;
    std::optional<HostList> list = config_.policy.allow;
    if (!list->add(entry)) replace_host_list(std::move(list));
  });
}

void ProxyServer::drain(std::function<void()> drained) {
  drained_ = std::move(drained);
  if (acceptor_) acceptor_->stop();  // no client is accepted from now on
  drain_check_ = make_event(base_, -1, 0, &ProxyServer::on_drain_check, this);
  if (drain_check_) event_active(drain_check_.get(), 0, 0);  // none open: drained at once
}

void ProxyServer::on_drain_check(evutil_socket_t, short, void* self) noexcept {
  auto* server = static_cast<ProxyServer*>(self);
  if (server->stats_.clients != 0 || !server->drained_) return;
  try {
    std::exchange(server->drained_, nullptr)();
  } catch (...) {
  }
}

SessionStats ProxyServer::session_stats() const {
  return SessionStats{.open = stats_.open,
                      .used = stats_.used,
                      .lookups = resolver_.lookups(),
                      .clients = stats_.clients,
                      .refused = stats_.refused,
                      .reported = stats_.reported,
                      .up = stats_.up,
                      .down = stats_.down};
}

std::string ProxyServer::stats_json() const {
  const SessionStats stats = session_stats();
  return StatsLine()
      .number("open", stats.open)
      .number("used", stats.used)
      .number("lookups", stats.lookups)
      .number("clients", stats.clients)
      .counts("refused", stats.refused)
      .number("reported", stats.reported)
      .number("up", stats.up)
      .number("down", stats.down)
      .text();
}

std::variant<TunnelSlot, Reason> ProxyServer::take_slot() noexcept {
  if (stats_.open >= config_.max_tunnels) return Reason::tunnel_cap;
  if (stats_.used >= config_.max_connections) return Reason::connection_budget;
  ++stats_.used;
  return TunnelSlot(stats_.open);
}

void ProxyServer::count_refusal(Reason reason) {
  const std::string_view cls = log_class(reason);
  auto it = stats_.refused.find(cls);
  if (it == stats_.refused.end()) {
    stats_.refused.emplace(std::string(cls), 1);
  } else {
    ++it->second;
  }
}

void ProxyServer::forget(ClientConnection* connection) noexcept {
  connections_.remove(connection);
  // Checked from the loop: the client count drops only once the connection is gone.
  if (drained_ && drain_check_) event_active(drain_check_.get(), 0, 0);
}

void ProxyServer::on_client(void* self, int fd) noexcept {
  auto* server = static_cast<ProxyServer*>(self);
  // evconnlistener hands us a non-blocking descriptor. Too many clients not yet decided (in
  // their handshake, or waiting on DNS or a dial): this one is closed at once, so clients a box
  // keeps waiting cannot hold memory and descriptors without bound.
  if (server->stopping_ || server->stats_.undecided >= kMaxHandshakingClients) {
    ::close(fd);
    return;
  }
  ClientConnection* connection = ClientConnection::open(*server, fd);
  if (connection == nullptr) return;  // closed by its destructor
  server->connections_.add(connection);
}

void ProxyServer::on_accept_paused(void* self, int error) noexcept {
  static_cast<ProxyServer*>(self)->log_.message("accept: " + accept_pause_words(error));
}

}  // namespace boxproxy
