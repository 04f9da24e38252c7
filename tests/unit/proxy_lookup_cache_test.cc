// SPDX-License-Identifier: Apache-2.0
// proxy/lookup_cache: answers kept for their TTL and never past it, bounded in names and addresses.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/lookup_cache.h"

using namespace boxproxy;
using Clock = LookupCache::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::vector<IpAddress> answers(std::initializer_list<std::uint32_t> values) {
  std::vector<IpAddress> out;
  for (std::uint32_t v : values) out.push_back(IpAddress::v4(v));
  return out;
}

const Clock::time_point t0 = Clock::time_point{} + seconds(1000);

}  // namespace

TEST_CASE("an answer is found within its TTL, without regard to case, and never at or after it") {
  LookupCache cache;
  cache.store("Api.Example.test", answers({0x01020304, 0x05060708}), 2, t0);
  REQUIRE(cache.find("api.example.test", t0).has_value());
  CHECK(*cache.find("API.EXAMPLE.TEST", t0 + milliseconds(1999)) == answers({0x01020304, 0x05060708}));
  CHECK_FALSE(cache.find("api.example.test", t0 + seconds(2)).has_value());
  CHECK(cache.size() == 0);  // dropped when found expired
  CHECK(cache.addresses() == 0);
  CHECK_FALSE(cache.find("other.test", t0).has_value());
}

TEST_CASE("nothing is kept for no answer, a TTL of 0, or more answers than the cache holds") {
  LookupCache cache(4, 3);
  cache.store("empty.test", {}, 60, t0);
  cache.store("zero.test", answers({1}), 0, t0);
  cache.store("big.test", answers({1, 2, 3, 4}), 60, t0);
  CHECK(cache.size() == 0);
  CHECK_FALSE(cache.find("zero.test", t0).has_value());
  CHECK_FALSE(cache.find("big.test", t0).has_value());
}

TEST_CASE("a long TTL is cut to kLookupCacheMaxSeconds") {
  LookupCache cache;
  cache.store("long.test", answers({1}), 86400, t0);
  CHECK(cache.find("long.test", t0 + seconds(kLookupCacheMaxSeconds) - milliseconds(1)).has_value());
  CHECK_FALSE(cache.find("long.test", t0 + seconds(kLookupCacheMaxSeconds)).has_value());
}

TEST_CASE("a name stored again replaces its answers and its expiry") {
  LookupCache cache;
  cache.store("a.test", answers({1, 2}), 10, t0);
  cache.store("A.test", answers({3}), 1, t0);
  CHECK(cache.size() == 1);
  CHECK(cache.addresses() == 1);
  CHECK(*cache.find("a.test", t0) == answers({3}));
  CHECK_FALSE(cache.find("a.test", t0 + seconds(1)).has_value());
  // A failed lookup of a cached name drops the old answer rather than keep it.
  cache.store("a.test", answers({4}), 10, t0);
  cache.store("a.test", {}, 10, t0);
  CHECK_FALSE(cache.find("a.test", t0).has_value());
}

TEST_CASE("bounded in names: the one that expires first makes room") {
  LookupCache cache(3, 100);
  cache.store("a.test", answers({1}), 30, t0);
  cache.store("b.test", answers({2}), 10, t0);
  cache.store("c.test", answers({3}), 20, t0);
  cache.store("d.test", answers({4}), 40, t0);
  CHECK(cache.size() == 3);
  CHECK_FALSE(cache.find("b.test", t0).has_value());
  CHECK(cache.find("a.test", t0).has_value());
  CHECK(cache.find("c.test", t0).has_value());
  CHECK(cache.find("d.test", t0).has_value());
}

TEST_CASE("bounded in addresses across names") {
  LookupCache cache(100, 5);
  cache.store("a.test", answers({1, 2}), 10, t0);
  cache.store("b.test", answers({3, 4}), 20, t0);
  cache.store("c.test", answers({5, 6, 7}), 30, t0);  // 7 > 5: a.test (soonest) goes
  CHECK(cache.addresses() == 5);
  CHECK_FALSE(cache.find("a.test", t0).has_value());
  CHECK(cache.find("b.test", t0).has_value());
  CHECK(cache.find("c.test", t0).has_value());
  // Thousands of names never hold more than the bounds.
  LookupCache flood;
  for (std::uint32_t i = 0; i < 10'000; ++i) {
    flood.store("n" + std::to_string(i) + ".test", answers({i, i + 1, i + 2}), 60, t0 + milliseconds(i));
    CHECK(flood.size() <= kLookupCacheEntries);
    CHECK(flood.addresses() <= kLookupCacheAddresses);
  }
  CHECK(flood.find("n9999.test", t0 + seconds(20)).has_value());
  CHECK_FALSE(flood.find("n0.test", t0 + seconds(20)).has_value());
}
