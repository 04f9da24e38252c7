// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/leaf_cert and leaf_cache: a leaf per host that a client accepts for that host and
// no other, kept and reused, renewed before its end, and at most `capacity` of them (least
// recently used out first).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "inspect_test_support.h"
#include "proxy/inspect/leaf_cache.h"
#include "proxy/inspect/leaf_cert.h"
#include "proxy/inspect/session_ca.h"

using namespace boxproxy;
using namespace inspect_test;

namespace {

const SessionCa& test_ca() {
  static const SessionCa ca = SessionCa::generate("leaves", kStart);
  return ca;
}

// The leaf for `host` from `cache` at `at`; the test stops when there is none.
std::shared_ptr<const Leaf> leaf_of(LeafCache& cache, const std::string& host, CertTime at = kStart) {
  LeafOrError made = cache.leaf_for(host, at);
  INFO(made.error);
  REQUIRE(made.leaf);
  CHECK(made.error.empty());
  return made.leaf;
}

// The leaf's subjectAltName entries, and whether the extension is critical.
struct AltNames {
  std::vector<GENERAL_NAME*> names;  // owned by `all`
  GeneralNamesPtr all;
  int critical = -1;
};

AltNames alt_names_of(X509* cert) {
  AltNames out;
  out.all.reset(static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, &out.critical, nullptr)));
  REQUIRE(out.all);
  for (int i = 0; i < sk_GENERAL_NAME_num(out.all.get()); ++i) {
    out.names.push_back(sk_GENERAL_NAME_value(out.all.get(), i));
  }
  return out;
}

std::string dns_name(GENERAL_NAME* name) {
  REQUIRE(name->type == GEN_DNS);
  const ASN1_STRING* text = name->d.dNSName;
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                     static_cast<std::size_t>(ASN1_STRING_length(text)));
}

std::vector<unsigned char> ip_bytes(GENERAL_NAME* name) {
  REQUIRE(name->type == GEN_IPADD);
  const ASN1_STRING* octets = name->d.iPAddress;
  const unsigned char* data = ASN1_STRING_get0_data(octets);
  return std::vector<unsigned char>(data, data + ASN1_STRING_length(octets));
}

std::string common_name_of(X509* cert) {
  char text[256];
  const int size = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, text, sizeof text);
  return size < 0 ? std::string() : std::string(text, static_cast<std::size_t>(size));
}

bool critical(X509* cert, int nid) {
  const int at = X509_get_ext_by_NID(cert, nid, -1);
  REQUIRE(at >= 0);
  return X509_EXTENSION_get_critical(X509_get_ext(cert, at)) == 1;
}

}  // namespace

TEST_CASE("a leaf for a name: a client that trusts the CA accepts it for that name, and for no other") {
  LeafCache cache(test_ca());
  const auto leaf = leaf_of(cache, "api.example.test");
  X509* cert = leaf->certificate.get();
  X509* ca = test_ca().certificate();

  CHECK(verify_leaf(cert, ca, kStart, "api.example.test") == X509_V_OK);
  CHECK(verify_leaf(cert, ca, kStart, "other.example.test") == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(verify_leaf(cert, ca, kStart, "x.api.example.test") == X509_V_ERR_HOSTNAME_MISMATCH);
  // Not by another CA's trust.
  const SessionCa stranger = SessionCa::generate("stranger", kStart);
  CHECK(verify_leaf(cert, stranger.certificate(), kStart, "api.example.test") ==
        X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);

  const AltNames alt = alt_names_of(cert);
  REQUIRE(alt.names.size() == 1);
  CHECK(dns_name(alt.names[0]) == "api.example.test");
  CHECK(alt.critical == 0);  // the subject names the host too
  CHECK(common_name_of(cert) == "api.example.test");
  CHECK(X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(ca)) == 0);
}

TEST_CASE("a leaf's fields: a server's, not a CA, P-256 with the cache's key, signed with ECDSA SHA-256") {
  LeafCache cache(test_ca());
  const auto leaf = leaf_of(cache, "api.example.test");
  X509* cert = leaf->certificate.get();

  CHECK(X509_get_version(cert) == X509_VERSION_3);
  CHECK(X509_check_ca(cert) == 0);
  CHECK(critical(cert, NID_basic_constraints));
  CHECK(X509_get_key_usage(cert) == KU_DIGITAL_SIGNATURE);
  CHECK(critical(cert, NID_key_usage));
  CHECK(X509_get_extended_key_usage(cert) == XKU_SSL_SERVER);
  CHECK(X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0) == 1);
  CHECK(X509_check_purpose(cert, X509_PURPOSE_SSL_CLIENT, 0) == 0);
  REQUIRE(X509_get0_authority_key_id(cert) != nullptr);
  CHECK(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(cert), X509_get0_subject_key_id(test_ca().certificate())) ==
        0);
  CHECK(X509_get_signature_nid(cert) == NID_ecdsa_with_SHA256);

  EVP_PKEY* key = X509_get0_pubkey(cert);
  REQUIRE(key != nullptr);
  CHECK(EVP_PKEY_is_a(key, "EC") == 1);
  char group[64] = {};
  std::size_t size = 0;
  REQUIRE(EVP_PKEY_get_group_name(key, group, sizeof group, &size) == 1);
  CHECK(std::string(group, size) == "prime256v1");
  CHECK(EVP_PKEY_eq(key, cache.key()) == 1);  // one key for the session's leaves
  CHECK(EVP_PKEY_eq(key, X509_get0_pubkey(test_ca().certificate())) == 0);  // and not the CA's

  BignumPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  REQUIRE(serial);
  CHECK(BN_is_negative(serial.get()) == 0);
  CHECK(BN_num_bits(serial.get()) >= 64);
  const auto other = leaf_of(cache, "other.example.test");
  CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(cert), X509_get0_serialNumber(other->certificate.get())) != 0);
}

TEST_CASE("a leaf is valid from an hour back to 7 days on, never past its CA") {
  LeafCache cache(test_ca());
  const CertTime now = kStart + hours(2);
  const auto leaf = leaf_of(cache, "api.example.test", now);
  X509* cert = leaf->certificate.get();
  const std::time_t at = std::chrono::system_clock::to_time_t(now);
  CHECK(ASN1_TIME_cmp_time_t(X509_get0_notBefore(cert), at - 3600) == 0);
  CHECK(ASN1_TIME_cmp_time_t(X509_get0_notAfter(cert), at + 7 * 24 * 3600) == 0);
  CHECK(leaf->not_after == now + hours(7 * 24));

  X509* ca = test_ca().certificate();
  CHECK(verify_leaf(cert, ca, now - hours(1), "api.example.test") == X509_V_OK);
  CHECK(verify_leaf(cert, ca, now - hours(1) - std::chrono::seconds(1), "api.example.test") ==
        X509_V_ERR_CERT_NOT_YET_VALID);
  CHECK(verify_leaf(cert, ca, now + hours(7 * 24) + std::chrono::seconds(1), "api.example.test") ==
        X509_V_ERR_CERT_HAS_EXPIRED);

  // Two days before the CA ends: the leaf ends with it.
  const CertTime late = test_ca().not_after() - hours(48);
  const auto last = leaf_of(cache, "late.example.test", late);
  CHECK(last->not_after == test_ca().not_after());
  CHECK(ASN1_TIME_compare(X509_get0_notAfter(last->certificate.get()), X509_get0_notAfter(ca)) == 0);
  CHECK(verify_leaf(last->certificate.get(), ca, late, "late.example.test") == X509_V_OK);

  // Once the CA has ended, no leaf.
  const LeafOrError none = cache.leaf_for("after.example.test", test_ca().not_after());
  CHECK(!none.leaf);
  CHECK(none.error == "the session's CA has expired");
}

TEST_CASE("a leaf for an IP literal names the address, as an address") {
  LeafCache cache(test_ca());
  X509* ca = test_ca().certificate();

  const auto v4 = leaf_of(cache, "127.0.0.2");
  CHECK(verify_leaf(v4->certificate.get(), ca, kStart, {}, "127.0.0.2") == X509_V_OK);
  CHECK(verify_leaf(v4->certificate.get(), ca, kStart, {}, "127.0.0.3") == X509_V_ERR_IP_ADDRESS_MISMATCH);
  const AltNames alt4 = alt_names_of(v4->certificate.get());
  REQUIRE(alt4.names.size() == 1);
  CHECK(ip_bytes(alt4.names[0]) == std::vector<unsigned char>{127, 0, 0, 2});
  CHECK(common_name_of(v4->certificate.get()) == "127.0.0.2");

  const auto v6 = leaf_of(cache, "[::1]");
  CHECK(verify_leaf(v6->certificate.get(), ca, kStart, {}, "::1") == X509_V_OK);
  const AltNames alt6 = alt_names_of(v6->certificate.get());
  REQUIRE(alt6.names.size() == 1);
  std::vector<unsigned char> loopback(16, 0);
  loopback[15] = 1;
  CHECK(ip_bytes(alt6.names[0]) == loopback);
  // Another spelling of the same address is the same leaf.
  CHECK(leaf_of(cache, "0:0::1") == v6);
  CHECK(leaf_of(cache, "::1") == v6);
}

TEST_CASE("a host longer than a CN may be: an empty subject, the subjectAltName critical, still accepted") {
  LeafCache cache(test_ca());
  const std::string host = std::string(60, 'a') + ".example.test";  // 73 characters
  const auto leaf = leaf_of(cache, host);
  X509* cert = leaf->certificate.get();
  CHECK(X509_NAME_entry_count(X509_get_subject_name(cert)) == 0);
  const AltNames alt = alt_names_of(cert);
  REQUIRE(alt.names.size() == 1);
  CHECK(dns_name(alt.names[0]) == host);
  CHECK(alt.critical == 1);
  CHECK(verify_leaf(cert, test_ca().certificate(), kStart, host) == X509_V_OK);
}

TEST_CASE("hosts no leaf can name are refused, and nothing is kept for them") {
  LeafCache cache(test_ca());
  const std::vector<std::string> refused = {
      "",
      "*.example.test",           // never a wildcard
      "*",
      "a.test,DNS:evil.test",     // one name, never two
      "a.test\nb.test",
      "exa mple.test",
      "caf\xc3\xa9.test",
      "fe80::1%eth0",             // a zone is no part of a certificate's address
      "[example.test]",
      "[::1",
      ".",
      "a..example.test",
      ".example.test",
      "example.test..",
      std::string(254, 'a'),
  };
  for (const std::string& host : refused) {
    CAPTURE(host);
    const LeafOrError made = cache.leaf_for(host, kStart);
    CHECK(!made.leaf);
    CHECK(made.error == "no leaf can name this host: not a DNS name or an IP literal");
  }
  CHECK(cache.size() == 0);
  CHECK(leaf_of(cache, std::string(253, 'a')));  // the longest name there is
}

TEST_CASE("the cache: the same leaf for the same host (in any case); the least recently used goes first") {
  LeafCache cache(test_ca(), 3);
  const auto a = leaf_of(cache, "a.example.test");
  const auto b = leaf_of(cache, "b.example.test");
  const auto c = leaf_of(cache, "c.example.test");
  CHECK(cache.size() == 3);
  CHECK(leaf_of(cache, "a.example.test") == a);  // a is now the most recently used: b the least
  CHECK(leaf_of(cache, "A.Example.TEST") == a);
  CHECK(leaf_of(cache, "a.example.test.") == a);  // the root's dot names the same host

  const auto d = leaf_of(cache, "d.example.test");
  CHECK(cache.size() == 3);
  CHECK(leaf_of(cache, "a.example.test") == a);
  CHECK(leaf_of(cache, "c.example.test") == c);
  CHECK(leaf_of(cache, "d.example.test") == d);
  // b was the one to go: asked again, it is made again (another serial), and a (now the least
  // recently used) goes.
  const auto b_again = leaf_of(cache, "b.example.test");
  CHECK(b_again != b);
  CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(b->certificate.get()),
                         X509_get0_serialNumber(b_again->certificate.get())) != 0);
  CHECK(cache.size() == 3);
  CHECK(leaf_of(cache, "c.example.test") == c);
  CHECK(leaf_of(cache, "d.example.test") == d);
  CHECK(leaf_of(cache, "a.example.test") != a);

  // A leaf handed out stays whole after it has left the cache.
  CHECK(verify_leaf(b->certificate.get(), test_ca().certificate(), kStart, "b.example.test") == X509_V_OK);
}

TEST_CASE("the cache makes a leaf again within a day of its end, so a long session never shows an expired one") {
  LeafCache cache(test_ca());
  const auto first = leaf_of(cache, "api.example.test", kStart);
  CHECK(leaf_of(cache, "api.example.test", kStart + hours(6 * 24 - 1)) == first);
  const CertTime later = kStart + hours(6 * 24) + std::chrono::seconds(1);
  const auto second = leaf_of(cache, "api.example.test", later);
  CHECK(second != first);
  CHECK(second->not_after == later + hours(7 * 24));
  CHECK(leaf_of(cache, "api.example.test", later) == second);
  CHECK(cache.size() == 1);

  // Near the CA's end the leaf ends with the CA, and is not made again on every use.
  const CertTime late = test_ca().not_after() - hours(12);
  const auto last = leaf_of(cache, "api.example.test", late);
  CHECK(last->not_after == test_ca().not_after());
  CHECK(leaf_of(cache, "api.example.test", late + hours(1)) == last);

  // Once the CA has ended, the kept leaf (which ended with it) is never handed out again: a
  // client would refuse it anyway, and the error says why instead.
  const LeafOrError after = cache.leaf_for("api.example.test", test_ca().not_after());
  CHECK(!after.leaf);
  CHECK(after.error == "the session's CA has expired");
}
