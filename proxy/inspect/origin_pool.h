// SPDX-License-Identifier: Apache-2.0
// Idle origin connections kept across the box's connections (issue 34's new-connection goal). A
// profile showed the origin's TLS handshake, resumed, still 35-40% of the inspector's CPU for a new
// inspected connection; squid keeps idle server connections for its next client. So when an
// inspected connection ends while its origin connection is idle, clean and reusable (HTTP/1.1
// keep-alive, its last response read whole, nothing unread or unsent, not closed), the connection
// leaves it here, and a new inspected connection (or a redial) for the same key takes it instead
// of handshaking on the socket serve handed over (which it closes).
//
// The key is the decided host (compared without case), the decided port AND the address SPEC §5
// checked for the box connection (serve's dial, InspectorConnection::address): an origin
// connection only ever carries requests of box connections decided to that very host, port and
// checked address. That stops a pooled connection from taking a box's request to an address §5
// never checked for it (a host whose answers changed, two names on one port, a --permit narrowed
// meanwhile), and from carrying a request under another host's verified name (the connection was
// verified for its key's host alone, origin_sessions.h). A connection with no address said is
// neither pooled nor given one.
//
// Only HTTP/1.1 origin connections are kept; an HTTP/2 one (H2Back) still closes with its box
// connection.
//
// Bounds, each with what it stops:
//   kMaxPooledPerKey a key: a box opening many connections to one host does not keep that host's
//     origin connections open past what its next few connections take;
//   kMaxPooled in all, the least recently pooled closed first: a box cycling through many hosts
//     (or many connections) holds at most that many sockets and TLS sessions in the inspector,
//     whatever it does; each is about 20 KiB (an idle origin side: the SSL and its session, the
//     bufferevent, OpenSSL's record buffers released while idle by SSL_MODE_RELEASE_BUFFERS, the
//     evbuffers empty; worked out from test_inspect_memory's 37-43 KiB a connection, both sides),
//     so under 1 MiB;
//   an idle time (kPooledIdleSeconds, or serve's --idle-timeout when shorter): a pooled connection
//     never outlives its box connection longer than an idle tunnel could have held it, and an
//     origin that never closes holds nothing for long;
//   a pooled connection the origin closes, or on which it sends anything (bytes while idle can
//     never be an answer to a request not yet sent), is closed at once; one with bytes in the
//     socket, in OpenSSL or in its input, or at its end, is never handed out (TlsStream::quiet).
// Pooled connections are not tunnels: serve's slot and budget went with the box connection; the
// manual (RESOURCE BOUNDS) says that up to kMaxPooled may outlive the box connections that made
// them, for at most kPooledIdleSeconds.
//
// What a reused connection may meet (the origin closed it just as the request went): as a
// keep-alive connection's within one box connection (inspected_origin_side.cc's
// origin_ended_early): a safe request without a body goes once more, on a connection serve dials
// new; anything else ends the box's connection, never sent twice.
#pragma once

#include <event2/event.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "proxy/inspect/origin_sessions.h"
#include "proxy/inspect/tls_stream.h"

namespace boxproxy {

inline constexpr std::size_t kMaxPooledPerKey = 4;
inline constexpr std::size_t kMaxPooled = 32;
inline constexpr double kPooledIdleSeconds = 30;

class OriginPool {
 public:
  // `idle_timeout`: serve's --idle-timeout (0: none); a pooled connection waits at most the shorter
  // of it and kPooledIdleSeconds.
  OriginPool(event_base* base, double idle_timeout) noexcept;
  ~OriginPool();
  OriginPool(const OriginPool&) = delete;
  OriginPool& operator=(const OriginPool&) = delete;

  // The decided host (lower-cased), port and checked address.
  [[nodiscard]] static std::string key_of(const std::string& host, std::uint16_t port, const std::string& address);

  // Keeps `stream` (an idle HTTP/1.1 origin connection: InspectedOriginLink::release_idle) for
  // `key`, closing the oldest past the bounds; what the origin hands out meanwhile is kept in
  // `sessions` under `session_key` (null: dropped). Closed at once when it cannot be kept.
  void put(const std::string& key, std::unique_ptr<TlsStream> stream, OriginSessions* sessions,
           const std::string& session_key) noexcept;
  // The most recently pooled connection for `key` that is quiet (TlsStream::quiet), taken out, its
  // callbacks and session slot the taker's to set; null when there is none. Ones found not quiet
  // are closed.
  [[nodiscard]] std::unique_ptr<TlsStream> take(const std::string& key) noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct Entry;
  static void on_read(bufferevent*, void* entry) noexcept;
  static void on_event(bufferevent*, short what, void* entry) noexcept;
  static void on_idle(void* entry) noexcept;
  void close(const Entry* entry) noexcept;  // closes it (close_notify unless it failed) and forgets it

  event_base* base_;
  double idle_seconds_;
  std::list<std::unique_ptr<Entry>> entries_;  // front: the most recently pooled
};

}  // namespace boxproxy
