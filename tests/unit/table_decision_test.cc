// SPDX-License-Identifier: Apache-2.0
// table/decision: SPEC §5 steps 2 to 4, driven the way serve and check drive it, over every form
// the spec names: literals, fixed answers, lookups, each refusal class, repeats, several answers
// with one refused, this-host, --permit and --deny. Each row also says what the decision asked its
// driver for, so the laziness that keeps the interface list off the hot path is pinned too.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "table/decision.h"

using namespace boxproxy;

namespace {

IpAddress ip(std::string_view text) {
  auto parsed = parse_ip_literal(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
}

std::vector<IpAddress> ips(const std::vector<std::string>& texts) {
  std::vector<IpAddress> out;
  for (const auto& text : texts) out.push_back(ip(text));
  return out;
}

// A policy from serve-like options: "allow=LIST", "permit=CIDR", "deny=CIDR", "resolve=NAME=ADDRS".
// --resolve answers are taken as written, repeats and all: the decision itself drops repeats.
Policy policy_of(const std::vector<std::string>& options) {
  Policy policy;
  for (const std::string& option : options) {
    const auto equals = option.find('=');
    const std::string name = option.substr(0, equals);
    const std::string value = option.substr(equals + 1);
    if (name == "allow") {
      if (!policy.allow) policy.allow.emplace();
      for (const auto item : split_host_items(value)) REQUIRE_FALSE(policy.allow->add(item).has_value());
    } else if (name == "permit" || name == "deny") {
      auto range = parse_cidr(value);
      REQUIRE(std::holds_alternative<Cidr>(range));
      (name == "permit" ? policy.rule.permit : policy.rule.deny).push_back(std::get<Cidr>(range));
    } else {
      REQUIRE(name == "resolve");
      auto entry = parse_resolve_entry(value);
      REQUIRE(std::holds_alternative<ResolveEntry>(entry));
      auto& answers = policy.fixed_answers[std::get<ResolveEntry>(entry).name];
      for (const auto& a : std::get<ResolveEntry>(entry).addresses) answers.push_back(a);
    }
  }
  return policy;
}

// What the decision's driver can get: DNS answers by name (a name not here does not resolve) and
// the host's own addresses.
struct World {
  std::map<std::string, std::vector<std::string>, std::less<>> dns;
  std::vector<std::string> local;
};

struct Outcome {
  std::string asked;    // what the decision asked for, in order: "lookup local"
  std::string verdict;  // "dial ADDR..." or "refuse CLASS ADDR-or--"
  std::vector<std::string> lines;  // Detail::every_answer: "ADDR ok-or-CLASS" per answer
};

Outcome drive(const Policy& policy, std::string_view target_text, const World& world, Decision::Detail detail) {
  const TargetResult parsed = parse_check_target(target_text);
  REQUIRE_MESSAGE(std::holds_alternative<Target>(parsed), target_text);
  const Target& target = std::get<Target>(parsed);
  Outcome out;
  Decision decision(detail);
  Decision::Step step = decision.start(policy, target);
  // Each step may be asked for at most once; a bounded loop catches a decision that asks again.
  for (int turn = 0; turn < 4; ++turn) {
    if (step == Decision::Step::need_lookup) {
      out.asked += out.asked.empty() ? "lookup" : " lookup";
      const auto found = world.dns.find(target.host);
      step = decision.answers_found(found == world.dns.end() ? std::vector<IpAddress>{} : ips(found->second));
    } else if (step == Decision::Step::need_local_addresses) {
      out.asked += out.asked.empty() ? "local" : " local";
      const std::vector<IpAddress> local = ips(world.local);
      step = decision.local_addresses_read(local);
    } else {
      break;
    }
  }
  if (step == Decision::Step::dial) {
    out.verdict = "dial";
    for (const IpAddress& a : decision.answers()) out.verdict += " " + a.to_string();
  } else {
    REQUIRE(step == Decision::Step::refuse);
    const IpAddress* refused = decision.refused_address();
    out.verdict = fmt::format("refuse {} {}", log_class(decision.reason()), refused ? refused->to_string() : "-");
  }
  if (detail == Decision::Detail::every_answer) {
    for (std::size_t i = 0; i < decision.answers().size(); ++i) {
      const auto verdict = decision.verdict(i);
      out.lines.push_back(fmt::format("{} {}", decision.answers()[i].to_string(), verdict ? log_class(*verdict) : "ok"));
    }
  }
  return out;
}

struct Row {
  const char* what;
  std::vector<std::string> options;
  const char* target;
  const char* asked;    // by serve's decision (Detail::first_refusal)
  const char* verdict;
};

// The host holds 9.9.9.9 and 2606:4700::9 (public, so only this-host can refuse them).
const World kWorld{
    {
        {"a.test", {"1.1.1.1", "2606:4700::1111"}},
        {"dup.test", {"1.1.1.1", "1.1.1.1", "2606:4700::1111", "1.1.1.1"}},
        {"mixed.test", {"1.1.1.1", "127.0.0.1"}},
        {"private-first.test", {"10.0.0.1", "9.9.9.9"}},
        {"self.test", {"9.9.9.9"}},
        {"self-later.test", {"1.1.1.1", "9.9.9.9", "10.0.0.1"}},
        {"a.box.test", {"1.1.1.1"}},
        {"doc.test", {"192.0.2.1"}},
    },
    {"127.0.0.1", "9.9.9.9", "2606:4700::9", "fe80::1"},
};

const std::vector<Row> kRows = {
    // Literals: an IP literal is its bytes, in any form.
    {"public v4 literal", {}, "1.1.1.1", "local", "dial 1.1.1.1"},
    {"public v6 literal", {}, "[2606:4700::1111]:8443", "local", "dial 2606:4700::1111"},
    {"inet_aton shorthand", {}, "0x7f.1", "", "refuse loopback 127.0.0.1"},
    {"one-number form", {}, "2130706433:8080", "", "refuse loopback 127.0.0.1"},
    {"mapped private", {}, "[::ffff:a00:1]", "", "refuse private ::ffff:10.0.0.1"},
    {"NAT64 private", {}, "[64:ff9b::a00:1]", "", "refuse private 64:ff9b::a00:1"},
    {"6to4 private", {}, "[2002:a00:1::]", "", "refuse private 2002:a00:1::"},
    {"zoned link-local", {}, "[fe80::1%25eth0]", "", "refuse link-local fe80::1"},
    {"IPv4-compatible", {}, "[::a00:1]", "", "refuse reserved ::10.0.0.1"},
    // Each class of the table.
    {"unspecified", {}, "0.0.0.0", "", "refuse unspecified 0.0.0.0"},
    {"unspecified v6", {}, "[::]", "", "refuse unspecified ::"},
    {"loopback v6", {}, "::1", "", "refuse loopback ::1"},
    {"private", {}, "192.168.1.1", "", "refuse private 192.168.1.1"},
    {"link-local (the cloud metadata address)", {}, "169.254.169.254", "", "refuse link-local 169.254.169.254"},
    {"metadata alibaba", {}, "100.100.100.200", "", "refuse metadata 100.100.100.200"},
    {"metadata v6", {}, "[fd00:ec2::254]", "", "refuse metadata fd00:ec2::254"},
    {"cgnat", {}, "100.64.0.1", "", "refuse cgnat 100.64.0.1"},
    {"benchmarking", {}, "198.18.0.1", "", "refuse benchmarking 198.18.0.1"},
    {"reserved documentation", {}, "192.0.2.1", "", "refuse reserved 192.0.2.1"},
    {"reserved v6 documentation", {}, "2001:db8::1", "", "refuse reserved 2001:db8::1"},
    {"multicast", {}, "224.0.0.1", "", "refuse multicast 224.0.0.1"},
    {"broadcast", {}, "255.255.255.255", "", "refuse broadcast 255.255.255.255"},
    {"outside 2000::/3", {}, "[4000::1]", "", "refuse reserved 4000::1"},
    // This-host: the host's own addresses, read only when they can matter.
    {"this-host v4", {}, "9.9.9.9", "local", "refuse this-host 9.9.9.9"},
    {"this-host v6", {}, "[2606:4700::9]", "local", "refuse this-host 2606:4700::9"},
    {"this-host inside a mapped address", {}, "[::ffff:9.9.9.9]", "local", "refuse this-host ::ffff:9.9.9.9"},
    {"this-host by a lookup", {}, "self.test", "lookup local", "refuse this-host 9.9.9.9"},
    {"this-host before a later refusal", {}, "self-later.test", "lookup local", "refuse this-host 9.9.9.9"},
    // --permit and --deny.
    {"permit lets a private range through", {"permit=10.0.0.0/8"}, "10.1.1.1", "", "dial 10.1.1.1"},
    {"permit: the tests' and the bench's origin", {"permit=127.0.0.2/32"}, "127.0.0.2:7", "", "dial 127.0.0.2"},
    {"permit is final: never this-host", {"permit=9.9.9.9/32"}, "9.9.9.9", "", "dial 9.9.9.9"},
    {"permit through a mapped address", {"permit=10.0.0.0/8"}, "[::ffff:10.1.1.1]", "local", "dial ::ffff:10.1.1.1"},
    {"deny", {"deny=1.1.1.0/24"}, "1.1.1.1", "", "refuse denied 1.1.1.1"},
    {"deny before permit", {"permit=1.1.1.1", "deny=1.1.1.0/24"}, "1.1.1.1", "", "refuse denied 1.1.1.1"},
    {"deny through mapped", {"deny=1.1.1.0/24"}, "[::ffff:1.1.1.1]", "", "refuse denied ::ffff:1.1.1.1"},
    {"deny through 6to4", {"deny=1.1.1.0/24"}, "2002:101:101::1", "", "refuse denied 2002:101:101::1"},
    {"deny one answer of several", {"deny=2606:4700::/32"}, "a.test", "lookup local", "refuse denied 2606:4700::1111"},
    // Fixed answers (--resolve): no lookup, matched without case or trailing dot, repeats dropped.
    {"fixed answers", {"resolve=x.test=1.1.1.1,2606:4700::1111"}, "x.test", "local", "dial 1.1.1.1 2606:4700::1111"},
    {"fixed answers repeated", {"resolve=x.test=1.1.1.1,1.1.1.1"}, "x.test", "local", "dial 1.1.1.1"},
    {"fixed answers repeated by two options", {"resolve=x.test=1.1.1.1", "resolve=x.test=2606:4700::1111,1.1.1.1"},
     "x.test", "local", "dial 1.1.1.1 2606:4700::1111"},
    {"fixed answers: case and trailing dot", {"resolve=x.test=1.1.1.1"}, "X.Test.:8443", "local", "dial 1.1.1.1"},
    {"fixed answer refused", {"resolve=x.test=[::1]"}, "x.test", "", "refuse loopback ::1"},
    {"fixed: the first refused answer names the class", {"resolve=x.test=10.1.2.3,127.0.0.1"}, "x.test", "",
     "refuse private 10.1.2.3"},
    {"fixed: a refused first answer needs no interface list", {"resolve=x.test=10.1.2.3,1.1.1.1"}, "x.test", "",
     "refuse private 10.1.2.3"},
    {"fixed: a fine answer before a refused one might be this-host", {"resolve=x.test=1.1.1.1,10.1.2.3"}, "x.test",
     "local", "refuse private 10.1.2.3"},
    {"fixed: this-host before a refused one", {"resolve=x.test=9.9.9.9,10.1.2.3"}, "x.test", "local",
     "refuse this-host 9.9.9.9"},
    {"fixed answers for another name", {"resolve=y.test=1.1.1.1"}, "a.test", "lookup local",
     "dial 1.1.1.1 2606:4700::1111"},
    // Lookups.
    {"lookup", {}, "a.test", "lookup local", "dial 1.1.1.1 2606:4700::1111"},
    {"lookup with repeats", {}, "dup.test", "lookup local", "dial 1.1.1.1 2606:4700::1111"},
    {"lookup: no answer", {}, "missing.test", "lookup", "refuse name not resolved -"},
    {"lookup: one answer refused", {}, "mixed.test", "lookup local", "refuse loopback 127.0.0.1"},
    {"lookup: refused first answer", {}, "private-first.test", "lookup", "refuse private 10.0.0.1"},
    {"lookup: a documentation answer", {}, "doc.test", "lookup", "refuse reserved 192.0.2.1"},
    // The host list: before any lookup, literals never listed, ports.
    {"listed name", {"allow=*.box.test"}, "a.box.test", "lookup local", "dial 1.1.1.1"},
    {"listed name, fixed answer refused", {"allow=*.box.test", "resolve=b.box.test=127.0.0.1"}, "b.box.test", "",
     "refuse loopback 127.0.0.1"},
    {"wildcard never the name itself", {"allow=*.box.test", "resolve=box.test=1.1.1.1"}, "box.test", "",
     "refuse not-listed -"},
    {"name off the list is never looked up", {"allow=*.box.test"}, "a.test", "", "refuse not-listed -"},
    {"port not open", {"allow=*.box.test"}, "a.box.test:8080", "", "refuse not-listed -"},
    {"listed port", {"allow=a.box.test:8080"}, "a.box.test:8080", "lookup local", "dial 1.1.1.1"},
    {"literal never listed", {"allow=*.box.test"}, "1.1.1.1", "", "refuse not-listed -"},
    {"v6 literal never listed", {"allow=*.box.test"}, "[2606:4700::1111]", "", "refuse not-listed -"},
    {"empty list refuses every name", {"allow="}, "a.test", "", "refuse not-listed -"},
};

}  // namespace

TEST_CASE("Decision: every form of SPEC §5, as serve drives it") {
  for (const Row& row : kRows) {
    const std::string what = row.what;
    CAPTURE(what);
    const Policy policy = policy_of(row.options);
    const Outcome out = drive(policy, row.target, kWorld, Decision::Detail::first_refusal);
    CHECK(out.asked == row.asked);
    CHECK(out.verdict == row.verdict);
  }
}

TEST_CASE("Decision: check's every_answer reaches the same verdict as serve") {
  for (const Row& row : kRows) {
    const std::string what = row.what;
    CAPTURE(what);
    const Policy policy = policy_of(row.options);
    const Outcome serve = drive(policy, row.target, kWorld, Decision::Detail::first_refusal);
    const Outcome check = drive(policy, row.target, kWorld, Decision::Detail::every_answer);
    CHECK(check.verdict == serve.verdict);
    // Every answer has a line, and a target is allowed exactly when it has lines and all are ok.
    bool all_ok = !check.lines.empty();
    for (const auto& line : check.lines) all_ok = all_ok && line.ends_with(" ok");
    CHECK(all_ok == serve.verdict.starts_with("dial"));
  }
}

TEST_CASE("Decision: every_answer judges and prints each answer, this-host after a refusal too") {
  const Policy none;
  struct Case {
    const char* target;
    std::vector<std::string> options;
    std::vector<std::string> lines;
  };
  const std::vector<Case> cases = {
      {"private-first.test", {}, {"10.0.0.1 private", "9.9.9.9 this-host"}},
      {"dup.test", {}, {"1.1.1.1 ok", "2606:4700::1111 ok"}},
      {"x.test", {"resolve=x.test=10.1.2.3,1.1.1.1,10.1.2.3"}, {"10.1.2.3 private", "1.1.1.1 ok"}},
      {"mixed.test", {"deny=1.1.1.1"}, {"1.1.1.1 denied", "127.0.0.1 loopback"}},
      {"1.1.1.1", {}, {"1.1.1.1 ok"}},
      {"missing.test", {}, {}},
      {"a.test", {"allow=b.test"}, {}},
  };
  for (const Case& c : cases) {
    const std::string what = c.target;
    CAPTURE(what);
    const Policy policy = policy_of(c.options);
    CHECK(drive(policy, c.target, kWorld, Decision::Detail::every_answer).lines == c.lines);
  }
}

TEST_CASE("Decision: what a refusal says") {
  Decision decision;
  const Policy listed = policy_of({"allow=*.box.test"});
  const auto target = [](std::string_view text) { return std::get<Target>(parse_check_target(text)); };

  REQUIRE(decision.start(listed, target("a.box.test:8080")) == Decision::Step::refuse);
  CHECK(decision.reason() == Reason::not_listed);
  CHECK(decision.not_listed_match() == HostList::Match::port_not_open);
  CHECK(decision.refused_address() == nullptr);
  CHECK(decision.answers().empty());

  REQUIRE(decision.start(listed, target("other.test")) == Decision::Step::refuse);
  CHECK(decision.not_listed_match() == HostList::Match::not_listed);

  // The zone of a literal is kept for the dial (it picks the interface), though it judges nothing.
  const Policy permit_link_local = policy_of({"permit=fe80::/10"});
  REQUIRE(decision.start(permit_link_local, target("[fe80::1%25eth0]")) == Decision::Step::dial);
  REQUIRE(decision.answers().size() == 1);
  CHECK(decision.answers()[0].zone == "eth0");
}

TEST_CASE("Decision: a new start forgets the last decision; feeding out of turn changes nothing") {
  const Policy policy;
  Decision decision;
  const Target name = std::get<Target>(parse_check_target("a.test"));
  const Target loopback = std::get<Target>(parse_check_target("127.0.0.1"));

  REQUIRE(decision.start(policy, loopback) == Decision::Step::refuse);
  REQUIRE(decision.refused_address() != nullptr);
  // Not asked for a lookup: answers are ignored, the refusal stands.
  CHECK(decision.answers_found(ips({"1.1.1.1"})) == Decision::Step::refuse);
  CHECK(decision.local_addresses_read({}) == Decision::Step::refuse);
  CHECK(decision.reason() == Reason::loopback);

  // Reused (as a keep-alive connection does for its next request).
  REQUIRE(decision.start(policy, name) == Decision::Step::need_lookup);
  CHECK(decision.refused_address() == nullptr);
  CHECK(decision.local_addresses_read({}) == Decision::Step::need_lookup);
  REQUIRE(decision.answers_found(ips({"1.1.1.1"})) == Decision::Step::need_local_addresses);
  REQUIRE(decision.local_addresses_read({}) == Decision::Step::dial);
  REQUIRE(decision.answers().size() == 1);
  CHECK(decision.answers()[0] == ip("1.1.1.1"));
}

TEST_CASE("Decision: the ask step (SPEC §15): names off the list only, and the address rule after approval") {
  const Policy policy = policy_of({"allow=listed.test,*.box.test", "resolve=asked.test=1.1.1.1",
                                   "resolve=private.test=10.0.0.1"});
  const auto target = [](std::string_view text) { return std::get<Target>(parse_check_target(text)); };
  Decision decision;

  // Asking off (check, or serve without --ask): refused at once, as ever.
  CHECK(decision.start(policy, target("asked.test")) == Decision::Step::refuse);
  CHECK(decision.reason() == Reason::not_listed);

  // A name not listed, and a listed name on a port its entry does not open: asked.
  const auto on = Decision::Asking::on;
  CHECK(decision.start(policy, target("asked.test"), on) == Decision::Step::ask);
  CHECK(decision.start(policy, target("a.box.test:8080"), on) == Decision::Step::ask);
  CHECK(decision.not_listed_match() == HostList::Match::port_not_open);
  // Never an IP literal, in any form; never a listed name.
  for (const char* literal : {"10.0.0.1", "0x7f.1", "2130706433", "[::1]:443", "1.1.1.1:443"}) {
    CAPTURE(literal);
    CHECK(decision.start(policy, target(literal), on) == Decision::Step::refuse);
    CHECK(decision.reason() == Reason::not_listed);
  }
  CHECK(decision.start(policy, target("listed.test"), on) == Decision::Step::need_lookup);

  // Approved: steps 3 and 4 as for a listed name.
  REQUIRE(decision.start(policy, target("asked.test"), on) == Decision::Step::ask);
  REQUIRE(decision.asked(true, target("asked.test")) == Decision::Step::need_local_addresses);
  REQUIRE(decision.local_addresses_read({}) == Decision::Step::dial);
  CHECK(decision.answers()[0] == ip("1.1.1.1"));
  REQUIRE(decision.start(policy, target("private.test"), on) == Decision::Step::ask);
  REQUIRE(decision.asked(true, target("private.test")) == Decision::Step::refuse);
  CHECK(decision.reason() == Reason::private_range);
  REQUIRE(decision.start(policy, target("nowhere.test"), on) == Decision::Step::ask);
  CHECK(decision.asked(true, target("nowhere.test")) == Decision::Step::need_lookup);

  // Denied (or no answer): not-listed, with how the list refused it.
  REQUIRE(decision.start(policy, target("a.box.test:8080"), on) == Decision::Step::ask);
  REQUIRE(decision.asked(false, target("a.box.test:8080")) == Decision::Step::refuse);
  CHECK(decision.reason() == Reason::not_listed);
  CHECK(decision.not_listed_match() == HostList::Match::port_not_open);

  // A verdict out of turn changes nothing.
  REQUIRE(decision.start(policy, target("listed.test"), on) == Decision::Step::need_lookup);
  CHECK(decision.asked(true, target("listed.test")) == Decision::Step::need_lookup);
  REQUIRE(decision.start(policy, target("10.0.0.1"), on) == Decision::Step::refuse);
  CHECK(decision.asked(true, target("10.0.0.1")) == Decision::Step::refuse);
}
