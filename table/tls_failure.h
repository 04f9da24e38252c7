// SPDX-License-Identifier: Apache-2.0
// Why an inspected connection's TLS handshake failed, in one short word (the done line's and the
// `upstream tls` line's tls=): what the box's client said of the session CA's leaf (the TLS alert
// it sent), or what the proxy's check of the origin's certificate found (the X509 verify result),
// or what else ended the handshake. One vocabulary for the inspector, which maps OpenSSL's codes to
// it (proxy/inspect/tls_diagnosis.h), and for serve, which reads it back from the inspector's
// "ended" message by name and takes no other word. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace boxproxy {

enum class TlsFailure : std::uint8_t {
  unknown_ca,               // the chain leads to no CA the verifier trusts (a box without the session CA)
  self_signed,              // the origin's certificate signs itself and is not trusted
  name_mismatch,            // the certificate does not name the host (or address) judged
  expired,                  // past its notAfter (or the peer's alert says certificate_expired)
  not_yet_valid,            // before its notBefore
  revoked,                  // revoked (the peer's alert says so)
  bad_certificate,          // a certificate the peer could not use: bad signature, form, purpose
  certificate_unknown,      // the peer's alert certificate_unknown (Java's "not trusted", often)
  unsupported_certificate,  // the peer's alert unsupported_certificate
  certificate_required,     // the origin wants a client certificate (mutual TLS)
  verify_failed,            // any other verify result
  protocol_version,         // no TLS version both speak
  no_shared_cipher,         // no cipher suite or group both speak
  handshake_failure,        // the peer's alert handshake_failure
  no_application_protocol,  // no ALPN protocol both speak
  unrecognized_name,        // the peer's alert unrecognized_name (the origin does not serve that SNI)
  alert,                    // another alert from the peer
  not_tls,                  // the peer answered with what is not TLS (an origin speaking plain HTTP)
  eof,                      // the peer closed in the middle of the handshake, without an alert
  timeout,                  // the handshake did not end in time
  error,                    // anything else
};

// The token: "unknown-ca", "name-mismatch", ... (the enum's names, '_' written '-').
[[nodiscard]] std::string_view tls_failure_name(TlsFailure failure) noexcept;
// And back; nullopt for any other text.
[[nodiscard]] std::optional<TlsFailure> tls_failure_from_name(std::string_view name) noexcept;

}  // namespace boxproxy
