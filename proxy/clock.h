// SPDX-License-Identifier: Apache-2.0
// The proxy's one notion of "now": a monotonic clock read by every timeout and activity stamp
// (the tunnel's and the exchange's last activity, the idle check), so that all of them agree.
//
// In a build with BOXPROXY_TEST_HOOKS, tests can move it forward (advance): now() jumps ahead and
// every armed Timer (proxy/timer.h) is re-armed for what is left of its time, so a timeout that
// is now due fires at once. A timeout test then advances time instead of sleeping for it. A
// release build has no offset at all: now() is std::chrono::steady_clock::now().
#pragma once

#include <chrono>

namespace boxproxy {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  [[nodiscard]] static time_point now() noexcept {
#if defined(BOXPROXY_TEST_HOOKS)
    return std::chrono::steady_clock::now() + offset_;
#else
    return std::chrono::steady_clock::now();
#endif
  }

  // Seconds from `earlier` to now.
  [[nodiscard]] static double seconds_since(time_point earlier) noexcept {
    return std::chrono::duration<double>(now() - earlier).count();
  }

#if defined(BOXPROXY_TEST_HOOKS)
  // Test builds only: moves now() `seconds` forward (a negative or zero amount changes nothing)
  // and re-arms every armed Timer for its remaining time; the ones now due fire on the loop's
  // next turn, never from inside this call.
  static void advance(double seconds) noexcept;

 private:
  static inline duration offset_{};
#endif
};

}  // namespace boxproxy
