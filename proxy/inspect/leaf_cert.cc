// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/leaf_cert.h"

#include <arpa/inet.h>
#include <openssl/err.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace boxproxy {

namespace {

constexpr std::size_t kMaxCommonName = 64;  // RFC 5280's ub-common-name

// An IP literal's bytes (4 or 16), network order.
struct IpBytes {
  std::array<unsigned char, 16> bytes{};
  int size = 0;
};

// The host's address when it is an IPv4 or IPv6 literal (the caller has stripped brackets).
std::optional<IpBytes> ip_literal(const std::string& host) {
  IpBytes ip;
  if (inet_pton(AF_INET, host.c_str(), ip.bytes.data()) == 1) {
    ip.size = 4;
    return ip;
  }
  if (inet_pton(AF_INET6, host.c_str(), ip.bytes.data()) == 1) {
    ip.size = 16;
    return ip;
  }
  return std::nullopt;
}

// The address in its one text form (so that "::0:1" and "::1" are the same leaf).
std::string ip_text(const IpBytes& ip) {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(ip.size == 4 ? AF_INET : AF_INET6, ip.bytes.data(), text, sizeof text) == nullptr) return {};
  return text;
}

bool name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// The subjectAltName: the one host, made as a structure, never as OpenSSL's "DNS:..." text (where
// a comma in a host would start a second name).
GeneralNamesPtr alt_names(const std::string& host) {
  GeneralNamePtr name(GENERAL_NAME_new());
  if (!name) return nullptr;
  if (const auto ip = ip_literal(host)) {
    Asn1OctetStringPtr address(ASN1_OCTET_STRING_new());
    if (!address || ASN1_OCTET_STRING_set(address.get(), ip->bytes.data(), ip->size) != 1) return nullptr;
    GENERAL_NAME_set0_value(name.get(), GEN_IPADD, address.release());
  } else {
    Asn1Ia5StringPtr dns(ASN1_IA5STRING_new());
    if (!dns || ASN1_STRING_set(dns.get(), host.data(), static_cast<int>(host.size())) != 1) return nullptr;
    GENERAL_NAME_set0_value(name.get(), GEN_DNS, dns.release());
  }
  GeneralNamesPtr names(GENERAL_NAMES_new());
  if (!names || sk_GENERAL_NAME_push(names.get(), name.get()) <= 0) return nullptr;
  name.release();  // the stack owns it now
  return names;
}

// Subject, issuer and subjectAltName. A host too long for a CN leaves the subject empty (a cut
// name would be a wrong one); the subjectAltName must then be critical (RFC 5280 4.2.1.6).
bool set_names(X509* cert, X509* ca_cert, const std::string& host) {
  X509NamePtr subject(X509_NAME_new());
  if (!subject) return false;
  const bool named = host.size() <= kMaxCommonName;
  if (named && X509_NAME_add_entry_by_NID(subject.get(), NID_commonName, MBSTRING_UTF8,
                                          reinterpret_cast<const unsigned char*>(host.data()),
                                          static_cast<int>(host.size()), -1, 0) != 1) {
    return false;
  }
  GeneralNamesPtr names = alt_names(host);
  return names && X509_set_subject_name(cert, subject.get()) == 1 &&
         X509_set_issuer_name(cert, X509_get_subject_name(ca_cert)) == 1 &&
         X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), named ? 0 : 1, X509V3_ADD_DEFAULT) == 1;
}

// What a TLS server's leaf needs, and no more: not a CA (so a box shown it cannot sign with its
// key, were it ever to learn it); its key signs handshakes only (digitalSignature; an ECDSA key
// never encrypts); for servers only (serverAuth).
bool set_leaf_extensions(X509* cert, X509* ca_cert) {
  if (!add_extension(cert, ca_cert, NID_basic_constraints, "critical,CA:FALSE") ||
      !add_extension(cert, ca_cert, NID_key_usage, "critical,digitalSignature") ||
      !add_extension(cert, ca_cert, NID_ext_key_usage, "serverAuth")) {
    return false;
  }
  // An operator's CA may have no subjectKeyIdentifier; clients then find it by its name.
  return X509_get0_subject_key_id(ca_cert) == nullptr ||
         add_extension(cert, ca_cert, NID_authority_key_identifier, "keyid:always");
}

LeafOrError failure(std::string what) { return {nullptr, std::move(what)}; }

}  // namespace

std::optional<std::string> leaf_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string_view::npos) return std::nullopt;  // brackets hold IPv6 only
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);  // "example.test." is "example.test"
  if (host.empty() || host.size() > kMaxLeafHost) return std::nullopt;
  std::string name(host);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  if (const auto ip = ip_literal(name)) return ip_text(*ip);
  if (!std::all_of(name.begin(), name.end(), name_character)) return std::nullopt;
  if (name.front() == '.' || name.back() == '.' || name.find("..") != std::string::npos) return std::nullopt;
  return name;
}

LeafOrError make_leaf(const SessionCa& ca, EVP_PKEY* leaf_key, std::string_view host, CertTime now) {
  // The host is not repeated in the message: the caller's log line names it already, and a host
  // refused here may hold bytes no log line should carry.
  const std::optional<std::string> name = leaf_host(host);
  if (!name) return failure("no leaf can name this host: not a DNS name or an IP literal");
  ERR_clear_error();  // what the queue says on failure below is this leaf's reason, nothing older
  // A leaf past its CA's end would be refused by every client anyway; made, it would only look
  // usable. So a session that outlives its CA fails its handshakes with this reason in the log.
  if (now >= ca.not_after()) return failure("the session's CA has expired");
  const CertTime not_after = std::min(now + kLeafLifetime, ca.not_after());

  X509Ptr cert(X509_new());
  if (!cert || !set_version_and_serial(cert.get()) || !set_validity(cert.get(), now - kLeafBackdate, not_after) ||
      X509_set_pubkey(cert.get(), leaf_key) != 1 || !set_names(cert.get(), ca.certificate(), *name) ||
      !set_leaf_extensions(cert.get(), ca.certificate())) {
    return failure(openssl_failure("cannot make a leaf for " + *name));
  }
  if (!ca.sign(cert.get())) return failure(openssl_failure("cannot sign the leaf for " + *name));
  auto leaf = std::make_shared<Leaf>();
  leaf->certificate = std::move(cert);
  leaf->not_after = not_after;
  return {std::move(leaf), {}};
}

}  // namespace boxproxy
