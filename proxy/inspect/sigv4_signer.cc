// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/sigv4_signer.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>

#include <algorithm>
#include <cstdio>

#include "proxy/inspect/openssl_owners.h"
#include "proxy/utc_time.h"
#include "table/ascii.h"

namespace boxproxy {

namespace {

constexpr std::size_t kSha256Bytes = 32;
using MdPtr = std::unique_ptr<EVP_MD, OpensslDeleter<EVP_MD_free>>;
using MacPtr = std::unique_ptr<EVP_MAC, OpensslDeleter<EVP_MAC_free>>;
using MacContextPtr = std::unique_ptr<EVP_MAC_CTX, OpensslDeleter<EVP_MAC_CTX_free>>;

// SHA-256 and HMAC fetched from the default provider once, not at every call (an implicit fetch
// looks the algorithm up in the provider's store each time). Null only when OpenSSL cannot load
// them; every use checks.
const EVP_MD* sha256_algorithm() {
  static const MdPtr md(EVP_MD_fetch(nullptr, "SHA256", nullptr));
  return md.get();
}

EVP_MAC* hmac_algorithm() {
  static const MacPtr mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  return mac.get();
}

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xf];
  }
  return out;
}

// A 32-byte key derived from the secret key (kDate, kRegion, kService, kSigning): overwritten
// when it goes, so no stack frame or core dump holds one after the request is signed.
struct DerivedKey {
  std::array<unsigned char, kSha256Bytes> bytes{};
  DerivedKey() = default;
  DerivedKey(const DerivedKey&) = delete;
  DerivedKey& operator=(const DerivedKey&) = delete;
  ~DerivedKey() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

// HMAC-SHA256 with one context: set to SHA-256 once, keyed again for each step of the chain.
class Hmac {
 public:
  Hmac() : context_(hmac_algorithm() ? EVP_MAC_CTX_new(hmac_algorithm()) : nullptr) {
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    ok_ = context_ && EVP_MAC_CTX_set_params(context_.get(), params) == 1;
  }

  // HMAC(key, data) into `out`; false when OpenSSL failed (then every later call fails too).
  bool mac(const unsigned char* key, std::size_t key_size, std::string_view data, unsigned char* out) {
    std::size_t written = 0;
    ok_ = ok_ && EVP_MAC_init(context_.get(), key, key_size, nullptr) == 1 &&
          EVP_MAC_update(context_.get(), reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1 &&
          EVP_MAC_final(context_.get(), out, &written, kSha256Bytes) == 1 && written == kSha256Bytes;
    return ok_;
  }
  bool mac(const DerivedKey& key, std::string_view data, DerivedKey& out) {
    return mac(key.bytes.data(), key.bytes.size(), data, out.bytes.data());
  }

 private:
  MacContextPtr context_;  // its free overwrites the key it holds (OpenSSL's HMAC cleanses)
  bool ok_ = false;
};

// The hex signature of `string_to_sign`: the key chain of SigV4 from "AWS4" + the secret key.
std::optional<std::string> signature(std::string_view secret_key, std::string_view date, const SigV4Scope& scope,
                                     std::string_view string_to_sign) {
  SecretText first;
  first.text().reserve(4 + secret_key.size());  // reserved: no reallocation leaves a copy behind
  first.text().append("AWS4").append(secret_key);
  Hmac hmac;
  DerivedKey date_key, region_key, service_key, signing_key, result;
  const bool ok =
      hmac.mac(reinterpret_cast<const unsigned char*>(first.view().data()), first.size(), date, date_key.bytes.data()) &&
      hmac.mac(date_key, scope.region, region_key) && hmac.mac(region_key, scope.service, service_key) &&
      hmac.mac(service_key, "aws4_request", signing_key) && hmac.mac(signing_key, string_to_sign, result);
  if (!ok) return std::nullopt;
  return to_hex(result.bytes.data(), result.bytes.size());
}

constexpr std::string_view kReplaced[] = {"authorization", "x-amz-date", "x-amz-security-token",
                                          "x-amz-content-sha256"};

}  // namespace

std::optional<std::string> sha256_hex(std::string_view bytes) {
  Sha256Hasher hasher;
  hasher.update(bytes);
  return hasher.hex_digest();
}

Sha256Hasher::Sha256Hasher() : context_(EVP_MD_CTX_new()) {
  failed_ = !context_ || !sha256_algorithm() || EVP_DigestInit_ex(context_.get(), sha256_algorithm(), nullptr) != 1;
}

Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::update(std::string_view bytes) {
  failed_ = failed_ || EVP_DigestUpdate(context_.get(), bytes.data(), bytes.size()) != 1;
}

std::optional<std::string> Sha256Hasher::hex_digest() {
  std::array<unsigned char, kSha256Bytes> digest{};
  unsigned int size = 0;
  failed_ = failed_ || EVP_DigestFinal_ex(context_.get(), digest.data(), &size) != 1 || size != digest.size();
  if (failed_) return std::nullopt;
  failed_ = true;  // spent: a second call would read a finished context
  return to_hex(digest.data(), digest.size());
}

std::vector<SigV4Header> sigv4_apply(const std::vector<SigV4Header>& headers, const SigV4Headers& out) {
  std::vector<SigV4Header> sent;
  sent.reserve(headers.size() + out.set.size());
  for (const SigV4Header& header : headers) {
    const bool removed = std::any_of(out.remove.begin(), out.remove.end(),
                                     [&](const std::string& name) { return iequals(header.name, name); });
    if (!removed) sent.push_back(header);
  }
  for (const auto& [name, value] : out.set) sent.push_back({name, value.view()});
  return sent;
}

std::string sigv4_timestamp(std::int64_t unix_seconds) {
  const UtcTime t = utc_time(unix_seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%04lld%02u%02uT%02u%02u%02uZ", static_cast<long long>(t.year), t.month, t.day,
                t.hour, t.minute, t.second);
  return text;
}

SigV4Headers sigv4_sign(std::string_view method, std::string_view target, const std::vector<SigV4Header>& headers,
                        const SigV4Plan& plan, std::string_view payload_hash, const SigV4Keys& keys,
                        std::int64_t unix_seconds) {
  SigV4Headers out;
  out.set.reserve(4);  // never reallocated: `sent` below holds views of these values
  for (std::string_view name : kReplaced) out.remove.emplace_back(name);
  const std::string timestamp = sigv4_timestamp(unix_seconds);
  // The headers as they will be sent: the box's, without the ones replaced, and the new ones.
  out.set.emplace_back("X-Amz-Date", SecretText(timestamp));
  if (keys.session_token) out.set.emplace_back("X-Amz-Security-Token", SecretText(*keys.session_token));
  // S3 wants it always (it refuses a request without it); other services read it when sent, and
  // an API that did not expect it could refuse it, so it is sent only when the box sent one.
  if (plan.s3 || plan.box_sent_content_sha) out.set.emplace_back("X-Amz-Content-Sha256", SecretText(payload_hash));
  const std::vector<SigV4Header> sent = sigv4_apply(headers, out);  // Authorization is not signed: not yet set

  SigV4CanonicalHeaders canonical_headers = sigv4_canonical_headers(sent);
  auto canonical = sigv4_canonical_request(method, target, canonical_headers, payload_hash, plan.s3);
  scrub(canonical_headers.block);  // it holds the session token when there is one; so does `canonical`
  if (!canonical) {
    out.refusal = SigV4Refusal::bad_target;
    return out;
  }
  const std::string date = timestamp.substr(0, 8);
  const std::string scope = date + "/" + plan.scope.region + "/" + plan.scope.service + "/aws4_request";
  const auto canonical_hash = sha256_hex(*canonical);
  scrub(*canonical);
  std::optional<std::string> signed_hex;
  if (canonical_hash) {
    const std::string string_to_sign = "AWS4-HMAC-SHA256\n" + timestamp + "\n" + scope + "\n" + *canonical_hash;
    signed_hex = signature(keys.secret_access_key, date, plan.scope, string_to_sign);
  }
  if (!signed_hex) {
    out.refusal = SigV4Refusal::signer_failed;
    return out;
  }
  SecretText authorization;
  const std::string& signed_names = canonical_headers.signed_names;
  authorization.text().reserve(128 + keys.access_key_id.size() + scope.size() + signed_names.size());
  authorization.text()
      .append("AWS4-HMAC-SHA256 Credential=")
      .append(keys.access_key_id)
      .append("/")
      .append(scope)
      .append(", SignedHeaders=")
      .append(signed_names)
      .append(", Signature=")
      .append(*signed_hex);
  out.set.emplace_back("Authorization", std::move(authorization));
  return out;
}

}  // namespace boxproxy
