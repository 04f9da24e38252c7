// SPDX-License-Identifier: Apache-2.0
// proxy/tunnel_host: the Host check's reader (SPEC §16). Tables of first bytes, fed whole and one
// byte at a time (the answer must not depend on how they came), with the attacker's forms: another
// Host, none, two, the port left out, absolute-form targets, white space and line-end tricks, a
// head that never ends; and the other protocols that must pass.
#include <doctest/doctest.h>

#include <string>

#include "proxy/wire/tunnel_host.h"

using namespace boxproxy;
using Verdict = TunnelHostReader::Verdict;

namespace {

constexpr std::size_t kMax = 1024;

// The reader's answer for `bytes` to good.test:`port`, fed whole; then fed one byte a read, which
// must give the same answer (checked here). `fin`: the client half-closes after them.
Verdict read(const std::string& bytes, std::uint16_t port = 80, bool fin = false) {
  TunnelHostReader whole("good.test", port, kMax);
  const Verdict at_once = fin ? whole.finish(bytes) : whole.feed(bytes);
  TunnelHostReader split("good.test", port, kMax);
  Verdict piecewise = Verdict::need_more;
  for (std::size_t i = 1; i <= bytes.size() && piecewise == Verdict::need_more; ++i) {
    piecewise = split.feed(std::string_view(bytes).substr(0, i));
  }
  if (fin && piecewise == Verdict::need_more) piecewise = split.finish(bytes);
  CHECK_MESSAGE(piecewise == at_once, "split answer differs for: ", bytes);
  return at_once;
}

std::string get(const std::string& headers, const std::string& target = "/") {
  return "GET " + target + " HTTP/1.1\r\n" + headers + "\r\n";
}

}  // namespace

TEST_CASE("tunnel host: the decided host passes, in any ASCII case, with a trailing dot, port 80 implied") {
  for (const char* host : {"good.test", "GOOD.test", "good.test.", "good.test:80", "Good.Test.:080", " good.test\t"}) {
    CAPTURE(host);
    CHECK(read(get(std::string("Host:") + host + "\r\n")) == Verdict::names_host);
  }
  CHECK(read(get("host: good.test\r\nAccept: */*\r\n")) == Verdict::names_host);
  CHECK(read("HEAD / HTTP/1.0\r\nHost: good.test\r\n\r\n") == Verdict::names_host);
  CHECK(read("OPTIONS * HTTP/1.1\r\nHost: good.test\r\n\r\n") == Verdict::names_host);
}

TEST_CASE("tunnel host: another host, another port, or no name at all is other_host") {
  for (const char* host : {"evil.test", "www.good.test", "good.test.evil.test", "good.test:8080", "good.test:",
                           "good.test:80:80", "good.test..", "", "user@good.test", "good.test, evil.test",
                           "127.0.0.2", "[::1]", "good.test:0", "good\\.test", "%67ood.test"}) {
    CAPTURE(host);
    CHECK(read(get(std::string("Host: ") + host + "\r\n")) == Verdict::other_host);
  }
  // No Host: an origin-form request names nothing, and the server picks its default site.
  CHECK(read(get("")) == Verdict::other_host);
  CHECK(read("GET / HTTP/1.0\r\n\r\n") == Verdict::other_host);
  // Two Hosts, even equal ones: servers differ on which counts.
  CHECK(read(get("Host: good.test\r\nHost: evil.test\r\n")) == Verdict::other_host);
  CHECK(read(get("Host: good.test\r\nHost: good.test\r\n")) == Verdict::other_host);
}

TEST_CASE("tunnel host: the port is the tunnel's, 80 when the Host has none") {
  CHECK(read(get("Host: good.test:8080\r\n"), 8080) == Verdict::names_host);
  CHECK(read(get("Host: good.test\r\n"), 8080) == Verdict::other_host);
  CHECK(read(get("Host: good.test:80\r\n"), 8080) == Verdict::other_host);
  CHECK(read(get("Host: good.test:443\r\n"), 443) == Verdict::names_host);
}

TEST_CASE("tunnel host: an absolute-form target must name the host too; Host, when present, as well") {
  CHECK(read(get("", "http://good.test/")) == Verdict::names_host);
  CHECK(read(get("Host: good.test\r\n", "HTTP://GOOD.test/x?y")) == Verdict::names_host);
  CHECK(read(get("", "http://good.test:8080"), 8080) == Verdict::names_host);
  CHECK(read(get("Host: good.test:443\r\n", "https://good.test/"), 443) == Verdict::names_host);
  CHECK(read(get("Host: good.test\r\n", "http://evil.test/")) == Verdict::other_host);
  CHECK(read(get("Host: evil.test\r\n", "http://good.test/")) == Verdict::other_host);
  CHECK(read(get("", "http://evil.test/")) == Verdict::other_host);
  CHECK(read(get("Host: good.test\r\n", "http://good.test:81/")) == Verdict::other_host);
  // Forms some parser reads as another host, and schemes this check does not read.
  for (const char* target : {"http://evil.test@good.test/", "http://good.test\\@evil.test/",
                             "http://good.test#@evil.test/", "ftp://good.test/", "good.test:80", "good.test/",
                             "http:/good.test/", "http://"}) {
    CAPTURE(target);
    CHECK(read(get("Host: good.test\r\n", target)) == Verdict::other_host);
  }
  // A path that starts with "//" is origin form: the server is asked for the Host's site.
  CHECK(read(get("Host: good.test\r\n", "//evil.test/")) == Verdict::names_host);
  // A CONNECT inside the tunnel (a proxy at the decided address) must name the decided target.
  CHECK(read("CONNECT good.test:80 HTTP/1.1\r\n\r\n") == Verdict::names_host);
  CHECK(read("CONNECT evil.test:80 HTTP/1.1\r\nHost: good.test\r\n\r\n") == Verdict::other_host);
  CHECK(read("CONNECT good.test:443 HTTP/1.1\r\n\r\n") == Verdict::other_host);
}

TEST_CASE("tunnel host: whatever a lenient server could take for a request is read, and refused unless strict") {
  for (const char* bytes : {
           "GET / HTTP/1.1\nHost: evil.test\n\n",                  // bare LF line ends
           "GET / HTTP/1.1\nHost: good.test\n\n",                  // ... even naming the host
           "\r\nGET / HTTP/1.1\r\nHost: good.test\r\n\r\n",        // an empty line first
           " GET / HTTP/1.1\r\nHost: good.test\r\n\r\n",           // a space first
           "GET  / HTTP/1.1\r\nHost: good.test\r\n\r\n",           // two spaces
           "GET\t/\tHTTP/1.1\r\nHost: good.test\r\n\r\n",          // tabs
           "GET\v/\vHTTP/1.1\r\nHost: evil.test\r\n\r\n",          // VT as a space (RFC 9112 §3)
           "GET\r/\rHTTP/1.1\r\nHost: evil.test\r\n\r\n",          // bare CR as a space
           "GET /a b HTTP/1.1\r\nHost: good.test\r\n\r\n",         // a space in the target
           "get / http/1.1\r\nHost: good.test\r\n\r\n",            // a version in lower case
           "GET / HTTP/1.2\r\nHost: good.test\r\n\r\n",            // another version
           "GET / HTTP/2.0\r\nHost: good.test\r\n\r\n",
           "GET / HTTP/1.1\r\nHost : evil.test\r\n\r\n",           // white space before a colon
           "GET / HTTP/1.1\r\nX: a\r\n Host: evil.test\r\n\r\n",  // a folded line
           "GET / HTTP/1.1\r\nHost: good.test\r\nX: \x01\r\n\r\n",  // a control character
           "GET / HTTP/1.1\r\nHost: good.test\rX: y\r\n\r\n",     // a bare CR
           "GET / HTTP/1.1\r\nHost: good.test\r\n\x7f\r\n\r\n",     // DEL
       }) {
    CAPTURE(bytes);
    CHECK(read(bytes) == Verdict::other_host);
  }
}

TEST_CASE("tunnel host: other protocols, HTTP/0.9 and the h2c preface pass") {
  for (const std::string& bytes : {
           std::string("SSH-2.0-OpenSSH_9.6\r\n"), std::string("EHLO box\r\n"), std::string("PING\r\n"),
           std::string("*1\r\n$4\r\nPING\r\n"), std::string("\x00\x00\x00\x08\x04\xd2\x16\x2f", 8),
           std::string("GET /\r\n"),                           // HTTP/0.9: no headers, no Host
           std::string("a001 LOGIN user pass\r\n"), std::string("0032git-upload-pack /x\0host=evil\0", 33),
           std::string("\x16\x03\x01"), std::string("{\"a\":1}\n"),
           std::string(kHttp2Preface) + "\x00\x00\x12\x04",
       }) {
    CAPTURE(bytes);
    CHECK(read(bytes) == Verdict::not_http);
  }
  // Once "HTTP/" has been read it is HTTP, and a NUL after it makes it unreadable.
  CHECK(read(std::string("GET / HTTP/1.1\x00\r\n", 17)) == Verdict::other_host);
}

TEST_CASE("tunnel host: need_more until the head ends; pipelined bytes after it are not looked at") {
  TunnelHostReader reader("good.test", 80, kMax);
  std::string held = "GET / HTTP/1.1\r\nHost: good.test\r\n";
  CHECK(reader.feed(held) == Verdict::need_more);
  held += "\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  CHECK(reader.feed(held) == Verdict::names_host);  // only the first request is read
  CHECK(reader.feed(held + "more") == Verdict::names_host);
  // The preface's beginning waits for the whole of it.
  TunnelHostReader h2("good.test", 80, kMax);
  CHECK(h2.feed("PRI * HTTP/2.0\r\n") == Verdict::need_more);
  CHECK(h2.feed("PRI * HTTP/1.1\r\nHost: evil.test\r\n\r\n") == Verdict::other_host);
}

TEST_CASE("tunnel host: bounded by max_head_bytes, a line or head that long is other_host") {
  const std::string long_target = "GET /" + std::string(kMax, 'a') + " HTTP/1.1\r\nHost: good.test\r\n\r\n";
  CHECK(read(long_target) == Verdict::other_host);
  const std::string never_ends = "GET / HTTP/1.1\r\nHost: good.test\r\n" + std::string(kMax, 'x');
  CHECK(read(never_ends) == Verdict::other_host);
  CHECK(read(std::string(kMax, '\n')) == Verdict::other_host);
  // Within the bound exactly.
  std::string fits = get("Host: good.test\r\n");
  fits.insert(fits.size() - 2, "X: " + std::string(kMax - fits.size() - 5, 'v') + "\r\n");
  REQUIRE(fits.size() == kMax);
  CHECK(read(fits) == Verdict::names_host);
  // A token that long: no answer is owed before the bound, and at it, the tunnel closes.
  TunnelHostReader reader("good.test", 80, kMax);
  CHECK(reader.feed(std::string(kMax - 1, 'A')) == Verdict::need_more);
  CHECK(reader.feed(std::string(kMax, 'A')) == Verdict::other_host);
}

TEST_CASE("tunnel host: at the client's FIN, an unfinished line passes, an unfinished head does not") {
  CHECK(read("GET / HTT", 80, true) == Verdict::not_http);
  CHECK(read("", 80, true) == Verdict::not_http);
  CHECK(read("PRI * HTTP/2", 80, true) == Verdict::not_http);
  CHECK(read("GET / HTTP/1.1\r\nHost: evil.test\r\n", 80, true) == Verdict::other_host);
  CHECK(read("GET / HTTP/1.1\r\nHost: good.test\r\n", 80, true) == Verdict::other_host);
  CHECK(read("GET / HTTP/1.1\r\nHost: good.test\r\n\r\n", 80, true) == Verdict::names_host);
}

// What may go upstream while the reader waits: the first line up to its first CR or LF (or the
// version's slash), each byte once, and nothing once a head could be under way.
std::string forwardable_after(const std::string& bytes, bool one_at_a_time) {
  TunnelHostReader reader("good.test", 80, kMax);
  std::string forwarded;
  for (std::size_t i = one_at_a_time ? 1 : bytes.size(); i <= bytes.size(); ++i) {
    const std::string_view held = std::string_view(bytes).substr(0, i);
    if (reader.feed(held) != Verdict::need_more) break;
    forwarded += reader.take_forwardable(held);
  }
  CHECK(forwarded.size() == reader.forwarded());
  return forwarded;
}

TEST_CASE("tunnel host: while it waits, the first line goes up, never its line end nor the head") {
  const struct {
    const char* bytes;
    const char* forwarded;
  } rows[] = {
      {"ping", "ping"},                                    // a short message that waits for its echo
      {"hello world", "hello world"},                      // words, no line end yet
      {"GET / HTTP", "GET / HTTP"},                        // the version's slash not yet met
      {"GET / HTTP/1.1", "GET / HTTP"},                    // from the slash on: a head is under way
      {"GET / HTTP/1.1\r\nHost: evil.test\r\n", "GET / HTTP"},
      {"GET / x\r", "GET / x"},                            // a CR: some server's line end
      {"\r\nGET /", "\r\nGET /"},                          // leading empty lines are harmless
      {"PRI * HTTP/2", ""},                                // may still be the h2c preface: held
  };
  for (const auto& row : rows) {
    CAPTURE(row.bytes);
    CHECK(forwardable_after(row.bytes, false) == row.forwarded);
    CHECK(forwardable_after(row.bytes, true) == row.forwarded);
  }
  // Once there is an answer, nothing more is handed out (the caller sends the rest itself).
  TunnelHostReader reader("good.test", 80, kMax);
  const std::string done = "ping\n";
  CHECK(reader.feed(done) == Verdict::not_http);
  CHECK(reader.take_forwardable(done).empty());
}
