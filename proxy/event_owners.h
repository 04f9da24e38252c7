// SPDX-License-Identifier: Apache-2.0
// RAII owners for everything libevent allocates (and, through proxy/unique_fd.h, for file
// descriptors).
//
// Nothing libevent allocates is held by a raw pointer: each type has a stateless deleter and a
// unique_ptr alias, and each factory fails loudly (throws at start-up, or returns null in the loop
// where the caller must cope) instead of handing back NULL silently.
#pragma once

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <memory>

#include "proxy/unique_fd.h"

namespace boxproxy {

struct EventBaseDeleter {
  void operator()(event_base* base) const noexcept { event_base_free(base); }
};
struct EventDeleter {
  void operator()(event* ev) const noexcept { event_free(ev); }  // event_free also deletes it
};
struct ListenerDeleter {
  void operator()(evconnlistener* listener) const noexcept { evconnlistener_free(listener); }
};
struct DnsBaseDeleter {
  // Fail pending requests (their callbacks run with EVUTIL_EAI_CANCEL) so no token is left behind.
  void operator()(evdns_base* dns) const noexcept { evdns_base_free(dns, 1); }
};

using EventBasePtr = std::unique_ptr<event_base, EventBaseDeleter>;
using EventPtr = std::unique_ptr<event, EventDeleter>;
using ListenerPtr = std::unique_ptr<evconnlistener, ListenerDeleter>;
using DnsBasePtr = std::unique_ptr<evdns_base, DnsBaseDeleter>;

// The loop serve and its inspector run on, or null when libevent cannot make one. One thread, no
// locks (each process is single-threaded by design). Epoll changes are batched
// (EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST): the adds and deletes a connection makes in one pass
// become at most one epoll_ctl each (a TLS bufferevent arms and disarms its write event around
// every write, two calls a write without it). A socket whose events are freed must then stay open
// until the loop has passed through epoll: proxy/loop_pass_closer.h.
[[nodiscard]] inline EventBasePtr make_batching_event_base() noexcept {
  event_config* cfg = event_config_new();
  if (cfg == nullptr) return nullptr;
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
  EventBasePtr base(event_base_new_with_config(cfg));
  event_config_free(cfg);
  return base;
}

// event_new, or null when libevent cannot allocate (the caller drops the connection).
[[nodiscard]] inline EventPtr make_event(event_base* base, int fd, short what, event_callback_fn callback,
                                         void* arg) noexcept {
  return EventPtr(event_new(base, fd, what, callback, arg));
}

// A timeval from seconds (fractions kept to the microsecond).
[[nodiscard]] inline timeval to_timeval(double seconds) noexcept {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  return tv;
}

}  // namespace boxproxy
