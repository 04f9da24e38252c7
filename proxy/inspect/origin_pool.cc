// SPDX-License-Identifier: Apache-2.0
// Idle origin connections kept across the box's connections (proxy/inspect/origin_pool.h).
#include "proxy/inspect/origin_pool.h"

#include <algorithm>
#include <new>

#include "proxy/timer.h"

namespace boxproxy {

// One pooled connection. The slot is declared before the stream: the SSL points at it (what the
// origin hands out while pooled), so it outlives the SSL.
struct OriginPool::Entry {
  Entry(OriginPool* owner, event_base* base) noexcept : pool(owner), idle(base, &OriginPool::on_idle, this) {}
  OriginPool* pool;
  std::string key;
  OriginSessionSlot slot;
  std::unique_ptr<TlsStream> stream;
  Timer idle;  // kPooledIdleSeconds (or --idle-timeout) after it was pooled: closed
};

OriginPool::OriginPool(event_base* base, double idle_timeout) noexcept
    : base_(base),
      idle_seconds_(idle_timeout > 0 ? std::min(idle_timeout, kPooledIdleSeconds) : kPooledIdleSeconds) {}

OriginPool::~OriginPool() {
  while (!entries_.empty()) close(entries_.front().get());
}

std::string OriginPool::key_of(const std::string& host, std::uint16_t port, const std::string& address) {
  return OriginSessions::key_of(host, port) + "@" + address;
}

void OriginPool::put(const std::string& key, std::unique_ptr<TlsStream> stream, OriginSessions* sessions,
                     const std::string& session_key) noexcept {
  if (!stream || !stream->quiet()) return;  // closed here: only a quiet connection is ever kept
  try {
    // One key holds at most kMaxPooledPerKey: its least recently pooled goes first.
    const auto same = [&](const std::unique_ptr<Entry>& e) { return e->key == key; };
    if (static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(), same)) >= kMaxPooledPerKey) {
      close(std::find_if(entries_.rbegin(), entries_.rend(), same)->get());
    }
    if (entries_.size() >= kMaxPooled) close(entries_.back().get());
    auto entry = std::make_unique<Entry>(this, base_);
    if (!entry->idle.valid()) return;
    entry->key = key;
    entry->slot = OriginSessionSlot{sessions, session_key};
    entry->stream = std::move(stream);
    TlsStream& pooled = *entry->stream;
    (void)attach_origin_slot(pooled.ssl(), sessions != nullptr ? &entry->slot : nullptr);
    // Its callbacks are the pool's from here: one the loop had queued for the connection that left
    // it runs here instead (libevent reads the callback as it runs a deferred one).
    pooled.set_callbacks({&on_read, nullptr, &on_event, entry.get()});
    pooled.release_writes();  // its connection may have held writes for the turn that ended it
    pooled.set_reading(true);  // to see the origin close, or speak out of turn
    entry->idle.arm(idle_seconds_);
    entries_.push_front(std::move(entry));
  } catch (const std::bad_alloc&) {
    // Not kept: the stream (moved into the entry, or still held here) closes on the way out.
  }
}

std::unique_ptr<TlsStream> OriginPool::take(const std::string& key) noexcept {
  for (auto at = entries_.begin(); at != entries_.end();) {
    Entry& entry = **at;
    if (entry.key != key) {
      ++at;
      continue;
    }
    if (!entry.stream->quiet()) {
      // The origin sent something, or closed, and the loop has not told us yet: never handed out.
      const Entry* stale = at->get();
      ++at;
      close(stale);
      continue;
    }
    std::unique_ptr<TlsStream> stream = std::move(entry.stream);
    // Nothing points at the entry once it goes: the taker sets its own callbacks and slot next.
    (void)attach_origin_slot(stream->ssl(), nullptr);
    stream->set_callbacks({nullptr, nullptr, nullptr, nullptr});
    entries_.erase(at);
    return stream;
  }
  return nullptr;
}

void OriginPool::close(const Entry* entry) noexcept {
  const auto at = std::find_if(entries_.begin(), entries_.end(),
                               [&](const std::unique_ptr<Entry>& e) { return e.get() == entry; });
  if (at == entries_.end()) return;
  if ((*at)->stream) (*at)->stream->send_close_notify();  // a no-op on a session that failed
  entries_.erase(at);  // the stream's destructor copes with being freed inside its own callback
}

void OriginPool::on_read(bufferevent*, void* arg) noexcept {
  // Bytes while idle: no request of ours is out, so they can never be an answer. Closed.
  auto* entry = static_cast<Entry*>(arg);
  entry->pool->close(entry);
}

void OriginPool::on_event(bufferevent*, short what, void* arg) noexcept {
  auto* entry = static_cast<Entry*>(arg);
  if ((what & BEV_EVENT_ERROR) != 0) entry->stream->note_failed();  // no close_notify after a fatal error
  entry->pool->close(entry);  // its end (or failure): nothing more to keep
}

void OriginPool::on_idle(void* arg) noexcept {
  auto* entry = static_cast<Entry*>(arg);
  entry->pool->close(entry);
}

}  // namespace boxproxy
