// SPDX-License-Identifier: Apache-2.0
// Idle origin connections kept across the box's connections, as squid keeps its server
// connections (proxy/inspect/DESIGN.md "Idle origin connections across the box's connections"):
// when a box connection ends with its HTTP/1.1 origin connection idle and clean
// (InspectedOriginLink::release_idle), the inspector keeps it here under that box connection's id
// and says so in its "ended" ("pooled": true). serve keeps the slot and decides who takes it
// (proxy/origin_ledger.h: the same decided host, port and a checked address); the connection it
// hands over names the id ("pooled": X) and takes it (take). serve's "evict" closes one (evict).
//
// Keyed by id, not by host: which box connection may use which origin connection is serve's
// decision (its ledger holds the slot, the host, port and checked address), never the inspector's.
//
// Bounds, each with what it stops:
//   kMaxPooled in all, the oldest closed first: a box cycling through many hosts holds at most that
//     many sockets and TLS sessions in the inspector (about 20 KiB each: an idle origin side with
//     OpenSSL's buffers released, so under 1 MiB); serve files no more either (kMaxLedgerEntries);
//   an idle time (kPooledIdleSeconds, or serve's --idle-timeout when shorter): a kept connection
//     never outlives its box connection longer than an idle tunnel could have held it;
//   a kept connection the origin closes, or on which it sends anything (bytes while idle can never
//     be an answer to a request not yet sent), is closed at once; one with bytes in the socket, in
//     OpenSSL or in its input, or at its end, is never handed out (TlsStream::quiet).
// Each close is reported ("unpooled"; evict's by the inspector, as its answer): serve frees the slot
// it holds for it, if it still does.
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

inline constexpr std::size_t kMaxPooled = 32;
inline constexpr double kPooledIdleSeconds = 30;

class OriginPool {
 public:
  using Closed = void (*)(void* arg, std::uint64_t id);
  // `idle_timeout`: serve's --idle-timeout (0: none). `on_closed(arg, id)`: a kept connection
  // closed on its own (not taken, not evicted).
  OriginPool(event_base* base, double idle_timeout, Closed on_closed, void* arg) noexcept;
  ~OriginPool();  // closes every kept connection, reporting none (the inspector is ending)
  OriginPool(const OriginPool&) = delete;
  OriginPool& operator=(const OriginPool&) = delete;

  // Keeps `stream` (InspectedOriginLink::release_idle's) under `id`; what the origin hands out
  // meanwhile is kept in `sessions` under `session_key` (null: dropped). False (closed here) when it
  // cannot be kept: the caller reports a plain end.
  [[nodiscard]] bool put(std::uint64_t id, std::unique_ptr<TlsStream> stream, OriginSessions* sessions,
                         const std::string& session_key) noexcept;
  // `id`'s connection, taken out when it is still quiet, its callbacks and session slot the
  // taker's to set; null when it is gone (closed meanwhile: its unpooled crossed serve's hand-over).
  // `origin_key` (OriginSessions::key_of the taker's decided host and port) must be the one it was
  // kept under, else it is closed and none is given: serve pairs them, and this stops a pairing
  // gone wrong from carrying a request under another host's verified name (found in review).
  [[nodiscard]] std::unique_ptr<TlsStream> take(std::uint64_t id, const std::string& origin_key) noexcept;
  // serve's word (evict): closed, not reported through on_closed (the inspector answers it).
  void evict(std::uint64_t id) noexcept;
  // Closes every kept connection, each reported as closed (serve frees its slot).
  void close_all() noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct Entry;
  static void on_read(bufferevent*, void* entry) noexcept;
  static void on_event(bufferevent*, short what, void* entry) noexcept;
  static void on_idle(void* entry) noexcept;
  void close(const Entry* entry, bool report) noexcept;  // close_notify unless it failed; forgotten

  event_base* base_;
  double idle_seconds_;
  Closed on_closed_;
  void* arg_;
  std::list<std::unique_ptr<Entry>> entries_;  // front: the most recently kept
};

}  // namespace boxproxy
