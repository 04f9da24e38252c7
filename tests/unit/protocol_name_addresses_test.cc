// SPDX-License-Identifier: Apache-2.0
// The addresses the bridge's DNS responder gives out and the names they stand for
// (proxy/bridge/name_addresses.h): stable, in range, reversible, bounded.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "proxy/bridge/name_addresses.h"

using namespace boxproxy;
using Family = IpAddress::Family;

TEST_CASE("a name gets one address per family, in the reserved ranges, and back") {
  NameAddresses names;
  const IpAddress a4 = names.address_for("origin.test", Family::v4);
  const IpAddress a6 = names.address_for("origin.test", Family::v6);
  CHECK(a4.to_string() == "198.18.0.1");
  CHECK(a6.to_string() == "fd62:6f78:7072::1");
  CHECK(names.address_for("origin.test", Family::v4).to_string() == "198.18.0.1");  // stable
  CHECK(names.name_for(a4) == "origin.test");
  CHECK(names.name_for(a6) == "origin.test");
  const IpAddress b4 = names.address_for("other.test", Family::v4);
  CHECK(b4.to_string() == "198.18.0.2");
  CHECK(names.name_for(b4) == "other.test");
  CHECK(names.size() == 2);
}

TEST_CASE("addresses it never gave out have no name") {
  NameAddresses names;
  (void)names.address_for("origin.test", Family::v4);
  for (const char* text : {"198.18.0.0", "198.18.0.2", "198.19.255.255", "198.17.255.255", "198.20.0.0", "127.0.0.2",
                           "192.0.2.1", "fd62:6f78:7072::2", "fd62:6f78:7072::", "fd62:6f78:7073::1", "2001:db8::1",
                           "fd62:6f78:7072::1:0:1", "::ffff:198.18.0.1"}) {
    CAPTURE(text);
    const auto address = parse_strict_address(text);
    REQUIRE(address);
    CHECK_FALSE(names.name_for(*address).has_value());
  }
  CHECK(NameAddresses::in_range(*parse_strict_address("198.19.255.255")));
  CHECK_FALSE(NameAddresses::in_range(*parse_strict_address("198.20.0.0")));
}

TEST_CASE("bounded: past the limit the least recently used name gives up its address") {
  NameAddresses names(3);
  const IpAddress a = names.address_for("a.test", Family::v4);
  const IpAddress b = names.address_for("b.test", Family::v4);
  const IpAddress c = names.address_for("c.test", Family::v4);
  CHECK(names.name_for(a) == "a.test");  // a is now the most recently used; b the least
  const IpAddress d = names.address_for("d.test", Family::v4);
  CHECK(names.size() == 3);
  CHECK(d.to_string() == b.to_string());  // b's address went to d
  CHECK(names.name_for(b) == "d.test");
  CHECK(names.name_for(a) == "a.test");
  CHECK(names.name_for(c) == "c.test");
  // b asked again gets an address anew: d's, the least recently used since the lookups above
  // (c, then a, were looked up after d).
  const IpAddress b2 = names.address_for("b.test", Family::v4);
  CHECK(b2.to_string() == d.to_string());
  CHECK(names.name_for(b2) == "b.test");
  CHECK(names.name_for(c) == "c.test");

  // Many names through a small pool: never more held than the limit, every address in range.
  NameAddresses small(100);
  std::set<std::string> given;
  for (int i = 0; i < 10000; ++i) {
    const IpAddress x = small.address_for("n" + std::to_string(i) + ".test", Family::v4);
    CHECK(NameAddresses::in_range(x));
    given.insert(x.to_string());
  }
  CHECK(small.size() == 100);
  CHECK(given.size() == 100);
}
