// SPDX-License-Identifier: Apache-2.0
// table/address_table: the rows of SPEC §5 step 4, pinned in order, and every row's edges.
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "table/address_table.h"

using namespace boxproxy;

namespace {

std::string describe(const TableRow& row) {
  if (row.action == TableRow::Action::embedded_v4) {
    return fmt::format("{} embedded@{}", row.range.to_string(), row.v4_offset);
  }
  return fmt::format("{} {}", row.range.to_string(), log_class(row.refusal));
}

// The address `delta` away from `a` (as a 128-bit or 32-bit number), wrapping.
IpAddress step(IpAddress a, int delta) {
  const std::size_t n = a.size();
  if (delta > 0) {
    for (std::size_t i = n; i-- > 0;) {
      if (++a.bytes[i] != 0) break;
    }
  } else {
    for (std::size_t i = n; i-- > 0;) {
      if (a.bytes[i]-- != 0) break;
    }
  }
  return a;
}

// The last address of a range: every host bit set.
IpAddress last_of(const Cidr& c) {
  IpAddress a = c.network;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const unsigned bit = static_cast<unsigned>(i) * 8;
    if (c.prefix >= bit + 8) continue;
    const unsigned keep = c.prefix > bit ? c.prefix - bit : 0;
    a.bytes[i] = static_cast<std::uint8_t>(a.bytes[i] | (0xffU >> keep));
  }
  return a;
}

}  // namespace

TEST_CASE("no drift: the table's ranges, actions and classes, in the spec's order") {
  const std::vector<std::string> expected = {
      "0.0.0.0/8 unspecified",
      "127.0.0.0/8 loopback",
      "10.0.0.0/8 private",
      "172.16.0.0/12 private",
      "192.168.0.0/16 private",
      "192.0.0.0/24 private",
      "100.100.100.200/32 metadata",
      "100.64.0.0/10 cgnat",
      "168.63.129.16/32 metadata",
      "169.254.0.0/16 link-local",
      "198.18.0.0/15 benchmarking",
      "192.0.2.0/24 reserved",
      "198.51.100.0/24 reserved",
      "203.0.113.0/24 reserved",
      "192.88.99.0/24 reserved",
      "224.0.0.0/4 multicast",
      "255.255.255.255/32 broadcast",
      "240.0.0.0/4 reserved",
      "::1/128 loopback",
      "::/128 unspecified",
      "::ffff:0.0.0.0/96 embedded@12",
      "64:ff9b::/96 embedded@12",
      "64:ff9b:1::/48 private",
      "2002::/16 embedded@2",
      "2001::/32 reserved",
      "2001:db8::/32 reserved",
      "fd00:ec2::/32 metadata",
      "fc00::/7 private",
      "fe80::/10 link-local",
      "ff00::/8 multicast",
      "2001:2::/48 benchmarking",
      "2001:10::/28 reserved",
      "2001:20::/28 reserved",
      "3fff::/20 reserved",
      "5f00::/16 reserved",
  };
  const auto table = address_table();
  REQUIRE(table.size() == expected.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    CAPTURE(i);
    CHECK(describe(table[i]) == expected[i]);
    // Network addresses have no host bits, and IPv4 rows hold only their four bytes.
    CHECK(table[i].range.network == Cidr{table[i].range.network, table[i].range.prefix}.network);
    CHECK(table[i].range.contains(table[i].range.network));
    if (table[i].range.network.is_v4()) CHECK(table[i].range.prefix <= 32);
  }
}

TEST_CASE("every row: holds its first and last address, not the ones just outside; first match decides") {
  const auto table = address_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    const TableRow& row = table[i];
    CAPTURE(describe(row));
    const IpAddress first = row.range.network;
    const IpAddress last = last_of(row.range);
    CHECK(row.range.contains(first));
    CHECK(row.range.contains(last));
    const IpAddress before = step(first, -1);
    const IpAddress after = step(last, +1);
    if (!(before == last)) CHECK_FALSE(row.range.contains(before));  // unless the range wraps
    if (!(after == first)) CHECK_FALSE(row.range.contains(after));

    // match_table gives the first row holding the address: this one unless an earlier row does.
    for (const IpAddress& inside : {first, last}) {
      const TableRow* expected = &row;
      for (std::size_t j = 0; j < i; ++j) {
        if (table[j].range.contains(inside)) {
          expected = &table[j];
          break;
        }
      }
      CHECK(match_table(inside) == expected);
    }
  }
}

TEST_CASE("rows inside wider rows come first") {
  const auto table = address_table();
  const auto index_of = [&](std::string_view text) {
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (table[i].range.to_string() == text) return i;
    }
    FAIL("no row " << text);
    return table.size();
  };
  CHECK(index_of("100.100.100.200/32") < index_of("100.64.0.0/10"));
  CHECK(index_of("255.255.255.255/32") < index_of("240.0.0.0/4"));
  CHECK(index_of("fd00:ec2::/32") < index_of("fc00::/7"));
  CHECK(match_table(*parse_ip_literal("100.100.100.200"))->refusal == Reason::metadata);
  CHECK(match_table(*parse_ip_literal("255.255.255.255"))->refusal == Reason::broadcast);
  CHECK(match_table(*parse_ip_literal("fd00:ec2::254"))->refusal == Reason::metadata);
  // 2001:2::/48 and 2001:db8::/32 lie outside 2001::/32 (whose second group is 0), so their rows
  // are reached.
  CHECK(match_table(*parse_ip_literal("2001:2::1"))->refusal == Reason::benchmarking);
  CHECK(match_table(*parse_ip_literal("2001:db8::1"))->range.to_string() == "2001:db8::/32");
  CHECK(match_table(*parse_ip_literal("2001:10::1"))->range.to_string() == "2001:10::/28");
}

TEST_CASE("public addresses match no row") {
  for (const char* text : {"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                           "172.15.255.255", "172.32.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
                           "2606:4700::1111", "2001:1::", "2001:4860::8888", "2003::", "2000::", "3fff:1000::"}) {
    CAPTURE(text);
    CHECK(match_table(*parse_ip_literal(text)) == nullptr);
  }
}
