// SPDX-License-Identifier: Apache-2.0
// What the proxy unit tests (tunnel, plain-HTTP exchange) share: two connected pairs on a real
// event_base, as in the proxy: a Unix socketpair for the program in the box and a TCP connection
// over 127.0.0.1 for the origin (the relay treats the two kinds differently: it splices only out
// of TCP), with the proxy's ends wired to an owner's trampolines as ClientConnection wires them.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <utility>

#include "proxy/event_owners.h"
#include "proxy/relay.h"

namespace boxproxy::testing {

inline std::pair<UniqueFd, UniqueFd> stream_pair() {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// A connected TCP pair over 127.0.0.1 (a listener on an ephemeral port, closed once accepted),
// both ends non-blocking.
inline std::pair<UniqueFd, UniqueFd> tcp_pair() {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(listener.valid());
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), length) == 0);
  REQUIRE(::listen(listener.get(), 1) == 0);
  REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0);
  UniqueFd near(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(near.valid());
  REQUIRE(::connect(near.get(), reinterpret_cast<sockaddr*>(&address), length) == 0);
  UniqueFd far(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  REQUIRE(far.valid());
  REQUIRE(::fcntl(near.get(), F_SETFL, O_NONBLOCK) == 0);
  return {std::move(near), std::move(far)};
}

// Makes both pairs and the four events. `Owner` has static on_client_read, on_client_write,
// on_upstream_read and on_upstream_write trampolines taking `owner`.
template <typename Owner>
void wire_sides(event_base* base, Endpoint& client, UniqueFd& box, Endpoint& upstream, UniqueFd& origin,
                Owner* owner) {
  auto [c, b] = stream_pair();
  auto [u, o] = tcp_pair();
  box = std::move(b);
  origin = std::move(o);
  REQUIRE(client.open(base, c.release(), &Owner::on_client_read, &Owner::on_client_write, owner));
  REQUIRE(upstream.open(base, u.release(), &Owner::on_upstream_read, &Owner::on_upstream_write, owner));
}

}  // namespace boxproxy::testing
