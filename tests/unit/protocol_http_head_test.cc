// SPDX-License-Identifier: Apache-2.0
// proxy/http_head: strict head parsing (SPEC §7, §8).
#include <doctest/doctest.h>

#include <string>

#include "proxy/wire/http_head.h"

using namespace boxproxy;
using namespace std::string_literals;

namespace {

using Status = ParseResult<RequestHead>::Status;
constexpr std::size_t kMax = 32768;

ParseResult<RequestHead> req(std::string_view s, std::size_t max = kMax) { return parse_request_head(s, max); }

}  // namespace

TEST_CASE("request head: a plain GET") {
  const std::string text = "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\nX-Empty:\r\n\r\nBODY";
  const auto r = req(text);
  REQUIRE(r.status == Status::complete);
  CHECK(r.consumed == text.size() - 4);
  CHECK(r.value->method == "GET");
  CHECK(r.value->target == "http://example.com/a?b");
  CHECK(r.value->version == "HTTP/1.1");
  REQUIRE(r.value->headers.size() == 2);
  CHECK(r.value->headers[0].name == "Host");
  CHECK(r.value->headers[0].value == "example.com");
  CHECK(r.value->headers[1].name == "X-Empty");
  CHECK(r.value->headers[1].value == "");
  // Views point into the buffer.
  CHECK(r.value->method.data() == text.data());
}

TEST_CASE("request head: values are trimmed of spaces and tabs, inner ones kept; HTAB allowed in values") {
  const auto r = req("GET / HTTP/1.0\r\nA: \t x \t y\t \r\nB:z\r\n\r\n");
  REQUIRE(r.status == Status::complete);
  CHECK(r.value->version == "HTTP/1.0");
  CHECK(r.value->headers[0].value == "x \t y");
  CHECK(r.value->headers[1].value == "z");
}

TEST_CASE("request head: obs-text in a value passes") {
  const auto r = req("GET / HTTP/1.1\r\nA: caf\xc3\xa9\r\n\r\n");
  REQUIRE(r.status == Status::complete);
  CHECK(r.value->headers[0].value == "caf\xc3\xa9");
}

TEST_CASE("request head: need_more at every prefix of a good head") {
  const std::string text = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: t\r\n\r\n";
  for (std::size_t n = 0; n < text.size(); ++n) {
    CAPTURE(n);
    CHECK(req(text.substr(0, n)).status == Status::need_more);
  }
  const auto r = req(text);
  REQUIRE(r.status == Status::complete);
  CHECK(r.consumed == text.size());
  CHECK(r.value->method == "CONNECT");
  CHECK(r.value->target == "example.com:443");
}

TEST_CASE("request head: pipelined second request is not consumed") {
  const std::string one = "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n";
  const auto r = req(one + one);
  REQUIRE(r.status == Status::complete);
  CHECK(r.consumed == one.size());
}

TEST_CASE("request head: malformed shapes are bad_request") {
  const std::string cases[] = {
      // bare LF, bare CR
      "GET / HTTP/1.1\nHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\n\n",
      "GET / HTTP/1.1\rHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n",
      // NUL and other control characters
      "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n"s,
      "GET /\0 HTTP/1.1\r\n\r\n"s,
      "GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\x1b[0m\r\n\r\n",
      "GET / HTTP/1.1\r\nX\x0b: a\r\n\r\n",
      // obs-fold
      "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
      "GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n",
      "GET / HTTP/1.1\r\n Host: a\r\n\r\n",
      // white space before the colon, or in the name
      "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n",
      "GET / HTTP/1.1\r\nContent Length: 5\r\n\r\n",
      // names that are not tokens, lines without a colon, an empty name
      "GET / HTTP/1.1\r\n: a\r\n\r\n",
      "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
      "GET / HTTP/1.1\r\nX(y): a\r\n\r\n",
      "GET / HTTP/1.1\r\nX\"y: a\r\n\r\n",
      "GET / HTTP/1.1\r\n\xc3\xa9: a\r\n\r\n",
      // request line shapes
      "GET  / HTTP/1.1\r\n\r\n",
      "GET /  HTTP/1.1\r\n\r\n",
      " GET / HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.1 \r\n\r\n",
      "GET\t/ HTTP/1.1\r\n\r\n",
      "GET /\tHTTP/1.1\r\n\r\n",
      "GET / x HTTP/1.1\r\n\r\n",
      "GET /\r\n\r\n",
      "GET\r\n\r\n",
      "/ HTTP/1.1\r\n\r\n",
      "G(T / HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.2\r\n\r\n",
      "GET / HTTP/2.0\r\n\r\n",
      "GET / HTTP/0.9\r\n\r\n",
      "GET / http/1.1\r\n\r\n",
      "GET / HTTP/1.10\r\n\r\n",
      "GET / HTTP/1\r\n\r\n",
      "GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n",
      // an empty line before the request line, or nothing but one
      "\r\nGET / HTTP/1.1\r\n\r\n",
      "\r\n\r\n",
  };
  for (const auto& text : cases) {
    CAPTURE(text);
    const auto r = req(text);
    CHECK(r.status == Status::refused);
    CHECK(r.refusal == Reason::bad_request);
  }
}

TEST_CASE("request head: errors are found before the head ends") {
  const std::string cases[] = {
      "GET / HTTP/1.1\n",
      "GET / HTTP/1.1\r\nHost: a\n",
      "GET / HTTP/1.1\rX",
      "GET /\0"s,
      "GET / HTTP/1.1\r\nX: a\r\n b",
      "GET / HTTP/1.1\r\n ",
      "GET / HTTP/1.1\r\nX: \x01",
      "GET  / HTTP/1.1\r\n",
      "GET / HTTP/1.1\r\nHost : a\r\n",
  };
  for (const auto& text : cases) {
    CAPTURE(text);
    const auto r = req(text);
    CHECK(r.status == Status::refused);
    CHECK(r.refusal == Reason::bad_request);
  }
}

TEST_CASE("request head: max_head_bytes counts the final CRLF CRLF") {
  const std::string text = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  CHECK(req(text, text.size()).status == Status::complete);
  auto r = req(text, text.size() - 1);
  CHECK(r.status == Status::refused);
  CHECK(r.refusal == Reason::head_too_large);
  // Not ended yet but already past the limit.
  r = req(std::string(100, 'a'), 100);
  CHECK(r.status == Status::refused);
  CHECK(r.refusal == Reason::head_too_large);
  r = req("GET / HTTP/1.1\r\nX: " + std::string(200, 'a'), 100);
  CHECK(r.refusal == Reason::head_too_large);
  // Below the limit and unended: wait.
  CHECK(req("GET / HTTP/1.1\r\nX: aaa", 100).status == Status::need_more);
  // A head that ends exactly at the limit, with more bytes (a body) after it.
  r = req(text + "xxxx", text.size());
  CHECK(r.status == Status::complete);
  CHECK(r.consumed == text.size());
  // A CR as the last byte within the limit: too large, whatever follows it.
  const std::string cr_at_limit = "GET / HTTP/1.1\r\nX: a\r";
  CHECK(req(cr_at_limit, cr_at_limit.size()).refusal == Reason::head_too_large);
  CHECK(req(cr_at_limit + "x", cr_at_limit.size()).refusal == Reason::head_too_large);
  CHECK(req(cr_at_limit + "\n\r\n", cr_at_limit.size()).refusal == Reason::head_too_large);
  // The last byte past the limit is the final LF.
  r = req(text, text.size() - 1);
  CHECK(r.refusal == Reason::head_too_large);
}

TEST_CASE("response head: status lines") {
  using RStatus = ParseResult<ResponseHead>::Status;
  auto r = parse_response_head("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", kMax);
  REQUIRE(r.status == RStatus::complete);
  CHECK(r.value->version == "HTTP/1.1");
  CHECK(r.value->status == 200);
  CHECK(r.value->reason == "OK");
  CHECK(r.value->headers.size() == 1);

  r = parse_response_head("HTTP/1.0 404 Not Found Here\r\n\r\n", kMax);
  REQUIRE(r.status == RStatus::complete);
  CHECK(r.value->status == 404);
  CHECK(r.value->reason == "Not Found Here");

  r = parse_response_head("HTTP/1.1 204\r\n\r\n", kMax);
  REQUIRE(r.status == RStatus::complete);
  CHECK(r.value->reason == "");
  r = parse_response_head("HTTP/1.1 204 \r\n\r\n", kMax);
  REQUIRE(r.status == RStatus::complete);
  CHECK(r.value->reason == "");

  const std::string bad[] = {
      "HTTP/1.1 20 OK\r\n\r\n",  "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 099 OK\r\n\r\n", "HTTP/1.1  200 OK\r\n\r\n",
      "HTTP/2 200 OK\r\n\r\n",   "HTTP/1.1 2x0 OK\r\n\r\n",  "HTTP/1.1 200 OK\n\r\n",   "HTTP/1.1 200 O\0K\r\n\r\n"s,
      "HTTP/1.1 200 OK\r\nX : y\r\n\r\n", "HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n", "ICY 200 OK\r\n\r\n",
  };
  for (const auto& text : bad) {
    CAPTURE(text);
    r = parse_response_head(text, kMax);
    CHECK(r.status == RStatus::refused);
    CHECK(r.refusal == Reason::bad_request);
  }
  r = parse_response_head("HTTP/1.1 200 OK\r\nX: " + std::string(100, 'y'), 50);
  CHECK(r.refusal == Reason::head_too_large);
  CHECK(parse_response_head("HTTP/1.1 200 OK\r\n", kMax).status == RStatus::need_more);
}
