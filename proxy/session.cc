// SPDX-License-Identifier: Apache-2.0
// What every session shares: the done line's counts (proxy/session.h).
#include "proxy/session.h"

#include "proxy/clock.h"

namespace boxproxy {

void Session::mark_start() noexcept {
  started_ = Clock::now();
  up_mark_ = upstream_.written();
  down_mark_ = client_.written() + client_.queued_bytes();
}

Session::Traffic Session::traffic() const noexcept {
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  Traffic traffic;
  traffic.up = upstream_.written() - up_mark_;
  traffic.down = client_.written() > down_mark_ ? client_.written() - down_mark_ : 0;
  traffic.ms = static_cast<std::uint64_t>(age.count());
  return traffic;
}

}  // namespace boxproxy
