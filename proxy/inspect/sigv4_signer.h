// SPDX-License-Identifier: Apache-2.0
// AWS Signature Version 4, the keyed half (SPEC §20, "Request signing"): the payload hash, and the
// headers that sign a request the proxy decided to sign (sigv4_canonical.h's sigv4_plan) with the
// real keys. SHA-256 and HMAC-SHA256 are OpenSSL's (EVP_MD, EVP_MAC), fetched once; nothing of
// the hashing is written here. Pure otherwise: no socket, no clock (the time is a parameter).
//
// A request stage uses it in three steps:
//   1. head:  SigV4Plan plan = sigv4_plan(target, headers, policy);  refusal -> `request denied`;
//   2. body:  when plan.needs_body(), hold the body (bounded by --max-held-body) and hash it with
//             a Sha256Hasher (or sha256_hex); else the hash is plan.declared_payload;
//   3. sign:  SigV4Headers out = sigv4_sign(method, target, headers, plan, payload_hash, keys, now);
//             remove every header named in out.remove (any case), then add out.set, in order.
//
// What it stops: the box's own Authorization, X-Amz-Date, X-Amz-Security-Token and
// X-Amz-Content-Sha256 always go (the box signed with placeholders; a token of the box's kept
// beside the real key would let the box choose the session the request runs as); the keys never
// leave this file but as the signature, the access key id in the credential and the session token
// (the values SPEC §20 has the responses scrubbed for). Every derived key is overwritten
// (OPENSSL_cleanse) before its memory goes back.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/inspect/sigv4_canonical.h"
#include "table/secret_value.h"

namespace boxproxy {

// The lower-case hex SHA-256 of `bytes` (a held body, a canonical request); nullopt only when
// OpenSSL fails (out of memory).
[[nodiscard]] std::optional<std::string> sha256_hex(std::string_view bytes);

// SHA-256 fed piece by piece (a body held as several buffers); hex_digest() once, at the end.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void update(std::string_view bytes);
  // The lower-case hex digest of everything given, or nullopt when OpenSSL failed at any step;
  // the hasher is spent after it.
  [[nodiscard]] std::optional<std::string> hex_digest();

 private:
  struct Free {
    void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> context_;
  bool failed_ = false;
};

// The keys a request is signed with: the session's secrets named by the endpoint's "sign" object,
// looked up by the caller (a secret not set is `secret missing` before this is called).
struct SigV4Keys {
  std::string_view access_key_id;
  std::string_view secret_access_key;
  std::optional<std::string_view> session_token;
};

// The header changes that sign the request.
struct SigV4Headers {
  // bad_target (a target sigv4_plan did not see), signer_failed (OpenSSL failed): nothing is sent.
  std::optional<SigV4Refusal> refusal;
  // Lower-case names: every header of one of these names (compared without regard to case) goes.
  std::vector<std::string> remove;
  // Then these are added, in this order: X-Amz-Date, X-Amz-Security-Token (with a token),
  // X-Amz-Content-Sha256 (S3 always; else when the box sent it), Authorization. Values that hold
  // a key (the credential, the token) are SecretText: scrubbed when dropped.
  std::vector<std::pair<std::string, SecretText>> set;
};

// Signs the request `method target` with `headers` (as they will be sent, the box's signing
// headers still among them: they are left out here), under `plan` (a plan without a refusal),
// with `payload_hash` (plan.declared_payload, or the body's sha256_hex), `keys`, and the time
// `unix_seconds` (the proxy's wall clock: X-Amz-Date and the credential's date). Never throws but
// std::bad_alloc.
[[nodiscard]] SigV4Headers sigv4_sign(std::string_view method, std::string_view target,
                                      const std::vector<SigV4Header>& headers, const SigV4Plan& plan,
                                      std::string_view payload_hash, const SigV4Keys& keys, std::int64_t unix_seconds);

// `headers` as they go out once `out` is applied: each header named in out.remove left out (any
// case), then out.set's. Views into both (a test's check, or a stage whose headers are these views).
[[nodiscard]] std::vector<SigV4Header> sigv4_apply(const std::vector<SigV4Header>& headers, const SigV4Headers& out);

// "YYYYMMDDTHHMMSSZ" for `unix_seconds` (X-Amz-Date's form).
[[nodiscard]] std::string sigv4_timestamp(std::int64_t unix_seconds);

}  // namespace boxproxy
