// SPDX-License-Identifier: Apache-2.0
// table/cidr: operator ranges (--permit, --deny) and the containment the table relies on.
#include <string>

#include <doctest/doctest.h>

#include "table/cidr.h"

using namespace boxproxy;

namespace {

Cidr cidr(std::string_view text) {
  auto parsed = parse_cidr(text);
  REQUIRE_MESSAGE(std::holds_alternative<Cidr>(parsed), text);
  return std::get<Cidr>(parsed);
}

std::string error_of(std::string_view text) {
  auto parsed = parse_cidr(text);
  REQUIRE_MESSAGE(std::holds_alternative<std::string>(parsed), text);
  return std::get<std::string>(parsed);
}

IpAddress ip(std::string_view text) {
  auto parsed = parse_ip_literal(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
}

}  // namespace

TEST_CASE("parse_cidr: ranges and single addresses") {
  struct Row {
    const char* text;
    const char* canonical;
  };
  const Row rows[] = {
      {"10.0.0.0/8", "10.0.0.0/8"},
      {"10.1.2.3", "10.1.2.3/32"},
      {"0.0.0.0/0", "0.0.0.0/0"},
      {"192.168.1.0/24", "192.168.1.0/24"},
      {"10.0.0.0/08", "10.0.0.0/8"},
      {"255.255.255.255/32", "255.255.255.255/32"},
      {"fc00::/7", "fc00::/7"},
      {"::1", "::1/128"},
      {"::/0", "::/0"},
      {"2001:DB8::/32", "2001:db8::/32"},
      {"::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104"},
      {"2001:db8::1/128", "2001:db8::1/128"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    CHECK(cidr(row.text).to_string() == row.canonical);
  }
  CHECK(cidr("10.0.0.0/8").network.is_v4());
  CHECK(cidr("10.0.0.0/8").prefix == 8);
  CHECK(cidr("fc00::/7").prefix == 7);
}

TEST_CASE("parse_cidr: errors name the text and say what is wrong") {
  CHECK(error_of("10.0.0.0/33").find("10.0.0.0/33") == 0);
  CHECK(error_of("10.0.0.0/33").find("0 to 32") != std::string::npos);
  CHECK(error_of("::/129").find("0 to 128") != std::string::npos);
  CHECK(error_of("10.0.0.0/").find("prefix length") != std::string::npos);
  CHECK(error_of("10.0.0.0/-1").find("prefix length") != std::string::npos);
  CHECK(error_of("10.0.0.0/+8").find("prefix length") != std::string::npos);
  CHECK(error_of("10.0.0.0/8/8").find("prefix length") != std::string::npos);
  CHECK(error_of("10.0.0.0/0008").find("prefix length") != std::string::npos);
  CHECK(error_of("10.0.0.0/ 8").find("prefix length") != std::string::npos);
  // The address is strict: no inet_aton shorthand, no leading zeros, no zone, no brackets, no name.
  for (const char* text : {"10/8", "10.1/16", "0x0a.0.0.0/8", "010.0.0.0/8", "10.0.0.0.0/8", "fe80::%eth0/64",
                           "[::1]/128", "example.com/8", "", "/8", " 10.0.0.0/8", "10.0.0.0/8 ", "256.0.0.0/8"}) {
    CAPTURE(text);
    const std::string message = error_of(text);
    CHECK(message.find(text) == 0);
  }
  CHECK(error_of("fe80::1%eth0").find("zone") != std::string::npos);
  // Host bits set: which network was probably meant, never a guess made silently.
  const std::string host_bits = error_of("10.1.2.3/8");
  CHECK(host_bits.find("host bits") != std::string::npos);
  CHECK(host_bits.find("10.0.0.0/8") != std::string::npos);
  CHECK(error_of("fc00::1/7").find("fc00::/7") != std::string::npos);
  CHECK(error_of("192.168.1.1/31").find("192.168.1.0/31") != std::string::npos);
}

TEST_CASE("parse_cidr: an embedded NUL is not the end of the address (fuzz finding)") {
  // inet_pton stops at the NUL: these were read as fe80::1/128 and 10.0.0.0/8.
  for (const std::string& text : {std::string("fe80::1\0fe80\0\0" "4", 15), std::string("10.0.0.0\0x/8", 12),
                                 std::string("10.0.0.0\0", 9)}) {
    CAPTURE(text);
    CHECK(std::holds_alternative<std::string>(parse_cidr(text)));
  }
}

TEST_CASE("Cidr::contains: prefix bits, family, edges") {
  const Cidr ten = cidr("10.0.0.0/8");
  CHECK(ten.contains(ip("10.0.0.0")));
  CHECK(ten.contains(ip("10.255.255.255")));
  CHECK(ten.contains(ip("0x0a.1")));
  CHECK_FALSE(ten.contains(ip("9.255.255.255")));
  CHECK_FALSE(ten.contains(ip("11.0.0.0")));
  CHECK_FALSE(ten.contains(ip("::ffff:10.0.0.1")));  // an IPv4 range never holds an IPv6 address
  CHECK_FALSE(ten.contains(ip("::a00:1")));

  const Cidr odd = cidr("172.16.0.0/12");
  CHECK(odd.contains(ip("172.31.255.255")));
  CHECK_FALSE(odd.contains(ip("172.32.0.0")));
  CHECK_FALSE(odd.contains(ip("172.15.255.255")));

  const Cidr all4 = cidr("0.0.0.0/0");
  CHECK(all4.contains(ip("255.255.255.255")));
  CHECK_FALSE(all4.contains(ip("::")));
  const Cidr all6 = cidr("::/0");
  CHECK(all6.contains(ip("ffff::1")));
  CHECK_FALSE(all6.contains(ip("0.0.0.0")));

  const Cidr ula = cidr("fc00::/7");
  CHECK(ula.contains(ip("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
  CHECK_FALSE(ula.contains(ip("fe00::")));
  CHECK_FALSE(ula.contains(ip("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));

  const Cidr one = cidr("2001:db8::1");
  CHECK(one.contains(ip("2001:db8::1")));
  CHECK(one.contains(ip("fe80::1%eth0")) == false);
  CHECK_FALSE(one.contains(ip("2001:db8::2")));
  CHECK(cidr("fe80::1").contains(ip("fe80::1%eth0")));  // the zone does not change the bytes

  // Every prefix length of IPv4: the range holds its last address and not the next one.
  for (unsigned prefix = 1; prefix <= 32; ++prefix) {
    CAPTURE(prefix);
    Cidr c;
    c.network = IpAddress::v4(0x80000000U >> (prefix - 1));  // the lowest network bit set
    c.prefix = static_cast<std::uint8_t>(prefix);
    const std::uint32_t size = prefix == 32 ? 1 : (1U << (32 - prefix));
    const std::uint32_t first = c.network.v4_value();
    CHECK(c.contains(IpAddress::v4(first)));
    CHECK(c.contains(IpAddress::v4(first + size - 1)));
    CHECK_FALSE(c.contains(IpAddress::v4(first - 1)));
    if (prefix > 1) CHECK_FALSE(c.contains(IpAddress::v4(first + size)));
  }
}
