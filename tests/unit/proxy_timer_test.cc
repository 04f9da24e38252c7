// SPDX-License-Identifier: Apache-2.0
// The one-shot Timer (proxy/timer.h) on a real event_base, and, in builds with the test hooks,
// Clock::advance (proxy/clock.h): armed timers re-armed for their time left, the due ones firing.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <utility>

#include "proxy/clock.h"
#include "proxy/event_owners.h"
#include "proxy/timer.h"

namespace boxproxy {
namespace {

// What a timer's owner saw: how many times it fired, and what it does when it does.
struct Owner {
  int fired = 0;
  double rearm = 0;                   // > 0: arms the timer again from its callback, once
  bool destroy = false;               // destroys the timer from its callback
  std::optional<Timer> timer;

  static void on_fire(void* self) noexcept {
    auto* owner = static_cast<Owner*>(self);
    ++owner->fired;
    if (owner->destroy) {
      owner->timer.reset();
    } else if (owner->rearm > 0) {
      owner->timer->arm(std::exchange(owner->rearm, 0));
    }
  }
};

// Runs the loop until nothing is pending (every test's timers are short), a bounded number of turns.
void run(event_base* base) {
  for (int turn = 0; turn < 100; ++turn) {
    if (event_base_loop(base, EVLOOP_ONCE) == 1) return;  // nothing pending
  }
  FAIL("the loop still had events after 100 turns");
}

struct Rig {
  EventBasePtr base{event_base_new()};
  Owner owner;
  Rig() {
    REQUIRE(base);
    owner.timer.emplace(base.get(), &Owner::on_fire, &owner);
    REQUIRE(owner.timer->valid());
  }
};

TEST_CASE("Timer: fires once when its time is up, and is disarmed by then") {
  Rig rig;
  CHECK_FALSE(rig.owner.timer->armed());
  const auto started = Clock::now();
  rig.owner.timer->arm(0.02);
  CHECK(rig.owner.timer->armed());
  run(rig.base.get());
  CHECK(rig.owner.fired == 1);
  CHECK_FALSE(rig.owner.timer->armed());
  CHECK(Clock::seconds_since(started) >= 0.019);
}

TEST_CASE("Timer: arming again replaces the time; zero, a negative time and disarm() cancel") {
  for (const double cancel : {0.0, -1.0}) {
    Rig rig;
    rig.owner.timer->arm(0.01);
    rig.owner.timer->arm(cancel);
    CHECK_FALSE(rig.owner.timer->armed());
    run(rig.base.get());
    CHECK(rig.owner.fired == 0);
  }
  Rig rig;
  rig.owner.timer->arm(30);
  rig.owner.timer->arm(0.01);  // the later arming counts: the loop does not wait 30 s
  run(rig.base.get());
  CHECK(rig.owner.fired == 1);
  rig.owner.timer->arm(0.01);
  rig.owner.timer->disarm();
  run(rig.base.get());
  CHECK(rig.owner.fired == 1);
}

TEST_CASE("Timer: the callback may arm it again, or destroy it; an armed timer destroyed never fires") {
  Rig again;
  again.owner.rearm = 0.01;
  again.owner.timer->arm(0.01);
  run(again.base.get());
  CHECK(again.owner.fired == 2);

  Rig gone;
  gone.owner.destroy = true;
  gone.owner.timer->arm(0.01);
  run(gone.base.get());
  CHECK(gone.owner.fired == 1);
  CHECK_FALSE(gone.owner.timer.has_value());

  Rig cancelled;
  cancelled.owner.timer->arm(0.01);
  cancelled.owner.timer.reset();
  run(cancelled.base.get());
  CHECK(cancelled.owner.fired == 0);
}

#if defined(BOXPROXY_TEST_HOOKS)
TEST_CASE("Clock::advance: now() moves on, and the armed timers now due fire on the loop's next turn") {
  Rig rig;
  Owner later;
  later.timer.emplace(rig.base.get(), &Owner::on_fire, &later);
  rig.owner.timer->arm(100);
  later.timer->arm(300);
  const auto before = Clock::now();
  Clock::advance(200);
  CHECK(Clock::seconds_since(before) >= 200);
  CHECK(rig.owner.fired == 0);  // never from inside advance()
  const auto started = std::chrono::steady_clock::now();
  event_base_loop(rig.base.get(), EVLOOP_NONBLOCK);
  CHECK(rig.owner.fired == 1);
  CHECK(later.fired == 0);  // 100 s still to go
  CHECK(later.timer->armed());
  Clock::advance(-5);  // changes nothing
  Clock::advance(100);
  event_base_loop(rig.base.get(), EVLOOP_NONBLOCK);
  CHECK(later.fired == 1);
  // Both fired without the loop waiting for them.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}
#endif

}  // namespace
}  // namespace boxproxy
