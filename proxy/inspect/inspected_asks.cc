// SPDX-License-Identifier: Apache-2.0
// SPEC §20: an inspected connection's asks, the books (proxy/inspect/inspected_asks.h).
#include "proxy/inspect/inspected_asks.h"

#include <utility>

namespace boxproxy {

bool InspectedAsks::answer(std::uint64_t n, RequestAsked asked) noexcept {
  if (n != last_ || answer_) return false;
  answer_ = asked;
  return true;
}

void InspectedAsks::park(std::uint64_t n, H2Front& front, Clock::time_point since) {
  parked_.emplace(n, Parked{front.park_current(), since});
}

bool InspectedAsks::resume(std::uint64_t n, RequestAsked asked, H2Front& front, bool ending) {
  const auto it = parked_.find(n);
  if (it == parked_.end()) return false;
  const Parked parked = it->second;
  parked_.erase(it);
  // Answers of streams the box reset before they came round again go: a box that resets and
  // reopens streams never grows this.
  std::erase_if(resumed_, [&front](const auto& entry) { return !front.holds(entry.first); });
  // Served again before the streams that wait; gone when the box reset it meanwhile.
  if (!ending && front.resume(parked.stream)) resumed_[parked.stream] = Answer{asked, parked.since};
  return true;
}

std::optional<InspectedAsks::Answer> InspectedAsks::take(const H2Front* front) {
  if (answer_) return Answer{*std::exchange(answer_, std::nullopt), held_since_};
  if (front == nullptr || resumed_.empty()) return std::nullopt;
  const auto it = resumed_.find(front->current());
  if (it == resumed_.end()) return std::nullopt;
  const Answer answer = it->second;
  resumed_.erase(it);
  return answer;
}

}  // namespace boxproxy
