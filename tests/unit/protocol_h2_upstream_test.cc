// SPDX-License-Identifier: Apache-2.0
// proxy/wire/h2_upstream (and the trailer pieces of http_body and h2_request): the HTTP/1.1 request
// head an inspected connection writes as an HTTP/2 header list for an h2 origin, the origin's
// response list and trailers back as HTTP/1.1, exhaustive on the connection-specific fields, and a
// chunked body's trailers kept (filtered) for an inspected response.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "proxy/wire/h2_fields.h"
#include "proxy/wire/h2_request.h"
#include "proxy/wire/h2_upstream.h"
#include "proxy/wire/http_message.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"

using namespace boxproxy;

namespace {

// The list for a head given as text (the test keeps the text alive while it is parsed).
std::optional<H2UpstreamRequest> upstream(const std::string& text) {
  const auto parsed = parse_request_head(text, 64 * 1024);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  return h2_upstream_request(*parsed.value);
}

// A response head given as fields, printed as an HTTP/1.1 origin would have sent it.
std::string text_of(const ResponseMessage& head) {
  std::string out = head.text();
  CHECK(out.size() == head.text_size());
  return out;
}

std::vector<std::string> names(const std::vector<H2Field>& fields) {
  std::vector<std::string> out;
  for (const H2Field& f : fields) out.push_back(f.name);
  return out;
}

std::string value_of(const std::vector<H2Field>& fields, const std::string& name) {
  for (const H2Field& f : fields) {
    if (f.name == name) return f.value;
  }
  return "<none>";
}

}  // namespace

TEST_CASE("h2_upstream_request: pseudo-headers first, Host as :authority, names lowercased, te: trailers") {
  const auto r = upstream("GET /v1/x?q=1 HTTP/1.1\r\nHost: api.example:8443\r\nAccept: */*\r\nX-Custom: A b\r\n\r\n");
  REQUIRE(r);
  CHECK(names(r->fields) == std::vector<std::string>{":method", ":scheme", ":authority", ":path", "accept", "x-custom",
                                                     "te"});
  CHECK(value_of(r->fields, ":method") == "GET");
  CHECK(value_of(r->fields, ":scheme") == "https");
  CHECK(value_of(r->fields, ":authority") == "api.example:8443");
  CHECK(value_of(r->fields, ":path") == "/v1/x?q=1");
  CHECK(value_of(r->fields, "x-custom") == "A b");
  CHECK(value_of(r->fields, "te") == "trailers");
  CHECK(r->framing.kind == BodyFraming::Kind::none);
  CHECK(r->method == "GET");
}

TEST_CASE("h2_upstream_request: every connection-specific field is dropped, and what Connection names") {
  for (const char* name : {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade",
                           "HTTP2-Settings", "TE", "connection", "keep-alive", "proxy-connection", "upgrade", "te"}) {
    CAPTURE(name);
    const std::string value = std::string(name) == "Transfer-Encoding" || std::string(name) == "transfer-encoding"
                                  ? "chunked"
                                  : "x";
    const auto r = upstream(std::string("POST / HTTP/1.1\r\nHost: h\r\n") + name + ": " + value + "\r\n\r\n");
    REQUIRE(r);
    for (const H2Field& f : r->fields) {
      CHECK(f.name != "connection");
      CHECK(f.name != "keep-alive");
      CHECK(f.name != "proxy-connection");
      CHECK(f.name != "transfer-encoding");
      CHECK(f.name != "upgrade");
      CHECK(f.name != "http2-settings");
      CHECK(f.name != "host");
      if (f.name == "te") CHECK(f.value == "trailers");  // only ours
    }
  }
  const auto named = upstream("GET / HTTP/1.1\r\nHost: h\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nX-Kept: 2\r\n\r\n");
  REQUIRE(named);
  CHECK(value_of(named->fields, "x-hop") == "<none>");
  CHECK(value_of(named->fields, "x-kept") == "2");
  // Content-Length is framing: Connection never takes it away.
  const auto length = upstream("POST / HTTP/1.1\r\nHost: h\r\nConnection: content-length\r\nContent-Length: 3\r\n\r\n");
  REQUIRE(length);
  CHECK(value_of(length->fields, "content-length") == "3");
  CHECK(length->framing.kind == BodyFraming::Kind::length);
  CHECK(length->framing.length == 3);
}

TEST_CASE("h2_upstream_request: the body's framing") {
  const auto chunked = upstream("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
  REQUIRE(chunked);
  CHECK(chunked->framing.kind == BodyFraming::Kind::chunked);
  CHECK(value_of(chunked->fields, "transfer-encoding") == "<none>");
  CHECK(value_of(chunked->fields, "content-length") == "<none>");
}

TEST_CASE("h2_upstream_request: what cannot be carried is refused") {
  CHECK_FALSE(upstream("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"));                 // no Host
  CHECK_FALSE(upstream("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"));           // two
  CHECK_FALSE(upstream("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"));          // a tunnel
  CHECK_FALSE(upstream("GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n"));              // not origin-form
  CHECK_FALSE(upstream("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"));
  CHECK(upstream("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"));
}

TEST_CASE("h2_upstream_request: a field no parser checked (as a later stage could add) is refused, not sent") {
  // Given as fields, not text: what the HTTP/1.1 parser would have refused must not reach nghttp2.
  const auto with = [](std::string name, std::string value, std::string method = "GET") {
    const RequestMessage message{std::move(method), "/", "HTTP/1.1", {{"Host", "h"}, {std::move(name), std::move(value)}}};
    return h2_upstream_request(message.view());
  };
  CHECK(with("X-A", "b"));
  CHECK_FALSE(with("X-A", "b\r\nx-evil: 1"));
  CHECK_FALSE(with("X-A", std::string("b\0c", 3)));
  CHECK_FALSE(with("X-A", "b\n"));
  CHECK_FALSE(with("X-A", " b"));
  CHECK_FALSE(with("X A", "b"));
  CHECK_FALSE(with("X:A", "b"));
  CHECK_FALSE(with("", "b"));
  CHECK_FALSE(with("X-A", "b", "GE T"));
  CHECK_FALSE(with("X-A", "b", ""));
}

TEST_CASE("h1_response_head: status line, fields, framing") {
  const auto r = h1_response_head({{":status", "200"}, {"content-type", "text/plain"}, {"content-length", "5"}},
                                  "GET", false);
  REQUIRE(r);
  CHECK(text_of(r->head) == "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\n");
  CHECK(r->framing.kind == BodyFraming::Kind::length);
  CHECK(r->framing.length == 5);
  CHECK_FALSE(r->interim);

  const auto chunked = h1_response_head({{":status", "200"}, {"content-type", "application/grpc"}}, "POST", false);
  REQUIRE(chunked);
  CHECK(text_of(chunked->head) == "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ntransfer-encoding: chunked\r\n\r\n");
  CHECK(chunked->framing.kind == BodyFraming::Kind::chunked);

  const auto ended = h1_response_head({{":status", "200"}, {"grpc-status", "5"}}, "POST", true);  // trailers-only
  REQUIRE(ended);
  CHECK(text_of(ended->head) == "HTTP/1.1 200 OK\r\ngrpc-status: 5\r\ncontent-length: 0\r\n\r\n");

  const auto odd = h1_response_head({{":status", "299"}}, "GET", true);
  REQUIRE(odd);
  CHECK(text_of(odd->head).starts_with("HTTP/1.1 299 \r\n"));
  // The head as the connection takes it (its view, never text parsed again) frames the body as
  // the translation said; its text would parse back as the same.
  for (const auto* given : {&*r, &*chunked, &*ended}) {
    const auto framing = response_framing("GET", given->head.view());
    REQUIRE(std::holds_alternative<BodyFraming>(framing));
    CHECK(std::get<BodyFraming>(framing).kind == given->framing.kind);
    CHECK(std::get<BodyFraming>(framing).length == given->framing.length);
    const std::string text = text_of(given->head);
    const auto parsed = parse_response_head(text, 64 * 1024);
    REQUIRE(parsed.status == ParseResult<ResponseHead>::Status::complete);
    CHECK(parsed.value->status == given->head.status);
    CHECK(parsed.value->headers.size() == given->head.fields.size());
  }
}

TEST_CASE("h1_response_head: bodiless answers") {
  const auto head = h1_response_head({{":status", "200"}, {"content-length", "42"}}, "HEAD", true);
  REQUIRE(head);
  CHECK(head->framing.kind == BodyFraming::Kind::none);
  CHECK(text_of(head->head) == "HTTP/1.1 200 OK\r\ncontent-length: 42\r\n\r\n");  // the length of what GET would give
  const auto not_modified = h1_response_head({{":status", "304"}, {"content-length", "42"}}, "GET", true);
  REQUIRE(not_modified);
  CHECK(not_modified->framing.kind == BodyFraming::Kind::none);
  const auto no_content = h1_response_head({{":status", "204"}, {"content-length", "0"}}, "GET", true);
  REQUIRE(no_content);
  CHECK(text_of(no_content->head) == "HTTP/1.1 204 No Content\r\n\r\n");
  const auto interim = h1_response_head({{":status", "100"}}, "POST", false);
  REQUIRE(interim);
  CHECK(interim->interim);
  CHECK(text_of(interim->head) == "HTTP/1.1 100 Continue\r\n\r\n");
  CHECK(interim->framing.kind == BodyFraming::Kind::none);
}

TEST_CASE("h1_response_head: connection-specific fields and x-egress-refused never reach the box") {
  for (const char* name : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
                           "http2-settings", "te", "x-egress-refused"}) {
    CAPTURE(name);
    const auto r = h1_response_head({{":status", "200"}, {name, "chunked"}, {"content-length", "1"}}, "GET", false);
    REQUIRE(r);
    CHECK(text_of(r->head) == "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n");
  }
}

TEST_CASE("h1_response_head: refused lists") {
  const std::vector<std::vector<H2Field>> bad = {
      {},                                                      // no :status
      {{":status", "20"}},                                     // not three digits
      {{":status", "2x0"}},
      {{":status", "101"}},                                    // nothing here switches protocols
      {{":status", "099"}},
      {{":status", "200"}, {":status", "200"}},                // twice
      {{":status", "200"}, {":path", "/"}},                    // another pseudo-header
      {{"x", "1"}, {":status", "200"}},                        // after a regular field
      {{":status", "200"}, {"X-Upper", "1"}},                  // not lowercase
      {{":status", "200"}, {"x", "a\r\nx-egress-refused: 1"}},  // CR LF
      {{":status", "200"}, {"x", std::string("a\0b", 3)}},     // NUL
      {{":status", "200"}, {"x", " padded"}},                  // white space at an end
      {{":status", "200"}, {"content-length", "1"}, {"content-length", "2"}},
      {{":status", "200"}, {"content-length", "-1"}},
  };
  for (const auto& fields : bad) CHECK_FALSE(h1_response_head(fields, "GET", false));
  CHECK_FALSE(h1_response_head({{":status", "200"}, {"content-length", "4"}}, "GET", true));  // a length nothing fills
}

TEST_CASE("trailers: h2 to the chunked body's last chunk, filtered") {
  CHECK(h1_last_chunk_with_trailers({}) == "0\r\n\r\n");
  CHECK(h1_last_chunk_with_trailers({{"grpc-status", "0"}, {"grpc-message", "ok"}}) ==
        "0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n");
  for (const char* name : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
                           "trailer", "content-length", "host", "authorization", "proxy-authorization",
                           "proxy-authenticate", "www-authenticate", "cookie", "set-cookie", "content-encoding",
                           "content-type", "content-range", "location", "cache-control", "x-egress-refused"}) {
    CAPTURE(name);
    CHECK_FALSE(trailer_field_passes(name));
    CHECK(h1_last_chunk_with_trailers({{name, "1"}, {"x-ok", "1"}}) == "0\r\nx-ok: 1\r\n\r\n");
  }
  CHECK(h1_last_chunk_with_trailers({{"x", "a\r\nb"}, {"X-Upper", "1"}, {"y", "2"}}) == "0\r\ny: 2\r\n\r\n");
}

TEST_CASE("trailers: a chunked section back to h2 fields, filtered") {
  const auto fields = h2_trailers_from_section("Grpc-Status: 0\r\nset-cookie: a=1\r\nx-t:  v \r\nbad line\r\n\r\n");
  REQUIRE(fields.size() == 2);
  CHECK(fields[0].name == "grpc-status");
  CHECK(fields[0].value == "0");
  CHECK(fields[1].name == "x-t");
  CHECK(fields[1].value == "v");
  CHECK(h2_trailers_from_section("").empty());
}

TEST_CASE("ChunkedDecoder keeps the trailer section") {
  ChunkedDecoder d;
  std::string out;
  const std::string body = "3\r\nabc\r\n0\r\ngrpc-status: 0\r\nx: y\r\n\r\nNEXT";
  CHECK(d.feed(body, out) == body.size() - 4);
  CHECK(d.done());
  CHECK(out == "abc");
  CHECK(d.trailer_section() == "grpc-status: 0\r\nx: y\r\n\r\n");
  ChunkedDecoder flood;
  std::string huge = "0\r\n";
  for (int i = 0; i < 5000; ++i) huge += "x-aaaaaaaa: bbbbbbbb\r\n";
  flood.feed(huge, out);
  CHECK(flood.malformed());  // past kMaxTrailerSection
}

TEST_CASE("ChunkedScanner with Trailers::filtered passes the allowed trailers as the ending") {
  ChunkedScanner dropped;
  const std::string body = "3\r\nabc\r\n0\r\ngrpc-status: 0\r\nSet-Cookie: a=1\r\nX-Egress-Refused: x\r\nx-t: 1\r\n\r\n";
  const auto plain = dropped.feed(body);
  CHECK(plain.finished);
  CHECK(plain.ending == "\r\n");
  CHECK(body.substr(0, plain.passed) == "3\r\nabc\r\n0\r\n");

  ChunkedScanner kept(ChunkedScanner::Trailers::filtered);
  std::string passed;
  // Byte by byte: the section is gathered across feeds.
  for (std::size_t i = 0; i < body.size(); ++i) {
    const auto step = kept.feed(std::string_view(body).substr(i, 1));
    REQUIRE_FALSE(step.malformed);
    passed += body.substr(i, step.passed);
    passed += step.ending;
  }
  CHECK(passed == "3\r\nabc\r\n0\r\ngrpc-status: 0\r\nx-t: 1\r\n\r\n");
}

TEST_CASE("h2_upstream_request: a head of many fields, Connection naming some of them on two lines") {
  // The Connection tokens are gathered once (a head of many tiny fields used to rescan every
  // header for each field); what is dropped must stay exactly what Connection lists, in any case.
  constexpr int kFields = 50000;
  std::string text = "POST / HTTP/1.1\r\nHost: h\r\nConnection: X-F7 ,\tx-f123,content-length\r\nContent-Length: 0\r\n";
  for (int i = 0; i < kFields; ++i) text += "X-F" + std::to_string(i) + ": " + std::to_string(i) + "\r\n";
  text += "connection: , X-F49999\r\n\r\n";
  const auto parsed = parse_request_head(text, text.size() + 1);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  const auto r = h2_upstream_request(*parsed.value);
  REQUIRE(r);
  // Four pseudo-headers, content-length, the fields less the three listed, te.
  REQUIRE(r->fields.size() == 4 + 1 + (kFields - 3) + 1);
  CHECK(value_of(r->fields, "content-length") == "0");  // framing: never taken away
  CHECK(value_of(r->fields, "x-f7") == "<none>");
  CHECK(value_of(r->fields, "x-f123") == "<none>");
  CHECK(value_of(r->fields, "x-f49999") == "<none>");
  CHECK(value_of(r->fields, "x-f0") == "0");
  CHECK(value_of(r->fields, "x-f12") == "12");
  CHECK(value_of(r->fields, "x-f1234") == "1234");
  CHECK(value_of(r->fields, "x-f49998") == "49998");
  CHECK(value_of(r->fields, "connection") == "<none>");
}

namespace {

// A trailer section ("name: value\r\n" lines, then "\r\n") of exactly `bytes` bytes, every field
// one trailer_field_passes lets through, lines of at most 100 bytes.
std::string section_of(std::size_t bytes) {
  REQUIRE(bytes >= 2 + 9);
  std::string out;
  std::size_t left = bytes - 2;
  for (int i = 0; left > 0; ++i) {
    const std::string name = "x-t" + std::to_string(i % 10) + ": ";
    std::size_t line = std::min<std::size_t>(left, 100);
    if (left - line != 0 && left - line < name.size() + 3) line -= name.size() + 3;  // room for one more line
    out += name + std::string(line - name.size() - 2, 'v') + "\r\n";
    left -= line;
  }
  out += "\r\n";
  REQUIRE(out.size() == bytes);
  return out;
}

}  // namespace

TEST_CASE("trailer section: ChunkedScanner and ChunkedDecoder agree on kMaxTrailerSection, every byte counted") {
  for (const std::size_t bytes : {kMaxTrailerSection - 1, kMaxTrailerSection, kMaxTrailerSection + 1}) {
    CAPTURE(bytes);
    const bool fits = bytes <= kMaxTrailerSection;
    const std::string body = "3\r\nabc\r\n0\r\n" + section_of(bytes);
    ChunkedScanner scanner(ChunkedScanner::Trailers::filtered);
    const auto step = scanner.feed(body);
    CHECK(step.malformed == !fits);  // LFs and the final CRLF count too
    ChunkedDecoder decoder;
    std::string out;
    (void)decoder.feed(body, out);
    CHECK(decoder.malformed() == !fits);
    CHECK(decoder.done() == fits);
    if (fits) {
      // What the scanner passes on, the decoder H2Front reads it with takes whole.
      REQUIRE(step.finished);
      ChunkedDecoder next;
      std::string decoded;
      const std::string passed = body.substr(0, step.passed) + std::string(step.ending);
      CHECK(next.feed(passed, decoded) == passed.size());
      CHECK(next.done());
      CHECK(decoded == "abc");
    }
  }
}

TEST_CASE("h1_last_chunk_with_trailers: a section past kMaxTrailerSection is dropped whole, never refused later") {
  // Lines of "x-t: <value>\r\n": 7 bytes and the value; the section ends with "\r\n".
  auto trailers_of = [](std::size_t section) {
    std::vector<H2Field> out;
    std::size_t left = section - 2;
    while (left > 0) {
      const std::size_t line = left > 1000 + 7 + 8 ? 1000 + 7 : left;
      out.push_back({"x-t", std::string(line - 7, 'v')});
      left -= line;
    }
    return out;
  };
  for (const std::size_t section : {kMaxTrailerSection, kMaxTrailerSection + 1, std::size_t{60 * 1024}}) {
    CAPTURE(section);
    const std::string ending = h1_last_chunk_with_trailers(trailers_of(section));
    if (section <= kMaxTrailerSection) {
      CHECK(ending.size() == 3 + section);
    } else {
      CHECK(ending == kH2LastChunk);
    }
    ChunkedScanner scanner(ChunkedScanner::Trailers::filtered);
    const auto step = scanner.feed(ending);
    CHECK_FALSE(step.malformed);
    CHECK(step.finished);
  }
}

// is_lower_token and is_carriable_value read a table of byte classes (h2_fields.cc): every byte
// is checked against the rule as written (RFC 9110 tchar without uppercase; no control character
// but HTAB, no DEL; no blank at either end), alone and inside a value.
TEST_CASE("h2 fields: every byte classed as the rule says") {
  for (unsigned c = 0; c < 256; ++c) {
    CAPTURE(c);
    const auto ch = static_cast<unsigned char>(c);
    const std::string one(1, static_cast<char>(ch));
    const bool token = is_token_char(ch) && !(ch >= 'A' && ch <= 'Z');
    CHECK(is_lower_token(one) == token);
    CHECK(is_lower_token("a" + one + "b") == token);
    const bool carriable = !((ch < 0x20 && ch != '\t') || ch == 0x7f);
    CHECK(is_carriable_value("a" + one + "b") == carriable);
    CHECK(is_carriable_value(one) == (carriable && ch != ' ' && ch != '\t'));
  }
  CHECK_FALSE(is_lower_token(""));
  CHECK(is_carriable_value(""));
}
