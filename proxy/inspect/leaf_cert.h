// SPDX-License-Identifier: Apache-2.0
// One leaf certificate: what the proxy presents to a box for one inspected host (SPEC §18).
//
// Made for exactly one name and valid for no other: the host is its only subjectAltName (a DNS
// name, or an IP address when the host is an IP literal) and never a wildcard, so that a leaf a
// box was shown for one endpoint cannot be used to pass as another.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/session_ca.h"
#include "proxy/inspect/x509_fields.h"

namespace boxproxy {

// How far back a leaf's validity begins: a box whose clock is a little behind still accepts it.
inline constexpr std::chrono::hours kLeafBackdate{1};
// How long after it is made a leaf is valid (never past its CA's notAfter). Short, as a leaf is
// made again for nothing: a week keeps clients that cache certificates content, and a session
// that runs longer gets a new one (leaf_cache.h).
inline constexpr std::chrono::hours kLeafLifetime{7 * 24};
// The longest host a leaf is made for: a DNS name's most (RFC 1035, in text without the root dot).
inline constexpr std::size_t kMaxLeafHost = 253;

// A leaf and when it ends. Its key is not in it: every leaf of a session has the one key of its
// LeafCache.
struct Leaf {
  X509Ptr certificate;
  CertTime not_after;
};

// What make_leaf (and LeafCache::leaf_for) give: a leaf, or why there is none.
struct LeafOrError {
  std::shared_ptr<const Leaf> leaf;  // null on failure
  std::string error;                 // empty on success
};

// The host as a leaf names it: ASCII lowercase, without a trailing dot, an IP literal in its one
// text form (an IPv6 one without brackets); nothing when a leaf cannot name it: empty, longer
// than kMaxLeafHost, an empty label, or a character other than a letter, digit, '-', '.', '_'
// (':' in an IPv6 literal only). So no wildcard ('*') is ever made, and no text that would mean
// more than one name.
[[nodiscard]] std::optional<std::string> leaf_host(std::string_view host);

// A leaf for `host` (leaf_host's form), with the public half of `leaf_key`, signed by `ca`:
// ECDSA P-256 key; subject CN the host when it fits in the 64 characters a CN may have, else an
// empty subject (with the subjectAltName then critical, as RFC 5280 requires); a random serial;
// valid from an hour before `now` to 7 days after it, or to the CA's notAfter when that comes
// first; basicConstraints CA:FALSE and keyUsage digitalSignature (both critical),
// extendedKeyUsage serverAuth, the CA's key identifier as its authorityKeyIdentifier (when the
// CA has one; ours always does). Fails when the CA has expired at `now`, or OpenSSL fails.
// Throws only std::bad_alloc.
[[nodiscard]] LeafOrError make_leaf(const SessionCa& ca, EVP_PKEY* leaf_key, std::string_view host, CertTime now);

}  // namespace boxproxy
