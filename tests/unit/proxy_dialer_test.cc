// SPDX-License-Identifier: Apache-2.0
// proxy/dialer: the dial (SPEC §5 step 6) on a real event_base with real sockets on loopback: an
// origin listening on 127.0.0.2, and nobody on 127.0.0.3 and 127.0.0.4 at the same port (refused).
// The answers are tried in order; the slot is held until release().
#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "proxy/dialer.h"
#include "tests/unit/proxy_test_loop.h"

namespace boxproxy {
namespace {

// A listener on 127.0.0.2 at an ephemeral port.
struct Origin {
  UniqueFd listener{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  std::uint16_t port = 0;

  Origin() {
    REQUIRE(listener.valid());
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(0x7f000002);
    socklen_t length = sizeof address;
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), length) == 0);
    REQUIRE(::listen(listener.get(), 4) == 0);
    REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }

  // The connection the dial made, accepted (its backlog holds it once the dial has connected).
  UniqueFd accept_one() const {
    pollfd p{listener.get(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 1000) == 1);
    UniqueFd peer(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    REQUIRE(peer.valid());
    return peer;
  }
};

// The dialer with its owner's part: while the dial is pending, the write event calls
// connect_finished(), as the connection's does (which then moves on from its dialling phase).
struct Rig {
  Origin origin;  // holds its port on 127.0.0.2, so nobody listens on it elsewhere meanwhile
  EventBasePtr base{event_base_new()};
  Dialer dialer{UpstreamEvents{base.get(), &on_read, &on_write, this}};
  std::uint64_t open = 0;  // the tunnel slots held (ProxyStats::open)
  std::vector<IpAddress> answers;
  std::optional<Dialer::Result> result;
  int late_write_events = 0;  // write events after the dial ended (each then deleted here)

  static void on_read(evutil_socket_t, short, void*) noexcept {}
  static void on_write(evutil_socket_t, short, void* self) noexcept {
    auto* rig = static_cast<Rig*>(self);
    if (rig->result != Dialer::Result::pending) {
      // Left added, a ready write event would keep the loop from ever going idle.
      ++rig->late_write_events;
      rig->dialer.upstream().unwatch_writable();
      return;
    }
    rig->result = rig->dialer.connect_finished();
  }

  // Takes a slot and dials 127.0.0.<last> for each of `lasts` at the origin's port, in order; runs
  // the loop until the dial has ended.
  Dialer::Result dial(std::initializer_list<std::uint8_t> lasts) {
    REQUIRE(base);
    answers.clear();
    for (const std::uint8_t last : lasts) answers.push_back(IpAddress::v4(0x7f000000u | last));
    result = dialer.start(TunnelSlot(open), answers, origin.port);
    CHECK(testing::run_until(base.get(), [&] { return result != Dialer::Result::pending; }));
    return *result;
  }
};

// The address and port (host order) the upstream socket is connected to.
std::pair<std::uint32_t, std::uint16_t> peer_of(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  REQUIRE(::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  return {ntohl(address.sin_addr.s_addr), ntohs(address.sin_port)};
}

// True once `fd` reads end of stream within a second.
bool sees_fin(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 1000) != 1) return false;
  char byte;
  return ::recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
}

}  // namespace

TEST_CASE("dialer: nothing dialled yet is \"-\"; no answers at all fail at once") {
  Rig rig;
  CHECK(rig.dialer.address_text() == "-");
  CHECK(rig.dial({}) == Dialer::Result::failed);
  CHECK(rig.dialer.address_text() == "-");
  rig.dialer.release();
  CHECK(rig.open == 0);
}

TEST_CASE("dialer: a listening origin is connected, its write event no longer added") {
  Rig rig;
  CHECK(rig.dial({2}) == Dialer::Result::connected);
  CHECK(rig.dialer.address_text() == "127.0.0.2");
  CHECK(rig.open == 1);
  const Endpoint& upstream = rig.dialer.upstream();
  REQUIRE(upstream.is_open());
  CHECK(peer_of(upstream.fd()) == std::pair<std::uint32_t, std::uint16_t>{0x7f000002, rig.origin.port});
  CHECK(event_pending(upstream.write_event(), EV_WRITE, nullptr) == 0);
  CHECK(upstream.read_event() != nullptr);
  CHECK(event_pending(upstream.read_event(), EV_READ, nullptr) == 0);  // the owner adds it
  (void)rig.origin.accept_one();
}

TEST_CASE("dialer: a refused first answer, then the listening second") {
  Rig rig;
  CHECK(rig.dial({3, 2}) == Dialer::Result::connected);
  CHECK(rig.dialer.address_text() == "127.0.0.2");
  CHECK(peer_of(rig.dialer.upstream().fd()).first == 0x7f000002);
  CHECK(rig.open == 1);
}

TEST_CASE("dialer: every answer refused fails, naming the last; the slot stays held until release()") {
  Rig rig;
  CHECK(rig.dial({3, 4}) == Dialer::Result::failed);
  CHECK(rig.dialer.address_text() == "127.0.0.4");
  CHECK(rig.open == 1);  // the owner gives it back when it refuses (ClientConnection::refuse)
  rig.dialer.release();
  CHECK(rig.open == 0);
  CHECK_FALSE(rig.dialer.upstream().is_open());
}

// A failed dial closes its last socket: no write event wakes the owner again, and a second
// connect_finished() cannot take the refused socket (its error already read) for made.
TEST_CASE("dialer: a failed dial leaves no write event to wake the owner") {
  Rig rig;
  REQUIRE(rig.dial({3, 4}) == Dialer::Result::failed);
  CHECK(rig.late_write_events == 0);
}

TEST_CASE("dialer: release() gives the slot back and closes the socket; reset() forgets the address") {
  Rig rig;
  REQUIRE(rig.dial({2}) == Dialer::Result::connected);
  const UniqueFd peer = rig.origin.accept_one();
  REQUIRE(rig.open == 1);

  rig.dialer.release();
  CHECK(rig.open == 0);
  CHECK_FALSE(rig.dialer.upstream().is_open());
  CHECK(rig.dialer.upstream().write_event() == nullptr);
  CHECK(sees_fin(peer.get()));
  CHECK(rig.dialer.address_text() == "127.0.0.2");  // the done line still names it

  rig.dialer.reset();
  CHECK(rig.dialer.address_text() == "-");
  CHECK(rig.open == 0);

  // A keep-alive connection's next request dials afresh with the same dialer.
  CHECK(rig.dial({2}) == Dialer::Result::connected);
  CHECK(rig.open == 1);
  rig.dialer.reset();
  CHECK(rig.open == 0);
}

}  // namespace boxproxy
