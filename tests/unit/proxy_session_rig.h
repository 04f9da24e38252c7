// SPDX-License-Identifier: Apache-2.0
// A session (proxy/session.h) with its owner's part, as ClientConnection plays it, over the two
// pairs of proxy_test_sides.h: the box's program at `box`, the origin at `origin`. The rig follows
// each answer the session gives: close (and a mismatch, a refusal) takes the done line's end and
// counts, then closes both sides;
// response_read gives the upstream back and asks upstream_released(); exchange_done is left for
// the test to follow up (next_request()). Every answer but keep is kept in `seen`, in order.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proxy/session.h"
#include "tests/unit/proxy_test_loop.h"
#include "tests/unit/proxy_test_sides.h"

namespace boxproxy::testing {

// A session's counts, up and down (Session::Traffic without its time).
using Counts = std::pair<std::uint64_t, std::uint64_t>;

template <typename S>
struct SessionRig {
  EventBasePtr base{event_base_new()};
  Endpoint client;
  Endpoint upstream;
  UniqueFd box;     // the program in the box, at the client side
  UniqueFd origin;  // the origin, at the upstream side
  std::unique_ptr<S> session;
  std::vector<SessionNext> seen;
  bool closed = false;
  // At the close, before the sides are reset (which forgets their FIN bits): the done line's.
  std::optional<TunnelEnd> end_at_close;
  Session::Traffic traffic_at_close;

  template <typename... Args>
  explicit SessionRig(Args&&... args) {
    REQUIRE(base);
    wire_sides(base.get(), client, box, upstream, origin, this);
    session = std::make_unique<S>(client, upstream, std::forward<Args>(args)...);
  }

  void follow(SessionNext next) {
    if (next == SessionNext::keep) return;
    seen.push_back(next);
    if (next == SessionNext::exchange_done) return;
    if (next == SessionNext::response_read) {
      upstream.reset();
      return follow(session->upstream_released());
    }
    closed = true;
    end_at_close = session->end();
    traffic_at_close = session->traffic();
    client.reset();
    upstream.reset();
  }

  bool run_until_seen(SessionNext next) {
    return run_until(base.get(), [&] { return !seen.empty() && seen.back() == next; });
  }

  // Reads at `fd` (box or origin) until it holds `size` bytes (or the bound passes).
  std::string receive(int fd, std::size_t size) {
    std::string got;
    CHECK(run_until(base.get(), [&] {
      (void)read_some(fd, got);
      return got.size() >= size;
    }));
    return got;
  }

  // The done line's counts so far, up and down.
  [[nodiscard]] Counts traffic() const noexcept {
    const Session::Traffic counts = session->traffic();
    return {counts.up, counts.down};
  }

  static void on_client_read(evutil_socket_t, short, void* self) noexcept {
    auto* rig = static_cast<SessionRig*>(self);
    rig->follow(rig->session->client_readable());
  }
  static void on_client_write(evutil_socket_t, short, void* self) noexcept {
    auto* rig = static_cast<SessionRig*>(self);
    rig->follow(rig->session->writable(rig->client));
  }
  static void on_upstream_read(evutil_socket_t, short, void* self) noexcept {
    auto* rig = static_cast<SessionRig*>(self);
    rig->follow(rig->session->upstream_readable());
  }
  static void on_upstream_write(evutil_socket_t, short, void* self) noexcept {
    auto* rig = static_cast<SessionRig*>(self);
    rig->follow(rig->session->writable(rig->upstream));
  }
};

}  // namespace boxproxy::testing
