// SPDX-License-Identifier: Apache-2.0
// SPEC §20: an inspected connection's asks (proxy/inspect/inspected_connection.h), the books only:
// the number of the last ask made, the answer to the request held over HTTP/1.1 and when that
// request was first held, and over HTTP/2 the streams parked while they wait (ask number ->
// stream) and the answers of those resumed, read when their request comes round again (stream ->
// answer). The connection asks (its ask hook) and judges; this object only remembers. At most
// kMaxParkedStreams streams wait at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "proxy/clock.h"
#include "proxy/inspect/h2_front.h"
#include "proxy/stages/inspected_request.h"

namespace boxproxy {

// SPEC §20: the most streams of one HTTP/2 connection held for the supervisor at once; one more is
// refused (asked=none). Each holds its head (max_head_bytes) and at most 64 KiB of body it had
// fed (its stream window is the front's bound already): 8 x (32 + 64) KiB = 768 KiB with the
// defaults, on top of h2_front.h's.
inline constexpr std::size_t kMaxParkedStreams = 8;

class InspectedAsks {
 public:
  // The answer for the request about to be judged, and when that request was first held.
  struct Answer {
    RequestAsked asked = RequestAsked::none;
    Clock::time_point since{};
  };

  // The number of the next ask (from 1), for a request first held at `since`.
  [[nodiscard]] std::uint64_t begin(Clock::time_point since) noexcept {
    held_since_ = since;
    return ++last_;
  }
  // The held request is judged again with `asked` without anyone being asked (asked=none).
  void answer_now(RequestAsked asked) noexcept { answer_ = asked; }
  // Whether the held request's answer has come (HTTP/1.1).
  [[nodiscard]] bool answered() const noexcept { return answer_.has_value(); }
  // An answer that came for a stream the box reset is that stream's alone: dropped.
  void forget_answer() noexcept { answer_.reset(); }
  // HTTP/1.1: ask `n`'s answer; false (dropped) when `n` is not the ask waiting, or it was answered.
  [[nodiscard]] bool answer(std::uint64_t n, RequestAsked asked) noexcept;

  // HTTP/2: whether another stream may be parked.
  [[nodiscard]] bool parking_full() const noexcept { return parked_.size() >= kMaxParkedStreams; }
  [[nodiscard]] bool any_parked() const noexcept { return !parked_.empty(); }
  // Ask `n`'s stream steps aside in `front` (with what of it the front had fed).
  void park(std::uint64_t n, H2Front& front, Clock::time_point since);
  // HTTP/2: ask `n`'s answer. Its stream is served again before those that wait (unless `ending`,
  // or the box reset it meanwhile); false (dropped) when no stream waits on ask `n`.
  [[nodiscard]] bool resume(std::uint64_t n, RequestAsked asked, H2Front& front, bool ending);

  // The answer for the request about to be judged: HTTP/1.1's held one, or `front`'s current
  // stream's (null: no front); each is taken once.
  [[nodiscard]] std::optional<Answer> take(const H2Front* front);

 private:
  struct Parked {
    std::int32_t stream = 0;
    Clock::time_point since{};
  };

  std::uint64_t last_ = 0;               // the number of the last ask made (0: none yet)
  std::optional<RequestAsked> answer_;   // while asking: the answer to ask last_, once come
  Clock::time_point held_since_{};       // while asking: when the held head ended (its line's ms counts the wait)
  std::map<std::uint64_t, Parked> parked_;
  std::map<std::int32_t, Answer> resumed_;
};

}  // namespace boxproxy
