// SPDX-License-Identifier: Apache-2.0
// table/inspect_endpoint: an endpoint's values, and the judgement of a request by its rules
// (SPEC §18): precedence, labels, methods, modes.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/inspect_endpoint.h"

using namespace boxproxy;

namespace {

InspectRule rule(std::string_view method, std::string_view path, std::optional<std::string_view> name = std::nullopt) {
  auto made = make_inspect_rule(method, path, name);
  if (const auto* error = std::get_if<std::string>(&made)) FAIL(*error);
  return std::get<InspectRule>(made);
}

InspectEndpoint endpoint(std::string_view entry) {
  auto parsed = parse_inspect_entry(entry);
  if (const auto* error = std::get_if<std::string>(&parsed)) FAIL(*error);
  return std::get<InspectEndpoint>(parsed);
}

// "class label" of a judgement, for compact tables.
std::string judged(const InspectEndpoint& e, std::string_view method, std::string_view target) {
  const RequestJudgement j = judge_request(e, method, target);
  return std::string(verdict_class(j.verdict)) + " " + j.rule;
}

}  // namespace

TEST_CASE("--inspect ENTRY: a host entry, port 443 when none is named, no rules") {
  struct Row {
    const char* text;
    const char* name;
    bool wildcard;
    int port;
  };
  const Row rows[] = {
      {"api.github.com", "api.github.com", false, 443},
      {"API.GitHub.com.", "api.github.com", false, 443},
      {"api.github.com:443", "api.github.com", false, 443},
      {"api.github.com:8443", "api.github.com", false, 8443},
      {"*.github.com", "github.com", true, 443},
      {"*.github.com:80", "github.com", true, 80},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const InspectEndpoint e = endpoint(row.text);
    CHECK(e.host.name == row.name);
    CHECK(e.host.wildcard == row.wildcard);
    REQUIRE(e.host.port.has_value());
    CHECK(*e.host.port == row.port);
    CHECK_FALSE(e.access.has_value());
    CHECK_FALSE(e.rules.has_value());
    CHECK(e.deny.empty());
    CHECK(e.mode == InspectMode::enforce);
    CHECK_FALSE(e.name.has_value());
  }
  CHECK(endpoint_label(endpoint("API.github.com")) == "api.github.com:443");
  CHECK(endpoint_label(endpoint("*.github.com:8443")) == "*.github.com:8443");
}

TEST_CASE("bad --inspect entries are errors naming the entry") {
  for (const char* text : {"", "10.0.0.1", "[::1]:443", "https://api.github.com", "api.github.com/repos", "*",
                           "localhost", "api.github.com:0", "api.github.com:65536", "a b.com"}) {
    CAPTURE(text);
    auto parsed = parse_inspect_entry(text);
    REQUIRE(std::holds_alternative<std::string>(parsed));
    if (*text != '\0') CHECK(std::get<std::string>(parsed).find(text) != std::string::npos);
  }
}

TEST_CASE("an endpoint with no access and no rules allows every method and path, but never a bad path") {
  const InspectEndpoint e = endpoint("api.example.com");
  CHECK(judged(e, "GET", "/") == "ok -");
  CHECK(judged(e, "DELETE", "/repos/acme/widget") == "ok -");
  CHECK(judged(e, "BREW", "/pot?milk=1") == "ok -");
  CHECK(judged(e, "GET", "/a/../b") == "bad path -");
  CHECK(judged(e, "GET", "/a%2Fb") == "bad path -");
  CHECK(judged(e, "GET", "*") == "bad path -");
}

TEST_CASE("access: read-only is GET, HEAD and OPTIONS; read-write every method") {
  InspectEndpoint e = endpoint("api.example.com");
  e.access = InspectAccess::read_only;
  for (const char* method : {"GET", "HEAD", "OPTIONS", "get", "Head", "options"}) {
    CAPTURE(method);
    CHECK(judged(e, method, "/x") == "ok access");
  }
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE", "TRACE", "CONNECT", "PROPFIND", "GETX"}) {
    CAPTURE(method);
    CHECK(judged(e, method, "/x") == "request denied access");
  }
  e.access = InspectAccess::read_write;
  for (const char* method : {"GET", "POST", "DELETE", "PROPFIND"}) {
    CAPTURE(method);
    CHECK(judged(e, method, "/x") == "ok access");
  }
  CHECK(judged(e, "GET", "/a//b") == "bad path -");
}

TEST_CASE("rules: the first match allows, labelled rules[N] or its name; no match is denied, label -") {
  InspectEndpoint e = endpoint("api.github.com");
  e.rules = std::vector<InspectRule>{rule("GET", "/repos/acme/**"), rule("post", "/repos/acme/*/issues", "file-issue"),
                                     rule("*", "/user"), rule("GET", "/repos/acme/widget")};
  CHECK(judged(e, "GET", "/repos/acme/widget") == "ok rules[0]");
  CHECK(judged(e, "get", "/repos/acme/widget/pulls?page=2") == "ok rules[0]");
  CHECK(judged(e, "POST", "/repos/acme/widget/issues") == "ok file-issue");
  CHECK(judged(e, "Post", "/repos/acme/widget/issues/") == "ok file-issue");
  CHECK(judged(e, "DELETE", "/user") == "ok rules[2]");
  CHECK(judged(e, "GET", "/repos/acme") == "request denied -");  // "**" does not match the prefix itself
  CHECK(judged(e, "POST", "/repos/acme/widget") == "request denied -");
  CHECK(judged(e, "GET", "/repos/other/widget") == "request denied -");
  CHECK(judged(e, "GET", "/repos/acme/widget/../../other") == "bad path -");

  e.rules = std::vector<InspectRule>{};
  CHECK(judged(e, "GET", "/") == "request denied -");  // an empty list allows nothing
}

TEST_CASE("deny beats rules and access, labelled deny[N] or its name") {
  InspectEndpoint e = endpoint("api.github.com");
  e.rules = std::vector<InspectRule>{rule("*", "/**")};
  e.deny = {rule("DELETE", "/**"), rule("*", "/repos/*/*/hooks/**", "no-webhooks"), rule("*", "/admin")};
  CHECK(judged(e, "GET", "/repos/acme/widget") == "ok rules[0]");
  CHECK(judged(e, "DELETE", "/repos/acme/widget") == "request denied deny[0]");
  CHECK(judged(e, "delete", "/repos/acme/widget") == "request denied deny[0]");  // case never passes a deny
  CHECK(judged(e, "POST", "/repos/acme/widget/hooks/1") == "request denied no-webhooks");
  CHECK(judged(e, "GET", "/admin") == "request denied deny[2]");
  CHECK(judged(e, "GET", "/%61dmin") == "request denied deny[2]");  // nor does an encoded spelling
  CHECK(judged(e, "GET", "/admin/") == "request denied deny[2]");
  CHECK(judged(e, "GET", "/admin?x=1") == "request denied deny[2]");
  CHECK(judged(e, "GET", "/") == "request denied -");  // "/**" needs a segment

  e.rules.reset();
  e.access = InspectAccess::read_write;
  CHECK(judged(e, "DELETE", "/x") == "request denied deny[0]");
  CHECK(judged(e, "PUT", "/x") == "ok access");
  e.access.reset();
  CHECK(judged(e, "GET", "/admin") == "request denied deny[2]");
  CHECK(judged(e, "GET", "/other") == "ok -");
  // The path comes before every rule.
  CHECK(judged(e, "DELETE", "/x/%2e%2e/admin") == "bad path -");
}

TEST_CASE("report mode changes nothing in the judgement (its caller lets the denial pass)") {
  InspectEndpoint e = endpoint("api.example.com");
  e.mode = InspectMode::report;
  e.access = InspectAccess::read_only;
  CHECK(judged(e, "POST", "/x") == "request denied access");
  CHECK(judged(e, "GET", "//") == "bad path -");
}

TEST_CASE("the values: methods, names, access, mode, inject, secrets") {
  for (const char* good : {"GET", "get", "PROPFIND", "M-SEARCH", "*", "X_Y.Z!"}) {
    CAPTURE(good);
    CHECK_FALSE(check_rule_method(good).has_value());
  }
  for (const char* bad : {"", "GE T", "GET\r\n", "G(ET)", "**x\x01", "\xc3\xa9"}) {
    CAPTURE(bad);
    CHECK(check_rule_method(bad).has_value());
  }
  CHECK(rule("propfind", "/").methods == std::vector<std::string>{"PROPFIND"});
  CHECK(rule("*", "/").methods == std::vector<std::string>{"*"});

  for (const char* good : {"a", "read-repos", "Rule_1.2", "0x"}) {
    CAPTURE(good);
    CHECK_FALSE(check_inspect_name(good).has_value());
  }
  for (const char* bad : {"", "-", "-a", ".a", "_a", "a b", "deny[0]", "rules[1]", "access", "a=b", "caf\xc3\xa9",
                          "x123456789012345678901234567890123456789012345678901234567890abcd"}) {
    CAPTURE(bad);
    CHECK(check_inspect_name(bad).has_value());
  }

  CHECK(std::get<InspectAccess>(parse_inspect_access("read-only")) == InspectAccess::read_only);
  CHECK(std::get<InspectAccess>(parse_inspect_access("read-write")) == InspectAccess::read_write);
  for (const char* bad : {"none", "Read-Only", "", "rw"}) CHECK(std::holds_alternative<std::string>(parse_inspect_access(bad)));
  CHECK(std::get<InspectMode>(parse_inspect_mode("enforce")) == InspectMode::enforce);
  CHECK(std::get<InspectMode>(parse_inspect_mode("report")) == InspectMode::report);
  for (const char* bad : {"Report", "", "log"}) CHECK(std::holds_alternative<std::string>(parse_inspect_mode(bad)));
  CHECK(access_text(InspectAccess::read_only) == "read-only");
  CHECK(mode_text(InspectMode::report) == "report");

  CHECK_FALSE(check_inject_header("Authorization").has_value());
  CHECK_FALSE(check_inject_header("x-api-key").has_value());
  for (const char* bad : {"", "a b", "a:b", "x\r\ny"}) CHECK(check_inject_header(bad).has_value());
  // Headers that frame, route or are hop-by-hop: an injected one could end a request elsewhere.
  for (const char* never : {"Host", "content-length", "Transfer-Encoding", "connection", "Upgrade", "TE",
                            "Proxy-Authorization"}) {
    CHECK(check_inject_header(never).has_value());
  }
  for (const char* good : {"Bearer {github}", "{a}{b_2}", "plain", "", "token {x} and {y}"}) {
    CAPTURE(good);
    CHECK_FALSE(check_inject_template(good).has_value());
  }
  for (const char* bad : {"Bearer {github", "Bearer github}", "{}", "{GitHub}", "{a b}", "x\r\nEvil: 1", "\t{a}",
                          "{x123456789012345678901234567890123}", "caf\xc3\xa9"}) {
    CAPTURE(bad);
    CHECK(check_inject_template(bad).has_value());
  }
  for (const char* good : {"github", "a", "x_1", "x1234567890123456789012345678901"}) {
    CAPTURE(good);
    CHECK_FALSE(check_secret_name(good).has_value());
  }
  for (const char* bad : {"", "GitHub", "a-b", "a b", "x123456789012345678901234567890123"}) {
    CAPTURE(bad);
    CHECK(check_secret_name(bad).has_value());
  }
}

TEST_CASE("make_inspect_rule names the part that is wrong") {
  const auto error = [](std::string_view method, std::string_view path, std::optional<std::string_view> name) {
    auto made = make_inspect_rule(method, path, name);
    REQUIRE(std::holds_alternative<std::string>(made));
    return std::get<std::string>(made);
  };
  CHECK(error("GE T", "/", std::nullopt).rfind("method \"GE T\": ", 0) == 0);
  CHECK(error("GET", "/a**", std::nullopt).rfind("path \"/a**\": ", 0) == 0);
  CHECK(error("GET", "/", "access").rfind("name \"access\": ", 0) == 0);
}

TEST_CASE("access and rules are exclusive") {
  InspectEndpoint e = endpoint("api.example.com");
  CHECK_FALSE(check_inspect_endpoint(e).has_value());
  e.access = InspectAccess::read_only;
  CHECK_FALSE(check_inspect_endpoint(e).has_value());
  e.rules = std::vector<InspectRule>{};
  CHECK(check_inspect_endpoint(e).has_value());
  e.access.reset();
  CHECK_FALSE(check_inspect_endpoint(e).has_value());
}

TEST_CASE("SPEC §20: a grant says whether it asks (its rule's \"ask\", or the endpoint's); a denial never does") {
  InspectEndpoint e = endpoint("api.example");
  InspectRule asked = rule("GET", "/asked/**");
  asked.ask = true;
  e.rules = std::vector<InspectRule>{asked, rule("GET", "/free/**")};
  e.deny = {rule("GET", "/asked/no")};
  CHECK(judge_request(e, "GET", "/asked/x").ask);
  CHECK_FALSE(judge_request(e, "GET", "/free/x").ask);
  CHECK_FALSE(judge_request(e, "GET", "/asked/no").ask);  // denied first
  CHECK_FALSE(judge_request(e, "POST", "/asked/x").ask);  // no rule allows it
  e.ask = true;
  CHECK(judge_request(e, "GET", "/free/x").ask);
  e.rules.reset();
  e.access = InspectAccess::read_only;
  CHECK(judge_request(e, "GET", "/any").ask);
  CHECK_FALSE(judge_request(e, "POST", "/any").ask);
  e.access.reset();
  CHECK(judge_request(e, "DELETE", "/any").ask);
}
