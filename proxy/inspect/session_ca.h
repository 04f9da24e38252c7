// SPDX-License-Identifier: Apache-2.0
// The session's certificate authority (SPEC §18, "The session's CA"): the issuer of every leaf
// the proxy presents to a box on an inspected endpoint, and the one certificate the box is told
// to trust for them.
//
// Made at start (generate), or the operator's (load: --ca-cert FILE --ca-key FILE). Its private
// key is reachable only through sign(): there is no way to get it out, so it is never written
// anywhere (not to --ca-out, not to the control channel, not to a log); it lives in the secure
// heap (key_heap.h), so it stays out of core dumps and swap, and dies with the process.
// Failures here are start-up failures: both factories throw std::runtime_error.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "proxy/inspect/key_heap.h"
#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/x509_fields.h"

namespace boxproxy {

// How far before the start the CA's validity begins: a box whose clock is a little behind the
// host's still accepts it.
inline constexpr std::chrono::hours kCaBackdate{1};
// How long the CA is valid from its notBefore. A session longer than this ends up with leaves
// nobody trusts (leaf_cache.h never makes a leaf that outlives its CA).
inline constexpr std::chrono::hours kCaLifetime{30 * 24};
// The longest PEM key file load() reads: an RSA key of 8192 bits is about 6.4 KiB of PEM. The
// text is read into the secure heap, which is kKeyHeapBytes in all.
inline constexpr std::size_t kMaxKeyFileBytes = 16 * 1024;
// The longest certificate file load() reads (a certificate with its chain, or a bundle).
inline constexpr std::size_t kMaxCertFileBytes = 1024 * 1024;

class SessionCa {
 public:
  // A new CA: an ECDSA P-256 key; subject and issuer "CN=boxproxy <label>" (cut to 64
  // characters, the most a CN may have); valid from an hour before `start` for 30 days;
  // basicConstraints CA:TRUE with pathlen 0 (it signs leaves, never another CA), keyUsage
  // keyCertSign and cRLSign, both critical; a subjectKeyIdentifier; a random serial; self-signed
  // with SHA-256. `label` is --label, else the pid: printable ASCII, not empty (else
  // std::invalid_argument). Starts the secure heap first (key_heap.h).
  [[nodiscard]] static SessionCa generate(std::string_view label, CertTime start);

  // The operator's CA: the first certificate in `cert_file` and the private key in `key_file`,
  // both PEM. Checks that the key is the certificate's, that the certificate is a CA
  // (basicConstraints CA:TRUE, and keyCertSign when it has a keyUsage), and that it is valid at
  // `now`. An error names the file and what is wrong with it ("FILE: is not a CA certificate
  // ..."). An encrypted key is refused: a daemon cannot ask for its passphrase. Starts the secure
  // heap first, and reads the key file's text into it.
  [[nodiscard]] static SessionCa load(const std::string& cert_file, const std::string& key_file, CertTime now);

  SessionCa(SessionCa&&) noexcept = default;
  SessionCa& operator=(SessionCa&&) noexcept = default;

  // The CA's certificate (for a leaf's issuer name and authority key identifier, and for tests).
  [[nodiscard]] X509* certificate() const noexcept { return cert_.get(); }
  // The certificate as PEM, for --ca-out and the control channel's hello ("ca"). The public
  // certificate only: the private key has no export.
  [[nodiscard]] const std::string& certificate_pem() const noexcept { return pem_; }
  [[nodiscard]] CertTime not_before() const noexcept { return not_before_; }
  [[nodiscard]] CertTime not_after() const noexcept { return not_after_; }
  // Where the private key lives (the caller logs a warning unless it is protected_heap).
  [[nodiscard]] KeyHeap key_heap() const noexcept { return heap_; }

  // Signs `cert` (everything else in it already set) with the CA's key: SHA-256 (ECDSA or RSA),
  // or the key's own scheme for Ed25519 and Ed448. False, with the reason in OpenSSL's error
  // queue, when it cannot.
  [[nodiscard]] bool sign(X509* cert) const noexcept;

 private:
  SessionCa(X509Ptr cert, EvpPkeyPtr key, KeyHeap heap);

  X509Ptr cert_;
  EvpPkeyPtr key_;  // never leaves this object
  std::string pem_;
  CertTime not_before_;
  CertTime not_after_;
  KeyHeap heap_;
};

}  // namespace boxproxy
