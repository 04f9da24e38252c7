// SPDX-License-Identifier: Apache-2.0
// What the proxy/inspect/ tests share: a fixed start time, a chain check as a client makes it, a
// temporary directory, and certificates an operator might bring (made here with OpenSSL).
#pragma once

#include <doctest/doctest.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/x509_fields.h"

namespace inspect_test {

using boxproxy::CertTime;
using std::chrono::hours;

// A start in whole seconds (2030-03-17), so that validity is compared to the second.
inline const CertTime kStart = std::chrono::system_clock::from_time_t(1'900'000'000);

// What a TLS client decides of `leaf` at `at`: X509_V_OK, or the reason it refuses. It trusts
// `ca` only, checks as an SSL server's chain (purpose sslserver), strictly (RFC 5280's rules), and
// that the leaf names `host` (a DNS name) or `ip` (an address literal), whichever is not empty.
inline int verify_leaf(X509* leaf, X509* ca, CertTime at, const std::string& host, const std::string& ip = {}) {
  boxproxy::X509StorePtr store(X509_STORE_new());
  REQUIRE(store);
  REQUIRE(X509_STORE_add_cert(store.get(), ca) == 1);
  boxproxy::X509StoreCtxPtr context(X509_STORE_CTX_new());
  REQUIRE(context);
  REQUIRE(X509_STORE_CTX_init(context.get(), store.get(), leaf, nullptr) == 1);
  REQUIRE(X509_STORE_CTX_set_purpose(context.get(), X509_PURPOSE_SSL_SERVER) == 1);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(context.get());
  X509_VERIFY_PARAM_set_time(param, std::chrono::system_clock::to_time_t(at));
  REQUIRE(X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT) == 1);
  if (!host.empty()) REQUIRE(X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1);
  if (!ip.empty()) REQUIRE(X509_VERIFY_PARAM_set1_ip_asc(param, ip.c_str()) == 1);
  const int verdict = X509_verify_cert(context.get());
  const int error = X509_STORE_CTX_get_error(context.get());
  return verdict == 1 ? X509_V_OK : (error == X509_V_OK ? -1 : error);
}

// A directory of its own under the system's temporary one, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "boxproxy-inspect-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

  // Writes `text` to `name` in it; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream out(file(name), std::ios::binary);
    out << text;
    REQUIRE(out.good());
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  REQUIRE(size > 0);
  return std::string(data, static_cast<std::size_t>(size));
}

inline std::string pem_of_cert(X509* cert) {
  boxproxy::BioPtr bio(BIO_new(BIO_s_mem()));
  REQUIRE(PEM_write_bio_X509(bio.get(), cert) == 1);
  return bio_text(bio.get());
}

// The key as PEM (PKCS#8), encrypted with `passphrase` when one is given.
inline std::string pem_of_key(EVP_PKEY* key, const std::string& passphrase = {}) {
  boxproxy::BioPtr bio(BIO_new(BIO_s_mem()));
  if (passphrase.empty()) {
    REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
  } else {
    REQUIRE(PEM_write_bio_PKCS8PrivateKey(bio.get(), key, EVP_aes_256_cbc(), passphrase.data(),
                                          static_cast<int>(passphrase.size()), nullptr, nullptr) == 1);
  }
  return bio_text(bio.get());
}

// What an operator's certificate holds: its extensions in OpenSSL's text form (none when empty).
struct OperatorCert {
  std::string basic_constraints = "critical,CA:TRUE";
  std::string key_usage = "critical,keyCertSign,cRLSign";
  bool subject_key_identifier = true;
  CertTime not_before = kStart - hours(24);
  CertTime not_after = kStart + hours(24 * 365);
};

// A self-signed certificate for `key`, named "CN=operator test CA", SHA-256 (or the key's own
// scheme for Ed25519).
inline boxproxy::X509Ptr self_signed(EVP_PKEY* key, const OperatorCert& shape = {}) {
  boxproxy::X509Ptr cert(X509_new());
  REQUIRE(cert);
  REQUIRE(boxproxy::set_version_and_serial(cert.get()));
  REQUIRE(boxproxy::set_validity(cert.get(), shape.not_before, shape.not_after));
  X509_NAME* name = X509_get_subject_name(cert.get());  // owned by the certificate
  REQUIRE(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>("operator test CA"), -1, -1, 0) == 1);
  REQUIRE(X509_set_issuer_name(cert.get(), name) == 1);
  REQUIRE(X509_set_pubkey(cert.get(), key) == 1);
  if (!shape.basic_constraints.empty()) {
    REQUIRE(boxproxy::add_extension(cert.get(), cert.get(), NID_basic_constraints, shape.basic_constraints.c_str()));
  }
  if (!shape.key_usage.empty()) {
    REQUIRE(boxproxy::add_extension(cert.get(), cert.get(), NID_key_usage, shape.key_usage.c_str()));
  }
  if (shape.subject_key_identifier) {
    REQUIRE(boxproxy::add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  }
  const bool pure = EVP_PKEY_is_a(key, "ED25519") == 1;
  REQUIRE(X509_sign(cert.get(), key, pure ? nullptr : EVP_sha256()) > 0);
  return cert;
}

}  // namespace inspect_test
