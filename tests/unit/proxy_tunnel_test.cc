// SPDX-License-Identifier: Apache-2.0
// The tunnel (proxy/tunnel.h) over two socketpairs on a real event_base: the box's program on one
// side, the origin on the other, the tunnel between them, driven by the loop as an owner drives it.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "proxy/event_owners.h"
#include "proxy/tunnel.h"
#include "tests/unit/proxy_test_loop.h"
#include "tests/unit/proxy_test_sides.h"

namespace boxproxy {
namespace {

// Every wait below is bounded: this many loop passes, each waiting at most kPassMs for an event.
constexpr int kMaxPasses = 5000;
constexpr int kPassMs = 2;

// The tunnel with its owner's part: the events on both sides, and closing both when it is over.
struct Rig {
  EventBasePtr base{event_base_new()};
  Endpoint client;
  Endpoint upstream;
  Tunnel tunnel{client, upstream};
  UniqueFd box;     // the program in the box, at the client side
  UniqueFd origin;  // the origin, at the upstream side
  bool over = false;

  Rig() {
    REQUIRE(base);
    testing::wire_sides(base.get(), client, box, upstream, origin, this);
  }

  void step(Tunnel::Step s) noexcept {
    if (s != Tunnel::Step::over) return;
    over = true;  // the owner closes both sides
    client.reset();
    upstream.reset();
  }
  static void on_client_read(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->step(r->tunnel.readable(r->client));
  }
  static void on_client_write(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->step(r->tunnel.writable(r->client));
  }
  static void on_upstream_read(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->step(r->tunnel.readable(r->upstream));
  }
  static void on_upstream_write(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->step(r->tunnel.writable(r->upstream));
  }

  void start(std::string_view early = {}) { step(tunnel.start(early)); }

  // One loop pass: runs what is ready, after waiting a moment for anything to become ready.
  void pass() {
    event_base_loop(base.get(), EVLOOP_NONBLOCK);
    pollfd none{-1, 0, 0};
    (void)::poll(&none, 1, kPassMs);
    event_base_loop(base.get(), EVLOOP_NONBLOCK);
  }

  template <typename Done>
  bool run_until(Done done) {
    for (int i = 0; i < kMaxPasses; ++i) {
      if (done()) return true;
      pass();
    }
    return done();
  }
};

using testing::read_some;

// Writes as much of `bytes` as `fd` takes now; returns how much.
std::size_t write_some(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n == -1) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

// Sends all of `bytes` from `from` while reading at `to`, looping the tunnel, until `to` has them.
void pump(Rig& rig, int from, int to, const std::string& bytes, std::string& received) {
  std::size_t sent = 0;
  CHECK(rig.run_until([&] {
    sent += write_some(from, std::string_view(bytes).substr(sent));
    (void)read_some(to, received);
    return received.size() >= bytes.size();
  }));
}

}  // namespace

TEST_CASE("a tunnel carries bytes both ways, small and bulk") {
  Rig rig;
  rig.start();
  REQUIRE_FALSE(rig.over);
  std::string at_origin;
  std::string at_box;
  pump(rig, rig.box.get(), rig.origin.get(), "hello", at_origin);
  CHECK(at_origin == "hello");
  pump(rig, rig.origin.get(), rig.box.get(), "world", at_box);
  CHECK(at_box == "world");

  // Bulk both ways: full reads switch a direction out of TCP (the origin's) to the pipe where the
  // kernel splices, and one out of a Unix socket (the box's) to bigger reads.
  const std::string up = pattern(3 * 1024 * 1024 + 17);
  const std::string down = pattern(2 * 1024 * 1024 + 5);
  at_origin.clear();
  at_box.clear();
  pump(rig, rig.box.get(), rig.origin.get(), up, at_origin);
  pump(rig, rig.origin.get(), rig.box.get(), down, at_box);
  CHECK(at_origin == up);
  CHECK(at_box == down);
  CHECK(rig.client.uses_pipe());
  CHECK_FALSE(rig.client.reads_in_bulk());
  CHECK(rig.upstream.reads_in_bulk());
  CHECK_FALSE(rig.upstream.uses_pipe());
  CHECK_FALSE(rig.over);
  CHECK_FALSE(rig.tunnel.end().has_value());
}

TEST_CASE("early data goes upstream first, and a FIN the client sent before the start follows it") {
  Rig rig;
  REQUIRE(::shutdown(rig.box.get(), SHUT_WR) == 0);
  rig.client.set_read_eof();  // what the owner saw while it dialled
  rig.start("early bytes");
  std::string at_origin;
  bool fin = false;
  CHECK(rig.run_until([&] { return fin = read_some(rig.origin.get(), at_origin); }));
  CHECK(at_origin == "early bytes");
  CHECK(rig.tunnel.end() == TunnelEnd::client_closed);
  CHECK_FALSE(rig.over);  // half-open: the origin may still answer
  std::string at_box;
  pump(rig, rig.origin.get(), rig.box.get(), "answer", at_box);
  CHECK(at_box == "answer");
  REQUIRE(::shutdown(rig.origin.get(), SHUT_WR) == 0);
  CHECK(rig.run_until([&] { return rig.over; }));
  CHECK(rig.tunnel.end() == TunnelEnd::client_closed);
}

TEST_CASE("a half-close is passed on as FIN after everything queued, each way") {
  for (const bool client_first : {true, false}) {
    CAPTURE(client_first);
    Rig rig;
    rig.start();
    const int first = client_first ? rig.box.get() : rig.origin.get();
    const int second = client_first ? rig.origin.get() : rig.box.get();

    // The reader at `second` reads nothing at first: the bytes queue in the tunnel and the
    // kernel; the FIN must come after the last of them, not before and not instead. (More than
    // loopback TCP's buffers take: they grow to several MiB.)
    const std::string bytes = pattern(16 * 1024 * 1024);
    std::size_t sent = 0;
    for (int i = 0; i < 50; ++i) {
      sent += write_some(first, std::string_view(bytes).substr(sent));
      rig.pass();
    }
    CHECK(sent < bytes.size());  // cannot all be sent while nobody reads
    std::string received;
    bool fin = false;
    bool shut = false;
    CHECK(rig.run_until([&] {
      sent += write_some(first, std::string_view(bytes).substr(sent));
      if (sent == bytes.size() && !shut) shut = ::shutdown(first, SHUT_WR) == 0;
      fin = read_some(second, received);
      return fin;
    }));
    CHECK(received.size() == bytes.size());
    CHECK(received == bytes);
    CHECK_FALSE(rig.over);  // the other way is still open
    CHECK(rig.tunnel.end() == (client_first ? TunnelEnd::client_closed : TunnelEnd::upstream_closed));

    std::string back;
    pump(rig, second, first, "still open", back);
    CHECK(back == "still open");
    REQUIRE(::shutdown(second, SHUT_WR) == 0);
    bool first_fin = false;
    CHECK(rig.run_until([&] { return (first_fin = read_some(first, back)) && rig.over; }));
    CHECK(rig.tunnel.end() == (client_first ? TunnelEnd::client_closed : TunnelEnd::upstream_closed));
  }
}

TEST_CASE("an error on one side ends both") {
  Rig rig;
  rig.start();
  // Bytes reach the origin's socket, which closes without reading them: the tunnel's side gets a
  // reset (ECONNRESET), not a FIN.
  const std::string bytes = "unread";
  REQUIRE(write_some(rig.box.get(), bytes) == bytes.size());
  CHECK(rig.run_until([&] {
    pollfd p{rig.origin.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }));
  rig.origin.reset();
  CHECK(rig.run_until([&] { return rig.over; }));
  CHECK(rig.tunnel.end() == TunnelEnd::error);
  // The box's side was closed too.
  std::string rest;
  CHECK(rig.run_until([&] { return read_some(rig.box.get(), rest); }));
  CHECK(rest.empty());
}

TEST_CASE("back-pressure: a peer that does not read makes the tunnel hold one read, no more") {
  Rig rig;
  rig.start();
  const std::string bytes = pattern(8 * 1024 * 1024);
  std::size_t sent = 0;
  std::size_t most_queued_out = 0;
  std::size_t most_in_pipe = 0;
  // The origin reads nothing: the box writes until the kernel stops taking its bytes.
  for (int i = 0; i < 400; ++i) {
    sent += write_some(rig.box.get(), std::string_view(bytes).substr(sent));
    rig.pass();
    most_queued_out = std::max(most_queued_out, rig.upstream.queued_bytes() - rig.upstream.pipe_bytes());
    most_in_pipe = std::max(most_in_pipe, rig.upstream.pipe_bytes());
  }
  CHECK(sent < bytes.size());                       // the box was held back
  CHECK(most_queued_out <= kBulkReadChunk);         // one read's worth in user space at most
  CHECK(most_in_pipe <= kSpliceChunk);              // or one pipe's worth in the kernel
  CHECK((rig.client.paused() & pause_peer_full) != 0); // and the client side is not read meanwhile
  CHECK_FALSE(rig.over);

  // Once the origin reads, everything arrives, in order.
  std::string received;
  CHECK(rig.run_until([&] {
    sent += write_some(rig.box.get(), std::string_view(bytes).substr(sent));
    (void)read_some(rig.origin.get(), received);
    return received.size() == bytes.size();
  }));
  CHECK(received == bytes);
  CHECK(rig.client.paused() == 0);
}

TEST_CASE("bulk bytes out of the box are read on in one wake-up while the origin takes them, up to the budget") {
  Rig rig;
  rig.start();
  // Buffers big enough that the box can write, and the upstream take, more than the budget at
  // once (forcing a size past the sysctl maximum needs CAP_NET_ADMIN: CI runs as root).
  const int big = 64 * 1024 * 1024;
  if (::setsockopt(rig.box.get(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) != 0 ||
      ::setsockopt(rig.upstream.fd(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) != 0) {
    MESSAGE("skipped: forcing socket buffer sizes needs CAP_NET_ADMIN");
    return;
  }
  // A read that fills the small buffer makes the direction bulk.
  const std::string first = pattern(kReadChunk);
  REQUIRE(write_some(rig.box.get(), first) == first.size());
  rig.step(rig.tunnel.readable(rig.client));
  REQUIRE(rig.upstream.reads_in_bulk());
  REQUIRE(rig.upstream.written() == first.size());

  const std::string bytes = pattern(kBulkBytesPerWake + kBulkBytesPerWake / 2);
  REQUIRE(write_some(rig.box.get(), bytes) == bytes.size());
  rig.step(rig.tunnel.readable(rig.client));  // one wake-up: the budget, no more
  CHECK(rig.upstream.written() == first.size() + kBulkBytesPerWake);
  CHECK_FALSE(rig.upstream.has_queued());
  rig.step(rig.tunnel.readable(rig.client));  // the next: the rest, up to the short read
  CHECK(rig.upstream.written() == first.size() + bytes.size());
  CHECK_FALSE(rig.over);

  std::string received;
  CHECK(rig.run_until([&] {
    (void)read_some(rig.origin.get(), received);
    return received.size() >= first.size() + bytes.size();
  }));
  CHECK(received == first + bytes);
}

TEST_CASE("which side ended it: the first FIN, unless an idle time-out, an error or shutdown ended it") {
  Rig rig;
  rig.start();
  CHECK_FALSE(rig.tunnel.end().has_value());
  REQUIRE(::shutdown(rig.origin.get(), SHUT_WR) == 0);
  std::string got;
  CHECK(rig.run_until([&] { return read_some(rig.box.get(), got); }));
  CHECK(rig.tunnel.end() == TunnelEnd::upstream_closed);
  rig.tunnel.end_by(TunnelEnd::idle_timeout);  // the owner's timer, before the client closed
  CHECK(rig.tunnel.end() == TunnelEnd::idle_timeout);
  rig.tunnel.end_by(TunnelEnd::shutdown);  // the first cause is kept
  CHECK(rig.tunnel.end() == TunnelEnd::idle_timeout);
  CHECK(tunnel_end_name(TunnelEnd::client_closed) == "client-closed");
  CHECK(tunnel_end_name(TunnelEnd::upstream_closed) == "upstream-closed");
  CHECK(tunnel_end_name(TunnelEnd::idle_timeout) == "idle-timeout");
  CHECK(tunnel_end_name(TunnelEnd::error) == "error");
  CHECK(tunnel_end_name(TunnelEnd::shutdown) == "shutdown");
}

TEST_CASE("the last activity moves with the bytes") {
  Rig rig;
  rig.start();
  const auto before = rig.tunnel.last_activity();
  pollfd none{-1, 0, 0};
  (void)::poll(&none, 1, 5);
  std::string got;
  pump(rig, rig.box.get(), rig.origin.get(), "tick", got);
  CHECK(rig.tunnel.last_activity() > before);
}

}  // namespace boxproxy
