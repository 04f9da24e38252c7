// SPDX-License-Identifier: Apache-2.0
// table/inspect_endpoint and table/inspect_request_checks: SPEC §19a's endpoint rules. No
// credential on a wildcard; a rule's method as a list; ';'-parameters and case in paths; GET and
// HEAD bodies; which endpoints put a credential in.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/inspect_endpoint.h"
#include "table/inspect_request_checks.h"

using namespace boxproxy;

namespace {

InspectRule rule(std::vector<std::string_view> methods, std::string_view path,
                 std::optional<std::string_view> name = std::nullopt) {
  auto made = make_inspect_rule(methods, path, name);
  if (const auto* error = std::get_if<std::string>(&made)) FAIL(*error);
  return std::get<InspectRule>(made);
}

InspectEndpoint endpoint(std::string_view entry) {
  auto parsed = parse_inspect_entry(entry);
  if (const auto* error = std::get_if<std::string>(&parsed)) FAIL(*error);
  return std::get<InspectEndpoint>(parsed);
}

std::string judged(const InspectEndpoint& e, std::string_view method, std::string_view target) {
  const RequestJudgement j = judge_request(e, method, target);
  return std::string(verdict_class(j.verdict)) + " " + j.rule;
}

}  // namespace

TEST_CASE("a wildcard endpoint carries no credential: inject or secrets, each alone and together") {
  struct Row {
    const char* host;
    bool inject;
    bool secrets;
    const char* refused_for;  // the key the error names, or nullptr when good
  };
  const Row rows[] = {
      {"*.example.com", false, false, nullptr},
      {"*.example.com", true, false, "inject"},
      {"*.example.com", false, true, "secrets"},
      {"*.example.com", true, true, "inject"},
      {"*.example.com:8443", true, false, "inject"},
      {"api.example.com", true, true, nullptr},
      {"api.example.com", true, false, nullptr},
      {"api.example.com", false, true, nullptr},
  };
  for (const Row& row : rows) {
    CAPTURE(row.host);
    CAPTURE(row.inject);
    CAPTURE(row.secrets);
    InspectEndpoint e = endpoint(row.host);
    if (row.inject) e.inject.emplace_back("Authorization", "Bearer {key}");
    if (row.secrets) e.secrets.emplace_back("key");
    const auto error = check_inspect_endpoint(e);
    if (row.refused_for == nullptr) {
      CHECK_FALSE(error.has_value());
      continue;
    }
    REQUIRE(error.has_value());
    CHECK(error->find(entry_text(e.host)) != std::string::npos);                     // names the endpoint
    CHECK(error->find(std::string("\"") + row.refused_for + "\"") != std::string::npos);  // and the key
    CHECK(error->find("wildcard") != std::string::npos);
  }
  InspectEndpoint both = endpoint("api.example.com");
  CHECK(credential_keys(both).empty());
  both.inject.emplace_back("x-api-key", "{key}");
  both.secrets.emplace_back("key");
  CHECK(credential_keys(both) == std::vector<std::string_view>{"inject", "secrets"});
}

TEST_CASE("injects_or_swaps: inject or secrets (either form), not signing alone") {
  InspectEndpoint plain = endpoint("api.example.com");
  InspectEndpoint injects = plain;
  injects.inject.emplace_back("Authorization", "Bearer {key}");
  InspectEndpoint swaps = plain;
  swaps.secrets.emplace_back("key");
  CHECK_FALSE(plain.injects_or_swaps());
  CHECK(injects.injects_or_swaps());
  CHECK(swaps.injects_or_swaps());
}

TEST_CASE("a GET or HEAD with a body is bad framing unless the endpoint says get-bodies") {
  struct Row {
    const char* method;
    std::uint64_t length;
    bool chunked;
    bool with_body;
  };
  const Row rows[] = {
      {"GET", 0, false, false},  {"GET", 1, false, true},   {"GET", 0, true, true},
      {"get", 5, false, true},   {"HEAD", 0, false, false}, {"HEAD", 10, false, true},
      {"head", 0, true, true},   {"GET", ~std::uint64_t{0}, false, true},
      {"POST", 10, false, false}, {"PUT", 0, true, false},  {"OPTIONS", 3, false, false},
      {"DELETE", 3, false, false}, {"GETS", 3, false, false}, {"", 3, false, false},
  };
  InspectEndpoint strict = endpoint("api.example.com");
  InspectEndpoint search = strict;
  search.get_bodies = true;
  for (const Row& row : rows) {
    CAPTURE(row.method);
    CAPTURE(row.length);
    CAPTURE(row.chunked);
    CHECK(is_get_or_head_with_body(row.method, row.length, row.chunked) == row.with_body);
    CHECK(get_body_refused(strict, row.method, row.length, row.chunked) == row.with_body);
    CHECK_FALSE(get_body_refused(search, row.method, row.length, row.chunked));
  }
}

TEST_CASE("a rule's method list: each listed method, in any case, and no other") {
  InspectEndpoint e = endpoint("api.example.com");
  e.rules = std::vector<InspectRule>{rule({"GET", "head"}, "/repos/**")};
  e.deny.push_back(rule({"delete", "PUT", "PATCH"}, "/repos/acme/**", "no-writes"));
  CHECK(e.rules->front().methods == std::vector<std::string>{"GET", "HEAD"});
  CHECK(judged(e, "GET", "/repos/x") == "ok rules[0]");
  CHECK(judged(e, "HEAD", "/repos/x") == "ok rules[0]");
  CHECK(judged(e, "head", "/repos/x") == "ok rules[0]");
  CHECK(judged(e, "POST", "/repos/x") == "request denied -");
  CHECK(judged(e, "OPTIONS", "/repos/x") == "request denied -");
  for (const char* method : {"DELETE", "PUT", "PATCH", "patch"}) {
    CAPTURE(method);
    CHECK(judged(e, method, "/repos/acme/w") == "request denied no-writes");
  }
  CHECK(judged(e, "GET", "/repos/acme/w") == "ok rules[0]");  // not in the deny's list
  CHECK(rule({"*"}, "/").methods == std::vector<std::string>{"*"});
}

TEST_CASE("a bad method list is an error saying what is wrong") {
  struct Row {
    std::vector<std::string_view> methods;
    const char* says;
  };
  std::vector<std::string_view> many(kMaxRuleMethods + 1, "GET");
  const Row rows[] = {
      {{}, "empty list"},
      {{"GET", "GE T"}, "\"GE T\" is not an HTTP method"},
      {{""}, "\"\" is not an HTTP method"},
      {{"GET", "get"}, "names \"get\" twice"},
      {{"*", "GET"}, "\"*\" stands alone"},
      {{"GET", "*"}, "\"*\" stands alone"},
      {{"*", "*"}, "\"*\" stands alone"},
      {many, "more than 32"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.says);
    const auto error = check_rule_methods(row.methods);
    REQUIRE(error.has_value());
    CHECK(error->find(row.says) != std::string::npos);
    auto made = make_inspect_rule(row.methods, "/", std::nullopt);
    REQUIRE(std::holds_alternative<std::string>(made));
    CHECK(std::get<std::string>(made).rfind("method ", 0) == 0);
  }
  for (const std::vector<std::string_view>& good : std::vector<std::vector<std::string_view>>{
           {"GET"}, {"*"}, {"GET", "HEAD"}, {"PROPFIND", "M-SEARCH", "get-x"}}) {
    CHECK_FALSE(check_rule_methods(good).has_value());
  }
}

TEST_CASE("';'-parameters: a deny matches either reading, a grant must match both") {
  InspectEndpoint e = endpoint("api.example.com");
  e.rules = std::vector<InspectRule>{rule({"GET"}, "/allowed/**"), rule({"GET"}, "/v1/*.json", "json"),
                                     rule({"GET"}, "/m;v=1/*", "matrix")};
  e.deny.push_back(rule({"*"}, "/allowed/secret/**", "no-secret"));
  struct Row {
    const char* target;
    const char* expected;
  };
  const Row rows[] = {
      // The two: a climb hidden behind ';', a deny passed by a parameter.
      {"/allowed/..;/other", "bad path -"},
      {"/allowed/secret;x/k", "request denied no-secret"},
      {"/allowed/secret;/k", "request denied no-secret"},
      {"/allowed/secret;a;b=c/k;d", "request denied no-secret"},
      {"/allowed/secret/k", "request denied no-secret"},
      {"/allowed/%73ecret;x/k", "request denied no-secret"},
      {"/allowed/secre;t/k", "ok rules[0]"},        // "secre" is another segment to either reader
      {"/allowed/other;x/k", "ok rules[0]"},        // both readings under /allowed/
      {"/allowed;x/k", "request denied -"},        // as sent, "allowed;x" is not "allowed"
      {"/allowed/%3B/k", "ok rules[0]"},            // an encoded ';' is data
      {"/allowed/secret%3Bx/k", "ok rules[0]"},
      {"/v1/a.json", "ok json"},
      {"/v1/a.json;x", "request denied -"},         // as sent, "a.json;x" does not end in .json
      {"/v1/a.json;.json", "ok json"},              // both readings end in .json
      {"/v1;x/a.json", "request denied -"},
      {"/m;v=1/a", "request denied -"},             // bare, "m" is not "m;v=1": no grant
      {"/x;y", "request denied -"},
  };
  for (const Row& row : rows) {
    const std::string target = row.target;
    CAPTURE(target);
    CHECK(judged(e, "GET", row.target) == row.expected);
  }
}

TEST_CASE("\"case\": insensitive judges rules and paths without regard to case; sensitive is the default") {
  InspectEndpoint e = endpoint("files.example.com");
  e.rules = std::vector<InspectRule>{rule({"GET"}, "/Public/**")};
  e.deny.push_back(rule({"*"}, "/public/Admin/**", "no-admin"));
  struct Row {
    const char* target;
    const char* sensitive;
    const char* insensitive;
  };
  const Row rows[] = {
      {"/Public/a", "ok rules[0]", "ok rules[0]"},
      {"/public/a", "request denied -", "ok rules[0]"},
      {"/PUBLIC/a", "request denied -", "ok rules[0]"},
      {"/Public/admin/x", "ok rules[0]", "request denied no-admin"},
      {"/public/Admin/x", "request denied no-admin", "request denied no-admin"},
      {"/PUBLIC/ADMIN;x/y", "request denied -", "request denied no-admin"},
      {"/pub%4Cic/ADMIN/y", "request denied -", "request denied no-admin"},  // %4C is "L", decoded
      {"/Other", "request denied -", "request denied -"},
      {"/Public/..;/Admin", "bad path -", "bad path -"},
  };
  CHECK(e.path_case == PathCase::sensitive);
  for (const Row& row : rows) {
    CAPTURE(row.target);
    e.path_case = PathCase::sensitive;
    CHECK(judged(e, "GET", row.target) == row.sensitive);
    e.path_case = PathCase::insensitive;
    CHECK(judged(e, "GET", row.target) == row.insensitive);
  }
  CHECK(std::get<PathCase>(parse_path_case("insensitive")) == PathCase::insensitive);
  CHECK(std::get<PathCase>(parse_path_case("sensitive")) == PathCase::sensitive);
  for (const char* bad : {"", "Insensitive", "ignore", "fold", "true"}) {
    CAPTURE(bad);
    CHECK(std::holds_alternative<std::string>(parse_path_case(bad)));
  }
  CHECK(path_case_text(PathCase::insensitive) == "insensitive");
  CHECK(path_case_text(PathCase::sensitive) == "sensitive");
}
