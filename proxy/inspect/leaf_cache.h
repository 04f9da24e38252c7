// SPDX-License-Identifier: Apache-2.0
// The session's leaves, one per host, made on first use and kept (SPEC §18): a host's leaf is
// signed once, not on every connection, and at most kLeafCacheEntries are held; past that the
// least recently used goes first (its host gets a new one, with a new serial, when it is next used).
//
// One key for all the leaves of a session, made when the cache is. Why that is fine: every leaf
// is presented by this one process, from the same memory as the CA's key; whoever could read the
// leaves' key could read the CA's and sign any leaf they like, so a key per leaf would protect
// nothing more. And it is cheaper: no key to generate per host (a P-256 key is about 30 µs, a few
// hundred bytes of heap and 32 bytes of the secure heap each; a whole leaf about 250 µs). Not the
// CA's own key: that one signs certificates only, never a TLS handshake (keyUsage keyCertSign),
// so nothing a box makes the proxy sign in a handshake can be a signature the CA's key made.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "proxy/inspect/leaf_cert.h"
#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/session_ca.h"

namespace boxproxy {

// Leaves kept at most (SPEC §18). A leaf held costs about 2.7 KiB of heap (OpenSSL's parsed
// certificate with its DER, the list and map nodes; measured over 1,023): 1,024 of them about
// 2.8 MiB, in the inspecting process only.
inline constexpr std::size_t kLeafCacheEntries = 1024;
// A kept leaf whose end is nearer than this is made again (when its CA lets the new one last
// longer), so that a session running longer than kLeafLifetime never presents an expired leaf.
inline constexpr std::chrono::hours kLeafRenewBefore{24};

class LeafCache {
 public:
  // Makes the leaves' key; throws std::runtime_error when OpenSSL cannot (a start-up failure).
  // `ca` must outlive the cache, where it is (it is held by reference). `capacity` (at least 1) is kLeafCacheEntries but in tests.
  explicit LeafCache(const SessionCa& ca, std::size_t capacity = kLeafCacheEntries);

  // The leaf for `host`: the one kept for it (now the most recently used), or a new one, kept,
  // when there is none or the kept one is within kLeafRenewBefore of its end. On failure (a host
  // no leaf can name, the CA expired, OpenSSL failing) nothing is kept and `error` says why.
  // A leaf handed out stays whole while its holder keeps it, even after it leaves the cache.
  // Throws only std::bad_alloc.
  [[nodiscard]] LeafOrError leaf_for(std::string_view host, CertTime now);

  // The key of every leaf (for the TLS handshake); the cache owns it.
  [[nodiscard]] EVP_PKEY* key() const noexcept { return key_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }

 private:
  struct Entry {
    std::string host;
    std::shared_ptr<const Leaf> leaf;
  };

  const SessionCa& ca_;
  std::size_t capacity_;
  EvpPkeyPtr key_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_host_;
};

}  // namespace boxproxy
