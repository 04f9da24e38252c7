// SPDX-License-Identifier: Apache-2.0
// proxy/stages/sign_stage: the sign stage and the presigned stage (SPEC §20) with a signer of the
// test's own: no signer is `secret missing`, the signer's answers become the stage's (wait for
// the body, refuse, sign and trace), the head limit counts the signature, and what the signer is
// shown is the request as it leaves (outgoing_fields). No OpenSSL: the SigV4 signer itself is
// tested by tests/e2e/test_sigv4_vectors.py and test_sign.py.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "map_secrets.h"
#include "stages_test_support.h"
#include "proxy/stages/inject_stage.h"
#include "proxy/stages/inspected_request.h"
#include "proxy/stages/request_signer.h"
#include "proxy/stages/scope_judgement.h"
#include "proxy/stages/sign_stage.h"

using namespace boxproxy;
using testing::Head;
using testing::MapSecrets;

namespace {

InspectEndpoint signing_endpoint() {
  auto parsed = parse_inspect_entry("s3.example");
  REQUIRE(std::holds_alternative<InspectEndpoint>(parsed));
  InspectEndpoint endpoint = std::get<InspectEndpoint>(parsed);
  endpoint.sign = SignAwsSigV4{"key", "secret", std::nullopt, {}, {"s3"}};
  return endpoint;
}

DecidedOrigin origin_of() {
  auto parsed = parse_host("s3.example", 443);
  REQUIRE(std::holds_alternative<Target>(parsed));
  return DecidedOrigin{std::get<Target>(parsed), 443};
}

// Answers as told, records what it was shown, and signs by adding one header.
struct FakeSigner final : RequestSigner {
  SignAnswer::Kind kind = SignAnswer::Kind::signed_request;
  std::string added = "AWS4-HMAC-SHA256 x";
  mutable std::vector<std::string> shown;
  mutable std::optional<std::string> hash_seen;
  SignAnswer sign(RequestContext& context) const override {
    const std::string host = origin_host_field(context.origin);
    shown.clear();
    for (const HeaderField& field : outgoing_fields(context, host)) {
      shown.push_back(std::string(field.name) + ": " + std::string(field.value));
    }
    hash_seen = context.payload_hash;
    if (kind == SignAnswer::Kind::needs_body && context.payload_hash) {
      // the second run, with the hash: signs
    } else if (kind != SignAnswer::Kind::signed_request) {
      return {kind, Reason::secret_missing};
    }
    context.dropped_fields.emplace_back("authorization");
    context.injected.fields.emplace_back("Authorization", SecretText(added));
    return {SignAnswer::Kind::signed_request, Reason::request_denied};
  }
  bool presigned(std::string_view target) const override { return target.find("X-Amz-Signature") != target.npos; }
};

// A PUT as a box signs it (made in a test: REQUIRE runs only there).
const Head& put() {
  static const Head head("PUT /bucket/key HTTP/1.1\r\nHost: s3.example\r\nAuthorization: AWS4-HMAC-SHA256 box\r\n"
                         "X-Amz-Date: 20260101T000000Z\r\nContent-Length: 5\r\n\r\n");
  return head;
}

}  // namespace

TEST_CASE("sign: no signer (serve, check) is secret missing; an endpoint without sign is not touched") {
  MapSecrets secrets;
  const InspectEndpoint endpoint = signing_endpoint();
  const DecidedOrigin origin = origin_of();
  RequestContext context(put().head, endpoint, origin, secrets, nullptr);
  CHECK(SignStage().on_request(context).reason == Reason::secret_missing);
  CHECK(SignStage().on_request(context).action == StageVerdict::Action::refuse);
  CHECK(judge_in_scope(StageScope::plain, put().head, endpoint, origin).refusal == Reason::secret_missing);

  InspectEndpoint plain = endpoint;
  plain.sign.reset();
  RequestContext untouched(put().head, plain, origin, secrets, nullptr);
  CHECK(SignStage().on_request(untouched).action == StageVerdict::Action::proceed);
  CHECK(untouched.trace.empty());
}

TEST_CASE("sign: the signer's answers, the trace, and the request it is shown as it leaves") {
  MapSecrets secrets;
  secrets.values = {{"tok", "injected-token-value"}};
  InspectEndpoint endpoint = signing_endpoint();
  endpoint.inject = {{"X-Extra", "{tok}"}};
  const DecidedOrigin origin = origin_of();
  FakeSigner signer;

  RequestContext context(put().head, endpoint, origin, secrets, nullptr);
  context.signer = &signer;
  REQUIRE(InjectStage().on_request(context).action == StageVerdict::Action::proceed);
  context.dropped_fields.emplace_back("x-amz-date");
  CHECK(SignStage().on_request(context).action == StageVerdict::Action::proceed);
  // Host first (the decided origin's), the box's headers but those dropped, then the injected.
  CHECK(signer.shown == std::vector<std::string>{"host: s3.example", "Authorization: AWS4-HMAC-SHA256 box",
                                                 "Content-Length: 5", "X-Extra: injected-token-value"});
  REQUIRE(context.trace.size() == 2);
  CHECK(context.trace.back().stage == "sign");
  CHECK(context.trace.back().what == "aws-sigv4");

  signer.kind = SignAnswer::Kind::refused;
  RequestContext refused(put().head, endpoint, origin, secrets, nullptr);
  refused.signer = &signer;
  CHECK(SignStage().on_request(refused).reason == Reason::secret_missing);

  // The head limit counts what the signer adds.
  signer.kind = SignAnswer::Kind::signed_request;
  signer.added = std::string(200, 'a');
  RequestContext large(put().head, endpoint, origin, secrets, nullptr);
  large.signer = &signer;
  large.max_head_bytes = put().text.size() + 100;
  CHECK(SignStage().on_request(large).reason == Reason::head_too_large);
}

TEST_CASE("judge_inspected_request: a body wanted is hold_body, nothing composed; judged again with its hash") {
  MapSecrets secrets;
  const InspectEndpoint endpoint = signing_endpoint();
  const DecidedOrigin origin = origin_of();
  FakeSigner signer;
  signer.kind = SignAnswer::Kind::needs_body;
  InspectedRequest held = judge_inspected_request(put().head, endpoint, origin, secrets, nullptr, SIZE_MAX, std::nullopt, &signer);
  CHECK(held.hold_body);
  CHECK_FALSE(held.refusal);
  CHECK(held.upstream.method.empty());
  InspectedRequest sent = judge_inspected_request(put().head, endpoint, origin, secrets, nullptr, SIZE_MAX, std::nullopt, &signer,
                                                  std::string(64, 'f'));
  CHECK(signer.hash_seen == std::string(64, 'f'));
  CHECK_FALSE(sent.hold_body);
  CHECK_FALSE(sent.refusal);
  // The box's Authorization is gone, the signer's is there, once.
  CHECK(sent.upstream.text().find("AWS4-HMAC-SHA256 box") == std::string::npos);
  CHECK(sent.upstream.text().find("Authorization: AWS4-HMAC-SHA256 x\r\n") != std::string::npos);
  REQUIRE(sent.trace.size() == 1);
  CHECK(sent.trace[0].what == "aws-sigv4");
}

TEST_CASE("presigned: a presigned URL on a signing endpoint is request denied, before anything reads its query") {
  MapSecrets secrets;
  const InspectEndpoint endpoint = signing_endpoint();
  const DecidedOrigin origin = origin_of();
  FakeSigner signer;
  const Head presigned("GET /bucket/key?X-Amz-Signature=abc HTTP/1.1\r\nHost: s3.example\r\n\r\n");
  RequestContext context(presigned.head, endpoint, origin, secrets, nullptr);
  context.signer = &signer;
  CHECK(PresignedStage().on_request(context).reason == Reason::request_denied);
  CHECK(PresignedStage().on_request(context).action == StageVerdict::Action::refuse);
  RequestContext plain(put().head, endpoint, origin, secrets, nullptr);
  plain.signer = &signer;
  CHECK(PresignedStage().on_request(plain).action == StageVerdict::Action::proceed);
  InspectedRequest judged = judge_inspected_request(presigned.head, endpoint, origin, secrets, nullptr, SIZE_MAX, std::nullopt, &signer);
  CHECK(judged.refusal == Reason::request_denied);
  // In report mode too: only the rules' denials are let through there.
  InspectEndpoint reporting = endpoint;
  reporting.mode = InspectMode::report;
  judged = judge_inspected_request(presigned.head, reporting, origin, secrets, nullptr, SIZE_MAX, std::nullopt, &signer);
  CHECK(judged.refusal == Reason::request_denied);
  CHECK_FALSE(judged.report);
}
