// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/session_ca: the CA made at start (its fields, its key kept in the secure heap, its
// PEM), and the operator's CA loaded from files, with an error naming the file for each fault.
#include <doctest/doctest.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <sys/stat.h>

#include <stdexcept>
#include <string>

#include "inspect_test_support.h"
#include "proxy/inspect/leaf_cert.h"
#include "proxy/inspect/session_ca.h"

using namespace boxproxy;
using namespace inspect_test;

namespace {

std::string common_name_of(X509_NAME* name) {
  char text[256];
  const int size = X509_NAME_get_text_by_NID(name, NID_commonName, text, sizeof text);
  return size < 0 ? std::string() : std::string(text, static_cast<std::size_t>(size));
}

bool critical(X509* cert, int nid) {
  const int at = X509_get_ext_by_NID(cert, nid, -1);
  REQUIRE(at >= 0);
  return X509_EXTENSION_get_critical(X509_get_ext(cert, at)) == 1;
}

std::string group_name(EVP_PKEY* key) {
  char name[64] = {};
  std::size_t size = 0;
  REQUIRE(EVP_PKEY_get_group_name(key, name, sizeof name, &size) == 1);
  return std::string(name, size);
}

BignumPtr serial_of(X509* cert) {
  BignumPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  REQUIRE(serial);
  return serial;
}

// The message load() throws for these files, or "" when it loads.
std::string load_error(const std::string& cert_file, const std::string& key_file, CertTime now = kStart) {
  try {
    (void)SessionCa::load(cert_file, key_file, now);
    return {};
  } catch (const std::runtime_error& error) {
    return error.what();
  }
}

}  // namespace

TEST_CASE("the session's CA: P-256, named after the label, an hour back for 30 days, a CA for leaves only") {
  const SessionCa ca = SessionCa::generate("test-label", kStart);
  X509* cert = ca.certificate();

  CHECK(common_name_of(X509_get_subject_name(cert)) == "boxproxy test-label");
  CHECK(X509_NAME_entry_count(X509_get_subject_name(cert)) == 1);
  CHECK(X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)) == 0);
  CHECK(X509_get_version(cert) == X509_VERSION_3);

  const std::time_t start = std::chrono::system_clock::to_time_t(kStart);
  CHECK(ASN1_TIME_cmp_time_t(X509_get0_notBefore(cert), start - 3600) == 0);
  CHECK(ASN1_TIME_cmp_time_t(X509_get0_notAfter(cert), start - 3600 + 30 * 24 * 3600) == 0);
  CHECK(ca.not_before() == kStart - hours(1));
  CHECK(ca.not_after() == kStart - hours(1) + hours(30 * 24));

  CHECK(X509_check_ca(cert) == 1);
  CHECK(critical(cert, NID_basic_constraints));
  CHECK(X509_get_pathlen(cert) == 0);
  CHECK(X509_get_key_usage(cert) == (KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  CHECK(critical(cert, NID_key_usage));
  REQUIRE(X509_get0_subject_key_id(cert) != nullptr);
  CHECK(ASN1_STRING_length(X509_get0_subject_key_id(cert)) == 20);

  EVP_PKEY* key = X509_get0_pubkey(cert);
  REQUIRE(key != nullptr);
  CHECK(EVP_PKEY_is_a(key, "EC") == 1);
  CHECK(group_name(key) == "prime256v1");
  CHECK(X509_get_signature_nid(cert) == NID_ecdsa_with_SHA256);
  CHECK(X509_self_signed(cert, 1) == 1);  // its signature verified with its own key
  CHECK(X509_verify(cert, key) == 1);
}

TEST_CASE("the CA's serial is random, positive and at least 64 bits") {
  const SessionCa one = SessionCa::generate("one", kStart);
  const SessionCa two = SessionCa::generate("one", kStart);
  const BignumPtr first = serial_of(one.certificate());
  const BignumPtr second = serial_of(two.certificate());
  CHECK(BN_is_negative(first.get()) == 0);
  CHECK(BN_num_bits(first.get()) >= 64);
  CHECK(BN_num_bits(second.get()) >= 64);
  CHECK(BN_cmp(first.get(), second.get()) != 0);
  // Same name, another key: a client tells them apart by the key identifier.
  CHECK(ASN1_OCTET_STRING_cmp(X509_get0_subject_key_id(one.certificate()),
                              X509_get0_subject_key_id(two.certificate())) != 0);
}

TEST_CASE("the CA's name: a long label is cut to the 64 characters of a CN; an empty or unprintable one is refused") {
  const std::string label(128, 'x');
  const SessionCa ca = SessionCa::generate(label, kStart);
  CHECK(common_name_of(X509_get_subject_name(ca.certificate())) == "boxproxy " + std::string(55, 'x'));
  CHECK_THROWS_AS((void)SessionCa::generate("", kStart), std::invalid_argument);
  CHECK_THROWS_AS((void)SessionCa::generate("tab\there", kStart), std::invalid_argument);
  CHECK_THROWS_AS((void)SessionCa::generate("caf\xc3\xa9", kStart), std::invalid_argument);
}

TEST_CASE("the CA's key is made in the secure heap, which is out of core dumps") {
  // Nothing in this test binary starts the heap but SessionCa's factories.
  const SessionCa ca = SessionCa::generate("heap", kStart);
  CHECK(CRYPTO_secure_malloc_initialized() == 1);
  CHECK(ca.key_heap() != KeyHeap::ordinary_heap);  // Debian's OpenSSL 3.0 has one
  CHECK(ca.key_heap() == start_key_heap());
  const std::size_t before = CRYPTO_secure_used();
  const SessionCa another = SessionCa::generate("heap", kStart);
  CHECK(CRYPTO_secure_used() > before);  // the private key's number is there
}

TEST_CASE("the CA's PEM parses back to the same certificate, and carries no private key") {
  const SessionCa ca = SessionCa::generate("pem", kStart);
  const std::string& pem = ca.certificate_pem();
  CHECK(pem.rfind("-----BEGIN CERTIFICATE-----\n", 0) == 0);
  CHECK(pem.find("PRIVATE") == std::string::npos);
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  REQUIRE(bio);
  X509Ptr back(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  REQUIRE(back);
  CHECK(X509_cmp(back.get(), ca.certificate()) == 0);
  // And nothing after it.
  X509Ptr more(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  CHECK(!more);
  (void)take_openssl_errors();
}

TEST_CASE("an operator's CA loads from PEM files, and signs leaves that verify against it") {
  TempDir dir;
  SUBCASE("ECDSA P-256") {
    EvpPkeyPtr key = make_p256_key();
    REQUIRE(key);
    X509Ptr cert = self_signed(key.get());
    const std::string cert_file = dir.write("ca.pem", pem_of_cert(cert.get()));
    const std::string key_file = dir.write("ca.key", pem_of_key(key.get()));
    const SessionCa ca = SessionCa::load(cert_file, key_file, kStart);
    CHECK(X509_cmp(ca.certificate(), cert.get()) == 0);
    CHECK(ca.certificate_pem() == pem_of_cert(cert.get()));
    EvpPkeyPtr leaf_key = make_p256_key();
    const LeafOrError made = make_leaf(ca, leaf_key.get(), "api.example.test", kStart);
    REQUIRE(made.leaf);
    CHECK(verify_leaf(made.leaf->certificate.get(), ca.certificate(), kStart, "api.example.test") == X509_V_OK);
  }
  SUBCASE("RSA, a chain file whose first certificate is the CA, and no subjectKeyIdentifier") {
    EvpPkeyPtr key(EVP_RSA_gen(2048));
    REQUIRE(key);
    OperatorCert shape;
    shape.subject_key_identifier = false;
    X509Ptr cert = self_signed(key.get(), shape);
    EvpPkeyPtr other = make_p256_key();
    X509Ptr second = self_signed(other.get());
    const std::string cert_file = dir.write("ca.pem", pem_of_cert(cert.get()) + pem_of_cert(second.get()));
    const std::string key_file = dir.write("ca.key", pem_of_key(key.get()));
    const SessionCa ca = SessionCa::load(cert_file, key_file, kStart);
    CHECK(X509_cmp(ca.certificate(), cert.get()) == 0);
    EvpPkeyPtr leaf_key = make_p256_key();
    const LeafOrError made = make_leaf(ca, leaf_key.get(), "api.example.test", kStart);
    REQUIRE(made.leaf);
    CHECK(X509_get_signature_nid(made.leaf->certificate.get()) == NID_sha256WithRSAEncryption);
    CHECK(X509_get0_authority_key_id(made.leaf->certificate.get()) == nullptr);
    // Not X509_V_FLAG_X509_STRICT here: it wants an authorityKeyIdentifier, which a CA without
    // a subjectKeyIdentifier cannot give; clients find such a CA by its name.
    X509StorePtr store(X509_STORE_new());
    REQUIRE(X509_STORE_add_cert(store.get(), ca.certificate()) == 1);
    X509StoreCtxPtr context(X509_STORE_CTX_new());
    REQUIRE(X509_STORE_CTX_init(context.get(), store.get(), made.leaf->certificate.get(), nullptr) == 1);
    REQUIRE(X509_STORE_CTX_set_purpose(context.get(), X509_PURPOSE_SSL_SERVER) == 1);
    X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context.get()), std::chrono::system_clock::to_time_t(kStart));
    CHECK(X509_verify_cert(context.get()) == 1);
  }
  SUBCASE("Ed25519") {
    EvpPkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    REQUIRE(key);
    X509Ptr cert = self_signed(key.get());
    const SessionCa ca = SessionCa::load(dir.write("ca.pem", pem_of_cert(cert.get())),
                                         dir.write("ca.key", pem_of_key(key.get())), kStart);
    EvpPkeyPtr leaf_key = make_p256_key();
    const LeafOrError made = make_leaf(ca, leaf_key.get(), "api.example.test", kStart);
    REQUIRE(made.leaf);
    CHECK(X509_get_signature_nid(made.leaf->certificate.get()) == NID_ED25519);
    CHECK(verify_leaf(made.leaf->certificate.get(), ca.certificate(), kStart, "api.example.test") == X509_V_OK);
  }
}

TEST_CASE("an operator's CA is refused with a message naming the file and the fault") {
  TempDir dir;
  EvpPkeyPtr key = make_p256_key();
  REQUIRE(key);
  X509Ptr cert = self_signed(key.get());
  const std::string cert_file = dir.write("ca.pem", pem_of_cert(cert.get()));
  const std::string key_file = dir.write("ca.key", pem_of_key(key.get()));
  REQUIRE(load_error(cert_file, key_file).empty());  // the good pair loads: each case below changes one thing

  SUBCASE("a key that is not the certificate's") {
    EvpPkeyPtr other = make_p256_key();
    const std::string other_file = dir.write("other.key", pem_of_key(other.get()));
    CHECK(load_error(cert_file, other_file) ==
          other_file + ": is not the private key of the certificate in " + cert_file);
  }
  SUBCASE("a certificate that is not a CA") {
    OperatorCert shape;
    shape.basic_constraints = "critical,CA:FALSE";
    shape.key_usage = "critical,digitalSignature,keyCertSign";
    X509Ptr leaf = self_signed(key.get(), shape);
    const std::string leaf_file = dir.write("leaf.pem", pem_of_cert(leaf.get()));
    CHECK(load_error(leaf_file, key_file) ==
          leaf_file + ": is not a CA certificate (it has no basicConstraints CA:TRUE)");
  }
  SUBCASE("a CA whose keyUsage does not sign certificates") {
    OperatorCert shape;
    shape.key_usage = "critical,digitalSignature";
    X509Ptr signer = self_signed(key.get(), shape);
    const std::string signer_file = dir.write("signer.pem", pem_of_cert(signer.get()));
    CHECK(load_error(signer_file, key_file) ==
          signer_file + ": is a certificate whose keyUsage does not allow signing certificates (keyCertSign)");
  }
  SUBCASE("a CA that has expired, or is not valid yet") {
    OperatorCert shape;
    shape.not_before = kStart - hours(48);
    shape.not_after = kStart - hours(24);
    const std::string old_file = dir.write("old.pem", pem_of_cert(self_signed(key.get(), shape).get()));
    const std::string error = load_error(old_file, key_file);
    CHECK(error.rfind(old_file + ": is not valid now: it is valid from ", 0) == 0);
    CHECK(error.find("Z to ") != std::string::npos);
    CHECK(load_error(cert_file, key_file, kStart - hours(48)).rfind(cert_file + ": is not valid now", 0) == 0);
  }
  SUBCASE("a missing file") {
    const std::string missing = dir.file("missing.pem");
    CHECK(load_error(missing, key_file) == missing + ": cannot open it: No such file or directory");
    CHECK(load_error(cert_file, missing) == missing + ": cannot open it: No such file or directory");
  }
  SUBCASE("garbage") {
    const std::string garbage = dir.write("garbage", "this is not PEM\n\x01\x02\xff");
    const std::string as_cert = load_error(garbage, key_file);
    CHECK(as_cert.rfind(garbage + ": holds no PEM certificate (", 0) == 0);
    const std::string as_key = load_error(cert_file, garbage);
    CHECK(as_key.rfind(garbage + ": holds no PEM private key that can be read without a passphrase (", 0) == 0);
    // The key where the certificate should be, and the other way round.
    CHECK(load_error(key_file, cert_file).rfind(key_file + ": holds no PEM certificate (", 0) == 0);
    const std::string empty = dir.write("empty", "");
    CHECK(load_error(cert_file, empty).rfind(empty + ": holds no PEM private key", 0) == 0);
  }
  SUBCASE("an encrypted key: refused, never a prompt for its passphrase") {
    const std::string locked = dir.write("locked.key", pem_of_key(key.get(), "secret passphrase"));
    CHECK(load_error(cert_file, locked)
              .rfind(locked + ": holds no PEM private key that can be read without a passphrase (", 0) == 0);
  }
  SUBCASE("a directory, a FIFO (refused at once, not waited on), and a key file too large for a key") {
    CHECK(load_error(cert_file, dir.file("")) == dir.file("") + ": is not a regular file");
    const std::string fifo = dir.file("fifo");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(load_error(cert_file, fifo) == fifo + ": is not a regular file");
    const std::string huge = dir.write("huge.key", std::string(kMaxKeyFileBytes + 1, 'A'));
    CHECK(load_error(cert_file, huge) ==
          huge + ": is larger than " + std::to_string(kMaxKeyFileBytes) + " bytes, too large for what it should hold");
  }
}
