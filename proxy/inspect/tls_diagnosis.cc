// SPDX-License-Identifier: Apache-2.0
// OpenSSL's codes in table/tls_failure.h's words (proxy/inspect/tls_diagnosis.h).
#include "proxy/inspect/tls_diagnosis.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

namespace boxproxy {

TlsFailure tls_failure_of_alert(int description) noexcept {
  switch (description) {
    case SSL_AD_UNKNOWN_CA: return TlsFailure::unknown_ca;
    case SSL_AD_BAD_CERTIFICATE: return TlsFailure::bad_certificate;
    case SSL_AD_UNSUPPORTED_CERTIFICATE: return TlsFailure::unsupported_certificate;
    case SSL_AD_CERTIFICATE_REVOKED: return TlsFailure::revoked;
    case SSL_AD_CERTIFICATE_EXPIRED: return TlsFailure::expired;
    case SSL_AD_CERTIFICATE_UNKNOWN: return TlsFailure::certificate_unknown;
    case SSL_AD_CERTIFICATE_REQUIRED: return TlsFailure::certificate_required;
    case SSL_AD_HANDSHAKE_FAILURE: return TlsFailure::handshake_failure;
    case SSL_AD_PROTOCOL_VERSION: return TlsFailure::protocol_version;
    case SSL_AD_INSUFFICIENT_SECURITY: return TlsFailure::no_shared_cipher;
    case SSL_AD_NO_APPLICATION_PROTOCOL: return TlsFailure::no_application_protocol;
    case SSL_AD_UNRECOGNIZED_NAME: return TlsFailure::unrecognized_name;
    default: return TlsFailure::alert;
  }
}

TlsFailure tls_failure_of_verify(long result) noexcept {
  switch (result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
      return TlsFailure::unknown_ca;
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT: return TlsFailure::self_signed;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return TlsFailure::name_mismatch;
    case X509_V_ERR_CERT_HAS_EXPIRED: return TlsFailure::expired;
    case X509_V_ERR_CERT_NOT_YET_VALID: return TlsFailure::not_yet_valid;
    case X509_V_ERR_CERT_REVOKED: return TlsFailure::revoked;
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_INVALID_PURPOSE:
    case X509_V_ERR_INVALID_CA:
    case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD:
    case X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD:
      return TlsFailure::bad_certificate;
    default: return TlsFailure::verify_failed;
  }
}

std::optional<TlsFailure> tls_failure_of_error(unsigned long code, const SSL* ssl) noexcept {
  if (ERR_GET_LIB(code) != ERR_LIB_SSL) return std::nullopt;
  const int reason = ERR_GET_REASON(code);
  // An alert the peer sent is reported as SSL_AD_REASON_OFFSET plus its description.
  if (reason > SSL_AD_REASON_OFFSET && reason <= SSL_AD_REASON_OFFSET + 255) {
    return tls_failure_of_alert(reason - SSL_AD_REASON_OFFSET);
  }
  switch (reason) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED: {
      const long result = ssl != nullptr ? SSL_get_verify_result(ssl) : X509_V_OK;
      return result != X509_V_OK ? tls_failure_of_verify(result) : TlsFailure::verify_failed;
    }
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
      return TlsFailure::protocol_version;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
      return TlsFailure::no_shared_cipher;
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      return TlsFailure::not_tls;
    case SSL_R_UNEXPECTED_EOF_WHILE_READING: return TlsFailure::eof;
    default: return TlsFailure::error;
  }
}

}  // namespace boxproxy
