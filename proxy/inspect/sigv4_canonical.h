// SPDX-License-Identifier: Apache-2.0
// AWS Signature Version 4, the pure half (SPEC §20, "Request signing"): reading the box's own
// signature, deciding whether the proxy may sign the request at all, and the canonical request
// AWS computes from it. No OpenSSL and no secret here (the hashing and the keys are
// sigv4_signer.h's), so that every parser of box-supplied text is fuzzed on its own
// (tests/fuzz/fuzz_sigv4_authorization.cc).
//
// What it stops, in the order a request meets it (sigv4_plan):
//   - a presigned URL (X-Amz-Signature or X-Amz-Credential in the query, any case, percent-decoded
//     until nothing changes): the proxy cannot re-sign what the query carries, and would otherwise
//     send the box's own signature on;
//   - a request the box did not sign with SigV4 (no Authorization, another scheme, SigV4a's
//     AWS4-ECDSA-P256-SHA256, a malformed one, two of them): region and service come from the
//     box's credential scope, and a guess would sign for a scope nobody chose;
//   - a region or service outside the endpoint's lists, and the services that hand out
//     credentials (sts, iam, sso, sso-oauth, cognito-identity, s3express) unless `services`
//     names them: a signed call to one would give the box a working key of its own;
//   - signed-chunk uploads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD and every other signed streaming
//     form): each chunk carries a signature chained to the box's, which the proxy cannot make.
//
// The canonical request follows AWS's rules as botocore implements them
// (tests/e2e/test_sigv4_vectors.py compares the two on generated requests):
//   - S3 (signing names s3, s3-outposts, s3-object-lambda): the path exactly as sent (the SDK
//     encoded it once); every other service: the path normalised (empty and "." segments dropped,
//     ".." climbs) and then every byte but A-Z a-z 0-9 - _ . ~ / percent-encoded again (so a "%"
//     the box sent becomes "%25": encoded twice);
//   - the query: split on "&" (empty pieces dropped), each name and value percent-decoded once and
//     encoded again (every byte but A-Z a-z 0-9 - _ . ~, upper-case hex; a "+" is a plus, never a
//     space: every SDK sends a space as %20), sorted by name and then value;
//   - the signed headers: host, every x-amz-* header, content-type and content-md5, each name
//     lower-cased, its values trimmed with runs of spaces and tabs made one space, repeated ones
//     joined by "," in the order sent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boxproxy {

// Why the proxy will not sign a request. Every value is `request denied` in the request line
// (SPEC §20); the word says which rule.
enum class SigV4Refusal : std::uint8_t {
  presigned,           // X-Amz-Signature or X-Amz-Credential in the query: a presigned URL
  no_signature,        // no Authorization, or one of another scheme than AWS4-HMAC-SHA256
  sigv4a,              // AWS4-ECDSA-P256-SHA256 (SigV4a): a region set the proxy cannot sign for
  malformed,           // an Authorization that does not parse, or more than one of them
  region_not_listed,   // the scope's region is not in the endpoint's "regions"
  service_not_listed,  // the scope's service is not in the endpoint's "services"
  credential_service,  // sts, iam, sso, sso-oauth, cognito-identity, s3express, not in "services"
  signed_chunks,       // X-Amz-Content-Sha256 declares a signed streaming upload
  bad_target,          // a target the canonical form cannot be made of: a bad "%", a "#", no "/"
  bad_header,          // no Host, two Host headers, two X-Amz-Content-Sha256 that differ, a name not a token
  signer_failed,       // OpenSSL's hash or HMAC failed (out of memory): never sent unsigned
};

// A word for the refusal (the log's detail, a test's message): "presigned", "sigv4a", ...
[[nodiscard]] std::string_view sigv4_refusal_word(SigV4Refusal refusal) noexcept;

// One header as it will be sent: name in any case, value with its ends trimmed (as the head
// parsers give it). HTTP/2's :authority is given as "host". Views: what they view outlives the
// call (no function here keeps one past its return but sigv4_apply's result).
struct SigV4Header {
  std::string_view name;
  std::string_view value;
};

// The region and service of the box's credential scope.
struct SigV4Scope {
  std::string region;
  std::string service;
};

// The box's Authorization value, read: "AWS4-HMAC-SHA256 Credential=KEY/YYYYMMDD/REGION/SERVICE/
// aws4_request, SignedHeaders=a;b, Signature=<64 hex digits>" (the three in any order, "," with
// or without spaces between them, each once). REGION and SERVICE are 1 to 64 of a-z 0-9 "-" (what
// AWS names them with; nothing that could change the string to sign). The scope, or why not:
// sigv4a for AWS4-ECDSA-P256-SHA256, no_signature for another scheme, malformed otherwise.
struct SigV4ScopeOrRefusal {
  std::optional<SigV4Scope> scope;
  SigV4Refusal refusal = SigV4Refusal::malformed;  // when scope is not set
};
[[nodiscard]] SigV4ScopeOrRefusal parse_sigv4_authorization(std::string_view value);

// Whether `query` (what follows "?" in the target, without it) names X-Amz-Signature or
// X-Amz-Credential: each parameter name percent-decoded until nothing changes (at most a few
// rounds), compared without regard to case. A "%" that does not decode is left as it is.
[[nodiscard]] bool is_presigned_query(std::string_view query);

// The endpoint's "sign": {"aws-sigv4": {...}} lists (the keys are looked up by the caller).
struct SigV4Policy {
  std::vector<std::string> regions;   // empty: any region
  std::vector<std::string> services;  // required by the configuration: never empty there
};

// nullopt when `scope` may be signed under `policy`, else why not: credential_service first
// (so the log names the dangerous case), then service_not_listed, then region_not_listed.
[[nodiscard]] std::optional<SigV4Refusal> check_sigv4_scope(const SigV4Scope& scope, const SigV4Policy& policy);

// Whether `service` is signed by S3's rules (its path as sent, X-Amz-Content-Sha256 always sent).
[[nodiscard]] bool is_s3_signing_name(std::string_view service) noexcept;

// The payload hashes the proxy keeps as the box declared them; any other declared value is
// replaced by the SHA-256 of the body.
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

// What sigv4_plan decided for one request head: refused, or signable with this scope.
struct SigV4Plan {
  std::optional<SigV4Refusal> refusal;
  SigV4Scope scope;
  bool s3 = false;                    // S3's rules (is_s3_signing_name)
  bool box_sent_content_sha = false;  // the box sent X-Amz-Content-Sha256 (sent on for non-S3 then)
  // The payload hash to sign when the box declared an unsigned form (kUnsignedPayload,
  // kStreamingUnsignedTrailer); empty: the body must be held and hashed (sha256_hex).
  std::string declared_payload;
  [[nodiscard]] bool needs_body() const noexcept { return declared_payload.empty(); }
};

// Decides, from the request head alone (`target` as it will be sent, `headers` likewise), whether
// the proxy signs it under `policy`: the checks at the top of this file, in that order.
[[nodiscard]] SigV4Plan sigv4_plan(std::string_view target, const std::vector<SigV4Header>& headers,
                                   const SigV4Policy& policy);

// The canonical URI of `path` (the target up to "?") under S3's rules or the others'; nullopt
// for a path that does not start with "/".
[[nodiscard]] std::optional<std::string> sigv4_canonical_uri(std::string_view path, bool s3);

// The canonical query string of `query`; nullopt when a "%" is not followed by two hex digits.
[[nodiscard]] std::optional<std::string> sigv4_canonical_query(std::string_view query);

// Whether the proxy signs a header of this name (host, x-amz-*, content-type, content-md5; a
// token, RFC 9110).
[[nodiscard]] bool is_sigv4_signed_header(std::string_view name) noexcept;

// The canonical headers block (each "name:value\n") and the SignedHeaders list ("a;b;c") of the
// signed headers among `headers`.
struct SigV4CanonicalHeaders {
  std::string block;
  std::string signed_names;
};
[[nodiscard]] SigV4CanonicalHeaders sigv4_canonical_headers(const std::vector<SigV4Header>& headers);

// The whole canonical request: method, canonical URI, query, headers block, signed names, payload
// hash, "\n" between them. nullopt for a bad target (sigv4_canonical_uri, _query; a "#").
[[nodiscard]] std::optional<std::string> sigv4_canonical_request(std::string_view method, std::string_view target,
                                                                 const std::vector<SigV4Header>& headers,
                                                                 std::string_view payload_hash, bool s3);
// The same with the headers' canonical form made already (the signer needs its SignedHeaders too).
[[nodiscard]] std::optional<std::string> sigv4_canonical_request(std::string_view method, std::string_view target,
                                                                 const SigV4CanonicalHeaders& canonical,
                                                                 std::string_view payload_hash, bool s3);

}  // namespace boxproxy
