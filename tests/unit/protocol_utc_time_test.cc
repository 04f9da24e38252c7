// SPDX-License-Identifier: Apache-2.0
#include "proxy/utc_time.h"

#include <ctime>

#include <doctest/doctest.h>

namespace boxproxy {
namespace {

UtcTime from_gmtime(std::int64_t seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm parts{};
  REQUIRE(gmtime_r(&t, &parts) != nullptr);
  return UtcTime{parts.tm_year + 1900LL,
                 static_cast<unsigned>(parts.tm_mon + 1),
                 static_cast<unsigned>(parts.tm_mday),
                 static_cast<unsigned>(parts.tm_hour),
                 static_cast<unsigned>(parts.tm_min),
                 static_cast<unsigned>(parts.tm_sec)};
}

TEST_CASE("utc_time: fixed points of the calendar") {
  CHECK(utc_time(0) == UtcTime{1970, 1, 1, 0, 0, 0});
  CHECK(utc_time(-1) == UtcTime{1969, 12, 31, 23, 59, 59});
  CHECK(utc_time(951782400) == UtcTime{2000, 2, 29, 0, 0, 0});   // a leap day in a year divisible by 400
  CHECK(utc_time(4107542400) == UtcTime{2100, 3, 1, 0, 0, 0});   // 2100 is no leap year: Feb 28, then Mar 1
  CHECK(utc_time(4107542399) == UtcTime{2100, 2, 28, 23, 59, 59});
  CHECK(utc_time(2147483647) == UtcTime{2038, 1, 19, 3, 14, 7});  // past 32-bit time_t
  CHECK(utc_time(1796083200) == UtcTime{2026, 12, 1, 0, 0, 0});
  CHECK(utc_time(-62135596800) == UtcTime{1, 1, 1, 0, 0, 0});
  CHECK(utc_time(-62135596801) == UtcTime{0, 12, 31, 23, 59, 59});
}

// Every day from 1600 to 2500 (both directions of the epoch, four centuries of leap rules), at a
// time of day that moves through every hour, minute and second: the same as glibc's gmtime_r.
TEST_CASE("utc_time: agrees with gmtime_r on every day from 1600 to 2500") {
  constexpr std::int64_t kFirst = -11676096000;  // 1600-01-01
  constexpr std::int64_t kLast = 16725225600;    // 2500-01-01
  std::int64_t checked = 0;
  std::int64_t disagreements = 0;
  for (std::int64_t day = kFirst; day < kLast; day += 86400) {
    const std::int64_t seconds = day + (checked * 7919) % 86400;  // 7919 is prime: every second of a day in turn
    if (!(utc_time(seconds) == from_gmtime(seconds))) ++disagreements;
    ++checked;
  }
  CHECK(checked > 328000);
  CHECK(disagreements == 0);
}

}  // namespace
}  // namespace boxproxy
