// SPDX-License-Identifier: Apache-2.0
// TLS sessions of origins, kept to resume (issue 24's new-connection figure: a full verified
// handshake to the origin for every inspected connection made new connections cost about twice
// squid's, which resumes). Each origin connection offers a session the same decided host and port
// gave an earlier one, if any; what the origin hands out (a TLS 1.3 ticket, a TLS 1.2 session) is
// kept for the next.
//
// Why resuming is safe here: a session comes only from a handshake that verified the chain and
// checked the decided host's name (SSL_VERIFY_PEER, SSL_set1_host), and is offered only to a
// connection for that same host and port (the key), through the same context (the same trust
// store); an origin that cannot resume it makes a full, verified handshake. A session is used once
// (taken out when offered: a TLS 1.3 ticket should not be shown twice, RFC 8446 §C.4).
//
// Bounds: at most kMaxOriginSessions in all, over at most kMaxOriginSessionKeys hosts, each at most
// kMaxSessionsPerKey, the least recently given host's oldest dropped first. A session holds the
// origin's certificate chain (OpenSSL reads at most 100 KiB of one), so hostile origins hold at
// most 256 x ~100 KiB: in practice a few KiB each (the sessions of one full handshake share its
// chain).
//
// Why 32 a host (4 before): a session is used once, and a box that opens connections to a host
// several at a time (16 at once in bench/inspect) took the few kept faster than the origin handed
// them back, so half its new connections made a full handshake (ECDSA verifications of the
// chain and of the handshake, the certificate decoded: about a quarter of the inspector's CPU for
// a new connection). The total, not the count a host, is what bounds the memory.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <deque>
#include <list>
#include <memory>
#include <string>

#include "proxy/inspect/openssl_owners.h"

namespace boxproxy {

inline constexpr std::size_t kMaxOriginSessions = 256;
inline constexpr std::size_t kMaxOriginSessionKeys = 64;
inline constexpr std::size_t kMaxSessionsPerKey = 32;

using SslSessionPtr = std::unique_ptr<SSL_SESSION, OpensslDeleter<SSL_SESSION_free>>;

class OriginSessions {
 public:
  // "host:port", as decided.
  [[nodiscard]] static std::string key_of(const std::string& host, std::uint16_t port);

  // The most recent session kept for `key`, taken out; null when there is none.
  [[nodiscard]] SslSessionPtr take(const std::string& key);
  // Keeps `session` for `key` (a resumable one only), dropping the oldest past the bounds.
  void put(const std::string& key, SslSessionPtr session);
  [[nodiscard]] std::size_t size() const noexcept;

 private:
  struct Entry {
    std::string key;
    std::deque<SslSessionPtr> sessions;  // back: the newest
  };
  std::list<Entry> entries_;  // front: the most recently given
  std::size_t total_ = 0;     // sessions held, over all the entries
};

// What an origin connection's SSL carries for the new-session callback: where to keep what the
// origin hands out, and under which key. Owned by the connection; must outlive its SSL.
struct OriginSessionSlot {
  OriginSessions* sessions = nullptr;
  std::string key;
};

// Sets the origin-facing context to keep the sessions origins hand out in the OriginSessions of
// each connection's slot (a client-side cache, OpenSSL's own store not used). False when OpenSSL
// cannot reserve the slot's index.
[[nodiscard]] bool keep_origin_sessions(SSL_CTX* ctx) noexcept;

// Points `ssl`'s new-session callback at `slot` (null: what the origin hands out is not kept): an
// origin connection moving between owners (origin_pool.h) follows its owner's slot, so the SSL
// never points at one that is gone. False when it cannot be set.
bool attach_origin_slot(SSL* ssl, OriginSessionSlot* slot) noexcept;

// Attaches `slot` to `ssl` and offers the session kept for its key, if any. False on failure (the
// connection then makes a full handshake and keeps nothing).
bool offer_origin_session(SSL* ssl, OriginSessionSlot* slot) noexcept;

}  // namespace boxproxy
