// SPDX-License-Identifier: Apache-2.0
#include "proxy/utc_time.h"

namespace boxproxy {

// Days since the epoch to a civil date by eras of 400 years (146,097 days), counting years from
// March so that the leap day is the last of a year: the month and day then follow from the day
// of the year with one division (the proleptic Gregorian calendar, as in RFC 3339).
UtcTime utc_time(std::int64_t seconds) noexcept {
  constexpr std::int64_t kSecondsPerDay = 86400;
  constexpr std::int64_t kDaysPerEra = 146097;
  std::int64_t days = seconds / kSecondsPerDay;
  std::int64_t rest = seconds % kSecondsPerDay;
  if (rest < 0) {
    rest += kSecondsPerDay;
    --days;
  }
  days += 719468;  // days from 0000-03-01 to 1970-01-01
  const std::int64_t era = (days >= 0 ? days : days - (kDaysPerEra - 1)) / kDaysPerEra;
  const std::int64_t day_of_era = days - era * kDaysPerEra;  // 0 to 146096
  const std::int64_t year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t month_index = (5 * day_of_year + 2) / 153;  // 0 is March
  UtcTime time;
  time.day = static_cast<unsigned>(day_of_year - (153 * month_index + 2) / 5 + 1);
  time.month = static_cast<unsigned>(month_index < 10 ? month_index + 3 : month_index - 9);
  time.year = year_of_era + era * 400 + (time.month <= 2 ? 1 : 0);
  time.hour = static_cast<unsigned>(rest / 3600);
  time.minute = static_cast<unsigned>(rest / 60 % 60);
  time.second = static_cast<unsigned>(rest % 60);
  return time;
}

}  // namespace boxproxy
