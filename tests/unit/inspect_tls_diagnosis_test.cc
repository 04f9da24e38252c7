// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/tls_diagnosis: OpenSSL's alerts, verify results and errors in tls='s words.
#include <doctest/doctest.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "proxy/inspect/tls_diagnosis.h"

using namespace boxproxy;

TEST_CASE("an alert the peer sent") {
  CHECK(tls_failure_of_alert(SSL_AD_UNKNOWN_CA) == TlsFailure::unknown_ca);
  CHECK(tls_failure_of_alert(SSL_AD_BAD_CERTIFICATE) == TlsFailure::bad_certificate);
  CHECK(tls_failure_of_alert(SSL_AD_CERTIFICATE_UNKNOWN) == TlsFailure::certificate_unknown);
  CHECK(tls_failure_of_alert(SSL_AD_CERTIFICATE_EXPIRED) == TlsFailure::expired);
  CHECK(tls_failure_of_alert(SSL_AD_PROTOCOL_VERSION) == TlsFailure::protocol_version);
  CHECK(tls_failure_of_alert(SSL_AD_DECODE_ERROR) == TlsFailure::alert);
}

TEST_CASE("the verify result of the origin's certificate") {
  CHECK(tls_failure_of_verify(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY) == TlsFailure::unknown_ca);
  CHECK(tls_failure_of_verify(X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN) == TlsFailure::unknown_ca);
  CHECK(tls_failure_of_verify(X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT) == TlsFailure::self_signed);
  CHECK(tls_failure_of_verify(X509_V_ERR_HOSTNAME_MISMATCH) == TlsFailure::name_mismatch);
  CHECK(tls_failure_of_verify(X509_V_ERR_IP_ADDRESS_MISMATCH) == TlsFailure::name_mismatch);
  CHECK(tls_failure_of_verify(X509_V_ERR_CERT_HAS_EXPIRED) == TlsFailure::expired);
  CHECK(tls_failure_of_verify(X509_V_ERR_CERT_NOT_YET_VALID) == TlsFailure::not_yet_valid);
  CHECK(tls_failure_of_verify(X509_V_ERR_CERT_REVOKED) == TlsFailure::revoked);
  CHECK(tls_failure_of_verify(X509_V_ERR_PATH_LENGTH_EXCEEDED) == TlsFailure::verify_failed);
}

TEST_CASE("an OpenSSL error code") {
  // As OpenSSL reports a received alert: SSL_AD_REASON_OFFSET plus its description.
  CHECK(tls_failure_of_error(ERR_PACK(ERR_LIB_SSL, 0, SSL_R_TLSV1_ALERT_UNKNOWN_CA), nullptr) ==
        std::optional<TlsFailure>(TlsFailure::unknown_ca));
  CHECK(tls_failure_of_error(ERR_PACK(ERR_LIB_SSL, 0, SSL_R_SSLV3_ALERT_BAD_CERTIFICATE), nullptr) ==
        std::optional<TlsFailure>(TlsFailure::bad_certificate));
  CHECK(tls_failure_of_error(ERR_PACK(ERR_LIB_SSL, 0, SSL_R_WRONG_VERSION_NUMBER), nullptr) ==
        std::optional<TlsFailure>(TlsFailure::not_tls));
  CHECK(tls_failure_of_error(ERR_PACK(ERR_LIB_SSL, 0, SSL_R_UNEXPECTED_EOF_WHILE_READING), nullptr) ==
        std::optional<TlsFailure>(TlsFailure::eof));
  // Verify failed without a session to ask: only that much is known.
  CHECK(tls_failure_of_error(ERR_PACK(ERR_LIB_SSL, 0, SSL_R_CERTIFICATE_VERIFY_FAILED), nullptr) ==
        std::optional<TlsFailure>(TlsFailure::verify_failed));
  // libevent's own SSL_ERROR_* values and other libraries' codes say nothing of the handshake.
  CHECK_FALSE(tls_failure_of_error(SSL_ERROR_SSL, nullptr));
  CHECK_FALSE(tls_failure_of_error(ERR_PACK(ERR_LIB_X509, 0, 1), nullptr));
}
