// SPDX-License-Identifier: Apache-2.0
// table/policy: the host list before any lookup, --resolve, refusal words (the decision itself:
// table_decision_test.cc).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/policy.h"

using namespace boxproxy;

namespace {

Target target(std::string_view text) {
  auto parsed = parse_check_target(text);
  REQUIRE_MESSAGE(std::holds_alternative<Target>(parsed), text);
  return std::get<Target>(parsed);
}

IpAddress ip(std::string_view text) {
  auto parsed = parse_ip_literal(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
}

Policy with_list(std::initializer_list<const char*> entries) {
  Policy policy;
  policy.allow.emplace();
  for (const char* e : entries) REQUIRE_FALSE(policy.allow->add(e).has_value());
  return policy;
}

}  // namespace

TEST_CASE("check_host_list: no list lets everything go on") {
  const Policy policy;
  CHECK_FALSE(check_host_list(policy, target("example.com")).has_value());
  CHECK_FALSE(check_host_list(policy, target("10.0.0.1")).has_value());
}

TEST_CASE("check_host_list: IP literals in any form are never listed") {
  const Policy policy = with_list({"example.com"});
  for (const char* text : {"1.1.1.1", "0x7f.1", "2130706433", "[::1]", "[2606:4700::1111]:443", "127.1:80"}) {
    CAPTURE(text);
    CHECK(check_host_list(policy, target(text)) == HostList::Match::not_listed);
  }
}

TEST_CASE("check_host_list: names and ports") {
  const Policy policy = with_list({"*.example.com", "mirror.internal.test:8080"});
  CHECK(check_host_list(policy, target("example.com")) == HostList::Match::not_listed);
  CHECK_FALSE(check_host_list(policy, target("www.example.com")).has_value());
  CHECK_FALSE(check_host_list(policy, target("WWW.Example.com.:80")).has_value());
  CHECK(check_host_list(policy, target("www.example.com:8080")) == HostList::Match::port_not_open);
  CHECK_FALSE(check_host_list(policy, target("mirror.internal.test:8080")).has_value());
  CHECK(check_host_list(policy, target("mirror.internal.test")) == HostList::Match::port_not_open);
  // An empty list (--allow "") refuses every name: fail closed.
  const Policy empty = with_list({});
  CHECK(check_host_list(empty, target("example.com")) == HostList::Match::not_listed);
}

TEST_CASE("parse_resolve_entry and fixed_answers_for") {
  auto parsed = parse_resolve_entry("X.Test.=10.1.2.3,1.1.1.1,2606:4700::1111,[::1]");
  REQUIRE(std::holds_alternative<ResolveEntry>(parsed));
  const auto& entry = std::get<ResolveEntry>(parsed);
  CHECK(entry.name == "x.test");
  REQUIRE(entry.addresses.size() == 4);
  CHECK(entry.addresses[0] == ip("10.1.2.3"));
  CHECK(entry.addresses[1] == ip("1.1.1.1"));
  CHECK(entry.addresses[2] == ip("2606:4700::1111"));
  CHECK(entry.addresses[3] == ip("::1"));

  Policy policy;
  policy.fixed_answers[entry.name] = entry.addresses;
  REQUIRE(fixed_answers_for(policy, "x.test") != nullptr);
  CHECK(fixed_answers_for(policy, "X.TEST.") == fixed_answers_for(policy, "x.test"));
  CHECK(fixed_answers_for(policy, "y.test") == nullptr);
  CHECK(fixed_answers_for(policy, "test") == nullptr);

  // Errors name the value; addresses are strict.
  for (const char* bad : {"x.test", "x.test=", "=1.1.1.1", "x.test=1.1.1.1,", "x.test=,1.1.1.1", "x.test=127.1",
                          "x.test=0x7f.0.0.1", "x.test=010.0.0.1", "x.test=example.com", "x.test=fe80::1%eth0",
                          "x.test=1.1.1.1 ", "bad name=1.1.1.1", "1.2.3.4=1.1.1.1", "0x7f=1.1.1.1",
                          "x..test=1.1.1.1", "x.test=256.0.0.1"}) {
    CAPTURE(bad);
    auto result = parse_resolve_entry(bad);
    REQUIRE(std::holds_alternative<std::string>(result));
    CHECK(std::get<std::string>(result).find(bad) == 0);
  }
}

TEST_CASE("parse_resolve_entry: an embedded NUL is not the end of an address (fuzz finding)") {
  // inet_pton stops at the NUL: this was read as x.test=192.0.2.1.
  for (const std::string& text : {std::string("x.test=192.0.2.1\0junk", 21), std::string("x.test=::1\0", 11),
                                 std::string("x.test=[::1\0]", 13)}) {
    CAPTURE(text);
    CHECK(std::holds_alternative<std::string>(parse_resolve_entry(text)));
  }
}

TEST_CASE("not_listed_words (SPEC §6)") {
  using M = HostList::Match;
  CHECK(not_listed_words(target("example.com"), M::not_listed, "") == "example.com is not on this box's network list");
  CHECK(not_listed_words(target("10.0.0.1"), M::not_listed, "") ==
        "10.0.0.1 is an address, not a name on this box's network list");
  CHECK(not_listed_words(target("example.com:8080"), M::port_not_open, "") ==
        "example.com:8080 is not open on this box's network list");
  CHECK(not_listed_words(target("example.com"), M::not_listed, "ask the operator") ==
        "example.com is not on this box's network list: ask the operator");
  // Only printable ASCII comes out, whatever the hint holds.
  const std::string words = not_listed_words(target("example.com"), M::not_listed, "a\r\nb\x01\xff");
  for (const char c : words) CHECK((c >= 0x20 && c <= 0x7e));
  // A host that is not plain is not repeated back.
  Target odd;
  odd.host = "bad\r\nhost";
  odd.port = 443;
  CHECK(not_listed_words(odd, M::not_listed, "") == "egress refused: not-listed");
}
