// What the proxy unit tests (tunnel, plain-HTTP exchange) share: two socketpairs on a real
// event_base, one for the program in the box and one for the origin, with the proxy's ends wired
// to an owner's trampolines as ClientConnection wires them.
#pragma once

#include <doctest/doctest.h>
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

// Makes both socketpairs and the four events. `Owner` has static on_client_read, on_client_write,
// on_upstream_read and on_upstream_write trampolines taking `owner`.
template <typename Owner>
void wire_sides(event_base* base, Endpoint& client, UniqueFd& box, Endpoint& upstream, UniqueFd& origin,
                Owner* owner) {
  auto [c, b] = stream_pair();
  auto [u, o] = stream_pair();
  client.fd = std::move(c);
  box = std::move(b);
  upstream.fd = std::move(u);
  origin = std::move(o);
  client.read_event = make_event(base, client.fd.get(), EV_READ | EV_PERSIST, &Owner::on_client_read, owner);
  client.write_event = make_event(base, client.fd.get(), EV_WRITE | EV_PERSIST, &Owner::on_client_write, owner);
  upstream.read_event = make_event(base, upstream.fd.get(), EV_READ | EV_PERSIST, &Owner::on_upstream_read, owner);
  upstream.write_event = make_event(base, upstream.fd.get(), EV_WRITE | EV_PERSIST, &Owner::on_upstream_write, owner);
  REQUIRE((client.read_event && client.write_event && upstream.read_event && upstream.write_event));
}

}  // namespace boxproxy::testing
