// SPDX-License-Identifier: Apache-2.0
// proxy/inspect_array: the "inspect" objects read into endpoints, and written back.
#include <string>
#include <variant>

#include <doctest/doctest.h>

#include "proxy/inspect_array.h"

using boxproxy::InspectAccess;
using boxproxy::InspectEndpoint;
using boxproxy::InspectMode;
using boxproxy::PathCase;
using nlohmann::json;

namespace {

const std::string kLabel = "--config \"c.json\": key \"inspect\"";

std::vector<InspectEndpoint> read(const json& value) {
  auto read = boxproxy::read_inspect_array(kLabel, value);
  if (const auto* error = std::get_if<std::string>(&read)) FAIL("an error for " << value.dump() << ": " << *error);
  return std::get<std::vector<InspectEndpoint>>(std::move(read));
}

// The error reading `value` gives.
std::string error_of(const json& value) {
  auto read = boxproxy::read_inspect_array(kLabel, value);
  if (const auto* error = std::get_if<std::string>(&read)) return *error;
  FAIL("no error for " << value.dump());
  return {};
}

}  // namespace

TEST_CASE("every key is read, and written back to the same endpoint") {
  const json config = json::parse(R"([
    {"host": "API.GitHub.com.", "name": "github",
     "rules": [{"method": "get", "path": "/repos/acme/**"}, {"method": "*", "path": "/v1/*.json", "name": "data"}],
     "deny": [{"method": "DELETE", "path": "/**"}], "mode": "report",
     "inject": {"Authorization": "Bearer {github}"}, "secrets": ["github"]},
    {"host": "*.example.com:8443", "access": "read-only"},
    {"host": "none.example", "rules": []}
  ])");
  const std::vector<InspectEndpoint> endpoints = read(config);
  REQUIRE(endpoints.size() == 3);
  const InspectEndpoint& github = endpoints[0];
  CHECK(github.host.name == "api.github.com");
  CHECK(*github.host.port == 443);
  CHECK(*github.name == "github");
  REQUIRE(github.rules.has_value());
  CHECK(github.rules->size() == 2);
  CHECK((*github.rules)[0].methods == std::vector<std::string>{"GET"});
  CHECK((*github.rules)[0].path.text() == "/repos/acme/**");
  CHECK(*(*github.rules)[1].name == "data");
  CHECK(github.deny.size() == 1);
  CHECK(github.mode == InspectMode::report);
  REQUIRE(github.inject.size() == 1);
  CHECK(github.inject[0].first == "Authorization");
  CHECK(github.inject[0].second == "Bearer {github}");
  CHECK(github.secrets == std::vector<std::string>{"github"});
  CHECK(endpoints[1].host.wildcard);
  CHECK(*endpoints[1].host.port == 8443);
  CHECK(endpoints[1].access == InspectAccess::read_only);
  CHECK(endpoints[1].mode == InspectMode::enforce);
  REQUIRE(endpoints[2].rules.has_value());
  CHECK(endpoints[2].rules->empty());  // kept: an empty list allows nothing

  json written = json::array();
  for (const InspectEndpoint& e : endpoints) written.push_back(json::parse(boxproxy::inspect_object(e).dump()));
  CHECK(written[0].dump() ==
        R"({"deny":[{"method":"DELETE","path":"/**"}],"host":"api.github.com:443","inject":{"Authorization":)"
        R"("Bearer {github}"},"mode":"report","name":"github","rules":[{"method":"GET","path":"/repos/acme/**"},)"
        R"({"method":"*","name":"data","path":"/v1/*.json"}],"secrets":["github"]})");
  CHECK(boxproxy::inspect_object(endpoints[1]).dump() ==
        R"({"host":"*.example.com:8443","access":"read-only","mode":"enforce"})");
  CHECK(boxproxy::inspect_object(endpoints[2]).dump() == R"({"host":"none.example:443","rules":[],"mode":"enforce"})");
  // Read again, written again: the same.
  const std::vector<InspectEndpoint> again = read(written);
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    CHECK(boxproxy::inspect_object(again[i]).dump() == boxproxy::inspect_object(endpoints[i]).dump());
  }
}

TEST_CASE("errors name the item, the key and the value") {
  const auto says = [](const char* text, const std::string& expected) {
    CAPTURE(text);
    CHECK(error_of(json::parse(text)) == kLabel + expected);
  };
  says(R"({"host": "a.test"})", R"(: "{\"host\":\"a.test\"}" is not a JSON array of objects)");
  says(R"(["a.test"])", R"([0]: "\"a.test\"" is not a JSON object ({"host": ENTRY, ...}; a bare entry is )"
                        R"(--inspect's))");
  says(R"([{"host": "a.test"}, {"host": "b.test", "rules": [{"method": "GET", "path": "/a/**b"}]}])",
       R"([1].rules[0].path: "/a/**b": '**' stands only as a whole segment (/a/**/b); '*' matches within one)");
  says(R"([{"host": "a.test", "deny": [{"method": "G ET", "path": "/"}]}])",
       R"([0].deny[0].method: "G ET" is not an HTTP method (a token such as GET or PROPFIND) nor *)");
  says(R"([{"host": "a.test", "access": "read-only", "rules": []}])",
       R"([0]: has both "access" and "rules"; give one (or neither, for every method and path))");
  says(R"([{"host": "a.test", "Access": "read-only"}])",
       R"([0]: unknown key "Access" (the keys of an inspected endpoint are host, name, access, rules, deny, mode, )"
       R"(inject, secrets, case, get-bodies, hint, ask, sign))");
  says(R"([{"host": "a.test:99999"}])", R"([0].host: "a.test:99999" bad port (must be 1 to 65535))");
  // A value is quoted, its bytes escaped: the words reach a terminal.
  CHECK(error_of(json::parse(R"([{"host": "a.test", "mode": "\u001b[2J"}])"))
            .starts_with(kLabel + R"([0].mode: "\x1b[2J" )"));
}

TEST_CASE("the array is written in order, and an empty one is []") {
  CHECK(boxproxy::inspect_array({}).dump() == "[]");
  const std::vector<InspectEndpoint> endpoints = read(json::parse(R"([{"host": "b.test"}, {"host": "a.test:8443"}])"));
  CHECK(boxproxy::inspect_array(endpoints).dump() ==
        R"([{"host":"b.test:443","mode":"enforce"},{"host":"a.test:8443","mode":"enforce"}])");
}

TEST_CASE("SPEC §19a's keys: method lists, case, get-bodies; read and written back") {
  const std::vector<InspectEndpoint> endpoints = read(json::parse(R"([
    {"host": "a.test", "rules": [{"method": ["GET", "head"], "path": "/x/**"}, {"method": ["POST"], "path": "/y"}],
     "deny": [{"method": ["delete", "PUT"], "path": "/x/k/**"}], "case": "insensitive", "get-bodies": true},
    {"host": "b.test", "case": "sensitive", "get-bodies": false}
  ])"));
  REQUIRE(endpoints.size() == 2);
  const InspectEndpoint& a = endpoints[0];
  CHECK((*a.rules)[0].methods == std::vector<std::string>{"GET", "HEAD"});
  CHECK((*a.rules)[1].methods == std::vector<std::string>{"POST"});
  CHECK(a.deny[0].methods == std::vector<std::string>{"DELETE", "PUT"});
  CHECK(a.path_case == PathCase::insensitive);
  CHECK(a.get_bodies);
  CHECK(endpoints[1].path_case == PathCase::sensitive);
  CHECK_FALSE(endpoints[1].get_bodies);
  CHECK(boxproxy::inspect_object(a).dump() ==
        R"({"host":"a.test:443","rules":[{"method":["GET","HEAD"],"path":"/x/**"},{"method":"POST","path":"/y"}],)"
        R"("deny":[{"method":["DELETE","PUT"],"path":"/x/k/**"}],"mode":"enforce","case":"insensitive",)"
        R"("get-bodies":true})");
  // The defaults are not written: an endpoint reads back the same.
  CHECK(boxproxy::inspect_object(endpoints[1]).dump() == R"({"host":"b.test:443","mode":"enforce"})");
  // "hint" (issue 37): read, and written back only when true.
  const std::vector<InspectEndpoint> hinted = read(json::parse(R"([{"host": "h.test", "hint": true}])"));
  CHECK(hinted[0].hint);
  CHECK(boxproxy::inspect_object(hinted[0]).dump() == R"({"host":"h.test:443","mode":"enforce","hint":true})");
  const std::vector<InspectEndpoint> again = read(json::parse(boxproxy::inspect_array(endpoints).dump()));
  CHECK(boxproxy::inspect_array(again).dump() == boxproxy::inspect_array(endpoints).dump());
}

TEST_CASE("SPEC §19a's errors: a credential on a wildcard, a bad method list, case, get-bodies") {
  const auto says = [](const char* text, const std::string& expected) {
    CAPTURE(text);
    CHECK(error_of(json::parse(text)) == kLabel + expected);
  };
  says(R"([{"host": "*.example.com", "inject": {"Authorization": "Bearer {k}"}}])",
       R"([0]: "*.example.com:443" is a wildcard endpoint and cannot carry "inject" (any name under it, one a )"
       R"(tenant of that domain registers included, would get the credential); name each host instead)");
  says(R"([{"host": "a.test"}, {"host": "*.example.com:8443", "secrets": ["k"]}])",
       R"([1]: "*.example.com:8443" is a wildcard endpoint and cannot carry "secrets" (any name under it, one a )"
       R"(tenant of that domain registers included, would get the credential); name each host instead)");
  says(R"([{"host": "a.test", "rules": [{"method": [], "path": "/"}]}])",
       R"([0].rules[0].method: "[]" is an empty list (name one method or more, or "*"))");
  says(R"([{"host": "a.test", "rules": [{"method": ["GET", "get"], "path": "/"}]}])",
       R"([0].rules[0].method: "[\"GET\",\"get\"]" names "get" twice)");
  says(R"([{"host": "a.test", "deny": [{"method": ["*", "GET"], "path": "/"}]}])",
       R"([0].deny[0].method: "[\"*\",\"GET\"]" holds "*" with other methods ("*" stands alone))");
  says(R"([{"host": "a.test", "rules": [{"method": ["GET", 1], "path": "/"}]}])",
       R"([0].rules[0].method[1]: "1" is not a JSON string)");
  says(R"([{"host": "a.test", "rules": [{"method": ["G ET"], "path": "/"}]}])",
       R"([0].rules[0].method: "[\"G ET\"]" "G ET" is not an HTTP method (a token such as GET or PROPFIND) nor *)");
  says(R"([{"host": "a.test", "case": "ignore"}])", R"([0].case: "ignore" is not "sensitive" or "insensitive")");
  says(R"([{"host": "a.test", "get-bodies": "yes"}])", R"([0].get-bodies: "\"yes\"" is not true or false)");
  says(R"([{"host": "a.test", "hint": 1}])", R"([0].hint: "1" is not true or false)");
}

TEST_CASE("SPEC §20's sign: read, written back, and its usage errors") {
  const std::vector<InspectEndpoint> endpoints = read(json::parse(R"([
    {"host": "s3.test", "sign": {"aws-sigv4": {"access_key_id": "{aws_key}", "secret_access_key": "{aws_secret}",
     "session_token": "{aws_token}", "regions": ["eu-west-1"], "services": ["s3"]}}},
    {"host": "ddb.test", "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}",
     "services": ["dynamodb", "sts"]}}}
  ])"));
  REQUIRE(endpoints.size() == 2);
  REQUIRE(endpoints[0].sign);
  CHECK(endpoints[0].sign->access_key_id == "aws_key");
  CHECK(endpoints[0].sign->secret_access_key == "aws_secret");
  CHECK(endpoints[0].sign->session_token == "aws_token");
  CHECK(endpoints[0].sign->regions == std::vector<std::string>{"eu-west-1"});
  CHECK(endpoints[1].sign->regions.empty());
  CHECK(endpoints[1].sign->services == std::vector<std::string>{"dynamodb", "sts"});
  CHECK(boxproxy::inspect_object(endpoints[1]).dump() ==
        R"({"host":"ddb.test:443","mode":"enforce","sign":{"aws-sigv4":{"access_key_id":"{k}",)"
        R"("secret_access_key":"{s}","services":["dynamodb","sts"]}}})");
  const std::vector<InspectEndpoint> again = read(json::parse(boxproxy::inspect_array(endpoints).dump()));
  CHECK(boxproxy::inspect_array(again).dump() == boxproxy::inspect_array(endpoints).dump());

  const auto says = [](const char* text, const std::string& expected) {
    CAPTURE(text);
    CHECK(error_of(json::parse(text)) == kLabel + expected);
  };
  says(R"([{"host": "a.test", "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}"}}}])",
       R"([0].sign.aws-sigv4: has no "services" ("services" names what may be signed for))");
  says(R"([{"host": "a.test", "sign": {"aws-sigv4": {"access_key_id": "k", "secret_access_key": "{s}", "services": ["s3"]}}}])",
       R"([0].sign.aws-sigv4.access_key_id: "k" is not a secret's name in braces ("{NAME}", NAME 1 to 32 of a-z, 0-9 and '_'))");
  says(R"([{"host": "a.test", "sign": {"aws-sigv4": {"access_key_id": "{K}", "secret_access_key": "{s}", "services": ["s3"]}}}])",
       R"([0].sign.aws-sigv4.access_key_id: "{K}" is not a secret's name in braces ("{NAME}", NAME 1 to 32 of a-z, 0-9 and '_'))");
  says(R"([{"host": "a.test", "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}", "services": []}}}])",
       R"([0].sign.aws-sigv4.services: "[]" is not a JSON array of names)");
  says(R"([{"host": "a.test", "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}", "services": ["S3"]}}}])",
       R"([0].sign.aws-sigv4.services[0]: "S3" is not 1 to 64 of a-z, 0-9 and '-')");
  says(R"([{"host": "a.test", "sign": {"aws-sigv5": {}}}])", R"([0].sign: "{\"aws-sigv5\":{}}" is not {"aws-sigv4": {...}})");
  says(R"([{"host": "*.amazonaws.com", "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}", "services": ["s3"]}}}])",
       R"([0]: "*.amazonaws.com:443" is a wildcard endpoint and cannot carry "sign" (any name under it, one a )"
       R"(tenant of that domain registers included, would get the credential); name each host instead)");
  says(R"([{"host": "a.test", "inject": {"authorization": "x {t}"}, "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}", "services": ["s3"]}}}])",
       R"([0]: "a.test:443" has "sign" and "inject" of "authorization"; the signature is the Authorization header, give one of them)");
  // The other headers the signer sets: an injected copy would go beside the signer's.
  says(R"([{"host": "a.test", "inject": {"X-Amz-Date": "{t}"}, "sign": {"aws-sigv4": {"access_key_id": "{k}", "secret_access_key": "{s}", "services": ["s3"]}}}])",
       R"([0]: "a.test:443" has "sign" and "inject" of "X-Amz-Date", which the signer sets itself; give one of them)");
}

TEST_CASE("report mode and \"ask\" do not go together: a denied request would go on unasked") {
  const auto says = [](const char* text, const std::string& expected) {
    CAPTURE(text);
    CHECK(error_of(json::parse(text)) == kLabel + expected);
  };
  says(R"([{"host": "a.test", "mode": "report", "ask": true}])",
       R"([0]: "a.test:443" is in report mode and asks ("ask"); a request its rules deny would go on unasked: give one of them)");
  says(R"([{"host": "a.test", "mode": "report", "rules": [{"method": "GET", "path": "/x", "ask": true}]}])",
       R"([0]: "a.test:443" is in report mode and asks ("ask"); a request its rules deny would go on unasked: give one of them)");
}

TEST_CASE("SPEC §20's \"ask\": on an endpoint and on a rule, read and written back; never on a deny entry") {
  const json config = json::parse(R"([
    {"host": "a.test", "rules": [{"method": "GET", "path": "/x/**", "ask": true}, {"method": "GET", "path": "/y", "ask": false}]},
    {"host": "b.test", "access": "read-only", "ask": true}
  ])");
  const std::vector<InspectEndpoint> endpoints = read(config);
  REQUIRE(endpoints.size() == 2);
  CHECK((*endpoints[0].rules)[0].ask);
  CHECK_FALSE((*endpoints[0].rules)[1].ask);
  CHECK_FALSE(endpoints[0].ask);
  CHECK(endpoints[1].ask);
  CHECK(asks_about_requests(endpoints[0]));
  CHECK(asks_about_requests(endpoints[1]));
  CHECK(boxproxy::inspect_object(endpoints[0]).dump() ==
        R"({"host":"a.test:443","rules":[{"method":"GET","path":"/x/**","ask":true},{"method":"GET","path":"/y"}],)"
        R"("mode":"enforce"})");
  CHECK(boxproxy::inspect_object(endpoints[1]).dump() ==
        R"({"host":"b.test:443","access":"read-only","mode":"enforce","ask":true})");
  CHECK(error_of(json::parse(R"([{"host": "a.test", "deny": [{"method": "GET", "path": "/", "ask": true}]}])")) ==
        kLabel + R"([0].deny[0].ask: is for "rules" (a deny entry is never asked about))");
  CHECK(error_of(json::parse(R"([{"host": "a.test", "rules": [{"method": "GET", "path": "/", "ask": 1}]}])")) ==
        kLabel + R"([0].rules[0].ask: "1" is not true or false)");
}
