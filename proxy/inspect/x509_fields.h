// SPDX-License-Identifier: Apache-2.0
// The pieces every certificate proxy/inspect/ makes is built from: its key, serial, validity and
// extensions. Each returns null or false on failure and leaves the reason in OpenSSL's error
// queue (openssl_owners.h's take_openssl_errors reads it).
#pragma once

#include <chrono>
#include <optional>

#include "proxy/inspect/openssl_owners.h"

namespace boxproxy {

using CertTime = std::chrono::system_clock::time_point;

// A new ECDSA key on P-256 (named curve), or null. Its private half goes to the secure heap
// (key_heap.h) once that exists.
[[nodiscard]] EvpPkeyPtr make_p256_key() noexcept;

// Version 3, and a random serial: 127 bits from OpenSSL's CSPRNG with the top one set, so it is
// positive, never zero, always 16 bytes long, and carries 126 bits of chance (a CA must give at
// least 64, so that nobody can predict a certificate's serial and prepare a collision for it).
[[nodiscard]] bool set_version_and_serial(X509* cert) noexcept;

// notBefore and notAfter, to the second.
[[nodiscard]] bool set_validity(X509* cert, CertTime not_before, CertTime not_after) noexcept;

// Adds the extension `nid` from OpenSSL's text form `value` ("critical,CA:TRUE"), in the context
// of `issuer` and `subject` (the subject's public key is set already). For constant values only:
// nothing a box chose ever goes through OpenSSL's text parser, where a comma starts another item.
[[nodiscard]] bool add_extension(X509* subject, X509* issuer, int nid, const char* value) noexcept;

// The time an ASN1_TIME names, or nothing when it names none.
[[nodiscard]] std::optional<CertTime> cert_time(const ASN1_TIME* time) noexcept;

}  // namespace boxproxy
