// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/inspector: what the inspector process does with each message serve sends it
// (proxy/inspector_messages.h): start (read_start), endpoints, connection, dialled, secret and
// placeholder, and what it reports back (ready, request, dial, ended). serve is played by the
// test at the other end of a real channel (make_channel_pair: a SOCK_SEQPACKET socketpair, with
// descriptors passed over it); the connections it hands over are real TLS, to a real TLS origin
// (inspect_tls_rig.h), all on one thread with bounded waits.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "inspect_tls_rig.h"
#include "proxy/fd_channel.h"
#include "proxy/inspect/inspector.h"
#include "proxy/inspector_messages.h"
#include "table/host_list.h"

using namespace boxproxy;
using namespace inspect_rig;

namespace {

constexpr int kSendMs = 1000;
const std::string kSecretValue = "s3cret-value-for-the-origin";

// A pipe's read end holding `text` and then its end: the trust store as serve hands it over.
UniqueFd file_of(const std::string& text) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  REQUIRE(::write(write_end.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  return read_end;
}

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  REQUIRE(PEM_write_bio_X509(bio.get(), cert) == 1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

void send_order(int serve_end, const InspectorOrder& order, std::vector<int> fds = {}) {
  std::string error;
  INFO(error);
  REQUIRE(send_channel_message(serve_end, serve_message(order), fds, kSendMs, error));
}

// The start message serve sends, with `trust_pem` as the trust store, read by read_start.
InspectorSetup started(int serve_end, int inspector_end, const std::string& endpoints_json,
                       const std::string& trust_pem) {
  InspectorStart start;
  start.label = "inspector-test";
  start.endpoints_json = endpoints_json;
  start.head_timeout = 5;
  UniqueFd trust = file_of(trust_pem);
  send_order(serve_end, start, {trust.get()});
  return read_start(inspector_end);
}

std::string endpoints_json(const std::string& more = "") { return R"([{"host":"api.test")" + more + "}]"; }

// serve's side of a running inspector: the channel's other end, the loop, the box's TLS clients
// and the origin, and every report the inspector sent.
class Serve {
 public:
  explicit Serve(const std::string& endpoints = endpoints_json()) : base_(event_base_new()) {
    REQUIRE(base_);
    UniqueFd inspector_end;
    REQUIRE(make_channel_pair(serve_end_, inspector_end));
    InspectorSetup setup = started(serve_end_.get(), inspector_end.get(), endpoints,
                                   pem_of(certificates().origin.certificate()));
    const auto parsed = read_endpoints(endpoints);
    REQUIRE(!parsed.empty());
    entry = entry_text(parsed[0]->host);
    inspector.emplace(base_.get(), std::move(inspector_end), std::move(setup));
    REQUIRE(inspector->send_ready());
    const InspectorReport ready = next_report();
    REQUIRE(std::holds_alternative<InspectorReady>(ready));
    BioPtr bio(BIO_new_mem_buf(std::get<InspectorReady>(ready).ca_pem.data(), -1));
    ca.reset(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    REQUIRE(ca);
  }

  ~Serve() {
    clients_.clear();
    inspector.reset();  // its connections first, before the loop they use
    for (int i = 0; i < 5; ++i) event_base_loop(base_.get(), EVLOOP_NONBLOCK);
  }

  [[nodiscard]] int channel() const { return serve_end_.get(); }
  void close_channel() { serve_end_.reset(); }

  // Hands over a connection `id` to `endpoint` (this rig's by default): a box's TLS client on one
  // end, the origin on the other. The client, to send requests through.
  TlsPeer& connect(std::uint64_t id, std::string endpoint = {}) {
    auto [box_end, inspector_side] = socket_pair();
    UniqueFd upstream = origin.connect();
    send_order(serve_end_.get(), InspectorConnection{id, kHost, 443, endpoint.empty() ? entry : endpoint},
               {inspector_side.get(), upstream.get()});
    clients_.push_back(std::make_unique<TlsPeer>(std::move(box_end), client_ssl(), /*server=*/false));
    return *clients_.back();
  }

  // Connection `id` makes one request and closes: its origin connection is kept (pooled).
  void keep_one(std::uint64_t id) {
    TlsPeer& box = connect(id);
    CHECK(get(box, "/one").status == 200);
    CHECK(next<InspectorRequest>().id == id);
    box.close_when_sent();
    CHECK(next<InspectorEnded>().pooled);
  }

  // Hands over a connection `id` with the client's socket alone: taking over the kept origin
  // connection `pooled`, or none (it asks for a dial).
  TlsPeer& connect_alone(std::uint64_t id, std::optional<std::uint64_t> pooled) {
    auto [box_end, inspector_side] = socket_pair();
    InspectorConnection what{id, kHost, 443, entry};
    what.pooled = pooled;
    send_order(serve_end_.get(), what, {inspector_side.get()});
    clients_.push_back(std::make_unique<TlsPeer>(std::move(box_end), client_ssl(), /*server=*/false));
    return *clients_.back();
  }

  // One loop pass, the clients and the origin pumped, and whatever the inspector sent taken.
  void pass() {
    event_base_loop(base_.get(), EVLOOP_NONBLOCK);
    for (auto& client : clients_) client->pump();
    origin.pump();
    std::string error;
    while (auto message = receive_channel_message(serve_end_.get(), 0, error)) {
      auto parsed = parse_inspector_report(message->bytes);
      INFO(message->bytes);
      REQUIRE(std::holds_alternative<InspectorReport>(parsed));
      reports.push_back(std::get<InspectorReport>(parsed));
    }
    pollfd none{-1, 0, 0};
    (void)::poll(&none, 1, kPassMs);
  }

  template <typename Done>
  bool run_until(Done done) {
    return pass_until(done, [&] { pass(); });
  }

  // The next report not taken yet (the test fails when none comes in time).
  InspectorReport next_report() {
    REQUIRE(run_until([&] { return taken_ < reports.size(); }));
    return reports[taken_++];
  }

  // The response to a GET of `path` on `client`, with `extra` header lines.
  Message get(TlsPeer& client, const std::string& path, const std::string& extra = "") {
    client.send("GET " + path + " HTTP/1.1\r\nHost: api.test\r\n" + extra + "\r\n");
    std::optional<Message> response;
    REQUIRE(run_until([&] {
      response = take_message(client.received(), "GET", client.eof());
      return response.has_value() || client.failed() || client.eof();
    }));
    REQUIRE(response);
    return *response;
  }

  // The next report of `Kind`, skipping none: it must be the next one.
  template <typename Kind>
  Kind next() {
    const InspectorReport report = next_report();
    REQUIRE(std::holds_alternative<Kind>(report));
    return std::get<Kind>(report);
  }

  // True when nothing more is reported within a few passes.
  bool quiet() {
    for (int i = 0; i < 20; ++i) pass();
    return taken_ == reports.size();
  }

 private:
  SslPtr client_ssl() {
    SslCtxPtr context(SSL_CTX_new(TLS_client_method()));
    REQUIRE(context);
    SSL_CTX_set_cert_store(context.get(), store_of(ca.get()).release());
    SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
    SslPtr ssl(SSL_new(context.get()));
    REQUIRE(ssl);
    REQUIRE(SSL_set_tlsext_host_name(ssl.get(), kHost) == 1);
    REQUIRE(SSL_set1_host(ssl.get(), kHost) == 1);
    REQUIRE(SSL_set_alpn_protos(ssl.get(), reinterpret_cast<const unsigned char*>(kAlpnHttp11.data()),
                                static_cast<unsigned int>(kAlpnHttp11.size())) == 0);
    return ssl;
  }

  EventBasePtr base_;
  UniqueFd serve_end_;
  std::vector<std::unique_ptr<TlsPeer>> clients_;
  std::size_t taken_ = 0;

 public:
  TestOrigin origin{certificates().origin_leaves};
  std::string entry;  // the endpoint's host entry, as a connection message names it
  X509Ptr ca;         // the session's CA, from "ready"
  std::vector<InspectorReport> reports;
  std::optional<Inspector> inspector;  // last: it goes first
};

}  // namespace

TEST_CASE("read_start: the start message sets up the CA, the trust store, the endpoints and the bounds") {
  UniqueFd serve_end;
  UniqueFd inspector_end;
  REQUIRE(make_channel_pair(serve_end, inspector_end));
  const InspectorSetup setup = started(serve_end.get(), inspector_end.get(), endpoints_json(R"(,"mode":"report")"),
                                       pem_of(certificates().origin.certificate()));
  REQUIRE(setup.endpoints.size() == 1);
  CHECK(entry_text(setup.endpoints[0]->host) == "api.test:443");
  CHECK(setup.endpoints[0]->mode == InspectMode::report);
  CHECK(setup.head_timeout == 5);
  CHECK(setup.client_ctx);
  CHECK(setup.origin_ctx);
  CHECK(setup.ca.certificate_pem().starts_with("-----BEGIN CERTIFICATE-----"));
}

TEST_CASE("read_start: what is not a good start is refused, naming why") {
  UniqueFd serve_end;
  UniqueFd inspector_end;
  REQUIRE(make_channel_pair(serve_end, inspector_end));
  const std::string trust = pem_of(certificates().origin.certificate());
  const auto refused = [&](const std::string& message, std::vector<int> fds) {
    std::string error;
    REQUIRE(send_channel_message(serve_end.get(), message, fds, kSendMs, error));
    try {
      (void)read_start(inspector_end.get());
    } catch (const std::runtime_error& why) {
      return std::string(why.what());
    }
    return std::string("accepted");
  };
  UniqueFd one = file_of(trust);
  CHECK(refused(serve_message(InspectorEndpoints{endpoints_json()}), {one.get()}) == "the first message is not start");
  CHECK(refused("{\"op\":\"start\"", {one.get()}).starts_with("a bad start message: "));
  InspectorStart start;
  start.label = "inspector-test";
  start.endpoints_json = endpoints_json();
  UniqueFd two = file_of(trust);
  CHECK(refused(serve_message(start), {one.get(), two.get()}) == "start carries the wrong descriptors");
  CHECK(refused(serve_message(start), {}) == "start carries the wrong descriptors");
  UniqueFd empty = file_of("no certificate here\n");
  CHECK(refused(serve_message(start), {empty.get()}) == "the trust store holds no certificate");
  UniqueFd trust_again = file_of(trust);
  start.endpoints_json = R"([{"host":"api.test","rules":"all"}])";  // the config's checks hold for serve's too
  const std::string bad_endpoints = refused(serve_message(start), {trust_again.get()});
  INFO(bad_endpoints);
  CHECK(bad_endpoints.starts_with("the endpoints serve sent"));
}

TEST_CASE("ready carries the CA; a connection is inspected, its requests and its end reported, its id free again") {
  Serve serve;
  TlsPeer& client = serve.connect(11);
  const Message response = serve.get(client, "/one");
  CHECK(response.status == 200);
  REQUIRE(serve.origin.seen.size() == 1);
  const auto request = serve.next<InspectorRequest>();
  CHECK(request.id == 11);
  CHECK(request.method == "GET");
  CHECK(request.status == 200);
  CHECK_FALSE(request.refusal);
  client.close_when_sent();
  const auto ended = serve.next<InspectorEnded>();
  CHECK(ended.id == 11);
  CHECK(ended.end == TunnelEnd::client_closed);
  // Its id is free again: a new connection under it is served, not refused as a duplicate.
  TlsPeer& again = serve.connect(11);
  CHECK(serve.get(again, "/two").status == 200);
  CHECK(serve.next<InspectorRequest>().id == 11);
  CHECK_FALSE(serve.inspector->finished());
}

TEST_CASE("a connection the inspector cannot take is ended at once, with its class") {
  Serve serve;
  SUBCASE("the wrong descriptors: none") {
    send_order(serve.channel(), InspectorConnection{5, kHost, 443, serve.entry}, {});
    const auto ended = serve.next<InspectorEnded>();
    CHECK(ended.id == 5);
    CHECK(ended.end == TunnelEnd::error);
    CHECK(ended.refusal == Reason::bad_request);
  }
  SUBCASE("the wrong descriptors: an upstream socket beside a kept origin connection named") {
    auto [box_end, inspector_side] = socket_pair();
    auto [origin_end, upstream_side] = socket_pair();
    InspectorConnection what{5, kHost, 443, serve.entry};
    what.pooled = 4;
    send_order(serve.channel(), what, {inspector_side.get(), upstream_side.get()});
    const auto ended = serve.next<InspectorEnded>();
    CHECK(ended.id == 5);
    CHECK(ended.refusal == Reason::bad_request);
  }
  SUBCASE("an endpoint it does not have (removed meanwhile): nothing of it goes through") {
    (void)serve.connect(6, "other.test");
    const auto ended = serve.next<InspectorEnded>();
    CHECK(ended.id == 6);
    CHECK(ended.refusal == Reason::request_denied);
    CHECK(serve.origin.seen.empty());
  }
  SUBCASE("an id already in use") {
    (void)serve.connect(7);
    (void)serve.connect(7);
    const auto ended = serve.next<InspectorEnded>();
    CHECK(ended.id == 7);
    CHECK(ended.refusal == Reason::bad_request);
  }
  CHECK_FALSE(serve.inspector->finished());
}

TEST_CASE("a kept origin connection: reported pooled, taken over by the connection serve names, closed on its word") {
  Serve serve;
  serve.keep_one(1);
  // The next connection names it and brings no upstream socket: the kept one carries its request.
  TlsPeer& second = serve.connect_alone(2, 1);
  CHECK(serve.get(second, "/two").status == 200);
  CHECK(serve.next<InspectorRequest>().id == 2);
  CHECK(serve.origin.connections() == 1);
  second.close_when_sent();
  CHECK(serve.next<InspectorEnded>().pooled);  // kept again, under 2 now
  // serve asks for it closed: closed, then said.
  send_order(serve.channel(), InspectorEvict{2});
  CHECK(serve.next<InspectorUnpooled>().id == 2);
  CHECK(serve.run_until([&] { return serve.origin.peer(0).eof(); }));
  CHECK(serve.quiet());
  // A connection naming one that is gone (its close crossed the hand-over) asks for a dial.
  TlsPeer& third = serve.connect_alone(3, 2);
  third.send("GET /three HTTP/1.1\r\nHost: api.test\r\n\r\n");
  CHECK(serve.next<InspectorDial>().id == 3);
  UniqueFd upstream = serve.origin.connect();
  send_order(serve.channel(), InspectorDialled{3, true}, {upstream.get()});
  std::optional<Message> response;
  CHECK(serve.run_until([&] {
    response = take_message(third.received(), "GET", third.eof());
    return response.has_value() || third.eof();
  }));
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(serve.next<InspectorRequest>().id == 3);
  third.close_when_sent();
  CHECK(serve.next<InspectorEnded>().pooled);
  // The origin closes the kept one: said to serve, which frees its slot.
  serve.origin.peer(1).close_when_sent();
  CHECK(serve.next<InspectorUnpooled>().id == 3);
  CHECK_FALSE(serve.inspector->finished());
}

TEST_CASE("a kept origin connection closes with a connection serve gives it to that is refused, and on a secret's change") {
  Serve serve;
  serve.keep_one(1);
  SUBCASE("refused (its endpoint removed meanwhile): serve frees the slot on this end, so it must not stay open") {
    auto [box_end, inspector_side] = socket_pair();
    InspectorConnection what{2, kHost, 443, "other.test"};
    what.pooled = 1;
    send_order(serve.channel(), what, {inspector_side.get()});
    const auto ended = serve.next<InspectorEnded>();
    CHECK(ended.id == 2);
    CHECK(ended.refusal == Reason::request_denied);
    CHECK(serve.run_until([&] { return serve.origin.peer(0).eof(); }));
  }
  SUBCASE("a secret revoked: every kept one closes, each said") {
    send_order(serve.channel(), InspectorSecret{"api", std::nullopt});
    CHECK(serve.next<InspectorUnpooled>().id == 1);
    CHECK(serve.run_until([&] { return serve.origin.peer(0).eof(); }));
  }
  CHECK_FALSE(serve.inspector->finished());
}

TEST_CASE("an HTTP/1.0 box that does not keep alive: the origin was asked to close, so its connection is not kept") {
  Serve serve;
  TlsPeer& box = serve.connect(1);
  // The test origin answers without echoing the close (as some do): kept, had the request not asked.
  box.send("GET /one HTTP/1.0\r\nHost: api.test\r\n\r\n");
  CHECK(serve.run_until([&] { return box.eof(); }));
  CHECK(serve.next<InspectorRequest>().id == 1);
  CHECK_FALSE(serve.next<InspectorEnded>().pooled);
}

TEST_CASE("endpoints: a live change applies to the next request and the next connection") {
  Serve serve;
  TlsPeer& client = serve.connect(1);
  CHECK(serve.get(client, "/before").status == 200);
  CHECK(serve.next<InspectorRequest>().rule == "-");
  // Now only /allowed/** is: the open connection's next request is judged by the new rules.
  send_order(serve.channel(), InspectorEndpoints{endpoints_json(R"(,"rules":[{"method":"GET","path":"/allowed/**"}])")});
  CHECK(serve.get(client, "/before").status == 403);
  const auto denied = serve.next<InspectorRequest>();
  CHECK(denied.refusal == Reason::request_denied);
  CHECK(serve.get(client, "/allowed/x").status == 200);
  CHECK(serve.next<InspectorRequest>().rule == "rules[0]");
  CHECK(serve.origin.seen.size() == 2);
  // The endpoint gone: a new connection to it is refused; the open one closes before its next request.
  send_order(serve.channel(), InspectorEndpoints{R"([{"host":"elsewhere.test"}])"});
  (void)serve.connect(2);
  const auto ended = serve.next<InspectorEnded>();
  CHECK(ended.id == 2);
  CHECK(ended.refusal == Reason::request_denied);
  client.send("GET /allowed/x HTTP/1.1\r\nHost: api.test\r\n\r\n");
  const auto closed = serve.next<InspectorEnded>();
  CHECK(closed.id == 1);
  CHECK(serve.origin.seen.size() == 2);
}

TEST_CASE("secret: set, it is injected into the next request; revoked, it is not sent") {
  Serve serve(endpoints_json(R"(,"inject":{"x-key":"{api}"})"));
  send_order(serve.channel(), InspectorSecret{"api", SecretText(kSecretValue)});
  TlsPeer& client = serve.connect(3);
  CHECK(serve.get(client, "/a").status == 200);
  REQUIRE(serve.origin.seen.size() == 1);
  CHECK(serve.origin.seen[0].head.find("x-key: " + kSecretValue + "\r\n") != std::string::npos);
  CHECK(serve.next<InspectorRequest>().inject.text() == "x-key");
  send_order(serve.channel(), InspectorSecret{"api", std::nullopt});
  (void)serve.get(client, "/b");
  const auto after = serve.next<InspectorRequest>();
  CHECK(after.inject.empty());
  CHECK(after.refusal == Reason::secret_missing);  // never sent without the credential it was to carry
  CHECK(serve.origin.seen.size() == 1);
}

TEST_CASE("placeholder: the box's stand-in is swapped for the secret, and the swap reported") {
  Serve serve(endpoints_json(R"(,"secrets":["api"])"));
  std::array<std::uint8_t, kPlaceholderRandomBytes> random{};
  random.fill(0xab);
  const std::string placeholder = make_placeholder("api", random);
  send_order(serve.channel(), InspectorSecret{"api", SecretText(kSecretValue)});
  send_order(serve.channel(), InspectorPlaceholder{"api", placeholder});
  TlsPeer& client = serve.connect(4);
  CHECK(serve.get(client, "/p", "authorization: Bearer " + placeholder + "\r\n").status == 200);
  REQUIRE(serve.origin.seen.size() == 1);
  CHECK(serve.origin.seen[0].head.find("Bearer " + kSecretValue + "\r\n") != std::string::npos);
  CHECK(serve.origin.seen[0].head.find(placeholder) == std::string::npos);
  CHECK(serve.next<InspectorRequest>().swap.text().starts_with("api@"));
}

TEST_CASE("dial and dialled: an origin gone between requests is dialled again by serve") {
  Serve serve;
  serve.origin.respond = [](const Message&) {
    return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", /*close=*/true};
  };
  TlsPeer& client = serve.connect(8);
  CHECK(serve.get(client, "/first").status == 200);
  CHECK(serve.next<InspectorRequest>().id == 8);
  client.send("GET /second HTTP/1.1\r\nHost: api.test\r\n\r\n");
  CHECK(serve.next<InspectorDial>().id == 8);
  SUBCASE("dialled: the new origin connection carries the request") {
    UniqueFd upstream = serve.origin.connect();
    send_order(serve.channel(), InspectorDialled{8, true}, {upstream.get()});
    std::optional<Message> response;
    REQUIRE(serve.run_until([&] { return (response = take_message(client.received(), "GET")).has_value(); }));
    CHECK(response->status == 200);
    CHECK(serve.origin.seen.size() == 2);
  }
  SUBCASE("not dialled: the request fails, the connection goes on no further") {
    send_order(serve.channel(), InspectorDialled{8, false});
    std::optional<Message> response;
    REQUIRE(serve.run_until([&] { return (response = take_message(client.received(), "GET")).has_value(); }));
    CHECK(response->status == 502);
    CHECK(serve.origin.seen.size() == 1);
  }
  SUBCASE("dialled for a connection that is not there: nothing happens, the descriptor is closed") {
    UniqueFd upstream = serve.origin.connect();
    const int before = open_descriptors();
    send_order(serve.channel(), InspectorDialled{99, true}, {upstream.get()});
    upstream.reset();
    CHECK(serve.quiet());
    CHECK(open_descriptors() == before - 1);
    CHECK_FALSE(serve.inspector->finished());
  }
}

TEST_CASE("what ends the inspector: serve's close, a garbled order, a secret more than the store holds") {
  Serve serve;
  SUBCASE("serve closes the channel") {
    serve.close_channel();
    CHECK(serve.run_until([&] { return serve.inspector->finished(); }));
  }
  SUBCASE("a garbled order") {
    std::string error;
    REQUIRE(send_channel_message(serve.channel(), "{\"op\":\"connection\",\"id\":", {}, kSendMs, error));
    CHECK(serve.run_until([&] { return serve.inspector->finished(); }));
  }
  SUBCASE("one secret more than the store holds") {
    for (std::size_t i = 0; i < kMaxSecrets; ++i) {
      send_order(serve.channel(), InspectorSecret{"s" + std::to_string(i), SecretText(kSecretValue)});
    }
    CHECK(serve.quiet());
    CHECK_FALSE(serve.inspector->finished());
    send_order(serve.channel(), InspectorSecret{"one_more", SecretText(kSecretValue)});
    CHECK(serve.run_until([&] { return serve.inspector->finished(); }));
  }
}
