// SPDX-License-Identifier: Apache-2.0
// Why a TLS handshake failed, in one word (table/tls_failure.h).
#include "table/tls_failure.h"

#include <array>
#include <utility>

namespace boxproxy {
namespace {

// Every value once, in the enum's order (the test walks it both ways).
constexpr std::array<std::pair<TlsFailure, std::string_view>, 21> kNames = {{
    {TlsFailure::unknown_ca, "unknown-ca"},
    {TlsFailure::self_signed, "self-signed"},
    {TlsFailure::name_mismatch, "name-mismatch"},
    {TlsFailure::expired, "expired"},
    {TlsFailure::not_yet_valid, "not-yet-valid"},
    {TlsFailure::revoked, "revoked"},
    {TlsFailure::bad_certificate, "bad-certificate"},
    {TlsFailure::certificate_unknown, "certificate-unknown"},
    {TlsFailure::unsupported_certificate, "unsupported-certificate"},
    {TlsFailure::certificate_required, "certificate-required"},
    {TlsFailure::verify_failed, "verify-failed"},
    {TlsFailure::protocol_version, "protocol-version"},
    {TlsFailure::no_shared_cipher, "no-shared-cipher"},
    {TlsFailure::handshake_failure, "handshake-failure"},
    {TlsFailure::no_application_protocol, "no-application-protocol"},
    {TlsFailure::unrecognized_name, "unrecognized-name"},
    {TlsFailure::alert, "alert"},
    {TlsFailure::not_tls, "not-tls"},
    {TlsFailure::eof, "eof"},
    {TlsFailure::timeout, "timeout"},
    {TlsFailure::error, "error"},
}};

}  // namespace

std::string_view tls_failure_name(TlsFailure failure) noexcept {
  for (const auto& [value, name] : kNames) {
    if (value == failure) return name;
  }
  return "error";
}

std::optional<TlsFailure> tls_failure_from_name(std::string_view name) noexcept {
  for (const auto& [value, text] : kNames) {
    if (text == name) return value;
  }
  return std::nullopt;
}

}  // namespace boxproxy
