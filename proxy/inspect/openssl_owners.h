// SPDX-License-Identifier: Apache-2.0
// RAII owners for everything OpenSSL allocates in proxy/inspect/, and the text of its errors.
//
// Nothing OpenSSL allocates is held by a raw pointer: each type has a stateless deleter and a
// unique_ptr alias (as proxy/event_owners.h does for libevent). A function that gets a pointer
// from OpenSSL puts it in its owner on the same line and checks it for null there.
//
// This room (proxy/inspect/, the library boxproxy_inspect) is the only code that includes OpenSSL,
// and it is never linked into the boxproxy executable: tests/e2e/test_no_openssl.py says why.
#pragma once

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace boxproxy {

// Calls OpenSSL's free function for its type; what some of them return (BIO_free's int) is of no use.
template <auto Free>
struct OpensslDeleter {
  template <typename T>
  void operator()(T* object) const noexcept {
    Free(object);
  }
};

using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, OpensslDeleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpensslDeleter<X509_free>>;
using X509NamePtr = std::unique_ptr<X509_NAME, OpensslDeleter<X509_NAME_free>>;
using X509ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpensslDeleter<X509_EXTENSION_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpensslDeleter<X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpensslDeleter<X509_STORE_CTX_free>>;
using BioPtr = std::unique_ptr<BIO, OpensslDeleter<BIO_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpensslDeleter<BN_free>>;
using Asn1IntegerPtr = std::unique_ptr<ASN1_INTEGER, OpensslDeleter<ASN1_INTEGER_free>>;
using Asn1OctetStringPtr = std::unique_ptr<ASN1_OCTET_STRING, OpensslDeleter<ASN1_OCTET_STRING_free>>;
using Asn1Ia5StringPtr = std::unique_ptr<ASN1_IA5STRING, OpensslDeleter<ASN1_IA5STRING_free>>;
using GeneralNamePtr = std::unique_ptr<GENERAL_NAME, OpensslDeleter<GENERAL_NAME_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, OpensslDeleter<GENERAL_NAMES_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpensslDeleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, OpensslDeleter<SSL_free>>;

// Bytes in OpenSSL's secure heap (proxy/inspect/key_heap.h), zeroed when freed: where a private
// key's PEM text is read to, so that it is never in the ordinary heap, nor in a core dump.
class SecureBytes {
 public:
  // `size` bytes, or empty (data() null) when the secure heap cannot give them.
  explicit SecureBytes(std::size_t size) noexcept;
  ~SecureBytes();
  SecureBytes(const SecureBytes&) = delete;
  SecureBytes& operator=(const SecureBytes&) = delete;

  [[nodiscard]] unsigned char* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  unsigned char* data_;
  std::size_t size_;
};

// What OpenSSL's error queue says (its first few entries, "; " between them), which it then
// empties, so that an old error never explains a later failure. "no detail" when it is empty.
[[nodiscard]] std::string take_openssl_errors();

// `what` and then, after ": ", take_openssl_errors().
[[nodiscard]] std::string openssl_failure(std::string_view what);

}  // namespace boxproxy
