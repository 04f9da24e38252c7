// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/inspected_connection: one inspected connection with real TLS on both sides
// (SPEC §18): requests judged one by one inside TLS, refusals answered there, keep-alive, a new
// origin connection when the old one is gone, the connection's own refusals (not tls, sni
// mismatch, upstream tls), a WebSocket relay, the bounds, and no descriptor left behind.
#include <doctest/doctest.h>

#include <string>

#include "inspect_tls_rig.h"

using namespace boxproxy;
using namespace inspect_rig;

namespace {

std::shared_ptr<const InspectEndpoint> endpoint(InspectMode mode = InspectMode::enforce) {
  auto parsed = parse_inspect_entry(kHost);
  REQUIRE(std::holds_alternative<InspectEndpoint>(parsed));
  InspectEndpoint e = std::get<InspectEndpoint>(parsed);
  std::vector<InspectRule> rules;
  for (const char* method : {"GET", "POST", "HEAD"}) {
    auto rule = make_inspect_rule(method, "/repos/acme/**", std::nullopt);
    REQUIRE(std::holds_alternative<InspectRule>(rule));
    rules.push_back(std::get<InspectRule>(rule));
  }
  e.rules = rules;
  auto deny = make_inspect_rule("*", "/repos/acme/secrets/**", std::string_view("no-secrets"));
  REQUIRE(std::holds_alternative<InspectRule>(deny));
  e.deny.push_back(std::get<InspectRule>(deny));
  e.mode = mode;
  return std::make_shared<const InspectEndpoint>(std::move(e));
}

Options options(InspectMode mode = InspectMode::enforce) {
  Options o;
  o.endpoint = endpoint(mode);
  return o;
}

std::string get(std::string_view path, std::string_view extra = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: api.test\r\n" + std::string(extra) + "\r\n";
}

bool has_header(const Message& m, std::string_view line) { return m.head.find(std::string(line) + "\r\n") != std::string::npos; }

}  // namespace

TEST_CASE("an allowed GET reaches the origin and its response comes back inside TLS") {
  const int descriptors = open_descriptors();
  {
    Options o = options();
    o.log_paths = true;
    Rig rig(o);
    const Message response = rig.exchange(get("/repos/acme/x?token=1", "Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\n"));
    CHECK(response.status == 200);
    CHECK(response.body == "ok");
    CHECK(has_header(response, "Connection: keep-alive"));
    REQUIRE(rig.origin.seen.size() == 1);
    // The origin gets the head with Host set to the decided host and no hop-by-hop header.
    CHECK(rig.origin.seen[0].head == "GET /repos/acme/x?token=1 HTTP/1.1\r\nHost: api.test\r\n\r\n");
    // The box saw the session's leaf for the host and chose http/1.1.
    const unsigned char* alpn = nullptr;
    unsigned int alpn_length = 0;
    SSL_get0_alpn_selected(rig.tls_client().ssl(), &alpn, &alpn_length);
    CHECK(std::string_view(reinterpret_cast<const char*>(alpn), alpn_length) == "http/1.1");
    CHECK(SSL_get_verify_result(rig.tls_client().ssl()) == X509_V_OK);

    REQUIRE(rig.records.size() == 1);
    const InspectorRequest& r = rig.records[0];
    CHECK(r.method == "GET");
    CHECK(r.rule == "rules[0]");
    CHECK_FALSE(r.refusal);
    CHECK(r.status == 200);
    CHECK(r.up == rig.origin.seen[0].head.size());
    CHECK(r.down > 2);
    CHECK_FALSE(r.report);
    REQUIRE(r.path);
    CHECK(*r.path == "/repos/acme/x");  // never the query

    rig.tls_client().close();
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.end_record().end == TunnelEnd::client_closed);
    CHECK_FALSE(rig.end_record().refusal);
    CHECK(rig.end_record().down == r.down);
    CHECK(rig.end_record().up == r.up);
    CHECK(rig.upstream_asks == 0);
  }
  CHECK(open_descriptors() == descriptors);
}

TEST_CASE("a denied request gets 403 with x-egress-refused, never reaches the origin, and the connection goes on") {
  Rig rig(options());
  Message refused = rig.exchange("DELETE /repos/acme/x HTTP/1.1\r\nHost: api.test\r\n\r\n", "DELETE");
  CHECK(refused.status == 403);
  CHECK(has_header(refused, "x-egress-refused: request denied"));
  CHECK(refused.head.find("connection: close") == std::string::npos);
  // SPEC §6's line alone: the endpoint says no "hint" (proxy/stages/refusal_detail.h).
  CHECK(refused.body == "egress refused: request denied\n");
  refused = rig.exchange(get("/repos/acme/secrets/key"));
  CHECK(refused.status == 403);
  refused = rig.exchange(get("/repos/other/x"));
  CHECK(refused.status == 403);
  CHECK(rig.origin.seen.empty());

  const Message next = rig.exchange(get("/repos/acme/x"));
  CHECK(next.status == 200);
  CHECK(rig.origin.seen.size() == 1);
  REQUIRE(rig.records.size() == 4);
  CHECK(rig.records[0].refusal == Reason::request_denied);
  CHECK(rig.records[0].method == "DELETE");
  CHECK(rig.records[0].rule == "-");
  CHECK(rig.records[0].status == 403);
  CHECK(rig.records[0].up == 0);
  CHECK(rig.records[1].rule == "no-secrets");
  CHECK_FALSE(rig.records[0].path);  // only with log_paths
  CHECK_FALSE(rig.records[3].refusal);
}

TEST_CASE("a refused request's body is read and dropped, and the next request is read after it") {
  Rig rig(options());
  // Both bodies arrive with their heads, and the next request right behind them.
  rig.tls_client().send("POST /repos/other/x HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello");
  rig.tls_client().send(
      "POST /repos/other/y HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  rig.tls_client().send(get("/repos/acme/z"));
  std::vector<Message> answers;
  REQUIRE(rig.run_until([&] {
    while (auto m = take_message(rig.tls_client().received(), "POST")) answers.push_back(*m);
    return answers.size() == 3;
  }));
  // The two refusals first, in order, then the answer to the request behind their bodies.
  CHECK(answers[0].status == 403);
  CHECK(answers[1].status == 403);
  CHECK(answers[2].status == 200);
  CHECK(answers[2].body == "ok");
  REQUIRE(rig.records.size() == 3);
  CHECK(rig.records[0].status == 403);
  CHECK(rig.records[1].status == 403);
  CHECK(rig.records[2].status == 200);
  REQUIRE(rig.origin.seen.size() == 1);
  CHECK(rig.origin.seen[0].head.starts_with("GET /repos/acme/z "));
}

TEST_CASE("report mode lets a denied request through, recorded with report=1 and its class") {
  Rig rig(options(InspectMode::report));
  const Message response = rig.exchange(get("/repos/acme/secrets/key?token=1"));
  CHECK(response.status == 200);
  REQUIRE(rig.origin.seen.size() == 1);
  REQUIRE(rig.records.size() == 1);
  CHECK(rig.records[0].report);
  CHECK(rig.records[0].refusal == Reason::request_denied);
  CHECK(rig.records[0].rule == "no-secrets");
  CHECK(rig.records[0].status == 200);
  // No path without log_paths (SPEC §18), report mode included.
  CHECK(!rig.records[0].path);
  // Every other refusal still holds.
  const Message bad = rig.exchange(get("/repos/acme/%2Fx"));
  CHECK(bad.status == 400);
  CHECK(rig.origin.seen.size() == 1);
}

TEST_CASE("bad paths (%2F, .., //, absolute-form) get 400 bad path; Host mismatch 400; the connection goes on") {
  Rig rig(options());
  for (const char* target : {"/repos/acme/%2F", "/repos/acme/../other", "/repos//acme/x", "/repos/acme/%2e%2e/x",
                             "https://api.test/repos/acme/x"}) {
    CAPTURE(target);
    const Message m = rig.exchange(get(target));
    CHECK(m.status == 400);
    CHECK(has_header(m, "x-egress-refused: bad path"));
  }
  Message m = rig.exchange("GET /repos/acme/x HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  CHECK(m.status == 400);
  CHECK(has_header(m, "x-egress-refused: host mismatch"));
  m = rig.exchange("GET /repos/acme/x HTTP/1.1\r\nHost: api.test:8443\r\n\r\n");
  CHECK(m.status == 400);
  m = rig.exchange("GET /repos/acme/x HTTP/1.1\r\n\r\n");
  CHECK(m.status == 400);
  CHECK(rig.origin.seen.empty());
  m = rig.exchange("GET /repos/acme/x HTTP/1.1\r\nHost: API.test:443\r\n\r\n");
  CHECK(m.status == 200);
  CHECK_FALSE(rig.records.back().refusal);
  CHECK(rig.records[0].refusal == Reason::bad_path);
  CHECK(rig.records[5].refusal == Reason::host_mismatch);
}

TEST_CASE("a POST body goes up exactly as framed: content-length and chunked") {
  Rig rig(options());
  // The origin echoes the body back as one chunk (its size in hex).
  rig.origin.respond = [](const Message& request) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", request.body.size());
    return Reply{"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size) + "\r\n" +
                 request.body + "\r\n0\r\n\r\n"};
  };
  const std::string body(70000, 'b');  // more than one TLS record, more than an output's bound
  Message m = rig.exchange("POST /repos/acme/x HTTP/1.1\r\nHost: api.test\r\nContent-Length: 70000\r\n\r\n" + body, "POST");
  CHECK(m.status == 201);
  REQUIRE(rig.origin.seen.size() == 1);
  CHECK(rig.origin.seen[0].body == body);

  const std::string chunked = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: dropped\r\n\r\n";
  m = rig.exchange("POST /repos/acme/x HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, "POST");
  CHECK(m.status == 201);
  REQUIRE(rig.origin.seen.size() == 2);
  CHECK(rig.origin.seen[1].head.find("Transfer-Encoding: chunked") != std::string::npos);
  // Chunked passes as chunked; the trailer section is dropped (SPEC §8).
  CHECK(rig.origin.seen[1].body == "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n");
  CHECK(m.body.find("hello") != std::string::npos);
  CHECK(rig.records.size() == 2);
  CHECK(rig.records[1].up == rig.origin.seen[1].head.size() + rig.origin.seen[1].body.size());
}

TEST_CASE("keep-alive: two requests share one origin connection; pipelined ones are answered in order") {
  Rig rig(options());
  CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
  CHECK(rig.exchange(get("/repos/acme/2")).status == 200);
  CHECK(rig.origin.connections() == 1);
  CHECK(rig.upstream_asks == 0);

  rig.origin.respond = [](const Message& request) {
    const std::string path = request.head.substr(4, request.head.find(' ', 4) - 4);
    return Reply{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(path.size()) + "\r\n\r\n" + path};
  };
  rig.tls_client().send(get("/repos/acme/a") + get("/repos/other/b") + get("/repos/acme/c"));
  std::vector<Message> answers;
  REQUIRE(rig.run_until([&] {
    while (auto m = take_message(rig.tls_client().received(), "GET")) answers.push_back(*m);
    return answers.size() == 3;
  }));
  CHECK(answers[0].body == "/repos/acme/a");
  CHECK(answers[1].status == 403);
  CHECK(answers[2].body == "/repos/acme/c");
  CHECK(rig.origin.connections() == 1);
}

TEST_CASE("the origin closing: the next request asks for a new connection, and gets it") {
  SUBCASE("by Connection: close") {
    Rig rig(options());
    rig.origin.respond = [](const Message&) {
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", /*close=*/true};
    };
    const Message first = rig.exchange(get("/repos/acme/1"));
    CHECK(first.status == 200);
    CHECK(has_header(first, "Connection: keep-alive"));  // the box's connection goes on
    CHECK(rig.upstream_asks == 0);
    CHECK(rig.exchange(get("/repos/acme/2")).status == 200);
    CHECK(rig.upstream_asks == 1);
    CHECK(rig.origin.connections() == 2);
    CHECK(rig.origin.seen.size() == 2);
  }
  SUBCASE("by closing a kept connection while it is idle") {
    Rig rig(options());
    CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
    rig.origin.peer(0).close();
    for (int i = 0; i < 20; ++i) rig.pass();  // the engine sees the close while idle
    CHECK(rig.exchange(get("/repos/acme/2")).status == 200);
    CHECK(rig.upstream_asks == 1);
    CHECK(rig.origin.connections() == 2);
  }
  SUBCASE("given from inside the need_upstream hook") {
    Options o = options();
    o.upstream = Options::Upstream::in_hook;
    Rig rig(o);
    rig.origin.respond = [](const Message&) {
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", /*close=*/true};
    };
    CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
    CHECK(rig.exchange(get("/repos/acme/2")).status == 200);
    CHECK(rig.exchange(get("/repos/acme/3")).status == 200);
    CHECK(rig.upstream_asks == 2);
    CHECK(rig.origin.connections() == 3);
  }
  SUBCASE("no new connection can be made: 502 dial failed, and the connection goes on") {
    Options o = options();
    o.upstream = Options::Upstream::fail;
    Rig rig(o);
    rig.origin.respond = [](const Message&) {
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", /*close=*/true};
    };
    CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
    const Message failed = rig.exchange(get("/repos/acme/2"));
    CHECK(failed.status == 502);
    CHECK(has_header(failed, "x-egress-refused: dial failed"));
    CHECK(rig.records.back().refusal == Reason::dial_failed);
    CHECK(rig.exchange(get("/repos/other/3")).status == 403);
  }
}

TEST_CASE("a reused origin connection closing before it answers: a safe request is sent again once, others are not") {
  SUBCASE("GET goes again on a new connection") {
    Rig rig(options());
    int answered = 0;
    rig.origin.respond = [&](const Message&) {
      // The second request finds the kept connection closing under it, unanswered.
      if (++answered == 2) return Reply{"", /*close=*/true};
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
    };
    CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
    CHECK(rig.exchange(get("/repos/acme/2")).status == 200);
    CHECK(rig.origin.seen.size() == 3);
    CHECK(rig.origin.connections() == 2);
    CHECK(rig.upstream_asks == 1);
    CHECK(rig.records.size() == 2);
  }
  SUBCASE("POST is not repeated: the box's connection ends") {
    Rig rig(options());
    int answered = 0;
    rig.origin.respond = [&](const Message&) {
      if (++answered == 2) return Reply{"", /*close=*/true};
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
    };
    CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
    rig.tls_client().send("POST /repos/acme/2 HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1\r\n\r\nx");
    REQUIRE(rig.run_until([&] { return rig.ended() && rig.tls_client().eof(); }));
    CHECK(rig.origin.seen.size() == 2);
    CHECK(rig.end_record().end == TunnelEnd::upstream_closed);
    REQUIRE(rig.records.size() == 2);
    CHECK(rig.records[1].status == 0);  // no answer reached the client
  }
}

TEST_CASE("interim responses pass before the final one; a client that shut down its writing still gets its answer") {
  Rig rig(options());
  rig.origin.respond = [](const Message&) {
    return Reply{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone"};
  };
  TlsPeer& client = rig.tls_client();
  client.send("POST /repos/acme/x HTTP/1.1\r\nHost: api.test\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi");
  REQUIRE(rig.run_until([&] { return client.handshake_done() && client.unsent() == 0; }));
  client.shut_down_writing();
  std::optional<Message> interim;
  std::optional<Message> final_answer;
  REQUIRE(rig.run_until([&] {
    if (!interim) interim = take_message(client.received(), "POST");
    if (interim && !final_answer) final_answer = take_message(client.received(), "POST");
    return final_answer.has_value() && client.eof();
  }));
  CHECK(interim->status == 100);
  CHECK(final_answer->status == 200);
  CHECK(final_answer->body == "done");
  CHECK(client.clean_end());
  REQUIRE(rig.run_until([&] { return rig.ended(); }));
  CHECK(rig.end_record().end == TunnelEnd::client_closed);
  CHECK(rig.records.at(0).status == 200);
}

TEST_CASE("the idle timeout ends an exchange where nothing moves") {
  Options o = options();
  o.idle_timeout = 0.2;
  Rig rig(o);
  rig.origin.respond = [](const Message&) { return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf"}; };
  rig.tls_client().send(get("/repos/acme/x"));
  REQUIRE(rig.run_until([&] { return rig.ended(); }));
  CHECK(rig.end_record().end == TunnelEnd::idle_timeout);
  REQUIRE(rig.records.size() == 1);
  CHECK(rig.records[0].status == 200);  // its head had reached the client
}

TEST_CASE("a response read to the close ends the box's connection after it") {
  Rig rig(options());
  rig.origin.respond = [](const Message&) { return Reply{"HTTP/1.1 200 OK\r\n\r\nuntil the end", /*close=*/true}; };
  TlsPeer& client = rig.tls_client();
  client.send(get("/repos/acme/x"));
  REQUIRE(rig.run_until([&] { return client.eof(); }));
  auto m = take_message(client.received(), "GET", true);
  REQUIRE(m);
  CHECK(m->body == "until the end");
  CHECK(has_header(*m, "Connection: close"));
  CHECK(client.clean_end());  // the origin ended with close_notify, and so does the proxy
  REQUIRE(rig.run_until([&] { return rig.ended(); }));
  CHECK(rig.end_record().end == TunnelEnd::upstream_closed);
}

TEST_CASE("a client whose first byte is not a TLS record is closed: not tls") {
  const int descriptors = open_descriptors();
  {
    Rig rig(options());
    const std::string plain = get("/repos/acme/x");
    REQUIRE(::send(rig.box_fd(), plain.data(), plain.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(plain.size()));
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.end_record().refusal == Reason::not_tls);
    CHECK(rig.records.empty());
    // Closed, not a byte answered (a Unix socket closed with bytes unread reads as a reset).
    char byte = 0;
    const ssize_t n = ::recv(rig.box_fd(), &byte, 1, 0);
    CHECK((n == 0 || (n == -1 && errno == ECONNRESET)));
    CHECK(rig.origin.seen.empty());
  }
  CHECK(open_descriptors() == descriptors);
}

TEST_CASE("a ClientHello naming another host is closed: sni mismatch; none, or the host in another case, is fine") {
  SUBCASE("another host") {
    Options o = options();
    o.sni = "evil.test";
    Rig rig(o);
    TlsPeer& client = rig.tls_client();
    REQUIRE(rig.run_until([&] { return rig.ended() && (client.failed() || client.eof()); }));
    CHECK_FALSE(client.handshake_done());
    CHECK(rig.end_record().refusal == Reason::sni_mismatch);
  }
  SUBCASE("another host, over TLS 1.2") {
    Options o = options();
    o.sni = "evil.test";
    o.tls12_client = true;
    Rig rig(o);
    TlsPeer& client = rig.tls_client();
    REQUIRE(rig.run_until([&] { return rig.ended() && (client.failed() || client.eof()); }));
    CHECK(rig.end_record().refusal == Reason::sni_mismatch);
  }
  SUBCASE("the right host, over TLS 1.2") {
    Options o = options();
    o.tls12_client = true;
    Rig rig(o);
    CHECK(rig.exchange(get("/repos/acme/x")).status == 200);
    CHECK(SSL_version(rig.tls_client().ssl()) == TLS1_2_VERSION);
  }
  SUBCASE("no SNI") {
    Options o = options();
    o.sni = "";
    Rig rig(o);
    CHECK(rig.exchange(get("/repos/acme/x")).status == 200);
  }
  SUBCASE("the host in capitals with a trailing dot") {
    Options o = options();
    o.sni = "API.TEST.";
    Rig rig(o);
    CHECK(rig.exchange(get("/repos/acme/x")).status == 200);
  }
}

TEST_CASE("an origin whose certificate the store does not trust: 502 upstream tls, and the connection closes") {
  const int descriptors = open_descriptors();
  {
    Options o = options();
    o.trusted_origin = false;
    Rig rig(o);
    const Message m = rig.exchange(get("/repos/acme/x"));
    CHECK(m.status == 502);
    CHECK(has_header(m, "x-egress-refused: upstream tls"));
    CHECK(has_header(m, "connection: close"));
    REQUIRE(rig.run_until([&] { return rig.ended() && rig.tls_client().eof(); }));
    CHECK(rig.end_record().refusal == Reason::upstream_tls);
    CHECK(rig.origin.seen.empty());
    REQUIRE(rig.records.size() == 1);
    CHECK(rig.records[0].refusal == Reason::upstream_tls);
    CHECK(rig.records[0].status == 502);
  }
  CHECK(open_descriptors() == descriptors);
}

TEST_CASE("an origin certificate for another name is refused too") {
  // The origin's CA is trusted, but its leaf names another host: the host name check fails it.
  Options o = options();
  o.upstream = Options::Upstream::manual;
  Rig rig(o);
  TestOrigin other(certificates().origin_leaves, "other.test");
  // The first connection is the rig's own; make the engine need a new one, and give it `other`'s.
  rig.origin.respond = [](const Message&) {
    return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", /*close=*/true};
  };
  CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
  rig.tls_client().send(get("/repos/acme/2"));
  REQUIRE(rig.run_until([&] { return rig.upstream_asks == 1; }));
  rig.connection->give_upstream(other.connect());
  std::optional<Message> m;
  REQUIRE(rig.run_until([&] {
    other.pump();
    m = take_message(rig.tls_client().received(), "GET");
    return m.has_value();
  }));
  CHECK(m->status == 502);
  CHECK(other.seen.empty());
}

TEST_CASE("a websocket upgrade is judged, and after the origin's 101 bytes are relayed both ways") {
  Rig rig(options());
  rig.origin.respond = [](const Message&) {
    return Reply{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                 false, /*echo=*/true};
  };
  // A denied upgrade is refused like any request.
  const Message denied = rig.exchange(
      "GET /repos/other/ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
  CHECK(denied.status == 403);
  const Message switched = rig.exchange(
      "GET /repos/acme/ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  CHECK(switched.status == 101);
  CHECK(has_header(switched, "Upgrade: websocket"));
  CHECK(has_header(switched, "Connection: Upgrade"));
  REQUIRE(rig.origin.seen.size() == 1);
  CHECK(rig.origin.seen[0].head.find("Upgrade: websocket\r\n") != std::string::npos);
  CHECK(rig.origin.seen[0].head.find("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n") != std::string::npos);

  TlsPeer& client = rig.tls_client();
  client.send("ping, not HTTP at all\r\n\r\n");
  REQUIRE(rig.run_until([&] { return client.received() == "echo:ping, not HTTP at all\r\n\r\n"; }));
  client.received().clear();
  client.send("again");
  REQUIRE(rig.run_until([&] { return client.received() == "echo:again"; }));

  client.close();
  REQUIRE(rig.run_until([&] { return rig.ended(); }));
  CHECK(rig.end_record().end == TunnelEnd::client_closed);
  REQUIRE(rig.records.size() == 2);
  CHECK(rig.records[1].status == 101);
  CHECK_FALSE(rig.records[1].refusal);
  CHECK(rig.records[1].down >= switched.head.size() + std::string("echo:again").size());
}

TEST_CASE("a head past max_head_bytes gets 431 head too large, then the connection closes") {
  Options o = options();
  o.max_head_bytes = 4096;
  Rig rig(o);
  const Message m = rig.exchange(get("/repos/acme/x", "X-Big: " + std::string(8000, 'a') + "\r\n"));
  CHECK(m.status == 431);
  CHECK(has_header(m, "x-egress-refused: head too large"));
  CHECK(has_header(m, "connection: close"));
  REQUIRE(rig.run_until([&] { return rig.ended(); }));
  REQUIRE(rig.records.size() == 1);
  CHECK(rig.records[0].method == "-");
  CHECK(rig.records[0].refusal == Reason::head_too_large);
  CHECK(rig.origin.seen.empty());
}

TEST_CASE("unsound framing is 400 bad framing with connection: close; a malformed head is bad request") {
  SUBCASE("Content-Length with Transfer-Encoding") {
    Rig rig(options());
    const Message m = rig.exchange(
        "POST /repos/acme/x HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "POST");
    CHECK(m.status == 400);
    CHECK(has_header(m, "x-egress-refused: bad framing"));
    CHECK(has_header(m, "connection: close"));
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.origin.seen.empty());
  }
  SUBCASE("a bare LF") {
    Rig rig(options());
    const Message m = rig.exchange("GET /repos/acme/x HTTP/1.1\nHost: api.test\r\n\r\n");
    CHECK(m.status == 400);
    CHECK(has_header(m, "x-egress-refused: bad request"));
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
  }
  SUBCASE("a chunked body that breaks its framing midway") {
    Rig rig(options());
    const Message m = rig.exchange(
        "POST /repos/acme/x HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "POST");
    CHECK(m.status == 400);
    CHECK(has_header(m, "x-egress-refused: bad framing"));
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
  }
}

TEST_CASE("set_endpoint: a new rule set from the next request; nullptr closes before the next request") {
  Rig rig(options());
  CHECK(rig.exchange(get("/repos/acme/x")).status == 200);
  // Now everything under /repos/acme is denied.
  auto stricter = std::make_shared<InspectEndpoint>(*endpoint());
  auto deny = make_inspect_rule("*", "/repos/acme/**", std::nullopt);
  stricter->deny.push_back(std::get<InspectRule>(deny));
  rig.connection->set_endpoint(stricter);
  CHECK(rig.exchange(get("/repos/acme/x")).status == 403);

  rig.connection->set_endpoint(nullptr);
  REQUIRE(rig.run_until([&] { return rig.ended() && rig.tls_client().eof(); }));
  CHECK(rig.end_record().end == TunnelEnd::shutdown);
  CHECK(rig.origin.seen.size() == 1);
}

TEST_CASE("the head timeout covers the TLS handshake and each head") {
  SUBCASE("a client that never starts") {
    Options o = options();
    o.head_timeout = 0.1;
    Rig rig(o);
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.end_record().end == TunnelEnd::idle_timeout);
  }
  SUBCASE("a handshake that stops after its first bytes") {
    Options o = options();
    o.head_timeout = 0.2;
    Rig rig(o);
    REQUIRE(::send(rig.box_fd(), "\x16\x03\x01", 3, MSG_NOSIGNAL) == 3);
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.end_record().end == TunnelEnd::idle_timeout);
    CHECK_FALSE(rig.end_record().refusal);
  }
  SUBCASE("a head that never ends") {
    Options o = options();
    o.head_timeout = 0.2;
    Rig rig(o);
    rig.tls_client().send("GET /repos/acme/x HTTP/1.1\r\nHost: api");
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.tls_client().handshake_done());
    CHECK(rig.end_record().end == TunnelEnd::idle_timeout);
    CHECK(rig.origin.seen.empty());
  }
  SUBCASE("an idle keep-alive connection") {
    Options o = options();
    o.head_timeout = 0.2;
    Rig rig(o);
    CHECK(rig.exchange(get("/repos/acme/x")).status == 200);
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
    CHECK(rig.end_record().end == TunnelEnd::idle_timeout);
  }
}

TEST_CASE("memory stays bounded: an origin whose client does not read is not read either") {
  Rig rig(options());
  constexpr std::size_t kBody = 8 * 1024 * 1024;
  rig.origin.respond = [](const Message&) {
    return Reply{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n" + std::string(kBody, 'x')};
  };
  TlsPeer& client = rig.tls_client();
  REQUIRE(rig.run_until([&] { return client.handshake_done(); }));
  client.set_reading(false);
  client.send(get("/repos/acme/big"));
  REQUIRE(rig.run_until([&] { return rig.origin.seen.size() == 1; }));
  for (int i = 0; i < 300; ++i) rig.pass();
  // What left the origin is what two sockets hold (2 x 128 KiB at most, kSocketBuffer doubled)
  // and the proxy's bounded buffers (about 64 KiB of input and 64 KiB of output, plus a record
  // or two, and OpenSSL's): well under 1 MiB of the 8 MiB.
  const std::size_t sent = rig.origin.peer(0).written();
  CHECK(sent < 1024 * 1024);
  CHECK(rig.origin.peer(0).unsent() > kBody / 2);

  client.set_reading(true);
  // The whole response: the body, and the head before it (copied only once the body could be in).
  REQUIRE(rig.run_until([&] {
    if (client.received().size() < kBody) return false;
    std::string copy = client.received();
    return take_message(copy, "GET").has_value();
  }));
  auto m = take_message(client.received(), "GET");
  REQUIRE(m);
  CHECK(m->body.size() == kBody);
  CHECK(rig.records.back().status == 200);
}

TEST_CASE("no descriptor is left behind by any kind of end") {
  const int descriptors = open_descriptors();
  {
    Rig rig(options());
    CHECK(rig.exchange(get("/repos/acme/x")).status == 200);
  }  // the owner deletes a live connection
  {
    Options o = options();
    o.head_timeout = 0.05;
    Rig rig(o);
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
  }
  {
    Options o = options();
    o.delete_on_request = true;  // the owner deletes it in the middle of delivering its hooks
    Rig rig(o);
    rig.tls_client().send(get("/repos/other/x") + get("/repos/acme/y"));
    REQUIRE(rig.run_until([&] { return !rig.connection; }));
    CHECK(rig.records.size() == 1);
    CHECK_FALSE(rig.ended());
    REQUIRE(rig.run_until([&] { return rig.tls_client().eof() || rig.tls_client().failed(); }));
  }
  {
    Rig rig(options());
    rig.origin.respond = [](const Message&) {
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", /*close=*/true};
    };
    CHECK(rig.exchange(get("/repos/acme/1")).status == 200);
    CHECK(rig.exchange(get("/repos/acme/2")).status == 200);
    rig.tls_client().close();
    REQUIRE(rig.run_until([&] { return rig.ended(); }));
  }
  CHECK(open_descriptors() == descriptors);
}

TEST_CASE("start refuses a setup it cannot serve, and closes both sockets") {
  const int descriptors = open_descriptors();
  {
    EventBasePtr base(event_base_new());
    REQUIRE(base);
    SslCtxPtr client_ctx = make_client_facing_context();
    SslCtxPtr origin_ctx = make_origin_context(store_of(certificates().origin.certificate()));
    const auto hooks = InspectedConnection::Hooks{nullptr, [](void*, const InspectorRequest&) {}, [](void*) {},
                                                  [](void*, const InspectorEnded&) {}};
    const auto setup = [&] {
      InspectedSetup s;
      s.host = kHost;
      s.endpoint = endpoint();
      s.leaf = leaf_of(certificates().session_leaves, kHost);
      s.leaf_key = certificates().session_leaves.key();
      s.client_ctx = client_ctx.get();
      s.origin_ctx = origin_ctx.get();
      return s;
    };
    const auto try_start = [&](InspectedSetup s) {
      auto [box, engine] = socket_pair();
      auto [origin, upstream] = socket_pair();
      return InspectedConnection::start(base.get(), std::move(engine), std::move(upstream), std::move(s), hooks);
    };
    CHECK(try_start(setup()) != nullptr);
    InspectedSetup no_endpoint = setup();
    no_endpoint.endpoint.reset();
    CHECK(try_start(no_endpoint) == nullptr);
    InspectedSetup no_context = setup();
    no_context.origin_ctx = nullptr;
    CHECK(try_start(no_context) == nullptr);
    InspectedSetup bad_host = setup();
    bad_host.host = "not a host";
    CHECK(try_start(bad_host) == nullptr);
    InspectedSetup no_port = setup();
    no_port.port = 0;
    CHECK(try_start(no_port) == nullptr);
  }
  CHECK(open_descriptors() == descriptors);
}
