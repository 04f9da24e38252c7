// SPDX-License-Identifier: Apache-2.0
// The UTC calendar date and time of a count of seconds since the epoch, computed: no time zone
// file, no lock, no allocation. The log's timestamps (decision_log) and the refused-call line
// written from a signal handler (socketd/self_confine) both use it. gmtime_r would read
// /etc/localtime the first time it runs (glibc's tzset), a file a confined process should not need,
// and may take a lock, which a signal handler must not.
#pragma once

#include <cstdint>

namespace boxproxy {

struct UtcTime {
  std::int64_t year = 1970;  // proleptic Gregorian: years before 1 are 0, -1, ...
  unsigned month = 1;        // 1 to 12
  unsigned day = 1;          // 1 to 31
  unsigned hour = 0;         // 0 to 23
  unsigned minute = 0;       // 0 to 59
  unsigned second = 0;       // 0 to 59 (no leap seconds: POSIX time has none)

  friend bool operator==(const UtcTime&, const UtcTime&) = default;
};

// `seconds` since 1970-01-01T00:00:00Z (negative before it) as a UTC date and time. Exact for
// every int64_t whose year fits (about +-292 billion years); async-signal-safe.
[[nodiscard]] UtcTime utc_time(std::int64_t seconds) noexcept;

}  // namespace boxproxy
