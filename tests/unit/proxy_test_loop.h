// SPDX-License-Identifier: Apache-2.0
// What the session and dialer unit tests share besides their sockets (proxy_test_sides.h): a
// bounded loop over a real event_base, and the far ends' plain reads and writes.
#pragma once

#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>

#include <string>
#include <string_view>

#include "proxy/event_owners.h"

namespace boxproxy::testing {

// Every wait is bounded: at most kMaxPasses loop passes, each waiting at most kPassMs for an event.
inline constexpr int kMaxPasses = 2000;
inline constexpr int kPassMs = 2;

// Runs `base` until `done()` holds; false if it never did within the bound.
template <typename Done>
bool run_until(event_base* base, Done done) {
  for (int i = 0; i < kMaxPasses; ++i) {
    if (done()) return true;
    event_base_loop(base, EVLOOP_NONBLOCK);
    pollfd none{-1, 0, 0};
    (void)::poll(&none, 1, kPassMs);
  }
  return done();
}

// Reads what `fd` (non-blocking) has now into `into`; true once its peer has sent FIN.
inline bool read_some(int fd, std::string& into) {
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      into.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    return n == 0;
  }
}

// Sends `bytes` whole in one call (small messages: the socket's buffer takes them).
inline void send_all(int fd, std::string_view bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

}  // namespace boxproxy::testing
