// SPDX-License-Identifier: Apache-2.0
// proxy/stages/inspected_request: one request of an inspected connection judged by the inspector's
// stages in SPEC §18's order (framing, Host, path, rules, credentials), its answer, and the head
// the origin gets.
#include <doctest/doctest.h>

#include <array>
#include <map>
#include <string>
#include <variant>

#include "proxy/stages/inspected_request.h"
#include "stages_test_support.h"
#include "map_secrets.h"
#include "table/reason.h"

using namespace boxproxy;
using testing::endpoint_of;
using testing::rule;

namespace {

// api.example:443 reading /repos/acme/** only; deleting anything denied.
InspectEndpoint acme_endpoint(InspectMode mode = InspectMode::enforce) {
  InspectEndpoint e = endpoint_of("api.example");
  e.rules = std::vector<InspectRule>{rule("GET", "/repos/acme/**")};
  e.deny.push_back(rule("DELETE", "/**"));
  e.mode = mode;
  return e;
}

DecidedOrigin origin_of(std::string_view host, std::uint16_t port, std::uint16_t default_port = 443) {
  auto parsed = parse_host(host, port);
  REQUIRE(std::holds_alternative<Target>(parsed));
  return DecidedOrigin{std::get<Target>(parsed), default_port};
}

using testing::MapSecrets;

// Judges `text` (a whole head) for api.example:443 by `endpoint`.
InspectedRequest judge(const std::string& text, const InspectEndpoint& endpoint = acme_endpoint(),
                       const DecidedOrigin& origin = origin_of("api.example", 443),
                       const SecretLookup& secrets = MapSecrets{}) {
  const auto parsed = parse_request_head(text, 65536);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  return judge_inspected_request(*parsed.value, endpoint, origin, secrets);
}

std::string class_of(const InspectedRequest& judged) {
  return judged.refusal ? std::string(log_class(*judged.refusal)) : "ok";
}

}  // namespace

TEST_CASE("the refusals' statuses and classes: SPEC §6's table, §18's settled ones") {
  // SPEC §18's settled statuses.
  CHECK(info(Reason::request_denied).http_status == 403);
  CHECK(info(Reason::bad_path).http_status == 400);
  CHECK(info(Reason::host_mismatch).http_status == 400);
  CHECK(info(Reason::upstream_tls).http_status == 502);
  CHECK(info(Reason::not_tls).http_status == 0);
  CHECK(info(Reason::sni_mismatch).http_status == 0);
  CHECK(log_class(Reason::not_tls) == "not tls");
  CHECK(log_class(Reason::upstream_tls) == "upstream tls");
  CHECK(log_class(Reason::sni_mismatch) == log_class(Reason::sni_mismatch));
  CHECK(log_class(Reason::dial_failed) == "dial failed");
  CHECK(info(Reason::head_too_large).http_status == info(Reason::head_too_large).http_status);
}

TEST_CASE("a refusal's answer: status, x-egress-refused, a one-line body; connection: close only when asked") {
  const std::string kept = inspect_refusal_response(Reason::request_denied, false);
  CHECK(kept ==
        "HTTP/1.1 403 egress refused: request denied\r\nx-egress-refused: request denied\r\n"
        "content-type: text/plain\r\ncontent-length: 31\r\n\r\negress refused: request denied\n");
  const std::string closed = inspect_refusal_response(Reason::bad_framing, true);
  CHECK(closed ==
        "HTTP/1.1 400 egress refused: bad framing\r\nx-egress-refused: bad framing\r\n"
        "content-type: text/plain\r\ncontent-length: 28\r\nconnection: close\r\n\r\negress refused: bad framing\n");
}

TEST_CASE("allowed: the rule's label, and the head the origin gets") {
  const auto judged = judge("GET /repos/acme/x?ref=main HTTP/1.1\r\nHost: API.Example\r\nAccept: */*\r\n\r\n");
  CHECK(class_of(judged) == "ok");
  CHECK(judged.rule == "rules[0]");
  CHECK_FALSE(judged.report);
  CHECK(judged.client_keep_alive);
  CHECK_FALSE(judged.websocket);
  CHECK(judged.upstream.text() == "GET /repos/acme/x?ref=main HTTP/1.1\r\nHost: api.example\r\nAccept: */*\r\n\r\n");
}

TEST_CASE("the order: framing, then Host, then the path, then the rules") {
  // Framing first: a smuggling shape is bad framing whatever else is wrong, and ends the connection.
  auto judged = judge("DELETE //x HTTP/1.1\r\nHost: other\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(class_of(judged) == "bad framing");
  CHECK_FALSE(judged.keep_after_refusal);
  // Two Hosts: bad request, and the connection ends.
  judged = judge("GET /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nHost: api.example\r\n\r\n");
  CHECK(class_of(judged) == "bad request");
  CHECK_FALSE(judged.keep_after_refusal);
  // Host before the path and the rules.
  judged = judge("DELETE //x HTTP/1.1\r\nHost: other.example\r\n\r\n");
  CHECK(class_of(judged) == "host mismatch");
  CHECK(judged.keep_after_refusal);
  // The path before the rules.
  judged = judge("DELETE /repos/acme/%2F HTTP/1.1\r\nHost: api.example\r\n\r\n");
  CHECK(class_of(judged) == "bad path");
  CHECK(judged.rule == "-");
  CHECK(judged.keep_after_refusal);
  judged = judge("DELETE /repos/acme/x HTTP/1.1\r\nHost: api.example\r\n\r\n");
  CHECK(class_of(judged) == "request denied");
  CHECK(judged.rule == "deny[0]");
  CHECK(judged.keep_after_refusal);
  judged = judge("GET /repos/other/x HTTP/1.1\r\nHost: api.example\r\n\r\n");
  CHECK(class_of(judged) == "request denied");
  CHECK(judged.rule == "-");
}

TEST_CASE("Host: exactly the decided host; its port optional only when it is the default") {
  struct Case {
    const char* host_line;  // "" for none
    std::uint16_t port;     // the decided port
    const char* verdict;
  };
  const Case cases[] = {
      {"Host: api.example\r\n", 443, "ok"},
      {"Host: api.example:443\r\n", 443, "ok"},
      {"Host: API.EXAMPLE.\r\n", 443, "ok"},
      {"Host: api.example:8443\r\n", 443, "host mismatch"},
      {"Host: api.example\r\n", 8443, "host mismatch"},  // the default port is not the decided one
      {"Host: api.example:8443\r\n", 8443, "ok"},
      {"Host: evil.example\r\n", 443, "host mismatch"},
      {"Host: api.example.evil\r\n", 443, "host mismatch"},
      {"Host: user@api.example\r\n", 443, "host mismatch"},
      {"Host: api.example:\r\n", 443, "host mismatch"},
      {"Host: 10.0.0.1\r\n", 443, "host mismatch"},
      {"Host: \r\n", 443, "host mismatch"},
      {"", 443, "host mismatch"},
  };
  for (const auto& c : cases) {
    const std::string text = std::string("GET /repos/acme/x HTTP/1.1\r\n") + c.host_line + "\r\n";
    CAPTURE(text);
    CAPTURE(c.port);
    CHECK(class_of(judge(text, acme_endpoint(), origin_of("api.example", c.port))) == c.verdict);
  }
  // Plain HTTP's default is 80.
  CHECK(class_of(judge("GET /repos/acme/x HTTP/1.1\r\nHost: api.example\r\n\r\n", acme_endpoint(),
                       origin_of("api.example", 80, 80))) == "ok");
  // An address literal as the decided host.
  CHECK(class_of(judge("GET /repos/acme/x HTTP/1.1\r\nHost: [2001:db8::1]\r\n\r\n", acme_endpoint(),
                       origin_of("2001:db8::1", 443))) == "ok");
  CHECK(origin_host_field(origin_of("2001:db8::1", 8443)) == "[2001:db8::1]:8443");
  CHECK(origin_host_field(origin_of("api.example.", 443)) == "api.example");
}

TEST_CASE("paths: absolute-form, *, %2F, .., // are bad path") {
  const InspectEndpoint open = endpoint_of("api.example");
  for (const char* target : {"https://api.example/x", "*", "/a/%2F/b", "/a/%2f", "/a/../b", "/a/%2e%2E/b", "//a",
                             "/a//b", "/a\\b", "x"}) {
    const std::string text = std::string("GET ") + target + " HTTP/1.1\r\nHost: api.example\r\n\r\n";
    CAPTURE(text);
    CHECK(class_of(judge(text, open)) == "bad path");
  }
  CHECK(class_of(judge("OPTIONS * HTTP/1.1\r\nHost: api.example\r\n\r\n", open)) == "bad path");
  CHECK(class_of(judge("GET /a/b/?q=%2F HTTP/1.1\r\nHost: api.example\r\n\r\n", open)) == "ok");
}

TEST_CASE("report mode: a denial goes on, marked; every other refusal holds") {
  auto judged = judge("DELETE /repos/acme/x HTTP/1.1\r\nHost: api.example\r\n\r\n", acme_endpoint(InspectMode::report));
  CHECK_FALSE(judged.refusal);
  CHECK(judged.report);
  CHECK(judged.rule == "deny[0]");
  CHECK(judged.upstream.text() == "DELETE /repos/acme/x HTTP/1.1\r\nHost: api.example\r\n\r\n");
  judged = judge("GET /repos/acme/%2F HTTP/1.1\r\nHost: api.example\r\n\r\n", acme_endpoint(InspectMode::report));
  CHECK(class_of(judged) == "bad path");
  judged = judge("GET /repos/acme/x HTTP/1.1\r\nHost: other\r\n\r\n", acme_endpoint(InspectMode::report));
  CHECK(class_of(judged) == "host mismatch");
}

TEST_CASE("bodies and keep-alive: what a refusal leaves usable") {
  auto judged = judge("POST /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 5\r\n\r\n");
  CHECK(class_of(judged) == "request denied");
  CHECK(judged.framing.kind == BodyFraming::Kind::length);
  CHECK(judged.framing.length == 5);
  CHECK(judged.keep_after_refusal);
  judged = judge("POST /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(judged.framing.kind == BodyFraming::Kind::chunked);
  CHECK(judged.keep_after_refusal);
  // A body behind Expect: 100-continue may never come once refused: the connection ends.
  judged = judge("POST /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  CHECK_FALSE(judged.keep_after_refusal);
  judged = judge("POST /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n");
  CHECK(judged.keep_after_refusal);
  // A client that closes after this request.
  judged = judge("DELETE /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nConnection: close\r\n\r\n");
  CHECK_FALSE(judged.keep_after_refusal);
  judged = judge("GET /repos/acme/x HTTP/1.0\r\nHost: api.example\r\n\r\n");
  CHECK_FALSE(judged.client_keep_alive);
  CHECK(judged.client_http10);
  CHECK(judged.upstream.text() == "GET /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nConnection: close\r\n\r\n");
}

TEST_CASE("a websocket upgrade is judged like any request, and keeps its Upgrade when allowed") {
  const std::string ws =
      "GET /repos/acme/ws HTTP/1.1\r\nHost: api.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Version: 13\r\n\r\n";
  auto judged = judge(ws);
  CHECK(class_of(judged) == "ok");
  CHECK(judged.websocket);
  CHECK(judged.upstream.text() ==
        "GET /repos/acme/ws HTTP/1.1\r\nHost: api.example\r\nSec-WebSocket-Version: 13\r\n"
        "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  judged = judge(
      "GET /repos/other/ws HTTP/1.1\r\nHost: api.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
  CHECK(class_of(judged) == "request denied");
}

TEST_CASE("inject: every box header of the name is replaced by the expanded template") {
  InspectEndpoint endpoint = acme_endpoint();
  endpoint.inject = {{"Authorization", "Bearer {github}"}};
  MapSecrets secrets;
  secrets.values["github"] = "ghp_real";
  const auto judged = judge(
      "GET /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nauthorization: Bearer box\r\nAccept: */*\r\n"
      "AUTHORIZATION: again\r\n\r\n",
      endpoint, origin_of("api.example", 443), secrets);
  CHECK(class_of(judged) == "ok");
  CHECK(judged.upstream.text() ==
        "GET /repos/acme/x HTTP/1.1\r\nHost: api.example\r\nAccept: */*\r\nAccept-Encoding: identity\r\n"
        "grpc-accept-encoding: identity\r\nAuthorization: Bearer ghp_real\r\n\r\n");
}

TEST_CASE("inject: a secret not set is secret missing, 403, in report mode too, and nothing is built") {
  for (const InspectMode mode : {InspectMode::enforce, InspectMode::report}) {
    InspectEndpoint endpoint = acme_endpoint(mode);
    endpoint.inject = {{"x-api-key", "{key}"}};
    // Allowed by the rules, and (in report mode) denied but let through: secret missing either way.
    for (const char* head : {"GET /repos/acme/x HTTP/1.1\r\nHost: api.example\r\n\r\n",
                             "GET /repos/other/x HTTP/1.1\r\nHost: api.example\r\n\r\n"}) {
      const auto judged = judge(head, endpoint);
      if (mode == InspectMode::enforce && std::string_view(head).find("other") != std::string_view::npos) {
        CHECK(class_of(judged) == "request denied");
        continue;
      }
      CHECK(class_of(judged) == "secret missing");
      CHECK_FALSE(judged.report);
      CHECK(judged.upstream.method.empty());
      CHECK(judged.keep_after_refusal);
    }
  }
  CHECK(info(Reason::secret_missing).http_status == 403);
  CHECK(log_class(Reason::secret_missing) == "secret missing");
}

TEST_CASE("inject: a websocket upgrade refused as secret missing is no upgrade (fuzz_inspected_request)") {
  // The judge marked the upgrade before it found the secret missing: a refusal must never say
  // websocket (nothing is sent, so no 101 may switch the connection to a relay).
  InspectEndpoint endpoint = acme_endpoint();
  endpoint.inject = {{"Authorization", "Bearer {github}"}};
  const auto judged = judge(
      "GET /repos/acme/ws HTTP/1.1\r\nHost: api.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
      endpoint);
  CHECK(class_of(judged) == "secret missing");
  CHECK_FALSE(judged.websocket);
  CHECK_FALSE(judged.report);
  CHECK(judged.upstream.method.empty());
}

TEST_CASE("inject: the framing checks and the rules come first") {
  InspectEndpoint endpoint = acme_endpoint();
  endpoint.inject = {{"x-api-key", "{key}"}};
  CHECK(class_of(judge("GET /repos/acme/x HTTP/1.1\r\nHost: other.example\r\n\r\n", endpoint)) == "host mismatch");
  CHECK(class_of(judge("DELETE /repos/acme/x HTTP/1.1\r\nHost: api.example\r\n\r\n", endpoint)) ==
        "request denied");
}

TEST_CASE("placeholders: misdirected before the rules; swapped once allowed; a swapped target judged again") {
  Placeholders placeholders;
  const std::string key = make_placeholder("key", std::array<std::uint8_t, kPlaceholderRandomBytes>{7});
  placeholders.set("key", key);
  MapSecrets secrets;
  secrets.values["key"] = "K3Y";
  const auto judged_with = [&](const std::string& text, const InspectEndpoint& endpoint) {
    const auto parsed = parse_request_head(text, 65536);
    REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
    return judge_inspected_request(*parsed.value, endpoint, origin_of("api.example", 443), secrets, &placeholders);
  };
  // Not listed: misdirected even where the rules would deny (the tripwire is never hidden).
  const InspectedRequest misdirected =
      judged_with("DELETE /x?k=" + key + " HTTP/1.1\r\nHost: api.example\r\n\r\n", acme_endpoint());
  CHECK(class_of(misdirected) == "secret misdirected");
  CHECK(misdirected.misdirected == std::optional<std::string>("key"));
  CHECK(misdirected.upstream.method.empty());

  InspectEndpoint listed = acme_endpoint();
  listed.secrets = {"key"};
  // SPEC §19a: swapped only at the places the endpoint names (proxy/wire/placeholder_swap.h).
  listed.secret_places = {{"key", {std::get<SecretPlace>(parse_secret_place("query:k")),
                                   std::get<SecretPlace>(parse_secret_place("header:x-key"))}}};
  const InspectedRequest swapped =
      judged_with("GET /repos/acme/x?k=" + key + " HTTP/1.1\r\nHost: api.example\r\nX-Key: " + key + "\r\n\r\n", listed);
  CHECK(class_of(swapped) == "ok");
  CHECK(swapped.upstream.text() == "GET /repos/acme/x?k=K3Y HTTP/1.1\r\nHost: api.example\r\nX-Key: K3Y\r\nAccept-Encoding: identity\r\n"
        "grpc-accept-encoding: identity\r\n\r\n");
  // Never swapped in the path (SPEC §19a): a placeholder there is misdirected, never sent.
  secrets.values["key"] = "../../other/y";
  const InspectedRequest escaped =
      judged_with("GET /repos/acme/" + key + " HTTP/1.1\r\nHost: api.example\r\n\r\n", listed);
  CHECK(class_of(escaped) == "secret misdirected");
  CHECK(escaped.upstream.method.empty());
  secrets.values.clear();
  CHECK(class_of(judged_with("GET /repos/acme/x?k=" + key + " HTTP/1.1\r\nHost: api.example\r\n\r\n", listed)) ==
        "secret missing");
}

TEST_CASE("repeated equal Content-Lengths go on as one; different ones are bad framing (SPEC §19a)") {
  InspectEndpoint posts = endpoint_of("api.example");
  posts.rules = std::vector<InspectRule>{rule("POST", "/**")};
  auto judged = judge("POST /x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 5\r\ncontent-length: 5\r\n"
                      "X-A: 1\r\nContent-Length: 5\r\n\r\n",
                      posts);
  CHECK(class_of(judged) == "ok");
  CHECK(judged.framing.length == 5);
  CHECK(judged.upstream.text() == "POST /x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 5\r\nX-A: 1\r\n\r\n");
  judged = judge("POST /x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", posts);
  CHECK(class_of(judged) == "bad framing");
}
