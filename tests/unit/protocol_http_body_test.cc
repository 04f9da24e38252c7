// SPDX-License-Identifier: Apache-2.0
// proxy/http_body: framing and the chunked scanner (SPEC §8, the smuggling shapes).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/wire/http_body.h"

using namespace boxproxy;
using namespace std::string_literals;

namespace {

RequestHead head_with(std::vector<HeaderField> headers, std::string_view version = "HTTP/1.1") {
  RequestHead head;
  head.method = "POST";
  head.target = "http://example.com/";
  head.version = version;
  head.headers = std::move(headers);
  return head;
}

ResponseHead response_with(unsigned status, std::vector<HeaderField> headers, std::string_view version = "HTTP/1.1") {
  ResponseHead head;
  head.version = version;
  head.status = status;
  head.headers = std::move(headers);
  return head;
}

bool refused(const std::variant<BodyFraming, Reason>& v) {
  return std::holds_alternative<Reason>(v) && std::get<Reason>(v) == Reason::bad_framing;
}

BodyFraming framing(const std::variant<BodyFraming, Reason>& v) {
  REQUIRE(std::holds_alternative<BodyFraming>(v));
  return std::get<BodyFraming>(v);
}

// Feeds `text` in pieces of `piece` bytes; returns the total consumed and the last step.
ChunkedScanner::Step scan(std::string_view text, std::size_t piece, std::size_t& total) {
  ChunkedScanner scanner;
  ChunkedScanner::Step step;
  total = 0;
  while (total < text.size()) {
    const auto chunk = text.substr(total, piece);
    step = scanner.feed(chunk);
    total += step.consumed;
    if (step.malformed || step.finished) break;
    if (step.consumed < chunk.size()) break;  // stopped early
  }
  return step;
}

}  // namespace

TEST_CASE("request framing: the good shapes") {
  CHECK(framing(request_framing(head_with({}))).kind == BodyFraming::Kind::none);
  auto f = framing(request_framing(head_with({{"Content-Length", "5"}})));
  CHECK(f.kind == BodyFraming::Kind::length);
  CHECK(f.length == 5);
  f = framing(request_framing(head_with({{"content-length", "0"}})));
  CHECK(f.kind == BodyFraming::Kind::length);
  CHECK(f.length == 0);
  f = framing(request_framing(head_with({{"Content-Length", "999999999999999999"}})));
  CHECK(f.length == 999999999999999999ull);
  f = framing(request_framing(head_with({{"Content-Length", "007"}})));
  CHECK(f.length == 7);
  f = framing(request_framing(head_with({{"Content-Length", "5"}, {"Content-Length", "5"}})));
  CHECK(f.length == 5);
  CHECK(framing(request_framing(head_with({{"Transfer-Encoding", "chunked"}}))).kind == BodyFraming::Kind::chunked);
  CHECK(framing(request_framing(head_with({{"transfer-encoding", "Chunked"}}))).kind == BodyFraming::Kind::chunked);
  CHECK(framing(request_framing(head_with({{"Transfer-Encoding", " \tCHUNKED\t "}}))).kind ==
        BodyFraming::Kind::chunked);
}

TEST_CASE("request framing: smuggling shapes are bad_framing") {
  const std::vector<std::vector<HeaderField>> cases = {
      // CL + TE, either order
      {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}},
      {{"Transfer-Encoding", "chunked"}, {"Content-Length", "5"}},
      {{"Transfer-Encoding", "chunked"}, {"Content-Length", "0"}},
      // two different CLs
      {{"Content-Length", "5"}, {"Content-Length", "6"}},
      {{"Content-Length", "5"}, {"Content-Length", "05"}},
      {{"Content-Length", "5"}, {"Content-Length", ""}},
      // CL not one to eighteen plain digits
      {{"Content-Length", ""}},
      {{"Content-Length", "+5"}},
      {{"Content-Length", "-5"}},
      {{"Content-Length", "5 5"}},
      {{"Content-Length", "5,5"}},
      {{"Content-Length", "5, 5"}},
      {{"Content-Length", "0x5"}},
      {{"Content-Length", "5a"}},
      {{"Content-Length", "1e3"}},
      {{"Content-Length", "1000000000000000000"}},   // 19 digits
      {{"Content-Length", "0000000000000000000"}},   // 19 digits, even as zeros
      {{"Content-Length", "99999999999999999999999"}},
      {{"Content-Length", "\xd9\xa5"}},              // a non-ASCII digit
      // TE other than exactly chunked
      {{"Transfer-Encoding", "chunked,"}},
      {{"Transfer-Encoding", "gzip, chunked"}},
      {{"Transfer-Encoding", "chunked, gzip"}},
      {{"Transfer-Encoding", "chunked, chunked"}},
      {{"Transfer-Encoding", "identity"}},
      {{"Transfer-Encoding", ""}},
      {{"Transfer-Encoding", "chunk"}},
      {{"Transfer-Encoding", "\"chunked\""}},
      {{"Transfer-Encoding", "chunked;q=1"}},
      {{"Transfer-Encoding", "xchunked"}},
      // two TE lines, even identical
      {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}},
      {{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}},
  };
  for (const auto& headers : cases) {
    CAPTURE(headers[0].value);
    CHECK(refused(request_framing(head_with(headers))));
  }
  // chunked in an HTTP/1.0 request
  CHECK(refused(request_framing(head_with({{"Transfer-Encoding", "chunked"}}, "HTTP/1.0"))));
}

TEST_CASE("response framing") {
  using K = BodyFraming::Kind;
  CHECK(framing(response_framing("GET", response_with(200, {}))).kind == K::until_close);
  CHECK(framing(response_framing("GET", response_with(200, {{"Content-Length", "12"}}))).length == 12);
  CHECK(framing(response_framing("GET", response_with(200, {{"Content-Length", "12"}}))).kind == K::length);
  CHECK(framing(response_framing("GET", response_with(200, {{"Transfer-Encoding", "chunked"}}))).kind == K::chunked);
  for (unsigned status : {100u, 101u, 103u, 199u, 204u, 304u}) {
    CAPTURE(status);
    CHECK(framing(response_framing("GET", response_with(status, {{"Content-Length", "12"}}))).kind == K::none);
  }
  CHECK(framing(response_framing("HEAD", response_with(200, {{"Content-Length", "12"}}))).kind == K::none);
  CHECK(framing(response_framing("HEAD", response_with(200, {{"Transfer-Encoding", "chunked"}}))).kind == K::none);
  CHECK(framing(response_framing("GET", response_with(205, {}))).kind == K::until_close);
  CHECK(refused(response_framing("GET", response_with(200, {{"Content-Length", "1"}, {"Content-Length", "2"}}))));
  CHECK(refused(response_framing("GET", response_with(200, {{"Content-Length", "1"}, {"Transfer-Encoding", "chunked"}}))));
  CHECK(refused(response_framing("GET", response_with(200, {{"Transfer-Encoding", "gzip, chunked"}}))));
  CHECK(refused(response_framing("GET", response_with(200, {{"Content-Length", "-1"}}))));
  CHECK(refused(response_framing("GET", response_with(200, {{"Transfer-Encoding", "chunked"}}, "HTTP/1.0"))));
}

TEST_CASE("chunked scanner: good bodies, whole, byte by byte, and in every split") {
  const std::string bodies[] = {
      "0\r\n\r\n",
      "5\r\nhello\r\n0\r\n\r\n",
      "5\r\nhe\r\nl\r\n0\r\n\r\n",  // data bytes are not inspected
      "A\r\n0123456789\r\n1\r\nx\r\n0\r\n\r\n",
      "a\r\n0123456789\r\n0\r\n\r\n",
      "000000000000000a\r\n0123456789\r\n0\r\n\r\n",  // sixteen digits
      "5;name\r\nhello\r\n0\r\n\r\n",
      "5;name=value;other\r\nhello\r\n0;last=1\r\n\r\n",
      "5;a=b;c=d\r\nhello\r\n0\r\n\r\n",
      "0\r\nTrailer-One: x\r\nTrailer-Two:\ty z\r\n\r\n",
      "0\r\nX:\r\n\r\n",
      "2\r\n\0\r\r\n0\r\n\r\n"s,
  };
  for (const auto& body : bodies) {
    CAPTURE(body);
    for (std::size_t piece : {body.size(), std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}}) {
      CAPTURE(piece);
      std::size_t total = 0;
      const auto step = scan(body + "GET next", piece, total);
      CHECK(step.finished);
      CHECK_FALSE(step.malformed);
      CHECK(total == body.size());
    }
  }
}

TEST_CASE("chunked scanner: bytes after the end are not consumed, and later feeds consume nothing") {
  ChunkedScanner scanner;
  auto step = scanner.feed("3\r\nabc\r\n0\r\n\r\nEXTRA");
  CHECK(step.finished);
  CHECK(step.consumed == 13);
  step = scanner.feed("more");
  CHECK(step.finished);
  CHECK(step.consumed == 0);
}

TEST_CASE("chunked scanner: a large chunk is skipped in bulk") {
  ChunkedScanner scanner;
  auto step = scanner.feed("100000\r\n");
  CHECK(step.consumed == 8);
  CHECK_FALSE(step.finished);
  const std::string data(0x100000, 'x');
  step = scanner.feed(data);
  CHECK(step.consumed == data.size());
  step = scanner.feed("\r\n0\r\n\r\n");
  CHECK(step.finished);
  CHECK(step.consumed == 7);
}

TEST_CASE("chunked scanner: malformed bodies") {
  const std::string bad[] = {
      // sizes
      "\r\n\r\n",
      "x\r\n",
      "-1\r\n",
      "+5\r\n",
      " 5\r\n",
      "5 \r\nhello\r\n0\r\n\r\n",
      "0x5\r\nhello\r\n",
      "5\nhello\r\n0\r\n\r\n",
      "5\r\rhello",
      "00000000000000001\r\nx\r\n0\r\n\r\n",  // seventeen digits
      "fffffffffffffffff\r\n",               // overflow
      "5\r\nhello\n0\r\n\r\n",
      "5\r\nhello\r0\r\n\r\n",
      "5\r\nhelloX\r\n0\r\n\r\n",               // data longer than its size
      "0\r\n\n",
      "0\r\n\r\r",
      "0\r\n\r\0"s,
      // extensions
      "5;\r\nhello\r\n0\r\n\r\n",
      "5 ;a\r\nhello\r\n0\r\n\r\n",
      "5; a\r\nhello\r\n0\r\n\r\n",
      "5;a =b\r\nhello\r\n0\r\n\r\n",
      "5;a=\r\nhello\r\n0\r\n\r\n",
      "5;a==b\r\nhello\r\n0\r\n\r\n",
      "5;a=b=c\r\nhello\r\n0\r\n\r\n",
      "5;=b\r\nhello\r\n0\r\n\r\n",
      "5;;a\r\nhello\r\n0\r\n\r\n",
      "5;a=\"b\"\r\nhello\r\n0\r\n\r\n",
      "5;a\nhello\r\n0\r\n\r\n",
      "5;a\rhello",
      "5;a\0b\r\n"s,
      "5;a\x01\r\n",
      // trailers
      "0\r\nX: y\n\r\n",
      "0\r\nX: y\ry\r\n\r\n",
      "0\r\nX : y\r\n\r\n",
      "0\r\n: y\r\n\r\n",
      "0\r\n y: z\r\n\r\n",
      "0\r\nX: y\r\n folded\r\n\r\n",
      "0\r\nNoColon\r\n\r\n",
      "0\r\nX: a\0b\r\n\r\n"s,
      "0\r\nX: a\x7f\r\n\r\n",
  };
  for (const auto& body : bad) {
    CAPTURE(body);
    for (std::size_t piece : {body.size(), std::size_t{1}}) {
      CAPTURE(piece);
      std::size_t total = 0;
      const auto step = scan(body, piece, total);
      CHECK(step.malformed);
      CHECK_FALSE(step.finished);
    }
  }
}

TEST_CASE("chunked scanner: once malformed, always malformed") {
  ChunkedScanner scanner;
  CHECK(scanner.feed("zz").malformed);
  const auto step = scanner.feed("0\r\n\r\n");
  CHECK(step.malformed);
  CHECK(step.consumed == 0);
}

TEST_CASE("chunked scanner: extensions and trailers are bounded") {
  {
    ChunkedScanner scanner;
    const std::string ok = "1;" + std::string(1000, 'a') + "\r\nx\r\n0\r\n\r\n";
    CHECK(scanner.feed(ok).finished);
  }
  {
    ChunkedScanner scanner;
    const std::string big = "1;" + std::string(2000, 'a');
    CHECK(scanner.feed(big).malformed);
  }
  {
    // Many trailer lines: fine while small, refused once their sum passes the bound.
    ChunkedScanner scanner;
    std::string body = "0\r\n";
    for (int i = 0; i < 100; ++i) body += "X-T: value\r\n";
    body += "\r\n";
    CHECK(scanner.feed(body).finished);
  }
  {
    ChunkedScanner scanner;
    auto step = scanner.feed("0\r\n");
    CHECK_FALSE(step.malformed);
    bool malformed = false;
    for (int i = 0; i < 10000 && !malformed; ++i) malformed = scanner.feed("X-T: value\r\n").malformed;
    CHECK(malformed);
  }
}

namespace {

// What a scanner passes on for `text` fed in pieces of `piece` bytes: the passed prefix of each
// feed, then its ending. Stops at the body's end.
std::string passed_on(std::string_view text, std::size_t piece) {
  ChunkedScanner scanner;
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto chunk = text.substr(at, piece);
    const auto step = scanner.feed(chunk);
    REQUIRE_FALSE(step.malformed);
    REQUIRE(step.passed <= step.consumed);
    out.append(chunk.substr(0, step.passed));
    out.append(step.ending);
    at += step.consumed;
    if (step.finished) break;
  }
  return out;
}

}  // namespace

TEST_CASE("chunked scanner: trailers are dropped, every other byte passes unchanged") {
  // Trailers are headers that arrive after the head was filtered: an origin could forge
  // x-egress-refused or Connection, a client carry Proxy-Authorization or Host upstream.
  const std::string body = "3\r\nabc\r\n5;ext=1\r\nhello\r\n0\r\n";
  const std::string closed = body + "\r\n";
  const std::string with_trailers[] = {
      body + "\r\n",
      body + "x-egress-refused: forged\r\n\r\n",
      body + "Proxy-Authorization: Basic Zm9vOmJhcg==\r\nHost: other.example\r\n\r\n",
      body + "Connection: close\r\nProxy-Authenticate: Basic realm=x\r\nX-Empty:\r\n\r\n",
  };
  for (const std::string& text : with_trailers) {
    CAPTURE(text);
    for (std::size_t piece : {text.size(), std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{13}}) {
      CAPTURE(piece);
      CHECK(passed_on(text + "GET /next", piece) == closed);
    }
  }
}

TEST_CASE("chunked scanner: the ending comes once, in the feed that ends the body") {
  ChunkedScanner scanner;
  auto step = scanner.feed("0\r\nA: b\r\n");
  CHECK(step.passed == 3);
  CHECK(step.ending.empty());
  CHECK_FALSE(step.finished);
  step = scanner.feed("\r\nNEXT");
  CHECK(step.finished);
  CHECK(step.consumed == 2);
  CHECK(step.passed == 0);
  CHECK(step.ending == "\r\n");
  step = scanner.feed("more");
  CHECK(step.consumed == 0);
  CHECK(step.passed == 0);
  CHECK(step.ending.empty());
}

TEST_CASE("chunked scanner: a body with no trailers passes byte for byte") {
  const std::string body = "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n";
  for (std::size_t piece : {body.size(), std::size_t{1}, std::size_t{3}}) {
    CHECK(passed_on(body, piece) == body);
  }
}
