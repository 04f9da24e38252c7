// SPDX-License-Identifier: Apache-2.0
// OpenSSL's account of a failed handshake turned into table/tls_failure.h's one word: the alert a
// peer sent (a box's client that does not trust the session CA sends unknown_ca), the X509 verify
// result of the origin's certificate (a name it does not carry, a date it is not valid at), or the
// error OpenSSL met itself.
#pragma once

#include <openssl/ssl.h>

#include <optional>

#include "table/tls_failure.h"

namespace boxproxy {

// A TLS alert's description (SSL_AD_*), as the peer sent it.
[[nodiscard]] TlsFailure tls_failure_of_alert(int description) noexcept;
// An X509 verify result (X509_V_ERR_*) other than X509_V_OK.
[[nodiscard]] TlsFailure tls_failure_of_verify(long result) noexcept;
// An OpenSSL error code (ERR_get_error's, or libevent's bufferevent_get_openssl_error's): an
// alert received, a verify failure (`ssl`'s verify result says which), or what else it names;
// nullopt for a code that says nothing of the handshake (libevent's own SSL_ERROR_* values).
[[nodiscard]] std::optional<TlsFailure> tls_failure_of_error(unsigned long code, const SSL* ssl) noexcept;

}  // namespace boxproxy
