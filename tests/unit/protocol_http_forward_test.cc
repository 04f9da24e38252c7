// SPDX-License-Identifier: Apache-2.0
// proxy/http_forward: judging a plain request and rewriting heads (SPEC §8).
#include <doctest/doctest.h>

#include <string>

#include "proxy/wire/http_forward.h"

using namespace boxproxy;

namespace {

// Parses `text` as a request head (it must be one) and prepares it.
std::variant<ForwardRequest, Reason> prepare(const std::string& text) {
  const auto parsed = parse_request_head(text, 65536);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  return prepare_forward_request(*parsed.value);
}

ForwardRequest ok(const std::string& text) {
  auto r = prepare(text);
  if (auto* reason = std::get_if<Reason>(&r)) FAIL("refused: " << log_class(*reason));
  return std::get<ForwardRequest>(std::move(r));
}

Reason refused(const std::string& text) {
  auto r = prepare(text);
  REQUIRE(std::holds_alternative<Reason>(r));
  return std::get<Reason>(r);
}

std::string get(std::string_view target, std::string_view headers = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\n" + std::string(headers) + "\r\n";
}

ResponseHead response(const std::string& text, std::string& storage) {
  storage = text;
  const auto parsed = parse_response_head(storage, 65536);
  REQUIRE(parsed.status == ParseResult<ResponseHead>::Status::complete);
  return *parsed.value;
}

}  // namespace

TEST_CASE("forward: the upstream head") {
  auto f = ok(get("http://example.com/path?q=1", "Host: example.com\r\nUser-Agent: t\r\nAccept: */*\r\n"));
  CHECK(f.target.host == "example.com");
  CHECK(f.target.port == 80);
  CHECK(f.target.is_name());
  CHECK(f.framing.kind == BodyFraming::Kind::none);
  CHECK(f.upstream_head ==
        "GET /path?q=1 HTTP/1.1\r\n"
        "Host: example.com\r\n"
        "User-Agent: t\r\n"
        "Accept: */*\r\n"
        "Connection: close\r\n"
        "\r\n");
}

TEST_CASE("forward: origin-form path, Host with port and brackets") {
  struct Case {
    const char* target;
    const char* line;
    const char* host;
    const char* judged;
    unsigned port;
  };
  const Case cases[] = {
      {"http://example.com", "GET / HTTP/1.1", "Host: example.com", "example.com", 80},
      {"http://example.com/", "GET / HTTP/1.1", "Host: example.com", "example.com", 80},
      {"http://example.com?x", "GET /?x HTTP/1.1", "Host: example.com", "example.com", 80},
      {"http://example.com:80/a", "GET /a HTTP/1.1", "Host: example.com", "example.com", 80},
      {"http://example.com:080/a", "GET /a HTTP/1.1", "Host: example.com", "example.com", 80},
      {"http://example.com:8080/a/b/", "GET /a/b/ HTTP/1.1", "Host: example.com:8080", "example.com", 8080},
      {"HTTP://Example.COM/", "GET / HTTP/1.1", "Host: Example.COM", "Example.COM", 80},
      {"hTtP://example.com./", "GET / HTTP/1.1", "Host: example.com", "example.com", 80},
      {"http://93.184.216.34/x", "GET /x HTTP/1.1", "Host: 93.184.216.34", "93.184.216.34", 80},
      {"http://[2001:db8::1]/x", "GET /x HTTP/1.1", "Host: [2001:db8::1]", "2001:db8::1", 80},
      {"http://[2001:db8::1]:8080/", "GET / HTTP/1.1", "Host: [2001:db8::1]:8080", "2001:db8::1", 8080},
      {"http://example.com/%2e%2e/?a=b&c=%20", "GET /%2e%2e/?a=b&c=%20 HTTP/1.1", "Host: example.com", "example.com",
       80},
  };
  for (const auto& c : cases) {
    const std::string shown = c.target;
    CAPTURE(shown);
    const auto f = ok(get(c.target));
    CHECK(f.upstream_head == std::string(c.line) + "\r\n" + c.host + "\r\nConnection: close\r\n\r\n");
    CHECK(f.target.host == c.judged);
    CHECK(f.target.port == c.port);
  }
}

TEST_CASE("forward: the method is kept; HTTP/1.0 goes upstream as 1.1") {
  const auto f = ok("POST http://example.com/form HTTP/1.0\r\nContent-Length: 3\r\n\r\n");
  CHECK(f.upstream_head ==
        "POST /form HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\nConnection: close\r\n\r\n");
  CHECK(f.framing.kind == BodyFraming::Kind::length);
  CHECK(f.framing.length == 3);
  const auto chunked = ok("PUT http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(chunked.framing.kind == BodyFraming::Kind::chunked);
}

TEST_CASE("forward: hop-by-hop headers removed, Connection-listed ones too, but never Host/CL/TE") {
  const auto f = ok(
      "POST http://example.com/ HTTP/1.1\r\n"
      "Host: example.com\r\n"
      "Connection: keep-alive, X-Secret, content-length , HOST,transfer-encoding\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "Keep-Alive: timeout=5\r\n"
      "Proxy-Authorization: Bearer tok\r\n"
      "Proxy-Authenticate: Basic\r\n"
      "TE: trailers\r\n"
      "Trailer: X-T\r\n"
      "x-secret: 1\r\n"
      "X-Kept: 2\r\n"
      "Content-Length: 4\r\n"
      "Connection: X-Other\r\n"
      "X-Other: 3\r\n"
      "\r\n");
  CHECK(f.upstream_head ==
        "POST / HTTP/1.1\r\n"
        "Host: example.com\r\n"
        "X-Kept: 2\r\n"
        "Content-Length: 4\r\n"
        "Connection: close\r\n"
        "\r\n");
}

TEST_CASE("forward: Host header must match the URI") {
  CHECK_NOTHROW(ok(get("http://example.com/", "Host: example.com\r\n")));
  CHECK_NOTHROW(ok(get("http://example.com/", "Host: EXAMPLE.com\r\n")));
  CHECK_NOTHROW(ok(get("http://example.com/", "Host: example.com:80\r\n")));
  CHECK_NOTHROW(ok(get("http://example.com:80/", "Host: example.com\r\n")));
  CHECK_NOTHROW(ok(get("http://example.com:8080/", "Host: example.com:8080\r\n")));
  CHECK_NOTHROW(ok(get("http://example.com/", "Host: example.com.\r\n")));
  CHECK_NOTHROW(ok(get("http://[2001:db8::1]/", "Host: [2001:db8::1]\r\n")));
  CHECK_NOTHROW(ok(get("http://[2001:db8::1]:81/", "Host: [2001:db8:0::1]:81\r\n")));
  CHECK_NOTHROW(ok(get("http://1.2.3.4/", "Host: 1.2.3.4:80\r\n")));

  const char* mismatched[] = {
      "Host: other.com\r\n",         "Host: example.com:8080\r\n", "Host: example.com:81\r\n",
      "Host: example.co\r\n",        "Host: \r\n",                 "Host: example.com:\r\n",
      "Host: user@example.com\r\n",  "Host: example.com/\r\n",     "Host: 1.2.3.4\r\n",
      "Host: example.com:0\r\n",     "Host: example.com:99999\r\n", "Host: example.com extra\r\n",
  };
  for (const char* host : mismatched) {
    const std::string shown = host;
    CAPTURE(shown);
    CHECK(refused(get("http://example.com/", host)) == Reason::host_mismatch);
  }
  CHECK(refused(get("http://example.com:8080/", "Host: example.com\r\n")) == Reason::host_mismatch);
  CHECK(refused(get("http://[2001:db8::1]/", "Host: [2001:db8::2]\r\n")) == Reason::host_mismatch);
  // Two Host headers, even identical.
  CHECK(refused(get("http://example.com/", "Host: example.com\r\nHost: example.com\r\n")) == Reason::bad_request);
  CHECK(refused(get("http://example.com/", "Host: example.com\r\nhost: evil.com\r\n")) == Reason::bad_request);
}

TEST_CASE("forward: targets that are not absolute http URIs") {
  CHECK(refused(get("/")) == Reason::not_absolute_uri);
  CHECK(refused(get("/http://example.com/")) == Reason::not_absolute_uri);
  CHECK(refused("OPTIONS * HTTP/1.1\r\n\r\n") == Reason::not_absolute_uri);
  CHECK(refused(get("//example.com/")) == Reason::not_absolute_uri);
  CHECK(refused(get("https://example.com/")) == Reason::not_http_uri);
  CHECK(refused(get("HTTPS://example.com/")) == Reason::not_http_uri);
  CHECK(refused(get("ftp://example.com/")) == Reason::not_http_uri);
  CHECK(refused(get("ws://example.com/")) == Reason::not_http_uri);
  CHECK(refused(get("httpx://example.com/")) == Reason::not_http_uri);
  CHECK(refused(get("https://example.com/#frag")) == Reason::not_http_uri);
}

TEST_CASE("forward: invalid targets") {
  const char* cases[] = {
      "http://user@example.com/",
      "http://user:pass@example.com/",
      "http://@example.com/",
      "http://evil.com@example.com/",
      "http://example.com\\@evil.com/",
      "http://example.com\\evil/",
      "http://example.com/a\\b",
      "http://example.com/#frag",
      "http://example.com#@evil.com/",
      "http://example.com/?q#f",
      "http:///path",
      "http://",
      "http://?q",
      "http:example.com/",
      "http:/example.com/",
      "http://example.com:/",
      "http://example.com:0/",
      "http://example.com:65536/",
      "http://example.com:http/",
  };
  for (const char* target : cases) {
    const std::string shown = target;
    CAPTURE(shown);
    CHECK(refused(get(target)) == Reason::invalid_target);
  }
  const char* bad_hosts[] = {
      "http://exa%6dple.com/", "http://exa_mple..com/", "http://256.1.1.1/", "http://[::1]./", "http://example.com:80:80/",
      "http://[zz]/",          "http://.example.com/",
  };
  for (const char* target : bad_hosts) {
    const std::string shown = target;
    CAPTURE(shown);
    const Reason r = refused(get(target));
    CHECK((r == Reason::invalid_host || r == Reason::invalid_target));
  }
  CHECK(refused(get("http://exa%6dple.com/")) == Reason::invalid_host);
}

TEST_CASE("forward: upgrade, framing") {
  CHECK(refused(get("http://example.com/", "Upgrade: websocket\r\nConnection: Upgrade\r\n")) ==
        Reason::upgrade_not_supported);
  CHECK(refused(get("http://example.com/", "upgrade: h2c\r\n")) == Reason::upgrade_not_supported);
  // Connection: upgrade without Upgrade is just a hop-by-hop header.
  CHECK_NOTHROW(ok(get("http://example.com/", "Connection: upgrade\r\n")));
  const char* framing[] = {
      "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
      "Content-Length: 5\r\nContent-Length: 6\r\n",
      "Content-Length: +5\r\n",
      "Content-Length: 5, 5\r\n",
      "Content-Length: 1000000000000000000\r\n",
      "Transfer-Encoding: chunked,\r\n",
      "Transfer-Encoding: gzip, chunked\r\n",
      "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
      // Naming Content-Length in Connection does not remove it, so CL+TE is still seen.
      "Connection: Content-Length\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
  };
  for (const char* headers : framing) {
    const std::string shown = headers;
    CAPTURE(shown);
    CHECK(refused(get("http://example.com/", headers)) == Reason::bad_framing);
  }
  // Order of the checks: host mismatch before upgrade before framing.
  CHECK(refused(get("http://example.com/", "Host: other\r\nUpgrade: x\r\nContent-Length: x\r\n")) ==
        Reason::host_mismatch);
  CHECK(refused(get("http://example.com/", "Upgrade: x\r\nContent-Length: x\r\n")) == Reason::upgrade_not_supported);
  CHECK(refused(get("http://u@example.com/", "Host: other\r\n")) == Reason::invalid_target);
}

TEST_CASE("response head rewrite") {
  std::string storage;
  auto head = response(
      "HTTP/1.1 200 OK\r\n"
      "Content-Type: text/html\r\n"
      "Connection: keep-alive, X-Drop\r\n"
      "Keep-Alive: timeout=5\r\n"
      "X-Drop: 1\r\n"
      "x-egress-refused: loopback\r\n"
      "X-Egress-Refused: private\r\n"
      "Proxy-Authenticate: Basic\r\n"
      "Trailer: X-T\r\n"
      "Transfer-Encoding: chunked\r\n"
      "Set-Cookie: a=b\r\n"
      "\r\n",
      storage);
  const std::string kept =
      "HTTP/1.1 200 OK\r\n"
      "Content-Type: text/html\r\n"
      "Transfer-Encoding: chunked\r\n"
      "Set-Cookie: a=b\r\n";
  CHECK(rewrite_response_head(head, true) == kept + "Connection: keep-alive\r\n\r\n");
  CHECK(rewrite_response_head(head, false) == kept + "Connection: close\r\n\r\n");

  head = response("HTTP/1.0 302 Found\r\nLocation: http://127.0.0.1/\r\n\r\n", storage);
  CHECK(rewrite_response_head(head, false) ==
        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1/\r\nConnection: close\r\n\r\n");
  head = response("HTTP/1.1 204\r\n\r\n", storage);
  CHECK(rewrite_response_head(head, true) == "HTTP/1.1 204 \r\nConnection: keep-alive\r\n\r\n");
  // Connection naming Content-Length does not remove it.
  head = response("HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\n", storage);
  CHECK(rewrite_response_head(head, false) == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
}

TEST_CASE("client_wants_keep_alive") {
  struct Case {
    const char* head;
    bool keep;
  };
  const Case cases[] = {
      {"GET http://a/ HTTP/1.1\r\n\r\n", true},
      {"GET http://a/ HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET http://a/ HTTP/1.1\r\nConnection: Close\r\n\r\n", false},
      {"GET http://a/ HTTP/1.1\r\nConnection: te, close\r\n\r\n", false},
      {"GET http://a/ HTTP/1.1\r\nProxy-Connection: close\r\n\r\n", false},
      {"GET http://a/ HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true},
      {"GET http://a/ HTTP/1.0\r\n\r\n", false},
      {"GET http://a/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
      {"GET http://a/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
      {"GET http://a/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n", true},
      {"GET http://a/ HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
      {"GET http://a/ HTTP/1.0\r\nConnection: keep-alivex\r\n\r\n", false},
  };
  for (const auto& c : cases) {
    const std::string shown = c.head;
    CAPTURE(shown);
    const std::string text = c.head;
    const auto parsed = parse_request_head(text, 4096);
    REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
    CHECK(client_wants_keep_alive(*parsed.value) == c.keep);
  }
}

// ---- request inspection (SPEC §18) -------------------------------------------------------------

namespace {

RequestHead request_of(const std::string& text) {
  const auto parsed = parse_request_head(text, 65536);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  return *parsed.value;
}

}  // namespace

TEST_CASE("is_websocket_upgrade: HTTP/1.1, one Upgrade: websocket, and upgrade in Connection") {
  struct Case {
    const char* head;
    bool websocket;
  };
  const Case cases[] = {
      {"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", true},
      {"GET /ws HTTP/1.1\r\nUpgrade: WebSocket\r\nConnection: keep-alive, upgrade\r\n\r\n", true},
      {"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", false},                        // no Connection: upgrade
      {"GET /ws HTTP/1.1\r\nConnection: Upgrade\r\n\r\n", false},                       // no Upgrade
      {"GET /ws HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n", false},       // not a websocket
      {"GET /ws HTTP/1.1\r\nUpgrade: websocket, h2c\r\nConnection: Upgrade\r\n\r\n", false},
      {"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", false},
      {"GET /ws HTTP/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", false},  // 1.0 cannot
  };
  for (const auto& c : cases) {
    const std::string text = c.head;
    CAPTURE(text);
    CHECK(is_websocket_upgrade(request_of(text)) == c.websocket);
  }
}

TEST_CASE("forward_origin_form_head: Host set, hop-by-hop removed, Upgrade kept only for a websocket") {
  const std::string text =
      "POST /v1/x?q=1 HTTP/1.0\r\n"
      "host: API.example.\r\n"
      "Connection: keep-alive, X-Drop\r\n"
      "X-Drop: 1\r\n"
      "Proxy-Authorization: Basic eA==\r\n"
      "TE: trailers\r\n"
      "Upgrade: h2c\r\n"
      "Content-Length: 2\r\n"
      "Accept: */*\r\n"
      "\r\n";
  const RequestHead head = request_of(text);
  CHECK(forward_origin_form_head(head, "api.example", false, false) ==
        "POST /v1/x?q=1 HTTP/1.1\r\nHost: api.example\r\nContent-Length: 2\r\nAccept: */*\r\n\r\n");
  CHECK(forward_origin_form_head(head, "api.example:8443", false, true) ==
        "POST /v1/x?q=1 HTTP/1.1\r\nHost: api.example:8443\r\nContent-Length: 2\r\nAccept: */*\r\n"
        "Connection: close\r\n\r\n");

  const std::string ws =
      "GET /ws HTTP/1.1\r\nHost: api.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  CHECK(forward_origin_form_head(request_of(ws), "api.example", true, false) ==
        "GET /ws HTTP/1.1\r\nHost: api.example\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
}

TEST_CASE("a 101 to a websocket keeps its Upgrade and Connection; origin_keeps_alive") {
  std::string storage;
  auto head = response(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nx-egress-refused: forged\r\n\r\n",
      storage);
  CHECK(switches_to_websocket(head));
  CHECK(rewrite_switching_head(head) ==
        "HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
        "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  head = response("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n", storage);
  CHECK_FALSE(switches_to_websocket(head));

  struct Case {
    const char* head;
    bool keeps;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\n\r\n", true},
      {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false},
      {"HTTP/1.1 200 OK\r\nConnection: X, Close\r\n\r\n", false},
      {"HTTP/1.0 200 OK\r\n\r\n", false},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", true},
  };
  for (const auto& c : cases) {
    CAPTURE(c.head);
    CHECK(origin_keeps_alive(response(c.head, storage)) == c.keeps);
  }
}
