// SPDX-License-Identifier: Apache-2.0
// Idle origin connections kept across the box's connections (proxy/inspect/origin_pool.h).
#include "proxy/inspect/origin_pool.h"

#include <algorithm>
#include <new>

#include "proxy/timer.h"

namespace boxproxy {

// One kept connection. The slot is declared before the stream: the SSL points at it (what the
// origin hands out while kept), so it outlives the SSL.
struct OriginPool::Entry {
  Entry(OriginPool* owner, event_base* base) noexcept : pool(owner), idle(base, &OriginPool::on_idle, this) {}
  OriginPool* pool;
  std::uint64_t id = 0;
  OriginSessionSlot slot;
  std::unique_ptr<TlsStream> stream;
  Timer idle;  // kPooledIdleSeconds (or --idle-timeout) after it was kept: closed
};

OriginPool::OriginPool(event_base* base, double idle_timeout, Closed on_closed, void* arg) noexcept
    : base_(base),
      idle_seconds_(idle_timeout > 0 ? std::min(idle_timeout, kPooledIdleSeconds) : kPooledIdleSeconds),
      on_closed_(on_closed),
      arg_(arg) {}

OriginPool::~OriginPool() {
  while (!entries_.empty()) close(entries_.front().get(), false);
}

bool OriginPool::put(std::uint64_t id, std::unique_ptr<TlsStream> stream, OriginSessions* sessions,
                     const std::string& session_key) noexcept {
  if (!stream || !stream->quiet()) return false;  // closed here: only a quiet connection is ever kept
  try {
    if (entries_.size() >= kMaxPooled) close(entries_.back().get(), true);
    auto entry = std::make_unique<Entry>(this, base_);
    if (!entry->idle.valid()) return false;
    entry->id = id;
    entry->slot = OriginSessionSlot{sessions, session_key};
    entry->stream = std::move(stream);
    TlsStream& kept = *entry->stream;
    (void)attach_origin_slot(kept.ssl(), sessions != nullptr ? &entry->slot : nullptr);
    // Its callbacks are the pool's from here: one the loop had queued for the connection that left
    // it runs here instead (libevent reads the callback as it runs a deferred one).
    kept.set_callbacks({&on_read, nullptr, &on_event, entry.get()});
    kept.release_writes();  // its connection may have held writes for the turn that ended it
    kept.set_reading(true);  // to see the origin close, or speak out of turn
    entry->idle.arm(idle_seconds_);
    entries_.push_front(std::move(entry));
    return true;
  } catch (const std::bad_alloc&) {
    return false;  // not kept: the stream (moved into the entry, or still held here) closes on the way out
  }
}

std::unique_ptr<TlsStream> OriginPool::take(std::uint64_t id, const std::string& origin_key) noexcept {
  const auto at = std::ranges::find_if(entries_, [&](const std::unique_ptr<Entry>& e) { return e->id == id; });
  if (at == entries_.end()) return nullptr;
  if ((*at)->slot.key != origin_key || !(*at)->stream->quiet()) {
    // The origin sent something, or closed, and the loop has not told us yet: never handed out.
    // Not reported: serve moved its slot to the taker, which asks for a dial under it.
    close(at->get(), false);
    return nullptr;
  }
  std::unique_ptr<TlsStream> stream = std::move((*at)->stream);
  // Nothing points at the entry once it goes: the taker sets its own callbacks and slot next.
  (void)attach_origin_slot(stream->ssl(), nullptr);
  stream->set_callbacks({nullptr, nullptr, nullptr, nullptr});
  entries_.erase(at);
  return stream;
}

void OriginPool::evict(std::uint64_t id) noexcept {
  const auto at = std::ranges::find_if(entries_, [&](const std::unique_ptr<Entry>& e) { return e->id == id; });
  if (at != entries_.end()) close(at->get(), false);
}

void OriginPool::close_all() noexcept {
  while (!entries_.empty()) close(entries_.front().get(), true);
}

void OriginPool::close(const Entry* entry, bool report) noexcept {
  const auto at = std::ranges::find_if(entries_, [&](const std::unique_ptr<Entry>& e) { return e.get() == entry; });
  if (at == entries_.end()) return;
  const std::uint64_t id = (*at)->id;
  if ((*at)->stream) {
    (*at)->stream->send_close_notify();  // a no-op on a session that failed
    // Over now, not at the closer's next pass: serve may dial under its slot as soon as it reads
    // the "unpooled" that follows, and the count must never pass --max-tunnels (found in review).
    (*at)->stream->end_connection_now();
  }
  entries_.erase(at);  // the stream's destructor copes with being freed inside its own callback
  if (report) on_closed_(arg_, id);
}

void OriginPool::on_read(bufferevent*, void* arg) noexcept {
  // Bytes while idle: no request of ours is out, so they can never be an answer. Closed.
  auto* entry = static_cast<Entry*>(arg);
  entry->pool->close(entry, true);
}

void OriginPool::on_event(bufferevent*, short what, void* arg) noexcept {
  auto* entry = static_cast<Entry*>(arg);
  if ((what & BEV_EVENT_ERROR) != 0) entry->stream->note_failed();  // no close_notify after a fatal error
  entry->pool->close(entry, true);  // its end (or failure): nothing more to keep
}

void OriginPool::on_idle(void* arg) noexcept {
  auto* entry = static_cast<Entry*>(arg);
  entry->pool->close(entry, true);
}

}  // namespace boxproxy
