// SPDX-License-Identifier: Apache-2.0
// proxy/stages/request_pipeline: the driver (in order, a refusal stops it, a wait resumes at the
// stage that waited), the table's scopes, and each of today's stages alone, on a context made here:
// no TLS, no socket.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "map_secrets.h"
#include "stages_test_support.h"
#include "proxy/stages/ask_stage.h"
#include "proxy/stages/coding_stage.h"
#include "proxy/stages/framing_stage.h"
#include "proxy/stages/host_stage.h"
#include "proxy/stages/inject_stage.h"
#include "proxy/stages/misdirected_stage.h"
#include "proxy/stages/request_pipeline.h"
#include "proxy/stages/rules_stage.h"
#include "proxy/stages/scope_judgement.h"
#include "proxy/stages/swap_stage.h"

using namespace boxproxy;
using testing::endpoint_of;
using testing::rule;
using testing::Head;
using testing::MapSecrets;

namespace {

// A stage that writes its name into the context's trace and answers as told.
struct Scripted final : RequestStage {
  std::string word;
  std::vector<StageVerdict> answers;  // one per call; proceed when they run out
  mutable std::size_t calls = 0;
  Scripted(std::string w, std::vector<StageVerdict> a) : word(std::move(w)), answers(std::move(a)) {}
  std::string_view name() const noexcept override { return word; }
  StageVerdict on_request(RequestContext& context) const override {
    context.trace.push_back({name(), std::to_string(calls)});
    const std::size_t i = calls++;
    return i < answers.size() ? answers[i] : StageVerdict::proceed();
  }
};

DecidedOrigin api_origin() {
  auto parsed = parse_host("api.example", 443);
  REQUIRE(std::holds_alternative<Target>(parsed));
  return DecidedOrigin{std::get<Target>(parsed), 443};
}

std::string words(const std::vector<TraceEntry>& trace) {
  std::string out;
  for (const auto& entry : trace) out += std::string(entry.stage) + ":" + entry.what + " ";
  return out;
}

std::vector<std::string_view> names(const RequestPipeline& pipeline) {
  std::vector<std::string_view> out;
  for (const RequestStage* stage : pipeline.stages()) out.push_back(stage->name());
  return out;
}

}  // namespace

TEST_CASE("the driver runs the stages in order; a refusal stops it at the stage that refused") {
  const Scripted a("a", {}), b("b", {StageVerdict::refuse(Reason::bad_path)}), c("c", {});
  const RequestPipeline pipeline({&a, &b, &c});
  const Head h("GET / HTTP/1.1\r\nHost: api.example\r\n\r\n");
  const InspectEndpoint endpoint = endpoint_of("api.example");
  RequestContext context(h.head, endpoint, api_origin(), no_secrets(), nullptr);
  const PipelineOutcome outcome = pipeline.run(context);
  CHECK(outcome.verdict.action == StageVerdict::Action::refuse);
  CHECK(outcome.verdict.reason == Reason::bad_path);
  CHECK(outcome.stage == 1);
  CHECK(words(context.trace) == "a:0 b:0 ");
  CHECK(c.calls == 0);
}

TEST_CASE("a stage that waits is resumed where it waited, and the stages before it do not run again") {
  const Scripted a("a", {}), b("b", {StageVerdict::wait()}), c("c", {});
  const RequestPipeline pipeline({&a, &b, &c});
  const Head h("GET / HTTP/1.1\r\nHost: api.example\r\n\r\n");
  const InspectEndpoint endpoint = endpoint_of("api.example");
  RequestContext context(h.head, endpoint, api_origin(), no_secrets(), nullptr);
  PipelineOutcome outcome = pipeline.run(context);
  CHECK(outcome.verdict.action == StageVerdict::Action::wait);
  CHECK(outcome.stage == 1);
  outcome = pipeline.run(context, outcome.stage);  // the answer came: b runs again and goes on
  CHECK(outcome.verdict.action == StageVerdict::Action::proceed);
  CHECK(outcome.stage == 3);
  CHECK(words(context.trace) == "a:0 b:0 b:1 c:0 ");
}

TEST_CASE("the table: each scope's stages, in SPEC's order") {
  using V = std::vector<std::string_view>;
  CHECK(names(RequestPipeline::for_scope(StageScope::inspector)) ==
        V{"framing", "host", "presigned", "misdirected", "coding", "rules", "asked", "swap", "inject", "sign"});
  CHECK(names(RequestPipeline::for_scope(StageScope::plain)) == V{"rules", "asked", "inject", "sign"});
  CHECK(names(RequestPipeline::for_scope(StageScope::check)) == V{"coding", "rules"});
}

TEST_CASE("framing: bad framing, two Hosts, and whether a refusal keeps the connection") {
  const InspectEndpoint endpoint = endpoint_of("api.example");
  const FramingStage stage;
  const auto run = [&](const std::string& text, RequestContext** out = nullptr) {
    static std::vector<std::unique_ptr<Head>> heads;
    static std::vector<std::unique_ptr<RequestContext>> contexts;
    static const DecidedOrigin origin = api_origin();
    heads.push_back(std::make_unique<Head>(text));
    contexts.push_back(std::make_unique<RequestContext>(heads.back()->head, endpoint, origin, no_secrets(), nullptr));
    if (out != nullptr) *out = contexts.back().get();
    return stage.on_request(*contexts.back());
  };
  CHECK(run("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").reason == Reason::bad_framing);
  CHECK(run("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").reason == Reason::bad_request);
  RequestContext* context = nullptr;
  CHECK(run("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", &context).action == StageVerdict::Action::proceed);
  CHECK(context->keep_after_refusal);
  CHECK(context->framing.kind == BodyFraming::Kind::length);
  CHECK(run("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", &context).action ==
        StageVerdict::Action::proceed);
  CHECK_FALSE(context->keep_after_refusal);  // its body will not come without a 100 Continue
  CHECK(run("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n").reason == Reason::bad_framing);
  CHECK(run("HEAD / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").reason == Reason::bad_framing);
  CHECK(run("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n").action == StageVerdict::Action::proceed);
  CHECK(run("GET / HTTP/1.0\r\nHost: a\r\n\r\n", &context).action == StageVerdict::Action::proceed);
  CHECK(context->client_http10);
  CHECK_FALSE(context->client_keep_alive);
}

TEST_CASE("host: the decided host and port, the default port optional") {
  const InspectEndpoint endpoint = endpoint_of("api.example");
  const DecidedOrigin origin = api_origin();
  const HostStage stage;
  for (const char* host : {"api.example", "API.example", "api.example:443"}) {
    const Head h(std::string("GET / HTTP/1.1\r\nHost: ") + host + "\r\n\r\n");
    RequestContext context(h.head, endpoint, origin, no_secrets(), nullptr);
    CHECK_MESSAGE(stage.on_request(context).action == StageVerdict::Action::proceed, host);
  }
  for (const char* host : {"other.example", "api.example:8443", "user@api.example", ""}) {
    const Head h(std::string("GET / HTTP/1.1\r\nHost: ") + host + "\r\n\r\n");
    RequestContext context(h.head, endpoint, origin, no_secrets(), nullptr);
    CHECK_MESSAGE(stage.on_request(context).reason == Reason::host_mismatch, host);
  }
  const Head none("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n");
  RequestContext context(none.head, endpoint, origin, no_secrets(), nullptr);
  CHECK(stage.on_request(context).reason == Reason::host_mismatch);
}

TEST_CASE("rules: the deciding rule, bad path, denied; report mode lets a denial on, marked") {
  InspectEndpoint endpoint = endpoint_of("api.example");
  endpoint.rules = std::vector<InspectRule>{rule("GET", "/repos/**")};
  const DecidedOrigin origin = api_origin();
  const RulesStage stage;
  const auto judge = [&](const std::string& line) {
    const Head h(line + "\r\nHost: api.example\r\n\r\n");
    RequestContext context(h.head, endpoint, origin, no_secrets(), nullptr);
    const StageVerdict verdict = stage.on_request(context);
    return std::make_tuple(verdict.action, verdict.reason, context.rule, context.report);
  };
  CHECK(judge("GET /repos/x HTTP/1.1") ==
        std::make_tuple(StageVerdict::Action::proceed, Reason::request_denied, std::string("rules[0]"), false));
  CHECK(std::get<1>(judge("GET /repos/%2F HTTP/1.1")) == Reason::bad_path);
  CHECK(std::get<1>(judge("POST /repos/x HTTP/1.1")) == Reason::request_denied);
  endpoint.mode = InspectMode::report;
  const auto reported = judge("POST /repos/x HTTP/1.1");
  CHECK(std::get<0>(reported) == StageVerdict::Action::proceed);
  CHECK(std::get<3>(reported));
}

TEST_CASE("misdirected, swap and inject: the tripwire, the value swapped in, a secret not set refused") {
  InspectEndpoint endpoint = endpoint_of("api.example");
  endpoint.secrets = {"key"};
  endpoint.inject = {{"X-Api", "Token {other}"}};
  Placeholders placeholders;
  const std::string key_placeholder = "bxp_key_0123456789abcdef0123456789abcdef";
  const std::string stray_placeholder = "bxp_stray_0123456789abcdef0123456789abcdef";
  placeholders.set("key", key_placeholder);
  placeholders.set("stray", stray_placeholder);
  MapSecrets secrets;
  secrets.values = {{"key", "the-key-value-1234"}};
  const DecidedOrigin origin = api_origin();

  const Head stray("GET / HTTP/1.1\r\nHost: api.example\r\nX-A: " + stray_placeholder + "\r\n\r\n");
  RequestContext misdirected(stray.head, endpoint, origin, secrets, &placeholders);
  CHECK(MisdirectedStage().on_request(misdirected).reason == Reason::secret_misdirected);
  CHECK(misdirected.misdirected == "stray");

  const Head listed("GET / HTTP/1.1\r\nHost: api.example\r\nAuthorization: Bearer " + key_placeholder + "\r\n\r\n");
  RequestContext swapped(listed.head, endpoint, origin, secrets, &placeholders);
  CHECK(MisdirectedStage().on_request(swapped).action == StageVerdict::Action::proceed);
  CHECK(SwapStage().on_request(swapped).action == StageVerdict::Action::proceed);
  REQUIRE(swapped.swapped != nullptr);
  CHECK(swapped.outgoing().headers.back().value == "Bearer the-key-value-1234");
  CHECK(InjectStage().on_request(swapped).reason == Reason::secret_missing);  // {other} is not set

  secrets.values["other"] = "another-secret-value";
  RequestContext injected(listed.head, endpoint, origin, secrets, &placeholders);
  CHECK(InjectStage().on_request(injected).action == StageVerdict::Action::proceed);
  REQUIRE(injected.injected.fields.size() == 1);
  CHECK(words(injected.trace) == "inject:X-Api ");  // the header's name, never its value
}

TEST_CASE("ask: an \"ask\" rule's request waits for its answer; yes goes on, anything else is refused") {
  InspectEndpoint endpoint = endpoint_of("api.example");
  InspectRule asked = rule("GET", "/asked/**");
  asked.ask = true;
  endpoint.rules = std::vector<InspectRule>{asked, rule("GET", "/free/**")};
  const DecidedOrigin origin = api_origin();
  const RequestPipeline& pipeline = RequestPipeline::for_scope(StageScope::inspector);
  const auto run = [&](const std::string& path, std::optional<RequestAsked> answer) {
    const Head h("GET " + path + " HTTP/1.1\r\nHost: api.example\r\n\r\n");
    RequestContext context(h.head, endpoint, origin, no_secrets(), nullptr);
    context.asked = answer;
    const PipelineOutcome outcome = pipeline.run(context);
    return std::make_pair(outcome, words(context.trace));
  };
  const auto [waiting, untraced] = run("/asked/x", std::nullopt);
  CHECK(waiting.verdict.action == StageVerdict::Action::wait);
  CHECK(pipeline.stages()[waiting.stage]->name() == "asked");
  CHECK(untraced.empty());
  for (const RequestAsked yes : {RequestAsked::once, RequestAsked::always}) {
    const auto [outcome, trace] = run("/asked/x", yes);
    CHECK(outcome.verdict.action == StageVerdict::Action::proceed);
    CHECK(trace == "asked:" + std::string(asked_text(yes)) + " ");
  }
  for (const RequestAsked no : {RequestAsked::deny, RequestAsked::timeout, RequestAsked::none}) {
    const auto [outcome, trace] = run("/asked/x", no);
    CHECK(outcome.verdict.action == StageVerdict::Action::refuse);
    CHECK(outcome.verdict.reason == Reason::request_denied);
    CHECK(trace == "asked:" + std::string(asked_text(no)) + " ");
  }
  CHECK(run("/free/x", std::nullopt).first.verdict.action == StageVerdict::Action::proceed);  // not asked
  // A denial is never asked about, in report mode either (the rules did not allow it).
  endpoint.mode = InspectMode::report;
  const Head denied("POST /asked/x HTTP/1.1\r\nHost: api.example\r\n\r\n");
  RequestContext context(denied.head, endpoint, origin, no_secrets(), nullptr);
  CHECK(pipeline.run(context).verdict.action == StageVerdict::Action::proceed);
  // The endpoint's own "ask" covers what every rule allows; plain HTTP is refused with asked=none.
  endpoint.mode = InspectMode::enforce;
  endpoint.rules.reset();
  endpoint.ask = true;
  const Head any("GET /anything HTTP/1.1\r\nHost: api.example\r\n\r\n");
  const ScopeJudgement plain = judge_in_scope(StageScope::plain, any.head, endpoint, origin);
  CHECK(plain.refusal == Reason::request_denied);
  CHECK(plain.asked == RequestAsked::none);
  CHECK_FALSE(judge_in_scope(StageScope::check, any.head, endpoint, origin).refusal);  // check asks nobody
}

TEST_CASE("judge_in_scope: plain refuses an injecting endpoint as secret missing, in report mode too") {
  InspectEndpoint endpoint = endpoint_of("api.example");
  endpoint.rules = std::vector<InspectRule>{rule("GET", "/ok")};
  endpoint.mode = InspectMode::report;
  const Head denied("POST /no HTTP/1.1\r\nHost: api.example\r\n\r\n");
  ScopeJudgement judged = judge_in_scope(StageScope::plain, denied.head, endpoint, api_origin());
  CHECK_FALSE(judged.refusal);
  CHECK(judged.report);
  endpoint.inject = {{"Authorization", "Bearer {key}"}};
  judged = judge_in_scope(StageScope::plain, denied.head, endpoint, api_origin());
  CHECK(judged.refusal == Reason::secret_missing);
  CHECK_FALSE(judged.report);
  judged = judge_in_scope(StageScope::check, denied.head, endpoint, api_origin());  // check holds no request
  CHECK_FALSE(judged.refusal);                                                      // to send: rules only
  CHECK(judged.report);
}

TEST_CASE("coding: on an endpoint with a credential, TRACE and other upgrades denied, codings identity") {
  InspectEndpoint endpoint = endpoint_of("api.example");
  const DecidedOrigin origin = api_origin();
  const CodingStage stage;
  const Head trace("TRACE / HTTP/1.1\r\nHost: api.example\r\n\r\n");
  RequestContext plain(trace.head, endpoint, origin, no_secrets(), nullptr);
  CHECK(stage.on_request(plain).action == StageVerdict::Action::proceed);  // no credential: left alone
  endpoint.inject = {{"Authorization", "Bearer {key}"}};
  RequestContext traced(trace.head, endpoint, origin, no_secrets(), nullptr);
  CHECK(stage.on_request(traced).reason == Reason::request_denied);
  // Any case (an origin may read "trace" as TRACE), on an endpoint that only swaps, in report mode
  // too; a method that merely begins so is not TRACE.
  InspectEndpoint swaps = endpoint_of("api.example");
  swaps.secrets = {"key"};
  swaps.mode = InspectMode::report;
  for (const char* line : {"trace / HTTP/1.1", "Trace / HTTP/1.1", "TRACEX / HTTP/1.1"}) {
    CAPTURE(line);
    const Head head(std::string(line) + "\r\nHost: api.example\r\n\r\n");
    RequestContext context(head.head, swaps, origin, no_secrets(), nullptr);
    const StageVerdict verdict = stage.on_request(context);
    if (std::string_view(line).starts_with("TRACEX")) {
      CHECK(verdict.action == StageVerdict::Action::proceed);
    } else {
      CHECK(verdict.reason == Reason::request_denied);
    }
  }
  const Head h2c("GET / HTTP/1.1\r\nHost: api.example\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
  RequestContext upgraded(h2c.head, endpoint, origin, no_secrets(), nullptr);
  CHECK(stage.on_request(upgraded).reason == Reason::request_denied);
  const Head gzip("GET / HTTP/1.1\r\nHost: api.example\r\nAccept-Encoding: gzip, br\r\n\r\n");
  RequestContext coded(gzip.head, endpoint, origin, no_secrets(), nullptr);
  CHECK(stage.on_request(coded).action == StageVerdict::Action::proceed);
  CHECK(coded.dropped_fields.size() == 5);
  CHECK(coded.added_fields.front() == std::pair<std::string, std::string>("Accept-Encoding", "identity"));
}
