// SPDX-License-Identifier: Apache-2.0
// table/address: every IPv4 form inet_aton reads and nothing after it; IPv6 with and without
// zones; inet_aton and inet_pton as oracles over many generated forms.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "table/address.h"

using boxproxy::IpAddress;
using boxproxy::parse_ip_literal;
using boxproxy::parse_ipv4;
using boxproxy::parse_ipv6;
using boxproxy::parse_strict_address;
using boxproxy::SocketAddress;

namespace {

struct Form {
  const char* text;
  const char* expected;  // canonical text, or nullptr when it is not an address
};

// What glibc's inet_aton makes of `text`, bytes in network order; nullopt when it refuses.
std::optional<std::array<std::uint8_t, 4>> oracle_aton(const std::string& text) {
  in_addr a{};
  if (inet_aton(text.c_str(), &a) == 0) return std::nullopt;
  std::array<std::uint8_t, 4> out{};
  std::memcpy(out.data(), &a.s_addr, 4);
  return out;
}

std::optional<std::array<std::uint8_t, 16>> oracle_pton6(const std::string& text) {
  std::array<std::uint8_t, 16> out{};
  if (inet_pton(AF_INET6, text.c_str(), out.data()) != 1) return std::nullopt;
  return out;
}

std::string in_base(std::uint32_t value, int base) {
  if (base == 16) return fmt::format("0x{:x}", value);
  if (base == 8) return fmt::format("0{:o}", value);
  return fmt::format("{}", value);
}

}  // namespace

TEST_CASE("IPv4: the forms of SPEC §5 step 1") {
  const Form forms[] = {
      {"127.0.0.1", "127.0.0.1"},
      {"127.1", "127.0.0.1"},
      {"0x7f.1", "127.0.0.1"},
      {"0X7F.1", "127.0.0.1"},
      {"0x7f.0.0.1", "127.0.0.1"},
      {"017700000001", "127.0.0.1"},
      {"2130706433", "127.0.0.1"},
      {"0x7f000001", "127.0.0.1"},
      {"192.168.257", "192.168.1.1"},
      {"10.65535", "10.0.255.255"},
      {"1.16777215", "1.255.255.255"},
      {"1.2.65535", "1.2.255.255"},
      {"0", "0.0.0.0"},
      {"00", "0.0.0.0"},
      {"0x0", "0.0.0.0"},
      {"4294967295", "255.255.255.255"},
      {"0xffffffff", "255.255.255.255"},
      {"037777777777", "255.255.255.255"},
      {"0x0000000000ff", "0.0.0.255"},
      {"00000000001", "0.0.0.1"},
      {"010.010.010.010", "8.8.8.8"},
      {"0xa.0xB.0xc.0xD", "10.11.12.13"},
      {"1.2.3.4", "1.2.3.4"},
      // Not addresses.
      {"", nullptr},
      {".", nullptr},
      {"1.", nullptr},
      {".1", nullptr},
      {"1..2", nullptr},
      {"1.2.3.4.5", nullptr},
      {"256.1.1.1", nullptr},
      {"1.2.3.256", nullptr},
      {"08.0.0.1", nullptr},
      {"09", nullptr},
      {"0x", nullptr},
      {"0x.1", nullptr},
      {"1.0x", nullptr},
      {"0xg", nullptr},
      {"00x1", nullptr},
      {"0x-1", nullptr},
      {"4294967296", nullptr},
      {"0x100000000", nullptr},
      {"040000000000", nullptr},
      {"99999999999999999999999", nullptr},
      {"1.16777216", nullptr},
      {"1.2.65536", nullptr},
      {"+1", nullptr},
      {"-1", nullptr},
      {" 1.2.3.4", nullptr},
      {"1.2.3.4 ", nullptr},   // inet_aton takes trailing white space; we do not
      {"1.2.3.4 x", nullptr},  // nor trailing text
      {"1.2.3.4\n", nullptr},
      {"1.2.3.4x", nullptr},
      {"1e1", nullptr},
      {"example.com", nullptr},
      {"::1", nullptr},
  };
  for (const Form& form : forms) {
    CAPTURE(form.text);
    const auto parsed = parse_ipv4(form.text);
    if (form.expected == nullptr) {
      CHECK_FALSE(parsed.has_value());
    } else {
      REQUIRE(parsed.has_value());
      CHECK(parsed->is_v4());
      CHECK(parsed->to_string() == form.expected);
    }
  }
}

TEST_CASE("IPv4: an embedded NUL is not the end of the text") {
  const std::string text("1.2.3.4\0x", 9);
  CHECK_FALSE(parse_ipv4(text).has_value());
  CHECK_FALSE(parse_ip_literal(text).has_value());
}

TEST_CASE("IPv6: an embedded NUL is not the end of the text (fuzz finding)") {
  // inet_pton stops at the NUL, so these were read as "::" and "2606:4700::1111".
  for (const std::string& text : {std::string("::\0\0.>", 6), std::string("2606:4700::1111\0junk", 20),
                                 std::string("fe80::1\0%eth0", 13), std::string("[::1\0]", 6)}) {
    CAPTURE(text);
    CHECK_FALSE(parse_ipv6(text).has_value());
    CHECK_FALSE(parse_ip_literal(text).has_value());
  }
  CHECK_FALSE(parse_ipv6(std::string("fe80::1%eth0\0", 13)).has_value());  // the zone refuses it too
}

TEST_CASE("IPv4: inet_aton as the oracle over generated forms") {
  // Every split of a value into 1..4 parts, each part in each base: the bytes must equal glibc's.
  const std::uint32_t values[] = {0,          1,          0x7f000001, 0x0a000001, 0xc0a80101, 0xffffffff,
                                  0x01020304, 0xa9fea9fe, 0x64646464, 0x08080808, 0x00ff00ff, 0xff000000};
  const int bases[] = {10, 16, 8};
  int compared = 0;
  for (const std::uint32_t value : values) {
    for (int parts = 1; parts <= 4; ++parts) {
      for (const int b0 : bases) {
        for (const int b1 : bases) {
          std::string text;
          for (int i = 0; i + 1 < parts; ++i) {
            const std::uint32_t byte = (value >> (8 * (3 - i))) & 0xff;
            text += in_base(byte, i == 0 ? b0 : b1) + ".";
          }
          const int last_bytes = 4 - (parts - 1);
          const std::uint32_t last = last_bytes == 4 ? value : value & ((1U << (8 * last_bytes)) - 1);
          text += in_base(last, b1);
          CAPTURE(text);
          const auto ours = parse_ipv4(text);
          const auto theirs = oracle_aton(text);
          REQUIRE(theirs.has_value());
          REQUIRE(ours.has_value());
          CHECK(std::equal(theirs->begin(), theirs->end(), ours->bytes.begin()));
          CHECK(ours->v4_value() == value);
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 12 * 4 * 9);
}

TEST_CASE("IPv4: inet_aton agrees on random text (without white space, which it cuts at)") {
  std::mt19937 rng(20240611);
  const std::string alphabet = "0123456789.xXabcdefgABCDEF89.0";
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string text;
    const auto length = std::uniform_int_distribution<std::size_t>(1, 14)(rng);
    for (std::size_t j = 0; j < length; ++j) {
      text += alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
    }
    const auto ours = parse_ipv4(text);
    const auto theirs = oracle_aton(text);
    if (ours.has_value() != theirs.has_value()) {
      FAIL_CHECK("disagreement on " << text);
      continue;
    }
    if (ours) {
      ++accepted;
      CHECK(std::equal(theirs->begin(), theirs->end(), ours->bytes.begin()));
    }
  }
  CHECK(accepted > 1000);  // the generator reaches the interesting part of the space
}

TEST_CASE("IPv6: forms, zones, brackets") {
  const Form forms[] = {
      {"::1", "::1"},
      {"::", "::"},
      {"fe80::1", "fe80::1"},
      {"FE80::1", "fe80::1"},
      {"2606:4700::1111", "2606:4700::1111"},
      {"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
      {"::ffff:a00:1", "::ffff:10.0.0.1"},
      {"64:ff9b::a00:1", "64:ff9b::a00:1"},
      {"2002:a00:1::", "2002:a00:1::"},
      {"::a00:1", "::10.0.0.1"},
      {"0:0:0:0:0:0:0:1", "::1"},
      {"1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"},
      {"", nullptr},
      {":", nullptr},
      {":::", nullptr},
      {"1:2:3:4:5:6:7:8:9", nullptr},
      {"12345::", nullptr},
      {"::1.", nullptr},
      {"::g", nullptr},
      {"[::1]", nullptr},  // parse_ipv6 takes no brackets
      {"127.0.0.1", nullptr},
      {"::ffff:127.1", nullptr},  // only a dotted quad may end an IPv6 address
  };
  for (const Form& form : forms) {
    CAPTURE(form.text);
    const auto parsed = parse_ipv6(form.text);
    if (form.expected == nullptr) {
      CHECK_FALSE(parsed.has_value());
    } else {
      REQUIRE(parsed.has_value());
      CHECK_FALSE(parsed->is_v4());
      CHECK(parsed->to_string() == form.expected);
      CHECK(parsed->zone.empty());
    }
  }
}

TEST_CASE("IPv6 zones") {
  struct Zone {
    const char* text;
    const char* zone;  // nullptr: refused
  };
  const Zone zones[] = {
      {"fe80::1%eth0", "eth0"},   {"fe80::1%25eth0", "eth0"}, {"fe80::1%1", "1"},
      {"fe80::1%en0.5", "en0.5"}, {"fe80::1%a_b-c", "a_b-c"},  {"fe80::1%", nullptr},
      {"fe80::1%25", "25"},       {"fe80::1%eth 0", nullptr},  {"fe80::1%eth0%", nullptr},
      {"fe80::1%eth/0", nullptr}, {"%eth0", nullptr},          {"fe80::1%:", nullptr},
  };
  for (const Zone& z : zones) {
    CAPTURE(z.text);
    const auto parsed = parse_ipv6(z.text);
    if (z.zone == nullptr) {
      CHECK_FALSE(parsed.has_value());
    } else {
      REQUIRE(parsed.has_value());
      CHECK(parsed->zone == z.zone);
      CHECK(parsed->to_string() == "fe80::1");
    }
  }
  // The zone does not change which host the bytes name.
  CHECK(*parse_ipv6("fe80::1%eth0") == *parse_ipv6("fe80::1"));
}

TEST_CASE("IPv6: inet_pton as the oracle on random text") {
  std::mt19937 rng(7);
  const std::string alphabet = "0123456789abcdefABCDEFg::::...";
  int accepted = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string text;
    const auto length = std::uniform_int_distribution<std::size_t>(1, 20)(rng);
    for (std::size_t j = 0; j < length; ++j) {
      text += alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
    }
    const auto ours = parse_ipv6(text);
    const auto theirs = oracle_pton6(text);
    REQUIRE_MESSAGE(ours.has_value() == theirs.has_value(), text);
    if (ours) {
      ++accepted;
      CHECK(ours->bytes == *theirs);
    }
  }
  CHECK(accepted > 100);
}

TEST_CASE("IP literals: IPv4 forms, IPv6 bracketed or not") {
  const Form forms[] = {
      {"0x7f.1", "127.0.0.1"},
      {"[::ffff:127.0.0.1]", "::ffff:127.0.0.1"},
      {"[64:ff9b::a00:1]", "64:ff9b::a00:1"},
      {"[2002:a00:1::]", "2002:a00:1::"},
      {"[fe80::1%25eth0]", "fe80::1"},
      {"fe80::1%eth0", "fe80::1"},
      {"[::a00:1]", "::10.0.0.1"},
      {"::1", "::1"},
      {"[::1]", "::1"},
      {"[::1].", nullptr},
      {"[::1", nullptr},
      {"::1]", nullptr},
      {"[]", nullptr},
      {"[", nullptr},
      {"[127.0.0.1]", nullptr},
      {"example.com", nullptr},
      {"256.1.1.1", nullptr},
  };
  for (const Form& form : forms) {
    CAPTURE(form.text);
    const auto parsed = parse_ip_literal(form.text);
    if (form.expected == nullptr) {
      CHECK_FALSE(parsed.has_value());
    } else {
      REQUIRE(parsed.has_value());
      CHECK(parsed->to_string() == form.expected);
    }
  }
}

TEST_CASE("IpAddress helpers") {
  const IpAddress a = IpAddress::v4(0x7f000001);
  CHECK(a.is_v4());
  CHECK(a.size() == 4);
  CHECK(a.v4_value() == 0x7f000001);
  CHECK(a.bytes[0] == 127);
  CHECK(a.bytes[3] == 1);
  CHECK(a.to_string() == "127.0.0.1");
  for (std::size_t i = 4; i < 16; ++i) CHECK(a.bytes[i] == 0);

  const IpAddress mapped = *parse_ipv6("::ffff:10.1.2.3");
  CHECK(mapped.size() == 16);
  CHECK(mapped.embedded_v4(12) == IpAddress::v4(0x0a010203));
  const IpAddress six_to_four = *parse_ipv6("2002:c0a8:101::1");
  CHECK(six_to_four.embedded_v4(2).to_string() == "192.168.1.1");
  CHECK_FALSE(IpAddress::v4(1) == *parse_ipv6("::1"));  // families differ
}

TEST_CASE("IpAddress to and from sockaddr: one conversion for connect, bind, getaddrinfo, getifaddrs") {
  for (const char* text : {"127.0.0.2", "1.1.1.1", "0.0.0.0", "255.255.255.255", "::1", "2606:4700::1111",
                           "::ffff:10.0.0.1", "fe80::1"}) {
    CAPTURE(text);
    const auto address = parse_strict_address(text);
    REQUIRE(address.has_value());
    const SocketAddress socket_address = address->to_sockaddr(8443, address->is_v4() ? 0 : 7);
    CHECK(socket_address.family() == (address->is_v4() ? AF_INET : AF_INET6));
    CHECK(socket_address.length == (address->is_v4() ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)));
    if (!address->is_v4()) {
      sockaddr_in6 sin6{};
      std::memcpy(&sin6, &socket_address.storage, sizeof sin6);
      CHECK(sin6.sin6_scope_id == 7);
      CHECK(ntohs(sin6.sin6_port) == 8443);
    } else {
      sockaddr_in sin{};
      std::memcpy(&sin, &socket_address.storage, sizeof sin);
      CHECK(ntohs(sin.sin_port) == 8443);
      char expected[INET_ADDRSTRLEN] = {};
      REQUIRE(inet_ntop(AF_INET, &sin.sin_addr, expected, sizeof expected) != nullptr);
      CHECK(std::string(expected) == text);
    }
    const auto back = IpAddress::from_sockaddr(*socket_address.get(), socket_address.length);
    REQUIRE(back.has_value());
    CHECK(back->address == *address);
    CHECK(back->address.to_string() == text);
    CHECK(back->address.zone.empty());
    CHECK(back->port == 8443);
    // A length too short for the family is no address.
    CHECK_FALSE(IpAddress::from_sockaddr(*socket_address.get(), socket_address.length - 1).has_value());
  }
  sockaddr_storage unix_address{};
  unix_address.ss_family = AF_UNIX;
  CHECK_FALSE(IpAddress::from_sockaddr(reinterpret_cast<const sockaddr&>(unix_address)).has_value());
}
