// SPDX-License-Identifier: Apache-2.0
// proxy/tunnel_session: a tunnel as a session, over a socketpair (the box) and a loopback TCP
// connection (the origin) on a real event_base: its reply, its early bytes, its counts, the
// first-bytes gate (SPEC §16) holding or passing the client's first bytes, and why it ended.
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/tunnel_session.h"
#include "tests/unit/proxy_session_rig.h"

namespace boxproxy {
namespace {

using namespace testing;
using Rig = SessionRig<TunnelSession>;

constexpr std::string_view kReply = "HTTP/1.1 200 Connection Established\r\n\r\n";

std::unique_ptr<FirstBytesGate> gate(std::uint16_t port) {
  return std::make_unique<FirstBytesGate>("good.test", port, 1024);
}

// Runs the loop a while, reading at `fd`: for bytes that must not come.
std::string receive_for_a_while(Rig& rig, int fd) {
  std::string got;
  int passes = 0;
  (void)run_until(rig.base.get(), [&] {
    (void)read_some(fd, got);
    return ++passes > 50;
  });
  return got;
}

}  // namespace

TEST_CASE("tunnel session: the reply reaches the client and is not the tunnel's traffic") {
  Rig rig;
  rig.follow(rig.session->start(kReply, {}, nullptr));
  CHECK(rig.receive(rig.box.get(), kReply.size()) == kReply);
  CHECK(rig.traffic() == Counts{0, 0});

  send_all(rig.box.get(), "hello");
  CHECK(rig.receive(rig.origin.get(), 5) == "hello");
  send_all(rig.origin.get(), "world!");
  CHECK(rig.receive(rig.box.get(), 6) == "world!");
  CHECK(rig.traffic() == Counts{5, 6});
  CHECK(rig.seen.empty());
}

TEST_CASE("tunnel session: early bytes go up first, and count") {
  Rig rig;
  rig.follow(rig.session->start(kReply, "early bytes", nullptr));
  CHECK(rig.receive(rig.origin.get(), 11) == "early bytes");
  send_all(rig.box.get(), " then more");
  CHECK(rig.receive(rig.origin.get(), 10) == " then more");
  CHECK(rig.traffic() == Counts{21, 0});
}

TEST_CASE("tunnel session: a request naming the host passes; its first line went up while it waited") {
  Rig rig;
  rig.follow(rig.session->start(kReply, {}, gate(80)));
  CHECK(rig.receive(rig.box.get(), kReply.size()) == kReply);
  send_all(rig.box.get(), "GET / HTTP/1.1\r\nHost: good");
  CHECK(rig.receive(rig.origin.get(), 10) == "GET / HTTP");  // up to the version's slash
  CHECK(receive_for_a_while(rig, rig.origin.get()).empty());  // the rest is held
  send_all(rig.box.get(), ".test\r\n\r\n");
  const std::string rest = "/1.1\r\nHost: good.test\r\n\r\n";
  CHECK(rig.receive(rig.origin.get(), rest.size()) == rest);
  // Passed: from now on the tunnel relays, unread.
  const std::string next = "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  send_all(rig.box.get(), next);
  CHECK(rig.receive(rig.origin.get(), next.size()) == next);
  CHECK(rig.session->traffic().up == 10 + rest.size() + next.size());
  CHECK(rig.seen.empty());
}

TEST_CASE("tunnel session: a request naming another host is a host mismatch, and nothing goes up") {
  const std::string evil = "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  for (const bool early : {true, false}) {
    CAPTURE(early);
    Rig rig;
    rig.follow(rig.session->start(kReply, early ? evil : std::string(), gate(80)));
    if (!early) {
      CHECK(rig.receive(rig.box.get(), kReply.size()) == kReply);
      send_all(rig.box.get(), evil);
    }
    CHECK(rig.run_until_seen(SessionNext::host_mismatch));
    CHECK(rig.seen == std::vector<SessionNext>{SessionNext::host_mismatch});
    std::string at_origin;
    CHECK(run_until(rig.base.get(), [&] { return read_some(rig.origin.get(), at_origin); }));  // the close
    CHECK(at_origin.empty());
    CHECK(rig.session->traffic().up == 0);
  }
}

TEST_CASE("tunnel session: a ping with no line end goes up while the gate waits, and is answered") {
  Rig rig;
  rig.follow(rig.session->start(kReply, {}, gate(7)));
  CHECK(rig.receive(rig.box.get(), kReply.size()) == kReply);
  send_all(rig.box.get(), "ping");
  CHECK(rig.receive(rig.origin.get(), 4) == "ping");
  send_all(rig.origin.get(), "pong");
  CHECK(rig.receive(rig.box.get(), 4) == "pong");
  send_all(rig.box.get(), "\r\n");  // the line ends: not HTTP, the gate passes what it held
  CHECK(rig.receive(rig.origin.get(), 2) == "\r\n");
  CHECK(rig.traffic() == Counts{6, 4});
  CHECK(rig.seen.empty());
}

TEST_CASE("tunnel session: a client that half-closed before the start is judged on what it sent") {
  Rig rig;
  REQUIRE(::shutdown(rig.box.get(), SHUT_WR) == 0);
  rig.client.set_read_eof();  // what the owner saw while it dialled
  rig.follow(rig.session->start(kReply, "ping", gate(7)));
  std::string at_origin;
  CHECK(run_until(rig.base.get(), [&] { return read_some(rig.origin.get(), at_origin); }));  // bytes, then FIN
  CHECK(at_origin == "ping");
  CHECK(rig.session->end() == TunnelEnd::client_closed);
}

TEST_CASE("tunnel session: end() is error before the start, then the side that closed first") {
  for (const bool client_first : {true, false}) {
    CAPTURE(client_first);
    Rig rig;
    CHECK(rig.session->end() == TunnelEnd::error);  // never started: its reply was never sent
    rig.follow(rig.session->start(kReply, {}, nullptr));
    const int first = client_first ? rig.box.get() : rig.origin.get();
    const int second = client_first ? rig.origin.get() : rig.box.get();
    REQUIRE(::shutdown(first, SHUT_WR) == 0);
    std::string got;
    CHECK(run_until(rig.base.get(), [&] { return read_some(second, got); }));
    const TunnelEnd expected = client_first ? TunnelEnd::client_closed : TunnelEnd::upstream_closed;
    CHECK(rig.session->end() == expected);
    CHECK(rig.seen.empty());  // half-open: the other way may still carry bytes
    REQUIRE(::shutdown(second, SHUT_WR) == 0);
    CHECK(rig.run_until_seen(SessionNext::close));
    CHECK(rig.end_at_close == expected);
  }
}

TEST_CASE("tunnel session: end_by keeps the first cause") {
  Rig rig;
  rig.follow(rig.session->start(kReply, {}, nullptr));
  rig.session->end_by(TunnelEnd::idle_timeout);
  rig.session->end_by(TunnelEnd::shutdown);
  CHECK(rig.session->end() == TunnelEnd::idle_timeout);
  REQUIRE(::shutdown(rig.box.get(), SHUT_WR) == 0);
  (void)receive_for_a_while(rig, rig.origin.get());
  CHECK(rig.session->end() == TunnelEnd::idle_timeout);
}

}  // namespace boxproxy
