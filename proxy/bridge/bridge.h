// SPDX-License-Identifier: Apache-2.0
// The in-box bridge: accepts loopback TCP and relays each connection, byte for byte, to the
// proxy's Unix socket through the same Tunnel as the proxy's (proxy/tunnel.h). It knows
// nothing of the protocols: the proxy sniffs them from the first byte.
//
// Its transparent listeners (`bridge --transparent`, SPEC §16) take connections that nftables
// redirected to them: for each, the bridge reads the original destination (SO_ORIGINAL_DST) and
// asks the proxy for it over SOCKS5 (proxy/bridge/socks5_client.h) before relaying: by name when the
// bridge's DNS answer made that address (a NameLookup says), else by address. The proxy decides
// as for any target; a refusal resets the box's connection.
//
// One owner, one way to die (as ClientConnection): the BridgeServer creates a BridgeConnection;
// every libevent callback is a static trampoline that calls a member, and only the trampoline (or
// the server's stop()) deletes the object, when the member returns Next::close.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "proxy/acceptor.h"
#include "proxy/bridge/socks5_client.h"
#include "proxy/connection_list.h"
#include "proxy/event_owners.h"
#include "proxy/bridge/proxy_socket.h"
#include "proxy/relay.h"
#include "proxy/timer.h"
#include "proxy/tunnel.h"

namespace boxproxy {

class BridgeServer;

// How long a connection waits for the Unix socket to take it. A Unix socket whose backlog is full
// answers a non-blocking connect with EAGAIN instead of queueing it, so the bridge retries every
// kBridgeRetrySeconds until this much time has passed, then drops the client (reset).
inline constexpr double kBridgeConnectSeconds = 10.0;
inline constexpr double kBridgeRetrySeconds = 0.05;

struct BridgeStats {
  std::uint64_t open = 0;      // connections open now
  std::uint64_t accepted = 0;  // connections accepted in all
  std::uint64_t failed = 0;    // connections dropped because the socket could not be reached
  std::uint64_t captured = 0;  // connections taken by a transparent listener
  std::uint64_t refused = 0;   // captured connections the proxy refused (reset)
};

// The name the bridge's DNS responder gave out for an address, if it did: a captured connection
// to that address is asked for by that name, so the host list (and the SNI check) see the name.
using NameLookup = std::function<std::optional<std::string>(const IpAddress& address)>;

class BridgeConnection {
 public:
  // Takes ownership of `client_fd` (non-blocking, accepted) and starts connecting to the socket.
  // `request`: empty for a plain listener's client; for a captured one, the SOCKS5 handshake
  // that asks the proxy for its original destination, sent before any of the client's bytes.
  // Returns null when the connection is already over (it cleaned up after itself).
  static BridgeConnection* open(BridgeServer& server, int client_fd, std::string request = {});
  ~BridgeConnection();
  BridgeConnection(const BridgeConnection&) = delete;
  BridgeConnection& operator=(const BridgeConnection&) = delete;

  // The server's list of live connections (for shutdown).
  BridgeConnection* prev = nullptr;
  BridgeConnection* next = nullptr;

 private:
  enum class Next { keep, close };

  enum class Phase : std::uint8_t {
    connecting,   // the Unix socket has not taken us yet; the client's reads are paused
    handshaking,  // a captured connection: the request is sent, the proxy's answers are read
    relaying,     // bytes both ways until both sides have closed
  };

  BridgeConnection(BridgeServer& server, int client_fd, std::string request);

  // Trampolines: the only places (with BridgeServer::stop) that delete a connection.
  static void on_client_read(evutil_socket_t, short, void* self) noexcept;
  static void on_client_write(evutil_socket_t, short, void* self) noexcept;
  static void on_upstream_read(evutil_socket_t, short, void* self) noexcept;
  static void on_upstream_write(evutil_socket_t, short, void* self) noexcept;
  static void on_retry(void* self) noexcept;
  static void finish(BridgeConnection* connection, Next next) noexcept;

  Next try_connect();
  Next connect_finished();
  Next connected();
  Next read_reply();
  Next start_relaying();
  Next give_up(int error);
  static Next after(Tunnel::Step step) noexcept { return step == Tunnel::Step::over ? Next::close : Next::keep; }

  BridgeServer& server_;
  Endpoint client_;    // the loopback TCP client
  Endpoint upstream_;  // the proxy's Unix socket (the one pinned at start)
  Tunnel tunnel_{client_, upstream_};
  Timer retry_timer_;
  Phase phase_ = Phase::connecting;
  std::string request_;       // the SOCKS5 handshake of a captured connection; empty otherwise
  Socks5ReplyReader reply_;   // the proxy's answers to it
  double waited_ = 0;  // seconds spent retrying a full backlog
};

class BridgeServer {
 public:
  // `proxy`: the proxy's Unix socket, pinned (proxy/bridge/proxy_socket.h), connected once per accepted
  // client; it outlives the server.
  BridgeServer(event_base* base, const ProxySocket& proxy);
  ~BridgeServer();
  BridgeServer(const BridgeServer&) = delete;
  BridgeServer& operator=(const BridgeServer&) = delete;

  // Starts accepting on `listen_fd` (a listening, non-blocking TCP socket), taking ownership.
  // Throws std::runtime_error at start-up on failure.
  void add_listener(int listen_fd);
  // The same for a transparent listener: its clients were redirected by nftables.
  void add_transparent_listener(int listen_fd);
  // Where captured connections' names come from (the DNS responder); unset: by address only.
  void set_name_lookup(NameLookup lookup) { name_lookup_ = std::move(lookup); }
  // Stops accepting and ends every connection (SIGTERM).
  void stop() noexcept;

  // --- for connections ---
  [[nodiscard]] event_base* base() const noexcept { return base_; }
  [[nodiscard]] const ProxySocket& proxy() const noexcept { return proxy_; }
  [[nodiscard]] BridgeStats& stats() noexcept { return stats_; }
  // A connection could not reach the socket: says so on standard error, at most once a second
  // (a dead proxy must not turn a client's retry loop into a flood of lines).
  void report_unreachable(int error) noexcept;
  // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), at accept or at a
  // connection's own socket: stop accepting for a moment rather than accept clients only to
  // reset them; connections closing meanwhile free some.
  void back_off(int error) noexcept;
  // Called by a connection's destructor.
  void forget(BridgeConnection* connection) noexcept;

 private:
  static void on_client(void* self, int fd) noexcept;
  static void on_captured_client(void* self, int fd) noexcept;
  void adopt(BridgeConnection* connection) noexcept;
  // The SOCKS5 handshake that asks the proxy for a captured connection's destination.
  [[nodiscard]] std::string request_for(const IpAddressAndPort& destination) const;
  static void on_accept_paused(void* self, int error) noexcept;

  event_base* base_;
  const ProxySocket& proxy_;
  BridgeStats stats_;
  Acceptor acceptor_;
  Acceptor transparent_acceptor_;
  NameLookup name_lookup_;
  ConnectionList<BridgeConnection> connections_;
  bool stopping_ = false;
  std::int64_t last_report_ = 0;       // steady-clock seconds of the last unreachable line
  std::uint64_t unreported_ = 0;       // failures since then, not yet reported
};

}  // namespace boxproxy
