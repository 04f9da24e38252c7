// SPDX-License-Identifier: Apache-2.0
#include "proxy/timer.h"

namespace boxproxy {

#if defined(BOXPROXY_TEST_HOOKS)
namespace {
// Every live timer, for Clock::advance. The proxy runs one loop on one thread.
Timer* live_timers = nullptr;
}  // namespace
#endif

Timer::Timer(event_base* base, Callback callback, void* arg) noexcept
    : callback_(callback), arg_(arg), event_(make_event(base, -1, 0, &Timer::on_fire, this)) {
#if defined(BOXPROXY_TEST_HOOKS)
  next_ = live_timers;
  if (next_ != nullptr) next_->prev_ = this;
  live_timers = this;
#endif
}

Timer::~Timer() {
#if defined(BOXPROXY_TEST_HOOKS)
  if (prev_ != nullptr) prev_->next_ = next_;
  if (next_ != nullptr) next_->prev_ = prev_;
  if (live_timers == this) live_timers = next_;
#endif
  // event_free (the EventPtr's deleter) deletes a pending event first.
}

void Timer::arm(double seconds) noexcept {
  if (seconds <= 0) {
    disarm();
    return;
  }
  if (!event_) return;
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  armed_ = true;
  schedule(seconds);
}

void Timer::disarm() noexcept {
  if (event_) event_del(event_.get());
  armed_ = false;
}

void Timer::schedule(double seconds) noexcept {
  const timeval tv = to_timeval(seconds > 0 ? seconds : 0);
  event_add(event_.get(), &tv);
}

void Timer::on_fire(evutil_socket_t, short, void* self) noexcept {
  auto* timer = static_cast<Timer*>(self);
  timer->armed_ = false;  // before the callback, which may arm it again or destroy it
  timer->callback_(timer->arg_);
}

#if defined(BOXPROXY_TEST_HOOKS)
void Timer::clock_moved() noexcept {
  // Re-adding an event replaces its time; one now due fires on the loop's next turn, so no
  // callback runs (and no timer dies) while this list is walked.
  for (Timer* timer = live_timers; timer != nullptr; timer = timer->next_) {
    if (timer->armed_) timer->schedule(std::chrono::duration<double>(timer->deadline_ - Clock::now()).count());
  }
}

// Clock's one out-of-line member lives here, beside the list it walks.
void Clock::advance(double seconds) noexcept {
  if (!(seconds > 0)) return;
  offset_ += std::chrono::duration_cast<duration>(std::chrono::duration<double>(seconds));
  Timer::clock_moved();
}
#endif

}  // namespace boxproxy
