// SPDX-License-Identifier: Apache-2.0
// proxy/resolve_request: a SOCKS5 RESOLVE's own two choices (SPEC §16): the port its name is
// judged at, against the host list, and the one answer it gives.
#include <doctest/doctest.h>

#include <initializer_list>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "proxy/wire/resolve_request.h"

using namespace boxproxy;

namespace {

// A RESOLVE's target as the handshake gives it: judged at 443.
Target resolving(std::string_view host) {
  const TargetResult parsed = parse_host(host, 443);
  REQUIRE(std::holds_alternative<Target>(parsed));
  return std::get<Target>(parsed);
}

std::optional<HostList> list_of(std::initializer_list<std::string_view> entries) {
  HostList list;
  for (const std::string_view entry : entries) REQUIRE_FALSE(list.add(entry).has_value());
  return list;
}

IpAddress address(std::string_view text) {
  const std::optional<IpAddress> parsed = parse_strict_address(text);
  REQUIRE(parsed.has_value());
  return *parsed;
}

}  // namespace

TEST_CASE("resolve_judged_port: the target's own port unless the list opens the name only elsewhere") {
  struct Row {
    std::string_view what;
    std::optional<HostList> list;
    const char* host;
    std::uint16_t port;
  };
  const Row rows[] = {
      {"no list", std::nullopt, "api.example", 443},
      {"listed on 80 and 443", list_of({"api.example"}), "api.example", 443},
      {"listed on 8443 only", list_of({"api.example:8443"}), "api.example", 8443},
      {"listed on 8443, then 80: 80 first", list_of({"api.example:8443", "api.example:80"}), "api.example", 80},
      {"on two other ports: the first entry's", list_of({"api.example:9000", "api.example:8443"}), "api.example", 9000},
      {"another name's port is not taken", list_of({"other.example:7000", "api.example:8443"}), "api.example", 8443},
      {"a wildcard on 8443", list_of({"*.api.example:8443"}), "eu.api.example", 8443},
      {"a wildcard does not list its own name", list_of({"*.api.example:8443"}), "api.example", 443},
      {"not listed: its own port", list_of({"other.example:8443"}), "api.example", 443},
      {"an IP target: its own port", list_of({"api.example:8443"}), "192.0.2.1", 443},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    CHECK(resolve_judged_port(row.list, resolving(row.host)) == row.port);
  }
}

TEST_CASE("resolve_answer: the first IPv4 answer, else the first, else none") {
  CHECK(resolve_answer({}) == nullptr);

  const std::vector<IpAddress> v6_only = {address("2001:db8::1"), address("2001:db8::2")};
  CHECK(resolve_answer(v6_only) == &v6_only[0]);

  const std::vector<IpAddress> v6_then_v4 = {address("2001:db8::1"), address("192.0.2.7"), address("192.0.2.8")};
  CHECK(resolve_answer(v6_then_v4) == &v6_then_v4[1]);

  const std::vector<IpAddress> v4_first = {address("192.0.2.9"), address("2001:db8::1"), address("192.0.2.10")};
  CHECK(resolve_answer(v4_first) == &v4_first[0]);
  CHECK(resolve_answer(v4_first)->to_string() == "192.0.2.9");
}
