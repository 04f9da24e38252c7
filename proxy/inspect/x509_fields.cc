// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/x509_fields.h"

#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include <ctime>

namespace boxproxy {

namespace {

// The serial's size in bits; BN_RAND_TOP_ONE sets the highest, the rest are random.
constexpr int kSerialBits = 127;

}  // namespace

EvpPkeyPtr make_p256_key() noexcept { return EvpPkeyPtr(EVP_EC_gen(SN_X9_62_prime256v1)); }

bool set_version_and_serial(X509* cert) noexcept {
  if (X509_set_version(cert, X509_VERSION_3) != 1) return false;
  BignumPtr number(BN_new());
  if (!number || BN_rand(number.get(), kSerialBits, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) != 1) return false;
  Asn1IntegerPtr serial(BN_to_ASN1_INTEGER(number.get(), nullptr));
  return serial && X509_set_serialNumber(cert, serial.get()) == 1;  // it copies
}

bool set_validity(X509* cert, CertTime not_before, CertTime not_after) noexcept {
  return ASN1_TIME_set(X509_getm_notBefore(cert), std::chrono::system_clock::to_time_t(not_before)) != nullptr &&
         ASN1_TIME_set(X509_getm_notAfter(cert), std::chrono::system_clock::to_time_t(not_after)) != nullptr;
}

bool add_extension(X509* subject, X509* issuer, int nid, const char* value) noexcept {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, subject, nullptr, nullptr, 0);
  X509ExtensionPtr extension(X509V3_EXT_conf_nid(nullptr, &context, nid, value));
  return extension && X509_add_ext(subject, extension.get(), -1) == 1;  // it copies
}

std::optional<CertTime> cert_time(const ASN1_TIME* time) noexcept {
  std::tm fields{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &fields) != 1) return std::nullopt;
  const std::time_t seconds = timegm(&fields);
  if (seconds == -1) return std::nullopt;
  return std::chrono::system_clock::from_time_t(seconds);
}

}  // namespace boxproxy
