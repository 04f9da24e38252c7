// SPDX-License-Identifier: Apache-2.0
// proxy/plain_http_session: a plain-HTTP exchange as a session, over a socketpair (the box) and a
// loopback TCP connection (the origin) on a real event_base: the head and body up, the response
// back, the upstream given back as soon as the response is read, then the done line's moment and
// the keep-alive client's next request.
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <vector>

#include "proxy/plain_http_session.h"
#include "tests/unit/proxy_session_rig.h"

namespace boxproxy {
namespace {

using namespace testing;
using Rig = SessionRig<PlainHttpSession>;

constexpr std::string_view kHead = "POST /up HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
constexpr std::string_view kResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

PlainRequest request(std::uint64_t body_length, bool keep_alive) {
  PlainRequest r;
  r.method = "POST";
  r.framing = {body_length == 0 ? BodyFraming::Kind::none : BodyFraming::Kind::length, body_length};
  r.client_keep_alive = keep_alive;
  return r;
}

// The rig with the client's reads on, as the connection has them when it allows the request.
struct Plain : Rig {
  explicit Plain(const PlainRequest& r) : Rig(r) { update_reading(client); }
};

// The origin reads the request, answers kResponse, and the client has it all: the exchange done.
std::string one_exchange(Plain& rig, std::string_view early) {
  rig.follow(rig.session->start(kHead, early));
  (void)rig.receive(rig.origin.get(), kHead.size() + 5);
  send_all(rig.origin.get(), kResponse);
  CHECK(rig.run_until_seen(SessionNext::exchange_done));
  std::string got;
  (void)read_some(rig.box.get(), got);
  return got;
}

}  // namespace

TEST_CASE("plain session: the head and body go up, the response comes back; read, then released, then done") {
  Plain rig(request(5, true));
  rig.follow(rig.session->start(kHead, "hel"));
  send_all(rig.box.get(), "lo");
  CHECK(rig.receive(rig.origin.get(), kHead.size() + 5) == std::string(kHead) + "hello");
  CHECK(rig.seen.empty());

  send_all(rig.origin.get(), kResponse);
  CHECK(rig.run_until_seen(SessionNext::exchange_done));
  CHECK(rig.seen == std::vector<SessionNext>{SessionNext::response_read, SessionNext::exchange_done});
  std::string at_box;
  (void)read_some(rig.box.get(), at_box);
  const std::string rewritten = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok";
  CHECK(at_box == rewritten);
  CHECK(rig.session->end() == TunnelEnd::upstream_closed);
  CHECK(rig.traffic() == Counts{kHead.size() + 5, rewritten.size()});
}

TEST_CASE("plain session: a keep-alive client's next request is what it sent after the body") {
  Plain rig(request(5, true));
  const std::string next = "GET http://origin.test/again HTTP/1.1\r\nHost: origin.test\r\n\r\n";
  (void)one_exchange(rig, "hello" + next);
  CHECK(rig.session->next_request() == next);

  Plain idle(request(5, true));
  (void)one_exchange(idle, "hello");
  CHECK(idle.session->next_request() == std::string());  // keep-alive, nothing sent yet
}

TEST_CASE("plain session: no next request after Connection: close, nor from a client that shut down") {
  Plain close(request(5, false));
  const std::string got = one_exchange(close, "helloGET http://origin.test/ HTTP/1.1\r\n\r\n");
  CHECK(got == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  CHECK(close.session->next_request() == std::nullopt);

  Plain shut(request(5, true));
  REQUIRE(::shutdown(shut.box.get(), SHUT_WR) == 0);
  shut.client.set_read_eof();  // what the owner saw before the session began
  (void)one_exchange(shut, "hello");
  CHECK(shut.session->next_request() == std::nullopt);
}

TEST_CASE("plain session: end_by keeps the first cause; unended, the side that sent FIN") {
  Plain rig(request(5, true));
  rig.follow(rig.session->start(kHead, "he"));
  CHECK(rig.session->end() == TunnelEnd::error);  // nothing ended it yet, no FIN
  rig.session->end_by(TunnelEnd::idle_timeout);
  rig.session->end_by(TunnelEnd::shutdown);
  CHECK(rig.session->end() == TunnelEnd::idle_timeout);

  Plain left(request(5, true));
  left.follow(left.session->start(kHead, "he"));
  REQUIRE(::shutdown(left.box.get(), SHUT_WR) == 0);  // the client leaves in the middle of its body
  CHECK(left.run_until_seen(SessionNext::close));
  CHECK(left.end_at_close == TunnelEnd::client_closed);
  CHECK(left.traffic_at_close.up == kHead.size() + 2);

  Plain done(request(5, true));
  (void)one_exchange(done, "hello");
  done.session->end_by(TunnelEnd::shutdown);  // after the exchange ended by itself
  CHECK(done.session->end() == TunnelEnd::upstream_closed);
}

}  // namespace boxproxy
