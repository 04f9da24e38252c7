// SPDX-License-Identifier: Apache-2.0
// A tunnel: bytes both ways between two Endpoints until both sides have closed (SPEC §7), through
// the relay pump (proxy/relay.h). A FIN on one side is passed on to the other after everything
// before it; an error on either side ends both; a side whose peer does not read is paused, so a
// direction never holds more than one read. It remembers why it ended (SPEC §12's `end=`).
//
// Shared by the proxy's CONNECT and SOCKS tunnels (ClientConnection) and the in-box bridge
// (BridgeConnection). The Endpoints are its owner's (they live before the tunnel: the handshake,
// the dial), and so are their events: the owner's trampolines call readable() and writable(),
// and when either answers Step::over the owner closes both sides. The tunnel itself allocates
// nothing and makes no system call of its own beyond the pump's.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/clock.h"
#include "proxy/relay.h"
#include "proxy/tunnel_end.h"

namespace boxproxy {

class Tunnel {
 public:
  // What the owner does next.
  enum class Step : std::uint8_t {
    keep,  // the tunnel goes on
    over,  // both sides are closed, or it failed: close both (end() says why)
  };

  // `client` and `upstream` must outlive the tunnel; neither is touched until start().
  Tunnel(Endpoint& client, Endpoint& upstream) noexcept : client_(client), upstream_(upstream) {}
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  // Begins relaying: both sides' sockets are connected and their events made. `early` (client
  // bytes read with the handshake) goes upstream first; a client that already sent FIN has it
  // passed on after them. Reading resumes on both sides (pause_no_more_wanted is cleared).
  [[nodiscard]] Step start(std::string_view early = {});

  // The owner's read event on `from` (client() or upstream()) fired.
  [[nodiscard]] Step readable(Endpoint& from);
  // Client bytes the owner read itself after start() and held (the SNI check, SPEC §16): they go
  // upstream now, as the read of them would have sent them (the client waits while they are queued).
  [[nodiscard]] Step client_sent(std::string_view bytes);
  // The owner's write event on `end` fired: writes what is queued for it, and once all is written
  // lets the other side read again.
  [[nodiscard]] Step writable(Endpoint& end);

  // Ended from outside: idle_timeout (the owner's timer) or shutdown. The first cause recorded is
  // kept; the owner closes both sides.
  void end_by(TunnelEnd cause) noexcept;

  // Why the tunnel ended; meaningful once a step answered over (or end_by was called). Before
  // that, the side that has sent FIN first, if any.
  [[nodiscard]] std::optional<TunnelEnd> end() const noexcept;
  // When bytes last moved in either direction (for the owner's idle timer).
  [[nodiscard]] Clock::time_point last_activity() const noexcept { return last_activity_; }

  [[nodiscard]] Endpoint& client() noexcept { return client_; }
  [[nodiscard]] Endpoint& upstream() noexcept { return upstream_; }

 private:
  [[nodiscard]] Endpoint& other(Endpoint& end) noexcept { return &end == &client_ ? upstream_ : client_; }
  [[nodiscard]] Step fail() noexcept;
  [[nodiscard]] Step check_done() noexcept;
  void note_fin(const Endpoint& from) noexcept;

  Endpoint& client_;
  Endpoint& upstream_;
  Clock::time_point last_activity_ = Clock::now();
  std::optional<TunnelEnd> first_fin_;  // the side that sent FIN first
  std::optional<TunnelEnd> ended_by_;   // error, idle_timeout or shutdown, when one ended it
};

}  // namespace boxproxy
