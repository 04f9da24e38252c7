// SPDX-License-Identifier: Apache-2.0
// proxy/stages/refusal_detail: what a refused request's body names after its words (the endpoint,
// method and path judged; with "hint", what the rules allow), and the answer that carries it.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "proxy/stages/inspected_request.h"
#include "stages_test_support.h"
#include "proxy/stages/refusal_detail.h"

using namespace boxproxy;
using testing::endpoint_of;
using testing::rule;

namespace {

InspectEndpoint github(bool hint) {
  InspectEndpoint e = endpoint_of("api.github.com");
  e.rules = std::vector<InspectRule>{rule("GET", "/repos/acme/**"), rule("POST", "/repos/acme/*/issues")};
  e.deny.push_back(rule("*", "/repos/*/*/hooks/**"));
  e.hint = hint;
  return e;
}

}  // namespace

TEST_CASE("without \"hint\" the body is SPEC's words alone; with it, what was judged and what is allowed") {
  CHECK(refusal_detail(github(false), "DELETE", "/repos/acme/x?token=abc#f", Reason::request_denied).empty());
  CHECK(refusal_detail(github(false), "GET", "/a/../b", Reason::bad_path).empty());
  // The path without its query, the endpoint's entry; a request denied adds the rules.
  CHECK(refusal_detail(github(true), "DELETE", "/repos/acme/x?token=abc#f", Reason::request_denied) ==
        ": judged DELETE /repos/acme/x at endpoint api.github.com:443; "
        "allowed: GET /repos/acme/**; POST /repos/acme/*/issues (denied first: * /repos/*/*/hooks/**)");
  // Other refusals name what was judged, never the rules.
  CHECK(refusal_detail(github(true), "GET", "/a/../b", Reason::bad_path) ==
        ": judged GET /a/../b at endpoint api.github.com:443");
}

TEST_CASE("the path the box sent is cut, and nothing in it can end the line") {
  CHECK(judged_path_text("/a b\r\nx-forged: 1\x01\x7f\xc3\xa9") == "/a%20b%0D%0Ax-forged:%201%01%7F%C3%A9");
  const std::string long_path = "/" + std::string(1000, 'a');
  const std::string cut = judged_path_text(long_path);
  CHECK(cut == long_path.substr(0, kMaxJudgedPathBytes) + "...");
  CHECK(judged_path_text("/x?secret=%0d%0a") == "/x");
  CHECK(refusal_detail(github(true), "G\nT", "/", Reason::bad_path) == ": judged G%0AT / at endpoint api.github.com:443");
}

TEST_CASE("what the rules allow, in words, bounded") {
  InspectEndpoint e = endpoint_of("*.example.com:8443");
  CHECK(allowed_text(e) == "every method and path");
  e.access = InspectAccess::read_only;
  CHECK(allowed_text(e) == "GET, HEAD, OPTIONS on any path (read-only)");
  e.access.reset();
  e.rules = std::vector<InspectRule>{};
  CHECK(allowed_text(e) == "nothing");
  auto many = make_inspect_rule(std::vector<std::string_view>{"GET", "HEAD"}, "/v1/*.json", std::nullopt);
  REQUIRE(std::holds_alternative<InspectRule>(many));
  for (int i = 0; i < 200; ++i) e.rules->push_back(std::get<InspectRule>(many));
  const std::string text = allowed_text(e);
  CHECK(text.size() <= kMaxHintBytes);
  CHECK(text.starts_with("GET,HEAD /v1/*.json; GET,HEAD /v1/*.json"));
  CHECK(text.ends_with(" more"));
}

TEST_CASE("the answer's one line carries the hint after the words SPEC §6 fixes, counted in content-length") {
  const std::string detail = refusal_detail(github(true), "DELETE", "/x", Reason::request_denied);
  const std::string answer = inspect_refusal_response(Reason::request_denied, false, detail);
  const std::string body = "egress refused: request denied" + detail + "\n";
  CHECK(body.find('\n') == body.size() - 1);
  CHECK(answer ==
        "HTTP/1.1 403 egress refused: request denied\r\nx-egress-refused: request denied\r\n"
        "content-type: text/plain\r\ncontent-length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}
