// SPDX-License-Identifier: Apache-2.0
// table/target: ports, names, hosts and authorities (SPEC §5 step 1).
#include <string>

#include <doctest/doctest.h>

#include "table/target.h"

using namespace boxproxy;

namespace {

struct Case {
  const char* text;
  const char* host;       // the host as judged, when the parse succeeds
  const char* address;    // canonical address, or nullptr for a name
  std::uint16_t port;
  std::optional<Reason> error;  // set when the parse fails
};

void check_case(const Case& c, const TargetResult& result) {
  CAPTURE(c.text);
  if (c.error) {
    REQUIRE(std::holds_alternative<Reason>(result));
    CHECK(std::get<Reason>(result) == *c.error);
    return;
  }
  REQUIRE(std::holds_alternative<Target>(result));
  const Target& t = std::get<Target>(result);
  CHECK(t.host == c.host);
  CHECK(t.port == c.port);
  if (c.address == nullptr) {
    CHECK(t.is_name());
  } else {
    REQUIRE_FALSE(t.is_name());
    CHECK(t.address->to_string() == c.address);
  }
}

constexpr auto kTarget = Reason::invalid_target;
constexpr auto kHost = Reason::invalid_host;

}  // namespace

TEST_CASE("ports: one to five digits, 1 to 65535") {
  CHECK(parse_port("1") == 1);
  CHECK(parse_port("80") == 80);
  CHECK(parse_port("00080") == 80);
  CHECK(parse_port("65535") == 65535);
  CHECK(parse_port("00001") == 1);
  CHECK_FALSE(parse_port("0").has_value());
  CHECK_FALSE(parse_port("00000").has_value());
  CHECK_FALSE(parse_port("65536").has_value());
  CHECK_FALSE(parse_port("99999").has_value());
  CHECK_FALSE(parse_port("000080").has_value());  // six digits, even with a small value
  CHECK_FALSE(parse_port("100000").has_value());
  CHECK_FALSE(parse_port("").has_value());
  CHECK_FALSE(parse_port("+80").has_value());
  CHECK_FALSE(parse_port("-1").has_value());
  CHECK_FALSE(parse_port(" 80").has_value());
  CHECK_FALSE(parse_port("80 ").has_value());
  CHECK_FALSE(parse_port("0x50").has_value());
  CHECK_FALSE(parse_port("8o").has_value());
  for (std::uint32_t p = 1; p <= 65535; ++p) {
    REQUIRE(parse_port(std::to_string(p)) == p);
  }
}

TEST_CASE("names") {
  CHECK(is_valid_name("example.com"));
  CHECK(is_valid_name("localhost"));
  CHECK(is_valid_name("a"));
  CHECK(is_valid_name("EXAMPLE.com"));
  CHECK(is_valid_name("_srv.x-y.example"));
  CHECK(is_valid_name("1.2.3.com"));
  CHECK(is_valid_name("1.2.3.4a"));
  // An address in an inet_aton form whose last label is not all digits is still no name: a
  // resolver given one would read it as the address (fuzz finding: "0x30" was both).
  CHECK_FALSE(is_valid_name("0x7f"));
  CHECK_FALSE(is_valid_name("0x30"));
  CHECK_FALSE(is_valid_name("0x7f.1"));
  CHECK_FALSE(is_valid_name("1.2.3.0x4"));
  CHECK_FALSE(is_valid_name("0XFFFFFFFF"));
  CHECK(is_valid_name("0x"));          // no number: glibc refuses it as an address too
  CHECK(is_valid_name("0x7g"));
  CHECK(is_valid_name("1.2.3.4.0x5"));  // five parts: no address
  CHECK_FALSE(is_valid_name(""));
  CHECK_FALSE(is_valid_name("."));
  CHECK_FALSE(is_valid_name(".example.com"));
  CHECK_FALSE(is_valid_name("example..com"));
  CHECK_FALSE(is_valid_name("example.com."));  // trailing dot is dropped before this is asked
  CHECK_FALSE(is_valid_name("exa mple.com"));
  CHECK_FALSE(is_valid_name("exa*mple.com"));
  CHECK_FALSE(is_valid_name("ex%41mple.com"));
  CHECK_FALSE(is_valid_name("b\xc3\xbc" "cher.de"));
  CHECK_FALSE(is_valid_name(std::string("a\0b.com", 7)));
  CHECK_FALSE(is_valid_name("256.1.1.1"));
  CHECK_FALSE(is_valid_name("08.0.0.1"));
  CHECK_FALSE(is_valid_name("1.2.3.4.5"));
  CHECK_FALSE(is_valid_name("example.123"));
  CHECK_FALSE(is_valid_name("123"));

  // 253 characters is the most; 254 is one too many.
  std::string name;
  while (name.size() < 253) name += "a.";
  name.resize(253);
  if (name.back() == '.') name.back() = 'b';
  CHECK(name.size() == 253);
  CHECK(is_valid_name(name));
  CHECK_FALSE(is_valid_name(name + "c"));
}

TEST_CASE("parse_host: addresses in every form, names, and what is neither") {
  const Case cases[] = {
      {"0x7f.1", "0x7f.1", "127.0.0.1", 443, {}},
      {"017700000001", "017700000001", "127.0.0.1", 443, {}},
      {"2130706433", "2130706433", "127.0.0.1", 443, {}},
      {"192.168.257", "192.168.257", "192.168.1.1", 443, {}},
      {"127.1", "127.1", "127.0.0.1", 443, {}},
      {"127.0.0.1.", "127.0.0.1", "127.0.0.1", 443, {}},
      {"[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "::ffff:127.0.0.1", 443, {}},
      {"[64:ff9b::a00:1]", "64:ff9b::a00:1", "64:ff9b::a00:1", 443, {}},
      {"[2002:a00:1::]", "2002:a00:1::", "2002:a00:1::", 443, {}},
      {"fe80::1%eth0", "fe80::1%eth0", "fe80::1", 443, {}},
      {"[fe80::1%25eth0]", "fe80::1%25eth0", "fe80::1", 443, {}},
      {"[::a00:1]", "::a00:1", "::10.0.0.1", 443, {}},
      {"::1", "::1", "::1", 443, {}},
      {"example.com", "example.com", nullptr, 443, {}},
      {"Example.COM.", "Example.COM", nullptr, 443, {}},  // never lower-cased
      {"localhost", "localhost", nullptr, 443, {}},
      {"[::1].", nullptr, nullptr, 0, kHost},
      {"::1.", nullptr, nullptr, 0, kHost},  // an IPv6 host keeps its dot, and is then not one
      {"[::1]x", nullptr, nullptr, 0, kHost},
      {"[example.com]", nullptr, nullptr, 0, kHost},
      {"[127.0.0.1]", nullptr, nullptr, 0, kHost},
      {"[::1", nullptr, nullptr, 0, kHost},
      {"256.1.1.1", nullptr, nullptr, 0, kHost},
      {"08.0.0.1", nullptr, nullptr, 0, kHost},
      {"1.2.3.4.5", nullptr, nullptr, 0, kHost},
      {"1.2.3.4 x", nullptr, nullptr, 0, kHost},
      {"1.2.3.4x", "1.2.3.4x", nullptr, 443, {}},  // a name, last label "4x"
      {"", nullptr, nullptr, 0, kHost},
      {".", nullptr, nullptr, 0, kHost},
      {"example.com..", nullptr, nullptr, 0, kHost},  // only one trailing dot is dropped
      {"a..b", nullptr, nullptr, 0, kHost},
      {"exa mple.com", nullptr, nullptr, 0, kHost},
      {"user@example.com", nullptr, nullptr, 0, kHost},
      {"ex%2emple.com", nullptr, nullptr, 0, kHost},
      {"fe80::1%", nullptr, nullptr, 0, kHost},
      {"example.com:80", nullptr, nullptr, 0, kHost},
  };
  for (const Case& c : cases) check_case(c, parse_host(c.text, 443));

  // Name length: 253 characters, and one trailing dot on top, still a name.
  const std::string name = "a." + std::string(250, 'a') + "b";
  REQUIRE(name.size() == 253);
  CHECK(std::holds_alternative<Target>(parse_host(name, 80)));
  CHECK(std::holds_alternative<Target>(parse_host(name + ".", 80)));
  CHECK(std::get<Reason>(parse_host(name + "c", 80)) == kHost);
  // SOCKS carries the port as two bytes: zero is not a port, whatever the host.
  CHECK(std::get<Reason>(parse_host("example.com", 0)) == Reason::invalid_target);
  CHECK(std::get<Reason>(parse_host("127.0.0.2", 0)) == Reason::invalid_target);
}

TEST_CASE("parse_authority: host:port and [v6]:port, the port required") {
  const Case cases[] = {
      {"example.com:443", "example.com", nullptr, 443, {}},
      {"example.com.:443", "example.com", nullptr, 443, {}},
      {"example.com:00080", "example.com", nullptr, 80, {}},
      {"example.com:65535", "example.com", nullptr, 65535, {}},
      {"[::1]:80", "::1", "::1", 80, {}},
      {"[fe80::1%25eth0]:443", "fe80::1%25eth0", "fe80::1", 443, {}},
      {"0x7f.1:22", "0x7f.1", "127.0.0.1", 22, {}},
      // An IPv6 host must be bracketed (SPEC §7): unbracketed, it has no one way to split.
      {"::1:80", nullptr, nullptr, 0, kTarget},
      {"::1:443", nullptr, nullptr, 0, kTarget},
      {"1::2:80", nullptr, nullptr, 0, kTarget},
      {"::ffff:127.0.0.1:80", nullptr, nullptr, 0, kTarget},
      {"fe80::1%eth0:443", nullptr, nullptr, 0, kTarget},
      {"2001:db8::1:443", nullptr, nullptr, 0, kTarget},
      {"example.com", nullptr, nullptr, 0, kTarget},
      {"example.com:", nullptr, nullptr, 0, kTarget},
      {"example.com:0", nullptr, nullptr, 0, kTarget},
      {"example.com:65536", nullptr, nullptr, 0, kTarget},
      {"example.com:000080", nullptr, nullptr, 0, kTarget},
      {"example.com:123456", nullptr, nullptr, 0, kTarget},
      {"example.com:http", nullptr, nullptr, 0, kTarget},
      {"example.com:80 ", nullptr, nullptr, 0, kTarget},
      {"[::1]", nullptr, nullptr, 0, kTarget},
      {"[::1]:", nullptr, nullptr, 0, kTarget},
      {"", nullptr, nullptr, 0, kTarget},
      {":80", nullptr, nullptr, 0, kHost},
      {"[::1].:80", nullptr, nullptr, 0, kHost},
      {"[::1]x:80", nullptr, nullptr, 0, kHost},
      {"256.1.1.1:80", nullptr, nullptr, 0, kHost},
      {"a:b:80", nullptr, nullptr, 0, kTarget},
      {"[::1]:80:80", nullptr, nullptr, 0, kTarget},
      {"user@example.com:80", nullptr, nullptr, 0, kHost},
  };
  for (const Case& c : cases) check_case(c, parse_authority(c.text));
}

TEST_CASE("parse_authority_default_port: the port may be absent") {
  const Case cases[] = {
      {"example.com", "example.com", nullptr, 80, {}},
      {"example.com:8080", "example.com", nullptr, 8080, {}},
      {"[::1]", "::1", "::1", 80, {}},
      {"[::1]:81", "::1", "::1", 81, {}},
      {"example.com:", nullptr, nullptr, 0, kTarget},
      {"example.com:0", nullptr, nullptr, 0, kTarget},
      {"[::1]:", nullptr, nullptr, 0, kTarget},
      {"[::1].", nullptr, nullptr, 0, kHost},
      {"", nullptr, nullptr, 0, kHost},
      // Unbracketed IPv6 in a URI's authority: no way to tell the host from a port.
      {"::1", nullptr, nullptr, 0, kTarget},
      {"::1:80", nullptr, nullptr, 0, kTarget},
      {"2001:db8::1", nullptr, nullptr, 0, kTarget},
  };
  for (const Case& c : cases) check_case(c, parse_authority_default_port(c.text, 80));
}

TEST_CASE("parse_check_target: bare hosts take 443; host:port and [v6]:port take theirs") {
  const Case cases[] = {
      {"1.1.1.1", "1.1.1.1", "1.1.1.1", 443, {}},
      {"1.1.1.1:80", "1.1.1.1", "1.1.1.1", 80, {}},
      {"example.com", "example.com", nullptr, 443, {}},
      {"example.com:8443", "example.com", nullptr, 8443, {}},
      {"::1", "::1", "::1", 443, {}},
      {"2606:4700::1111", "2606:4700::1111", "2606:4700::1111", 443, {}},
      {"[2606:4700::1111]", "2606:4700::1111", "2606:4700::1111", 443, {}},
      {"[2606:4700::1111]:8443", "2606:4700::1111", "2606:4700::1111", 8443, {}},
      {"fe80::1%eth0", "fe80::1%eth0", "fe80::1", 443, {}},
      {"example.com:", nullptr, nullptr, 0, kTarget},
      {"example.com:99999", nullptr, nullptr, 0, kTarget},
      {"[::1]:0", nullptr, nullptr, 0, kTarget},
      {"[::1].", nullptr, nullptr, 0, kHost},
      {"1::2::3", nullptr, nullptr, 0, kHost},
  };
  for (const Case& c : cases) check_case(c, parse_check_target(c.text));
  CHECK(std::get<Target>(parse_check_target("example.com", 80)).port == 80);
}

TEST_CASE("split_authority_text: the host as sent, for the log line of a refusal") {
  struct Row {
    const char* text;
    std::optional<std::uint16_t> default_port;
    const char* host;
    std::uint16_t port;
  };
  const Row rows[] = {
      {"256.1.1.1", 80, "256.1.1.1", 80},
      {"256.1.1.1:8080", 80, "256.1.1.1", 8080},
      {"bad!host:443", std::nullopt, "bad!host", 443},
      {"::1:443", std::nullopt, "::1", 443},
      {"[::1]:443", std::nullopt, "[::1]", 443},
      {"[::1]x:443", std::nullopt, "[::1]x", 443},
      {"[::1]", 80, "[::1]", 80},
      {"example.com", std::nullopt, "example.com", 0},
      {"example.com:99999", 80, "example.com", 0},
      {"example.com:", 80, "example.com", 0},
      {"", 80, "", 80},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const AuthorityText split = split_authority_text(row.text, row.default_port);
    CHECK(split.host == row.host);
    CHECK(split.port == row.port);
  }
}
