// SPDX-License-Identifier: Apache-2.0
// The SigV4 signer (proxy/inspect/sigv4_canonical.h, sigv4_signer.h), SPEC §20: the box's
// signature read, the refusals, the canonical request piece by piece, and whole signatures. Two
// cases carry the signatures AWS publishes for them (its test suite's get-vanilla, and the IAM
// ListUsers example of its documentation, both at 20150830T123600Z with AKIDEXAMPLE's key); the
// rest are written in that suite's style. tests/e2e/test_sigv4_vectors.py compares many more with
// botocore's signer.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/inspect/sigv4_canonical.h"
#include "proxy/inspect/sigv4_signer.h"
#include "table/ascii.h"

using namespace boxproxy;

namespace {

constexpr std::int64_t kSuiteTime = 1440938160;  // 2015-08-30T12:36:00Z
constexpr std::string_view kSuiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr std::string_view kEmptySha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string box_authorization(std::string_view region, std::string_view service) {
  return "AWS4-HMAC-SHA256 Credential=bxp_key_0123/20150830/" + std::string(region) + "/" + std::string(service) +
         "/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + std::string(64, 'a');
}

// A request as the box sends it, signed by the proxy: the headers it sets, or its refusal.
struct Signed {
  std::optional<SigV4Refusal> refusal;
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> remove;
  std::string canonical;  // made again from what was set (the signer keeps none)
  [[nodiscard]] std::string get(std::string_view name) const {
    for (const auto& [n, v] : set) {
      if (n == name) return v;
    }
    return "<none>";
  }
};

struct BoxRequest {
  std::string method = "GET";
  std::string target = "/";
  std::vector<SigV4Header> headers;
  std::string body;
  std::string service = "service";
  std::string region = "us-east-1";
  std::optional<std::string_view> token;
  std::string access_key_id = "AKIDEXAMPLE";
};

Signed sign(const BoxRequest& request) {
  const std::string authorization = box_authorization(request.region, request.service);
  std::vector<SigV4Header> headers = {{"Authorization", authorization}, {"X-Amz-Date", "20990101T000000Z"}};
  headers.insert(headers.end(), request.headers.begin(), request.headers.end());
  SigV4Policy policy{{request.region}, {request.service}};
  const SigV4Plan plan = sigv4_plan(request.target, headers, policy);
  if (plan.refusal) return {plan.refusal, {}, {}, {}};
  const std::string hash = plan.needs_body() ? sha256_hex(request.body).value() : plan.declared_payload;
  const SigV4Keys keys{request.access_key_id, kSuiteSecret, request.token};
  const SigV4Headers out = sigv4_sign(request.method, request.target, headers, plan, hash, keys, kSuiteTime);
  Signed result{out.refusal, {}, out.remove, {}};
  for (const auto& [name, value] : out.set) result.set.emplace_back(name, std::string(value.view()));
  std::vector<SigV4Header> sent = sigv4_apply(headers, out);
  std::erase_if(sent, [](const SigV4Header& header) { return iequals(header.name, "authorization"); });
  result.canonical = sigv4_canonical_request(request.method, request.target, sent, hash, plan.s3).value_or("?");
  return result;
}

}  // namespace

TEST_CASE("AWS's published get-vanilla and IAM ListUsers signatures") {
  BoxRequest vanilla;
  vanilla.headers = {{"Host", "example.amazonaws.com"}};
  const Signed a = sign(vanilla);
  REQUIRE_FALSE(a.refusal);
  CHECK(a.canonical ==
        "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" + std::string(kEmptySha));
  CHECK(a.get("Authorization") ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  CHECK(a.get("X-Amz-Date") == "20150830T123600Z");
  CHECK(a.get("X-Amz-Content-Sha256") == "<none>");  // not S3, and the box sent none

  BoxRequest iam;
  iam.service = "iam";
  iam.target = "/?Action=ListUsers&Version=2010-05-08";
  iam.headers = {{"Host", "iam.amazonaws.com"}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  // iam hands out credentials: signed only because the policy (sign()) lists it.
  const Signed b = sign(iam);
  REQUIRE_FALSE(b.refusal);
  CHECK(b.get("Authorization") ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-date, "
        "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST_CASE("the canonical query: decoded once, encoded again, sorted by name then value") {
  struct Row {
    std::string_view query;
    std::string_view canonical;
  };
  const Row rows[] = {
      {"", ""},
      {"b=2&a=1", "a=1&b=2"},
      {"a=2&a=1&A=3", "A=3&a=1&a=2"},        // byte order: upper case first; a repeated name by value
      {"acl", "acl="},                        // no "=": an empty value
      {"a=&b", "a=&b="},
      {"a=1&&b=2&", "a=1&b=2"},               // empty pieces dropped
      {"k=a%20b", "k=a%20b"},
      {"k=a+b", "k=a%2Bb"},                   // a plus is a plus
      {"k=%7e%2d%5F%2E", "k=~-_."},           // unreserved: decoded, never encoded
      {"k=~*'()!", "k=~%2A%27%28%29%21"},
      {"%c3%a9=%e2%82%ac", "%C3%A9=%E2%82%AC"},  // upper-case hex
      {"k=a=b", "k=a%3Db"},                   // the first "=" splits
      {"a-b=1&a=2", "a=2&a-b=1"},             // by name, not by "name=value"
  };
  for (const Row& row : rows) {
    CAPTURE(row.query);
    CHECK(sigv4_canonical_query(row.query) == std::string(row.canonical));
  }
  CHECK_FALSE(sigv4_canonical_query("a=%zz"));
  CHECK_FALSE(sigv4_canonical_query("a=%2"));
  CHECK_FALSE(sigv4_canonical_query("a%=1"));
}

TEST_CASE("the canonical path: S3's as sent, the others' normalised and encoded twice") {
  struct Row {
    std::string_view path;
    std::string_view s3;
    std::string_view other;
  };
  const Row rows[] = {
      {"/", "/", "/"},
      {"/a/./b/../c//d/", "/a/./b/../c//d/", "/a/c/d/"},
      {"/..", "/..", "/"},
      {"/a/..", "/a/..", "/"},
      {"//a//", "//a//", "/a/"},
      {"/my%20file", "/my%20file", "/my%2520file"},
      {"/caf%C3%A9", "/caf%C3%A9", "/caf%25C3%25A9"},
      {"/a:b@c(d)*e", "/a:b@c(d)*e", "/a%3Ab%40c%28d%29%2Ae"},
      {"/~user/x-y_z.t", "/~user/x-y_z.t", "/~user/x-y_z.t"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.path);
    CHECK(sigv4_canonical_uri(row.path, true) == std::string(row.s3));
    CHECK(sigv4_canonical_uri(row.path, false) == std::string(row.other));
  }
  CHECK_FALSE(sigv4_canonical_uri("", true));
  CHECK_FALSE(sigv4_canonical_uri("a/b", false));
}

TEST_CASE("the canonical headers: only the signed ones, trimmed, repeated ones joined in order") {
  const std::vector<SigV4Header> headers = {
      {"Host", "example.amazonaws.com"}, {"User-Agent", "sdk/1"},       {"X-Amz-Meta-A", "one"},
      {"Content-Type", "text/plain;   charset=utf-8"}, {"x-amz-meta-a", "  two\t\tthree  "},
      {"Content-MD5", "kE5ogTnKOuKDxzm5f1ZjSQ=="},    {"Accept", "*/*"}, {"X-AMZ-META-B", "   "},
      {"X-Amzish", "not signed"},        {"x-amz-a;b", "no token: never signed"},
  };
  const SigV4CanonicalHeaders out = sigv4_canonical_headers(headers);
  CHECK(out.block ==
        "content-md5:kE5ogTnKOuKDxzm5f1ZjSQ==\ncontent-type:text/plain; charset=utf-8\nhost:example.amazonaws.com\n"
        "x-amz-meta-a:one,two three\nx-amz-meta-b:\n");
  CHECK(out.signed_names == "content-md5;content-type;host;x-amz-meta-a;x-amz-meta-b");
}

TEST_CASE("the box's Authorization gives the scope, or why not") {
  const std::string key = "Credential=bxp/20150830/eu-west-1/s3/aws4_request";
  const std::string sig = "Signature=" + std::string(64, 'f');
  struct Row {
    std::string value;
    std::optional<SigV4Refusal> refusal;  // nullopt: eu-west-1 and s3
  };
  const Row rows[] = {
      {"AWS4-HMAC-SHA256 " + key + ", SignedHeaders=host;x-amz-date, " + sig, std::nullopt},
      {"AWS4-HMAC-SHA256 " + key + ",SignedHeaders=host," + sig, std::nullopt},
      {"AWS4-HMAC-SHA256 " + sig + ", SignedHeaders=host, " + key, std::nullopt},
      {"AWS4-ECDSA-P256-SHA256 Credential=k/20150830/s3/aws4_request, SignedHeaders=host, " + sig,
       SigV4Refusal::sigv4a},
      {"Bearer abc", SigV4Refusal::no_signature},
      {"aws4-hmac-sha256 " + key + ", SignedHeaders=host, " + sig, SigV4Refusal::no_signature},
      {"AWS4-HMAC-SHA256", SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 " + key + ", SignedHeaders=host", SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 " + key + ", " + key + ", SignedHeaders=host, " + sig, SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 " + key + ", SignedHeaders=host, " + sig + ", Extra=1", SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 " + key + ", SignedHeaders=, " + sig, SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 " + key + ", SignedHeaders=host, Signature=xyz", SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 Credential=k/20150830/eu-west-1/s3/aws4_request/x, SignedHeaders=host, " + sig,
       SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 Credential=k/2015083/eu-west-1/s3/aws4_request, SignedHeaders=host, " + sig,
       SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 Credential=k/20150830/EU-west-1/s3/aws4_request, SignedHeaders=host, " + sig,
       SigV4Refusal::malformed},  // upper case: never a region's name, and not one the lists name
      {"AWS4-HMAC-SHA256 Credential=k/20150830/eu-west-1/s3\n/aws4_request, SignedHeaders=host, " + sig,
       SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 Credential=/20150830/eu-west-1/s3/aws4_request, SignedHeaders=host, " + sig,
       SigV4Refusal::malformed},
      {"AWS4-HMAC-SHA256 Credential=k/20150830//s3/aws4_request, SignedHeaders=host, " + sig,
       SigV4Refusal::malformed},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    const SigV4ScopeOrRefusal parsed = parse_sigv4_authorization(row.value);
    if (row.refusal) {
      CHECK_FALSE(parsed.scope);
      CHECK(parsed.refusal == *row.refusal);
    } else {
      REQUIRE(parsed.scope);
      CHECK(parsed.scope->region == "eu-west-1");
      CHECK(parsed.scope->service == "s3");
    }
  }
}

TEST_CASE("a presigned URL is seen in any case and spelling") {
  CHECK(is_presigned_query("X-Amz-Signature=abc"));
  CHECK(is_presigned_query("a=1&x-amz-credential=k"));
  CHECK(is_presigned_query("X-AMZ-SIGNATURE"));
  CHECK(is_presigned_query("X-Amz-%53ignature=1"));
  CHECK(is_presigned_query("%2558-Amz-Credential=1"));    // encoded twice
  CHECK(is_presigned_query("%252558-Amz-Credential=1"));  // three times
  CHECK(is_presigned_query("%zz&X-Amz-Signature=1"));
  CHECK_FALSE(is_presigned_query(""));
  CHECK_FALSE(is_presigned_query("X-Amz-Date=1&X-Amz-SignedHeaders=host"));
  CHECK_FALSE(is_presigned_query("q=X-Amz-Signature"));  // a value, not a name
}

TEST_CASE("the policy: credential services, services, regions") {
  const SigV4Policy s3_only{{}, {"s3"}};
  CHECK(check_sigv4_scope({"us-east-1", "s3"}, s3_only) == std::nullopt);
  CHECK(check_sigv4_scope({"us-east-1", "sqs"}, s3_only) == SigV4Refusal::service_not_listed);
  for (const char* service : {"sts", "iam", "sso", "sso-oauth", "cognito-identity", "s3express"}) {
    CAPTURE(service);
    CHECK(check_sigv4_scope({"us-east-1", service}, s3_only) == SigV4Refusal::credential_service);
    CHECK(check_sigv4_scope({"us-east-1", service}, {{}, {service}}) == std::nullopt);
  }
  const SigV4Policy regional{{"eu-west-1", "eu-west-3"}, {"s3", "sqs"}};
  CHECK(check_sigv4_scope({"eu-west-3", "sqs"}, regional) == std::nullopt);
  CHECK(check_sigv4_scope({"us-east-1", "sqs"}, regional) == SigV4Refusal::region_not_listed);
  CHECK(check_sigv4_scope({"us-east-1", "sts"}, regional) == SigV4Refusal::credential_service);
}

TEST_CASE("the plan refuses what the proxy cannot sign, in order") {
  const std::string auth = box_authorization("us-east-1", "s3");
  const SigV4Policy policy{{}, {"s3"}};
  const auto plan = [&](std::string_view target, std::vector<SigV4Header> headers) {
    return sigv4_plan(target, headers, policy).refusal;
  };
  CHECK(plan("/b/k", {{"Host", "h"}, {"Authorization", auth}}) == std::nullopt);
  CHECK(plan("/b/k?X-Amz-Signature=1", {{"Host", "h"}}) == SigV4Refusal::presigned);  // before no_signature
  CHECK(plan("/b/k", {{"Host", "h"}}) == SigV4Refusal::no_signature);
  CHECK(plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"authorization", auth}}) == SigV4Refusal::malformed);
  CHECK(plan("/b/k", {{"Authorization", auth}}) == SigV4Refusal::bad_header);
  CHECK(plan("/b/k", {{"Host", "h"}, {"Host", "h"}, {"Authorization", auth}}) == SigV4Refusal::bad_header);
  CHECK(plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"},
                      {"x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"}}) == SigV4Refusal::bad_header);
  // A name that is no token (fuzz_sigv4_authorization found it): its ";" would split SignedHeaders.
  CHECK(plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"X-Amz-Meta;-A", "v"}}) == SigV4Refusal::bad_header);
  CHECK(plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"X-Amz-Meta A", "v"}}) == SigV4Refusal::bad_header);
  CHECK(plan("/b/k#f", {{"Host", "h"}, {"Authorization", auth}}) == SigV4Refusal::bad_target);
  CHECK(plan("b/k", {{"Host", "h"}, {"Authorization", auth}}) == SigV4Refusal::bad_target);
  CHECK(plan("/b/k?a=%g0", {{"Host", "h"}, {"Authorization", auth}}) == SigV4Refusal::bad_target);
  for (const char* chunked : {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                              "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", "streaming-anything"}) {
    CAPTURE(chunked);
    CHECK(plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"X-Amz-Content-Sha256", chunked}}) ==
          SigV4Refusal::signed_chunks);
  }
  const std::string sts = box_authorization("us-east-1", "sts");
  CHECK(plan("/", {{"Host", "h"}, {"Authorization", sts}}) == SigV4Refusal::credential_service);
}

TEST_CASE("the payload hash: an unsigned form kept, anything else computed from the body") {
  const std::string auth = box_authorization("us-east-1", "s3");
  const SigV4Policy policy{{}, {"s3"}};
  for (std::string_view kept : {kUnsignedPayload, kStreamingUnsignedTrailer}) {
    const SigV4Plan plan = sigv4_plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"X-Amz-Content-Sha256", kept}},
                                      policy);
    CHECK_FALSE(plan.needs_body());
    CHECK(plan.declared_payload == kept);
  }
  const SigV4Plan declared =
      sigv4_plan("/b/k", {{"Host", "h"}, {"Authorization", auth}, {"X-Amz-Content-Sha256", std::string(64, '0')}},
                 policy);
  CHECK(declared.needs_body());  // a hash the box declared is never trusted: the body is hashed
  CHECK(declared.box_sent_content_sha);
  CHECK(sigv4_plan("/b/k", {{"Host", "h"}, {"Authorization", auth}}, policy).needs_body());

  BoxRequest put;
  put.method = "PUT";
  put.service = "s3";
  put.target = "/bucket/key";
  put.body = "hello";
  const std::string zeros(64, '0');  // the headers are views: it outlives them
  put.headers = {{"Host", "bucket.s3.amazonaws.com"}, {"X-Amz-Content-Sha256", zeros}};
  const Signed s3 = sign(put);
  CHECK(s3.get("X-Amz-Content-Sha256") == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  put.headers = {{"Host", "bucket.s3.amazonaws.com"}};
  CHECK(sign(put).get("X-Amz-Content-Sha256") == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");

  BoxRequest post = put;
  post.service = "execute-api";
  post.headers = {{"Host", "api.example"}};
  CHECK(sign(post).get("X-Amz-Content-Sha256") == "<none>");  // not S3 and not sent: not added
  post.headers = {{"Host", "api.example"}, {"X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"}};
  const Signed unsigned_post = sign(post);
  CHECK(unsigned_post.get("X-Amz-Content-Sha256") == "UNSIGNED-PAYLOAD");
  CHECK(unsigned_post.canonical.ends_with("\nUNSIGNED-PAYLOAD"));
}

TEST_CASE("the box's signing headers all go; the session token is the proxy's") {
  BoxRequest request;
  request.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Security-Token", "bxp_token_of_the_box"},
                     {"x-amz-date", "19990101T000000Z"}};
  const Signed without = sign(request);
  CHECK(without.remove ==
        std::vector<std::string>{"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"});
  CHECK(without.get("X-Amz-Security-Token") == "<none>");  // the box's token is never signed beside the real key
  CHECK(without.canonical.find("bxp_token") == std::string::npos);
  CHECK(without.canonical.find("1999") == std::string::npos);

  request.token = "FQoGZXIvYXdzEXAMPLETOKEN==";
  const Signed with = sign(request);
  CHECK(with.get("X-Amz-Security-Token") == "FQoGZXIvYXdzEXAMPLETOKEN==");
  CHECK(with.get("Authorization").find("SignedHeaders=host;x-amz-date;x-amz-security-token,") != std::string::npos);
  CHECK(with.get("Authorization") != without.get("Authorization"));
  // The headers set, in order: date, token, (payload hash), authorization last.
  REQUIRE(with.set.size() == 3);
  CHECK(with.set[0].first == "X-Amz-Date");
  CHECK(with.set[2].first == "Authorization");
}

TEST_CASE("S3 signs the path as sent; other services its normal form") {
  BoxRequest s3;
  s3.service = "s3";
  s3.target = "/bucket/a/../b//c%20d";
  s3.headers = {{"Host", "s3.amazonaws.com"}};
  CHECK(sign(s3).canonical.starts_with("GET\n/bucket/a/../b//c%20d\n\n"));
  BoxRequest api = s3;
  api.service = "execute-api";
  CHECK(sign(api).canonical.starts_with("GET\n/bucket/b/c%2520d\n\n"));
}

TEST_CASE("SHA-256, in one piece or several, and X-Amz-Date's form") {
  CHECK(sha256_hex("") == std::string(kEmptySha));
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256Hasher hasher;
  hasher.update("a");
  hasher.update("");
  hasher.update("bc");
  CHECK(hasher.hex_digest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK_FALSE(hasher.hex_digest());  // spent
  CHECK(sigv4_timestamp(kSuiteTime) == "20150830T123600Z");
  CHECK(sigv4_timestamp(0) == "19700101T000000Z");
  CHECK(sigv4_timestamp(951782400) == "20000229T000000Z");
}
