// SPDX-License-Identifier: Apache-2.0
// A one-shot timer on the event loop: the owner of one libevent timer event (Transmission's
// timer.h shape), measured on the proxy's Clock (proxy/clock.h).
//
// arm(seconds) (re)starts it; when the time is up its callback runs once, from the loop, and the
// timer is disarmed by then, so the callback may arm it again, or destroy its owner (and with it
// the timer). Destroying an armed timer cancels it. One owner re-arms one timer for each phase of
// its life (a head timeout, then a connect timeout, then an idle timeout).
//
// In a build with BOXPROXY_TEST_HOOKS every live timer is on one list, so Clock::advance can
// re-arm the armed ones for what is left of their time.
#pragma once

#include "proxy/clock.h"
#include "proxy/event_owners.h"

namespace boxproxy {

class Timer {
 public:
  // Runs when the time is up. It may arm the timer again, or destroy it.
  using Callback = void (*)(void* arg) noexcept;

  // A disarmed timer. When libevent cannot allocate its event, valid() is false and arming does
  // nothing (the caller in the loop drops what needed it; at start-up it throws).
  Timer(event_base* base, Callback callback, void* arg) noexcept;
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  [[nodiscard]] bool valid() const noexcept { return event_ != nullptr; }
  // Fires once, `seconds` from now (fractions kept to the microsecond), replacing any earlier
  // arming. Zero or less disarms.
  void arm(double seconds) noexcept;
  void disarm() noexcept;
  [[nodiscard]] bool armed() const noexcept { return armed_; }

#if defined(BOXPROXY_TEST_HOOKS)
  // Test builds only (Clock::advance): re-arms every armed timer for its time left, at least none.
  static void clock_moved() noexcept;
#endif

 private:
  static void on_fire(evutil_socket_t, short, void* self) noexcept;
  // Adds the event to fire `seconds` from now (at once for zero or less).
  void schedule(double seconds) noexcept;

  Callback callback_;
  void* arg_;
  EventPtr event_;
  bool armed_ = false;
  Clock::time_point deadline_{};  // when it fires, while armed
#if defined(BOXPROXY_TEST_HOOKS)
  Timer* prev_ = nullptr;  // the list of live timers
  Timer* next_ = nullptr;
#endif
};

}  // namespace boxproxy
