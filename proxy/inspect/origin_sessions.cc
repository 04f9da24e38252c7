// SPDX-License-Identifier: Apache-2.0
// Origin TLS sessions kept to resume (proxy/inspect/origin_sessions.h).
#include "proxy/inspect/origin_sessions.h"

#include <openssl/err.h>

#include <algorithm>
#include <new>

namespace boxproxy {
namespace {

int slot_index() noexcept {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// OpenSSL's new-session callback: 1 takes the reference it hands over, 0 leaves it to OpenSSL.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
  const int index = slot_index();
  auto* slot = index < 0 ? nullptr : static_cast<OriginSessionSlot*>(SSL_get_ex_data(ssl, index));
  if (slot == nullptr || slot->sessions == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  try {
    slot->sessions->put(slot->key, SslSessionPtr(session));
  } catch (const std::bad_alloc&) {
    return 1;  // put() took the reference and freed it on its way out
  }
  return 1;
}

}  // namespace

std::string OriginSessions::key_of(const std::string& host, std::uint16_t port) {
  std::string key = host;  // names compare without regard to case, as the certificate check does
  for (char& c : key) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return key + ":" + std::to_string(port);
}

SslSessionPtr OriginSessions::take(const std::string& key) {
  const auto at = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (at == entries_.end()) return nullptr;
  SslSessionPtr session = std::move(at->sessions.back());
  at->sessions.pop_back();
  --total_;
  if (at->sessions.empty()) entries_.erase(at);
  return session;
}

void OriginSessions::put(const std::string& key, SslSessionPtr session) {
  auto at = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (at == entries_.end()) {
    entries_.push_front(Entry{key, {}});
    at = entries_.begin();
    if (entries_.size() > kMaxOriginSessionKeys) {
      total_ -= entries_.back().sessions.size();
      entries_.pop_back();
    }
  } else {
    entries_.splice(entries_.begin(), entries_, at);
  }
  at->sessions.push_back(std::move(session));
  ++total_;
  if (at->sessions.size() > kMaxSessionsPerKey) {
    at->sessions.pop_front();
    --total_;
  }
  // Past the total: the oldest sessions of the least recently given hosts go (never the one just
  // put: a host holds at most kMaxSessionsPerKey, fewer than the total).
  while (total_ > kMaxOriginSessions && entries_.size() > 1) {
    Entry& oldest = entries_.back();
    oldest.sessions.pop_front();
    --total_;
    if (oldest.sessions.empty()) entries_.pop_back();
  }
}

std::size_t OriginSessions::size() const noexcept { return total_; }

bool keep_origin_sessions(SSL_CTX* ctx) noexcept {
  if (slot_index() < 0) return false;
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &on_new_session);
  return true;
}

bool attach_origin_slot(SSL* ssl, OriginSessionSlot* slot) noexcept {
  const int index = slot_index();
  return index >= 0 && SSL_set_ex_data(ssl, index, slot) == 1;
}

bool offer_origin_session(SSL* ssl, OriginSessionSlot* slot) noexcept {
  if (!attach_origin_slot(ssl, slot)) return false;
  try {
    const SslSessionPtr session = slot->sessions->take(slot->key);
    if (session && SSL_set_session(ssl, session.get()) != 1) ERR_clear_error();  // a full handshake, then
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

}  // namespace boxproxy
