// SPDX-License-Identifier: Apache-2.0
// The stats line's formatter (proxy/stats_line.h): serve's and the bridge's SIGUSR1 lines.
#include <doctest/doctest.h>

#include "proxy/stats_line.h"

namespace boxproxy {
namespace {

TEST_CASE("a stats line with no field is the event alone") { CHECK(StatsLine().text() == R"({"event":"stats"})"); }

TEST_CASE("serve's line: numbers and the refusals by class, in order") {
  const std::map<std::string, std::uint64_t, std::less<>> refused{{"not-listed", 2}, {"loopback", 1}};
  const std::string line =
      StatsLine().number("open", 1).number("used", 7).counts("refused", refused).number("up", 0).text();
  CHECK(line == R"({"event":"stats","open":1,"used":7,"refused":{"loopback":1,"not-listed":2},"up":0})");
  CHECK(StatsLine().counts("refused", {}).text() == R"({"event":"stats","refused":{}})");
}

TEST_CASE("the bridge's line: a nested object of numbers") {
  const std::string line =
      StatsLine().number("open", 0).numbers("dns", {{"queries", 3}, {"refused", 1}, {"busy", 18446744073709551615u}}).text();
  CHECK(line == R"({"event":"stats","open":0,"dns":{"queries":3,"refused":1,"busy":18446744073709551615}})");
  CHECK(StatsLine().numbers("dns", {}).text() == R"({"event":"stats","dns":{}})");
}

TEST_CASE("a class name is quoted as JSON") {
  const std::map<std::string, std::uint64_t, std::less<>> refused{{"a\"b", 1}};
  CHECK(StatsLine().counts("refused", refused).text() == R"({"event":"stats","refused":{"a\"b":1}})");
}

}  // namespace
}  // namespace boxproxy
