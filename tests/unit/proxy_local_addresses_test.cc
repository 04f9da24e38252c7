// SPDX-License-Identifier: Apache-2.0
// An IPv6 zone's interface index (proxy/local_addresses.h): read over netlink, as
// if_nametoindex(3) would answer it by ioctl.
#include <doctest/doctest.h>
#include <net/if.h>

#include "proxy/local_addresses.h"

TEST_CASE("interface_index agrees with if_nametoindex, and names no interface with 0") {
  const unsigned loopback = ::if_nametoindex("lo");
  REQUIRE(loopback != 0);  // every network namespace has lo
  CHECK(boxproxy::interface_index("lo") == loopback);
  CHECK(boxproxy::interface_index("no-such-if0") == 0);
  CHECK(boxproxy::interface_index("") == 0);
  CHECK(boxproxy::interface_index("l") == 0);  // a prefix of a name is not the name
}
