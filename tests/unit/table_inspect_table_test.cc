// SPDX-License-Identifier: Apache-2.0
// table/inspect_table: which endpoint a decided host and port reach; one endpoint per host entry.
#include <doctest/doctest.h>

#include "table/inspect_table.h"

using namespace boxproxy;

namespace {

InspectEndpoint endpoint(std::string_view entry, std::optional<std::string> name = std::nullopt) {
  auto parsed = parse_inspect_entry(entry);
  if (const auto* error = std::get_if<std::string>(&parsed)) FAIL(*error);
  InspectEndpoint e = std::get<InspectEndpoint>(std::move(parsed));
  e.name = std::move(name);
  return e;
}

// The name of the endpoint `host`:`port` reaches, or "none".
std::string found(const InspectTable& table, std::string_view host, std::uint16_t port) {
  const InspectEndpoint* e = table.find(host, port);
  return e == nullptr ? "none" : *e->name;
}

}  // namespace

TEST_CASE("an exact entry beats a wildcard; the longest wildcard beats a shorter one") {
  InspectTable table;
  REQUIRE(table.add(endpoint("*.example.com", "wide")));
  REQUIRE(table.add(endpoint("api.example.com", "exact")));
  REQUIRE(table.add(endpoint("*.api.example.com", "narrow")));
  REQUIRE(table.add(endpoint("example.com:8443", "other-port")));
  CHECK(found(table, "api.example.com", 443) == "exact");
  CHECK(found(table, "API.Example.COM.", 443) == "exact");
  CHECK(found(table, "v2.api.example.com", 443) == "narrow");
  CHECK(found(table, "a.b.api.example.com", 443) == "narrow");
  CHECK(found(table, "www.example.com", 443) == "wide");
  CHECK(found(table, "example.com", 443) == "none");  // a wildcard never names its own name
  CHECK(found(table, "badexample.com", 443) == "none");
  CHECK(found(table, "example.com", 8443) == "other-port");
  CHECK(found(table, "api.example.com", 80) == "none");  // port 443 when none is named, and only it
  CHECK(found(table, "api.example.com", 8443) == "none");
  CHECK(found(table, "other.test", 443) == "none");
  CHECK(table.endpoints().size() == 4);
}

TEST_CASE("the order endpoints are added in does not change which one is found") {
  InspectTable table;
  REQUIRE(table.add(endpoint("*.api.example.com", "narrow")));
  REQUIRE(table.add(endpoint("a.api.example.com", "exact")));
  REQUIRE(table.add(endpoint("*.example.com", "wide")));
  CHECK(found(table, "a.api.example.com", 443) == "exact");
  CHECK(found(table, "b.api.example.com", 443) == "narrow");
  CHECK(found(table, "b.example.com", 443) == "wide");
}

TEST_CASE("the same host entry twice is refused, however it is spelled") {
  InspectTable table;
  CHECK(table.empty());
  REQUIRE(table.add(endpoint("api.example.com", "first")));
  CHECK_FALSE(table.add(endpoint("api.example.com:443", "second")));
  CHECK_FALSE(table.add(endpoint("API.example.com.", "third")));
  CHECK(table.add(endpoint("api.example.com:8443", "port")));
  CHECK(table.add(endpoint("*.api.example.com", "wildcard")));
  CHECK_FALSE(table.add(endpoint("*.API.example.com:443", "again")));
  CHECK(table.endpoints().size() == 3);
  CHECK(found(table, "api.example.com", 443) == "first");
  const InspectEndpoint probe = endpoint("api.example.com:443");
  REQUIRE(table.same_host(probe.host) != nullptr);
  CHECK(*table.same_host(probe.host)->name == "first");
  CHECK(table.same_host(endpoint("b.example.com").host) == nullptr);
}
