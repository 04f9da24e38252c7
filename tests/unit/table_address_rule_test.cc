// SPDX-License-Identifier: Apache-2.0
// table/address_rule: --deny, --permit, the table, the 2000::/3 rule and this-host, in that order.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/address_rule.h"

using namespace boxproxy;

namespace {

IpAddress ip(std::string_view text) {
  auto parsed = parse_ip_literal(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
}

Cidr cidr(std::string_view text) {
  auto parsed = parse_cidr(text);
  REQUIRE_MESSAGE(std::holds_alternative<Cidr>(parsed), text);
  return std::get<Cidr>(parsed);
}

// "ok" or the log class.
std::string judge(const AddressRule& rule, std::string_view text, std::span<const IpAddress> local = {}) {
  const auto refusal = judge_address(rule, ip(text), local);
  return refusal ? std::string(log_class(*refusal)) : "ok";
}

struct Row {
  const char* address;
  const char* verdict;
};

}  // namespace

TEST_CASE("the table with no operator rule: inside every row, and just outside") {
  const Row rows[] = {
      // 0.0.0.0/8
      {"0.0.0.0", "unspecified"}, {"0.255.255.255", "unspecified"}, {"1.0.0.0", "ok"},
      // 127.0.0.0/8
      {"126.255.255.255", "ok"}, {"127.0.0.0", "loopback"}, {"127.255.255.255", "loopback"}, {"128.0.0.0", "ok"},
      // private
      {"9.255.255.255", "ok"}, {"10.0.0.0", "private"}, {"10.255.255.255", "private"}, {"11.0.0.0", "ok"},
      {"172.15.255.255", "ok"}, {"172.16.0.0", "private"}, {"172.31.255.255", "private"}, {"172.32.0.0", "ok"},
      {"192.167.255.255", "ok"}, {"192.168.0.0", "private"}, {"192.168.255.255", "private"},
      {"192.169.0.0", "ok"}, {"191.255.255.255", "ok"}, {"192.0.0.0", "private"}, {"192.0.0.255", "private"},
      {"192.0.1.0", "ok"},
      // metadata inside cgnat
      {"100.100.100.199", "cgnat"}, {"100.100.100.200", "metadata"}, {"100.100.100.201", "cgnat"},
      // cgnat
      {"100.63.255.255", "ok"}, {"100.64.0.0", "cgnat"}, {"100.127.255.255", "cgnat"}, {"100.128.0.0", "ok"},
      // Azure
      {"168.63.129.15", "ok"}, {"168.63.129.16", "metadata"}, {"168.63.129.17", "ok"},
      // link-local
      {"169.253.255.255", "ok"}, {"169.254.0.0", "link-local"}, {"169.254.169.254", "link-local"},
      {"169.254.255.255", "link-local"}, {"169.255.0.0", "ok"},
      // benchmarking
      {"198.17.255.255", "ok"}, {"198.18.0.0", "benchmarking"}, {"198.19.255.255", "benchmarking"},
      {"198.20.0.0", "ok"},
      // documentation and 6to4 relay anycast
      {"192.0.1.255", "ok"}, {"192.0.2.0", "reserved"}, {"192.0.2.255", "reserved"}, {"192.0.3.0", "ok"},
      {"198.51.99.255", "ok"}, {"198.51.100.0", "reserved"}, {"198.51.100.255", "reserved"},
      {"198.51.101.0", "ok"}, {"203.0.112.255", "ok"}, {"203.0.113.0", "reserved"},
      {"203.0.113.255", "reserved"}, {"203.0.114.0", "ok"}, {"192.88.98.255", "ok"}, {"192.88.99.0", "reserved"},
      {"192.88.99.255", "reserved"}, {"192.88.100.0", "ok"},
      // multicast, then 240/4 with broadcast first
      {"223.255.255.255", "ok"}, {"224.0.0.0", "multicast"}, {"239.255.255.255", "multicast"},
      {"240.0.0.0", "reserved"}, {"255.255.255.254", "reserved"}, {"255.255.255.255", "broadcast"},
      // IPv6 loopback and unspecified; what is next to them is outside 2000::/3
      {"::1", "loopback"}, {"::", "unspecified"}, {"::2", "reserved"},
      // mapped: judged by the IPv4
      {"::ffff:0.0.0.0", "unspecified"}, {"::ffff:1.1.1.1", "ok"}, {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:a00:1", "private"}, {"::ffff:169.254.169.254", "link-local"},
      {"::ffff:255.255.255.255", "broadcast"}, {"::fffe:ffff:ffff", "reserved"}, {"::1:0:0:0", "reserved"},
      // IPv4-compatible (deprecated): outside 2000::/3, never judged as the IPv4
      {"::a00:1", "reserved"}, {"::1.1.1.1", "reserved"},
      // NAT64
      {"64:ff9b::a00:1", "private"}, {"64:ff9b::101:101", "ok"}, {"64:ff9b::7f00:1", "loopback"},
      {"64:ff9b::ffff:ffff", "broadcast"}, {"64:ff9b::1:0:0", "reserved"},
      {"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      // local-use NAT64
      {"64:ff9b:1::", "private"}, {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "private"}, {"64:ff9b:2::", "reserved"},
      // 6to4
      {"2002:a00:1::", "private"}, {"2002:101:101::", "ok"}, {"2002:7f00:1::1", "loopback"},
      {"2002:a9fe:a9fe::", "link-local"}, {"2002::", "unspecified"},
      {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "broadcast"},
      {"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"2003::", "ok"},
      // Teredo
      {"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"2001::", "reserved"},
      {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"2001:1::", "ok"},
      // documentation
      {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"2001:db8::", "reserved"},
      {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"2001:db9::", "ok"},
      // EC2 metadata inside ULA
      {"fd00:ec1:ffff:ffff:ffff:ffff:ffff:ffff", "private"}, {"fd00:ec2::", "metadata"},
      {"fd00:ec2::254", "metadata"}, {"fd00:ec2:ffff:ffff:ffff:ffff:ffff:ffff", "metadata"},
      {"fd00:ec3::", "private"},
      // ULA
      {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"fc00::", "private"},
      {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"}, {"fe00::", "reserved"},
      // link-local
      {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"fe80::", "link-local"},
      {"fe80::1%eth0", "link-local"}, {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
      {"fec0::", "reserved"},
      // multicast
      {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"ff00::", "multicast"}, {"ff02::1", "multicast"},
      {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
      // benchmarking
      {"2001:1:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"2001:2::", "benchmarking"},
      {"2001:2:0:ffff:ffff:ffff:ffff:ffff", "benchmarking"}, {"2001:2:1::", "ok"},
      // 2001:10::/28 and ORCHIDv2 2001:20::/28
      {"2001:f:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"2001:10::", "reserved"},
      {"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"2001:20::", "reserved"},
      {"2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"2001:30::", "ok"},
      // documentation 3fff::/20
      {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"3fff::", "reserved"},
      {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"3fff:1000::", "ok"},
      // SRv6 5f00::/16, and the 2000::/3 rule around it
      {"5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"5f00::", "reserved"},
      {"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"5f01::", "reserved"},
      // 2000::/3 itself
      {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"}, {"2000::", "ok"},
      {"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ok"}, {"4000::", "reserved"},
      {"2606:4700::1111", "ok"}, {"1.1.1.1", "ok"}, {"8.8.8.8", "ok"},
  };
  const AddressRule rule;
  for (const Row& row : rows) {
    CAPTURE(row.address);
    CHECK(judge(rule, row.address) == row.verdict);
  }
}

TEST_CASE("--deny before --permit before the table") {
  AddressRule rule;
  rule.deny.push_back(cidr("1.1.1.0/24"));
  rule.deny.push_back(cidr("10.1.0.0/16"));
  rule.deny.push_back(cidr("2606:4700::/32"));
  rule.permit.push_back(cidr("10.0.0.0/8"));
  rule.permit.push_back(cidr("1.1.1.1"));
  rule.permit.push_back(cidr("fd12::/16"));
  CHECK(judge(rule, "1.1.1.1") == "denied");   // deny wins over a permit of the same address
  CHECK(judge(rule, "1.1.2.1") == "ok");
  CHECK(judge(rule, "10.1.2.3") == "denied");  // deny wins over a wider permit
  CHECK(judge(rule, "10.2.0.1") == "ok");      // permit lets through what the table refuses
  CHECK(judge(rule, "10.0x2.1") == "ok");
  CHECK(judge(rule, "172.16.0.1") == "private");
  CHECK(judge(rule, "2606:4700::1111") == "denied");
  CHECK(judge(rule, "fd12::1") == "ok");
  CHECK(judge(rule, "fd13::1") == "private");
  // A deny range can refuse what the table would refuse anyway: the operator's class is given.
  AddressRule deny_loopback;
  deny_loopback.deny.push_back(cidr("127.0.0.0/8"));
  CHECK(judge(deny_loopback, "127.0.0.1") == "denied");
}

TEST_CASE("an IPv4 inside an IPv6 address meets the same rule") {
  AddressRule rule;
  rule.deny.push_back(cidr("1.1.1.0/24"));
  rule.permit.push_back(cidr("10.0.0.0/8"));
  for (const char* text : {"::ffff:1.1.1.1", "64:ff9b::101:101", "2002:101:101::1"}) {
    CAPTURE(text);
    CHECK(judge(rule, text) == "denied");
  }
  for (const char* text : {"::ffff:10.1.1.1", "64:ff9b::a01:101", "2002:a01:101::"}) {
    CAPTURE(text);
    CHECK(judge(rule, text) == "ok");
  }
  CHECK(judge(rule, "::ffff:192.168.0.1") == "private");
  // An IPv6 deny range applies to the IPv6 address itself, before the IPv4 inside is looked at.
  AddressRule deny6;
  deny6.deny.push_back(cidr("::ffff:0:0/96"));
  CHECK(judge(deny6, "::ffff:1.1.1.1") == "denied");
  // An IPv4 permit does not reach a bare IPv4-compatible address (outside 2000::/3).
  CHECK(judge(rule, "::a01:101") == "reserved");
}

TEST_CASE("this-host: the host's own addresses, after everything else") {
  const std::vector<IpAddress> local = {ip("203.0.114.7"), ip("2606:4700::7"), ip("127.0.0.1"), ip("fe80::7")};
  const AddressRule rule;
  CHECK(judge(rule, "203.0.114.7", local) == "this-host");
  CHECK(judge(rule, "203.0.114.8", local) == "ok");
  CHECK(judge(rule, "2606:4700::7", local) == "this-host");
  CHECK(judge(rule, "127.0.0.1", local) == "loopback");         // the table speaks first
  CHECK(judge(rule, "fe80::7%eth0", local) == "link-local");
  CHECK(judge(rule, "::ffff:203.0.114.7", local) == "this-host");  // by the IPv4 inside
  CHECK(judge(rule, "2002:cb00:7207::", local) == "this-host");
  CHECK(judge(rule, "64:ff9b::cb00:7207", local) == "this-host");
  // The IPv4 inside is fine, but the host holds the IPv6 address itself.
  const std::vector<IpAddress> local6 = {ip("2002:101:101::1")};
  CHECK(judge(rule, "2002:101:101::1", local6) == "this-host");
  CHECK(judge(rule, "2002:101:101::2", local6) == "ok");
  // A family never equals the other: 1.1.1.1 is not ::ffff:1.1.1.1's host by bytes alone.
  const std::vector<IpAddress> local_mapped = {ip("::ffff:1.1.1.1")};
  CHECK(judge(rule, "1.1.1.1", local_mapped) == "ok");
  // --deny still comes first; --permit lets an operator reach a service on this host.
  AddressRule deny;
  deny.deny.push_back(cidr("203.0.114.0/24"));
  CHECK(judge(deny, "203.0.114.7", local) == "denied");
  AddressRule permit;
  permit.permit.push_back(cidr("203.0.114.7"));
  CHECK(judge(permit, "203.0.114.7", local) == "ok");
}
