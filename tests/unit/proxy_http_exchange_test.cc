// SPDX-License-Identifier: Apache-2.0
// The plain-HTTP exchange (proxy/http_exchange.h) over two socketpairs on a real event_base: the
// box's program at the client side, the origin at the upstream side, the exchange between them,
// driven by the loop with its owner's part (give the upstream back, note the end).
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>

#include <optional>
#include <string>

#include "proxy/event_owners.h"
#include "proxy/http_exchange.h"
#include "tests/unit/proxy_test_loop.h"
#include "tests/unit/proxy_test_sides.h"

namespace boxproxy {
namespace {

constexpr int kMaxPasses = 2000;  // each waits at most kPassMs: every wait below is bounded
constexpr int kPassMs = 2;

struct Rig {
  EventBasePtr base{event_base_new()};
  Endpoint client;
  Endpoint upstream;
  std::optional<HttpExchange> exchange;
  UniqueFd box;
  UniqueFd origin;
  bool closed = false;
  bool refused = false;
  bool upstream_given_back = false;
  bool finished = false;

  explicit Rig(const PlainRequest& request) {
    REQUIRE(base);
    testing::wire_sides(base.get(), client, box, upstream, origin, this);
    exchange.emplace(client, upstream, request);
    update_reading(client);
    update_reading(upstream);
  }

  // The owner's part, as ClientConnection does it.
  void step(HttpExchange::Step s) noexcept {
    switch (s) {
      case HttpExchange::Step::keep:
        return;
      case HttpExchange::Step::close:
        closed = true;
        client.reset();
        upstream.reset();
        return;
      case HttpExchange::Step::refuse_bad_framing:
        refused = true;
        return;
      case HttpExchange::Step::response_read:
        upstream_given_back = true;
        upstream.reset();
        pause_reading(client, pause_no_more_wanted);
        if (!client.has_queued()) finished = true;
        return;
      case HttpExchange::Step::finished:
        finished = true;
        return;
    }
  }
  void writable(Endpoint& end) noexcept {
    if (!flush_queued(end)) return step(HttpExchange::Step::close);
    if (end.has_queued()) return;
    resume_reading(&end == &client ? upstream : client, pause_peer_full);
    if (&end == &client) step(exchange->client_drained());
  }
  static void on_client_read(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->step(r->exchange->client_readable());
  }
  static void on_client_write(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->writable(r->client);
  }
  static void on_upstream_read(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->step(r->exchange->upstream_readable());
  }
  static void on_upstream_write(evutil_socket_t, short, void* self) noexcept {
    auto* r = static_cast<Rig*>(self);
    r->writable(r->upstream);
  }

  template <typename Done>
  bool run_until(Done done) {
    for (int i = 0; i < kMaxPasses; ++i) {
      if (done()) return true;
      event_base_loop(base.get(), EVLOOP_NONBLOCK);
      pollfd none{-1, 0, 0};
      (void)::poll(&none, 1, kPassMs);
    }
    return done();
  }
};

using testing::read_some;
using testing::send_all;

PlainRequest request(BodyFraming::Kind kind = BodyFraming::Kind::none, std::uint64_t length = 0) {
  PlainRequest r;
  r.method = "GET";
  r.framing = {kind, length};
  r.client_keep_alive = true;
  return r;
}

std::string body_of(const std::string& response) {
  const std::size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

}  // namespace

TEST_CASE("a response is passed back exactly as framed, and nothing after it") {
  Rig rig(request());
  rig.step(rig.exchange->start(""));
  send_all(rig.origin.get(), "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhelloEXTRA");
  std::string got;
  CHECK(rig.run_until([&] {
    (void)read_some(rig.box.get(), got);
    return rig.finished;
  }));
  CHECK(got.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(body_of(got) == "hello");
  CHECK(rig.upstream_given_back);
  CHECK(rig.exchange->keep_alive());  // the origin's Connection: close is hop-by-hop
  CHECK(rig.exchange->request_done());
}

TEST_CASE("a request body goes up exactly as framed; what follows it is the next request") {
  Rig rig(request(BodyFraming::Kind::length, 10));
  rig.step(rig.exchange->start("12345"));
  CHECK_FALSE(rig.exchange->request_done());
  send_all(rig.box.get(), "67890");
  std::string at_origin;
  CHECK(rig.run_until([&] {
    (void)read_some(rig.origin.get(), at_origin);
    return at_origin.size() >= 10;
  }));
  CHECK(at_origin == "1234567890");
  CHECK(rig.exchange->request_done());
  CHECK(rig.exchange->take_pipelined().empty());

  Rig pipelined(request(BodyFraming::Kind::length, 3));
  pipelined.step(pipelined.exchange->start("abcGET http://next/ HTTP/1.1\r\n"));
  CHECK(pipelined.exchange->request_done());
  CHECK(pipelined.exchange->take_pipelined() == "GET http://next/ HTTP/1.1\r\n");
}

TEST_CASE("a chunked response loses its trailers; interim responses pass, but not to HTTP/1.0") {
  for (const bool http10 : {false, true}) {
    CAPTURE(http10);
    PlainRequest r = request();
    r.client_http10 = http10;
    Rig rig(r);
    rig.step(rig.exchange->start(""));
    send_all(rig.origin.get(),
             "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
             "5\r\nhello\r\n0\r\nX-Egress-Refused: forged\r\n\r\n");
    std::string got;
    CHECK(rig.run_until([&] {
      (void)read_some(rig.box.get(), got);
      return rig.finished;
    }));
    CHECK(got.starts_with(http10 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 100 Continue\r\n"));
    CHECK(got.ends_with("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
    CHECK(got.find("forged") == std::string::npos);
  }
}

TEST_CASE("a response read until close ends the keep-alive; one cut short closes") {
  Rig until_close(request());
  until_close.step(until_close.exchange->start(""));
  send_all(until_close.origin.get(), "HTTP/1.1 200 OK\r\n\r\nall of it");
  REQUIRE(::shutdown(until_close.origin.get(), SHUT_WR) == 0);
  std::string got;
  CHECK(until_close.run_until([&] {
    (void)read_some(until_close.box.get(), got);
    return until_close.finished;
  }));
  CHECK(body_of(got) == "all of it");
  CHECK_FALSE(until_close.exchange->keep_alive());

  Rig cut(request());
  cut.step(cut.exchange->start(""));
  send_all(cut.origin.get(), "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
  REQUIRE(::shutdown(cut.origin.get(), SHUT_WR) == 0);
  CHECK(cut.run_until([&] { return cut.closed; }));
  CHECK_FALSE(cut.finished);
}

TEST_CASE("a malformed request chunk is refused while no response has begun") {
  Rig rig(request(BodyFraming::Kind::chunked));
  rig.step(rig.exchange->start("5\r\nhello\r\n"));
  CHECK_FALSE(rig.refused);
  send_all(rig.box.get(), "zz\r\n");
  CHECK(rig.run_until([&] { return rig.refused; }));
}

TEST_CASE("the body cursor, per framing") {
  BodyCursor none;
  CHECK(none.feed("abc").done);
  CHECK(none.feed("abc").take == 0);
  BodyCursor length(BodyFraming{BodyFraming::Kind::length, 4});
  auto t = length.feed("ab");
  CHECK((t.take == 2 && t.pass == 2 && !t.done));
  CHECK(length.wanted_at_most(16384) == 2);
  t = length.feed("cdef");
  CHECK((t.take == 2 && t.pass == 2 && t.done));
  BodyCursor chunked(BodyFraming{BodyFraming::Kind::chunked, 0});
  t = chunked.feed("1\r\na\r\n0\r\nT: x\r\n\r\nnext");
  CHECK(t.done);
  CHECK(t.take == std::string_view("1\r\na\r\n0\r\nT: x\r\n\r\n").size());
  CHECK(t.pass == std::string_view("1\r\na\r\n0\r\n").size());
  CHECK(t.ending == "\r\n");
  BodyCursor bad(BodyFraming{BodyFraming::Kind::chunked, 0});
  CHECK(bad.feed("g\r\n").malformed);
  BodyCursor forever(BodyFraming{BodyFraming::Kind::until_close, 0});
  t = forever.feed("anything");
  CHECK((t.take == 8 && t.pass == 8 && !t.done));
}

}  // namespace boxproxy
