// SPDX-License-Identifier: Apache-2.0
// What a client connection hands its sockets to once its request is allowed: one session at a
// time, a tunnel (proxy/tunnel_session.h) or a plain-HTTP exchange (proxy/plain_http_session.h).
// Request inspection will be one more.
//
// The connection (ClientConnection) keeps the sockets, their events, the timer, the tokens and the
// decision; a session moves the bytes, keeps the done line's counts and knows why it ended. It
// never closes a socket, gives a slot back or writes a log line: it answers what the connection
// does next, and the connection does it (and is the only one that deletes anything).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "proxy/clock.h"
#include "proxy/relay.h"
#include "proxy/tunnel.h"

namespace boxproxy {

// What a session asks its connection to do next.
enum class SessionNext : std::uint8_t {
  keep,                // go on
  close,               // end the connection (its done line says end())
  sni_mismatch,        // a tunnel's first bytes named another host in a ClientHello: close, with
  host_mismatch,       //   that refusal's line in place of the done line (or in a request's Host)
  refuse_bad_framing,  // a plain request's body broke its framing before any response went back
  response_read,       // a plain response is all read: give the upstream and its slot back, then
                       // call upstream_released()
  exchange_done,       // a plain response is all written to the client: the done line, then
                       // next_request()
};

class Session {
 public:
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  virtual ~Session() = default;

  // The owner's events, handed on.
  [[nodiscard]] virtual SessionNext client_readable() = 0;
  [[nodiscard]] virtual SessionNext upstream_readable() = 0;
  [[nodiscard]] virtual SessionNext writable(Endpoint& end) = 0;
  // After response_read, once the upstream is given back.
  [[nodiscard]] virtual SessionNext upstream_released() { return SessionNext::keep; }
  // After exchange_done: what the client already sent of its next request, when the connection
  // goes on (keep-alive, SPEC §8); nullopt when it closes.
  [[nodiscard]] virtual std::optional<std::string> next_request() { return std::nullopt; }

  // A plain exchange's final response status, once its head has come; 0 otherwise.
  [[nodiscard]] virtual std::uint16_t response_status() const noexcept { return 0; }

  // When bytes last moved (for the owner's idle timer).
  [[nodiscard]] virtual Clock::time_point last_activity() const noexcept = 0;
  // Ended from outside: the idle timer, shutdown, a refusal midway. The first cause is kept.
  virtual void end_by(TunnelEnd cause) noexcept = 0;
  // Why it ended (SPEC §12 `end=`).
  [[nodiscard]] virtual TunnelEnd end() const noexcept = 0;

  // The done line's counts (SPEC §12): what was written to each side since the session began,
  // never what was read or queued (bytes still queued when it ends by an error reached nobody).
  struct Traffic {
    std::uint64_t up = 0;    // to the upstream
    std::uint64_t down = 0;  // to the client
    std::uint64_t ms = 0;    // since the session began
  };
  [[nodiscard]] Traffic traffic() const noexcept;

 protected:
  // The counts start now: see mark_start().
  Session(Endpoint& client, Endpoint& upstream) noexcept : client_(client), upstream_(upstream) { mark_start(); }
  // The counts start here: from what was written to the upstream so far, and to the client so far
  // plus what is queued for it (a reply queued before the session's bytes is not the session's).
  void mark_start() noexcept;

  Endpoint& client_;
  Endpoint& upstream_;

 private:
  Clock::time_point started_;
  std::uint64_t up_mark_ = 0;
  std::uint64_t down_mark_ = 0;
};

}  // namespace boxproxy
