// SPDX-License-Identifier: Apache-2.0
// The pure handshake (proxy/wire/handshake.h): every form of SPEC §7, §8, §9, §10, §11, fed whole, a
// byte at a time, and split at every byte, with the same answer each way.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "proxy/wire/handshake.h"
#include "proxy/wire/replies.h"
#include "proxy/wire/socks4.h"
#include "proxy/wire/socks5.h"

namespace boxproxy {
namespace {

using Outcome = Handshake::Outcome;
using Kind = ClientKind;
using Protocol = Handshake::Protocol;

constexpr std::string_view kToken = "s3cret-token";

std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (int b : list) s.push_back(static_cast<char>(b));
  return s;
}

// What a handshake said, once fed `input` in `pieces` (split points), as a connection would feed
// it: what it asked to send, and the first outcome other than need_more (bytes not yet fed then
// are the client's next bytes, and count as the rest).
struct Seen {
  Outcome outcome = Outcome::need_more;
  std::string sent;
  Protocol protocol = Protocol::unknown;
  Kind kind = Kind::connect;
  std::optional<Reason> reason;
  std::string log_host;
  std::uint16_t log_port = 0;
  std::string refusal;
  std::string host;
  std::uint16_t port = 0;
  std::string rest;
  std::optional<PlainRequest> plain;
};

Seen run(const HandshakeRules& rules, std::string_view input, const std::vector<std::size_t>& cuts) {
  Handshake handshake(rules);
  Seen seen;
  std::size_t at = 0;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(input.size());
  for (std::size_t end : ends) {
    if (end < at) continue;
    seen.outcome = handshake.feed(input.substr(at, end - at));
    at = end;
    seen.sent += handshake.take_to_send();
    if (seen.outcome != Outcome::need_more) break;
  }
  seen.protocol = handshake.protocol();
  seen.kind = handshake.kind();
  seen.reason = handshake.reason();
  seen.log_host = std::string(handshake.log_host());
  seen.log_port = handshake.log_port();
  // The answer the connection sends for a refused handshake (proxy/client_decision.cc).
  if (seen.outcome == Outcome::refuse) {
    seen.refusal = refusal_reply_for(handshake.protocol(), handshake.reason().value_or(Reason::bad_request));
  }
  if (seen.outcome == Outcome::decided) {
    seen.host = handshake.target().host;
    seen.port = handshake.target().port;
    seen.rest = handshake.take_rest() + std::string(input.substr(at));
    seen.plain = handshake.plain();
  }
  return seen;
}

struct Case {
  const char* name;
  bool with_token;
  std::string input;
  Outcome outcome;
  Kind kind;
  std::string sent = {};          // bytes the handshake asked to send on the way
  std::string host = {};          // decided: the target; refuse: the host logged
  std::uint16_t port = 0;
  std::optional<Reason> reason = {};
  std::string rest = {};          // decided: the bytes after the request
  std::string refusal_prefix = {};  // refuse: how the protocol's answer begins
};

std::vector<Case> cases() {
  const std::string greet = bytes({5, 1, 0});
  const std::string greet_auth = bytes({5, 1, 2});
  const std::string chose_none = bytes({5, 0});
  const std::string chose_auth = bytes({5, 2});
  const std::string creds = bytes({1, 4}) + "user" + bytes({static_cast<int>(kToken.size())}) + std::string(kToken);
  const std::string bad_creds = bytes({1, 4}) + "user" + bytes({5}) + "wrong";
  const auto socks5_domain = [](int command, std::string_view host, int hi, int lo) {
    return bytes({5, command, 0, 3, static_cast<int>(host.size())}) + std::string(host) + bytes({hi, lo});
  };
  const std::string http_auth = "Proxy-Authorization: Bearer " + std::string(kToken) + "\r\n";
  // Basic base64("any:s3cret-token")
  const std::string basic_auth = "Proxy-Authorization: Basic YW55OnMzY3JldC10b2tlbg==\r\n";
  return {
      // SPEC §7: CONNECT.
      {"connect name", false, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", Outcome::decided,
       Kind::connect, "", "example.com", 443},
      {"connect with early data", false, "CONNECT example.com:443 HTTP/1.1\r\n\r\n\x16\x03\x01hello", Outcome::decided,
       Kind::connect, "", "example.com", 443, {}, "\x16\x03\x01hello"},
      {"connect ipv6", false, "CONNECT [2001:db8::1]:8443 HTTP/1.0\r\n\r\n", Outcome::decided, Kind::connect, "",
       "2001:db8::1", 8443},
      {"connect without port", false, "CONNECT example.com HTTP/1.1\r\n\r\n", Outcome::refuse, Kind::connect, "",
       "example.com", 0, Reason::invalid_target, "", "HTTP/1.1 400"},
      {"connect port zero", false, "CONNECT example.com:0 HTTP/1.1\r\n\r\n", Outcome::refuse, Kind::connect, "",
       "example.com", 0, Reason::invalid_target, "", "HTTP/1.1 400"},
      {"connect bad host", false, "CONNECT exa$mple.com:443 HTTP/1.1\r\n\r\n", Outcome::refuse, Kind::connect, "",
       "exa$mple.com", 443, Reason::invalid_host, "", "HTTP/1.1 400"},
      {"connect line with two spaces", false, "CONNECT  example.com:443 HTTP/1.1\r\n\r\n", Outcome::refuse,
       Kind::connect, "", "", 0, Reason::invalid_target, "", "HTTP/1.1 400"},
      {"bare LF", false, "CONNECT example.com:443 HTTP/1.1\n\n", Outcome::refuse, Kind::connect, "", "", 0,
       Reason::invalid_target, "", "HTTP/1.1 400"},
      {"folded header", false, "GET http://example.com/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n", Outcome::refuse, Kind::http,
       "", "", 0, Reason::bad_request, "", "HTTP/1.1 400"},
      // SPEC §8: plain HTTP.
      {"plain get", false, "GET http://example.com/path?q HTTP/1.1\r\nHost: example.com\r\n\r\n", Outcome::decided,
       Kind::http, "", "example.com", 80},
      {"plain post with body", false,
       "POST http://example.com:8080/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET", Outcome::decided, Kind::http,
       "", "example.com", 8080, {}, "helloGET"},
      {"https uri", false, "GET https://example.com/ HTTP/1.1\r\n\r\n", Outcome::refuse, Kind::http, "", "example.com",
       0, Reason::not_http_uri, "", "HTTP/1.1 400"},
      {"origin form", false, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", Outcome::refuse, Kind::http, "", "", 0,
       Reason::not_absolute_uri, "", "HTTP/1.1 400"},
      {"userinfo", false, "GET http://user@example.com/ HTTP/1.1\r\n\r\n", Outcome::refuse, Kind::http, "", "", 0,
       Reason::invalid_target, "", "HTTP/1.1 400"},
      {"host mismatch", false, "GET http://example.com/ HTTP/1.1\r\nHost: other.com\r\n\r\n", Outcome::refuse,
       Kind::http, "", "example.com", 80, Reason::host_mismatch, "", "HTTP/1.1 400"},
      {"upgrade", false, "GET http://example.com/ HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", Outcome::refuse,
       Kind::http, "", "example.com", 80, Reason::upgrade_not_supported, "", "HTTP/1.1 400"},
      {"two lengths", false, "POST http://example.com/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       Outcome::refuse, Kind::http, "", "example.com", 80, Reason::bad_framing, "", "HTTP/1.1 400"},
      // SPEC §9: SOCKS5.
      {"socks5 domain", false, greet + socks5_domain(1, "example.com", 1, 187), Outcome::decided, Kind::socks,
       chose_none, "example.com", 443},
      {"socks5 ipv4 with early data", false, greet + bytes({5, 1, 0, 1, 93, 184, 216, 34, 0, 80}) + "GET /",
       Outcome::decided, Kind::socks, chose_none, "93.184.216.34", 80, {}, "GET /"},
      {"socks5 ipv6", false,
       greet + bytes({5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22}),
       Outcome::decided, Kind::socks, chose_none, "2001:db8::1", 22},
      {"socks5 bind", false, greet + socks5_domain(2, "example.com", 0, 80), Outcome::refuse, Kind::socks, chose_none,
       "example.com", 80, Reason::socks_bind, "", bytes({5, 7})},
      {"socks5 udp associate", false, greet + socks5_domain(3, "example.com", 0, 80), Outcome::refuse, Kind::socks,
       chose_none, "example.com", 80, Reason::socks_udp_associate, "", bytes({5, 7})},
      {"socks5 other command", false, greet + socks5_domain(9, "example.com", 0, 80), Outcome::refuse, Kind::socks,
       chose_none, "example.com", 80, Reason::socks_command, "", bytes({5, 7})},
      // SPEC §16: Tor's RESOLVE (0xF0), judged at 443 whatever port it carries.
      {"socks5 resolve", false, greet + socks5_domain(0xF0, "example.com", 0, 0), Outcome::decided, Kind::resolve,
       chose_none, "example.com", 443},
      {"socks5 resolve with a port", false, greet + socks5_domain(0xF0, "example.com", 0, 80), Outcome::decided,
       Kind::resolve, chose_none, "example.com", 443},
      {"socks5 resolve bad host", false, greet + socks5_domain(0xF0, "exa$mple", 0, 0), Outcome::refuse,
       Kind::resolve, chose_none, "exa$mple", 0, Reason::invalid_host, "", bytes({5, 4})},
      {"socks5 address type", false, greet + bytes({5, 1, 0, 7, 1, 2, 3, 4, 0, 80}), Outcome::refuse, Kind::socks,
       chose_none, "", 0, Reason::socks_address_type, "", bytes({5, 8})},
      {"socks5 bad host", false, greet + socks5_domain(1, "exa$mple", 0, 80), Outcome::refuse, Kind::socks,
       chose_none, "exa$mple", 80, Reason::invalid_host, "", bytes({5, 4})},
      {"socks5 request of version 4", false, greet + bytes({4, 1, 0, 1, 1, 2, 3, 4, 0, 80}), Outcome::close,
       Kind::socks, chose_none},
      {"socks5 without method 0", false, bytes({5, 1, 2}), Outcome::answer_and_close, Kind::socks, bytes({5, 0xFF})},
      // SPEC §9 with §11: RFC 1929.
      {"socks5 token", true, greet_auth + creds + socks5_domain(1, "example.com", 0, 80), Outcome::decided,
       Kind::socks, chose_auth + bytes({1, 0}), "example.com", 80},
      {"socks5 wrong token", true, greet_auth + bad_creds + socks5_domain(1, "example.com", 0, 80),
       Outcome::answer_and_close, Kind::socks, chose_auth + bytes({1, 1}), "", 0, Reason::auth_required},
      {"socks5 token, no method 2", true, greet + socks5_domain(1, "example.com", 0, 80), Outcome::answer_and_close,
       Kind::socks, bytes({5, 0xFF}), "", 0, Reason::auth_required},
      // SPEC §10: SOCKS4 and 4a.
      {"socks4", false, bytes({4, 1, 0, 80, 93, 184, 216, 34}) + "user" + bytes({0}) + "early", Outcome::decided,
       Kind::socks4, "", "93.184.216.34", 80, {}, "early"},
      {"socks4a", false, bytes({4, 1, 1, 187, 0, 0, 0, 1, 0}) + "example.com" + bytes({0}), Outcome::decided,
       Kind::socks4, "", "example.com", 443},
      {"socks4 bind", false, bytes({4, 2, 0, 80, 93, 184, 216, 34, 0}), Outcome::refuse, Kind::socks4, "",
       "93.184.216.34", 80, Reason::socks_bind, "", bytes({0, 0x5B, 0, 0, 0, 0, 0, 0})},
      {"socks4 with a token", true, bytes({4, 1, 0, 80, 93, 184, 216, 34, 0}), Outcome::refuse, Kind::socks4, "", "",
       0, Reason::auth_required, "", bytes({0, 0x5B})},
      // SPEC §11: HTTP with a token.
      {"http without token", true, "CONNECT example.com:443 HTTP/1.1\r\n\r\n", Outcome::refuse, Kind::connect, "", "",
       0, Reason::auth_required, "", "HTTP/1.1 407"},
      {"http bearer", true, "CONNECT example.com:443 HTTP/1.1\r\n" + http_auth + "\r\n", Outcome::decided,
       Kind::connect, "", "example.com", 443},
      {"http basic", true, "GET http://example.com/ HTTP/1.1\r\n" + basic_auth + "\r\n", Outcome::decided, Kind::http,
       "", "example.com", 80},
      {"http wrong token names no host", true,
       "GET http://example.com/ HTTP/1.1\r\nProxy-Authorization: Bearer nope\r\n\r\n", Outcome::refuse, Kind::http,
       "", "", 0, Reason::auth_required, "", "HTTP/1.1 407"},
  };
}

void check_seen(const Case& c, const Seen& seen) {
  CHECK(seen.outcome == c.outcome);
  CHECK(seen.kind == c.kind);
  CHECK(seen.sent == c.sent);
  if (c.reason) CHECK(seen.reason == c.reason);
  if (c.outcome == Outcome::decided) {
    CHECK(seen.host == c.host);
    CHECK(seen.port == c.port);
    CHECK(seen.rest == c.rest);
  }
  if (c.outcome == Outcome::refuse) {
    CHECK(seen.log_host == c.host);
    CHECK(seen.log_port == c.port);
    CHECK(seen.refusal.starts_with(c.refusal_prefix));
  }
}

HandshakeRules rules_for(bool with_token) {
  HandshakeRules rules;
  rules.max_head_bytes = 32 * 1024;
  if (with_token) rules.auth_token = kToken;
  return rules;
}

}  // namespace

TEST_CASE("every handshake form, whole, a byte at a time, and split at every byte") {
  for (const Case& c : cases()) {
    const std::string name = c.name;
    CAPTURE(name);
    const HandshakeRules rules = rules_for(c.with_token);
    check_seen(c, run(rules, c.input, {}));
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < c.input.size(); ++i) every.push_back(i);
    check_seen(c, run(rules, c.input, every));
    for (std::size_t cut = 1; cut < c.input.size(); ++cut) {
      CAPTURE(cut);
      check_seen(c, run(rules, c.input, {cut}));
    }
  }
}

TEST_CASE("the port a decided request's log line names: the target's, but a RESOLVE's as sent") {
  const std::string greet = bytes({5, 1, 0});
  struct Logged {
    std::string input;
    std::uint16_t judged;
    std::uint16_t logged;
  };
  const std::vector<Logged> cases = {
      {greet + bytes({5, 0xF0, 0, 3, 4}) + "a.tt" + bytes({0, 0}), 443, 0},
      {greet + bytes({5, 0xF0, 0, 3, 4}) + "b.tt" + bytes({0x1f, 0x90}), 443, 8080},
      {greet + bytes({5, 1, 0, 3, 4}) + "c.tt" + bytes({0x1f, 0x90}), 8080, 8080},
      {"CONNECT d.test:8443 HTTP/1.1\r\n\r\n", 8443, 8443},
      {"GET http://e.test/ HTTP/1.1\r\n\r\n", 80, 80},
      {bytes({4, 1, 0, 81, 0, 0, 0, 1, 0}) + "f.test" + bytes({0}), 81, 81},
  };
  for (const Logged& c : cases) {
    CAPTURE(c.input);
    Handshake handshake(rules_for(false));
    REQUIRE(handshake.feed(c.input) == Outcome::decided);
    CHECK(handshake.target().port == c.judged);
    CHECK(handshake.logged_port() == c.logged);
  }
}

TEST_CASE("a plain request carries what the exchange needs") {
  const Seen seen = run(rules_for(false),
                        "POST http://example.com/x HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 5\r\n"
                        "\r\nhello",
                        {});
  REQUIRE(seen.outcome == Outcome::decided);
  REQUIRE(seen.plain);
  CHECK(seen.plain->method == "POST");
  CHECK(seen.plain->framing.kind == BodyFraming::Kind::length);
  CHECK(seen.plain->framing.length == 5);
  CHECK(seen.plain->client_keep_alive);
  CHECK(seen.plain->client_http10);
  CHECK(seen.plain->upstream_head.starts_with("POST /x HTTP/1."));
  CHECK(seen.plain->upstream_head.find("Connection: close\r\n") != std::string::npos);
  CHECK(seen.rest == "hello");
  const Seen connect = run(rules_for(false), "CONNECT a.test:1 HTTP/1.1\r\n\r\n", {});
  CHECK_FALSE(connect.plain);
}

TEST_CASE("bounds: a head past --max-head-bytes is refused, a SOCKS handshake past 1024 bytes closes") {
  HandshakeRules rules = rules_for(false);
  rules.max_head_bytes = 64;
  Handshake http(rules);
  CHECK(http.want() == 65);
  const std::string head = "GET http://example.com/ HTTP/1.1\r\nX-Long: " + std::string(100, 'a');
  CHECK(http.feed(head.substr(0, 40)) == Outcome::need_more);
  CHECK(http.want() == 25);  // never more than the bound and one byte
  CHECK(http.feed(head.substr(40, 25)) == Outcome::refuse);
  CHECK(http.reason() == Reason::head_too_large);
  CHECK(refusal_reply_for(http.protocol(), Reason::head_too_large).starts_with("HTTP/1.1 431"));

  Handshake socks(rules_for(false));
  CHECK(socks.feed(bytes({5, 1, 0})) == Outcome::need_more);
  CHECK(socks.take_to_send() == bytes({5, 0}));
  CHECK(socks.want() == socks5_max_handshake_bytes + 1 - 3);  // the greeting's 3 bytes count

  // The longest handshake there is: 255 methods, a 255-byte user and password (a token that
  // long), then a request whose 255-byte name has not ended: 257 + 513 + 254 = 1024 bytes.
  const std::string long_token(255, 't');
  HandshakeRules long_rules = rules_for(false);
  long_rules.auth_token = long_token;
  Handshake longest(long_rules);
  std::string greeting = bytes({5, 255});
  for (int i = 0; i < 255; ++i) greeting.push_back(static_cast<char>(i == 254 ? 2 : 1));
  const std::string credentials = bytes({1, 255}) + std::string(255, 'u') + bytes({255}) + long_token;
  const std::string request = bytes({5, 1, 0, 3, 255}) + std::string(249, 'a');
  CHECK(longest.feed(greeting) == Outcome::need_more);
  CHECK(longest.feed(credentials) == Outcome::need_more);
  CHECK(longest.take_to_send() == bytes({5, 2, 1, 0}));
  CHECK(longest.feed(request.substr(0, 253)) == Outcome::need_more);
  CHECK(longest.want() == 2);  // the bound, and one byte past it
  CHECK(longest.feed(request.substr(253, 1)) == Outcome::close);

  Handshake socks4(rules_for(false));
  std::string endless = bytes({4, 1, 0, 80, 1, 2, 3, 4}) + std::string(2000, 'u');
  // The first read, before the sniff, may take a head's worth; the sniff is its first byte.
  Outcome outcome = socks4.feed(endless.substr(0, 1));
  std::size_t fed = 1;
  while (outcome == Outcome::need_more && fed < endless.size()) {
    const std::size_t n = std::min(socks4.want(), endless.size() - fed);
    outcome = socks4.feed(std::string_view(endless).substr(fed, n));
    fed += n;
  }
  CHECK(outcome == Outcome::close);  // a user id without end
  CHECK(fed <= socks4_max_request_bytes + 1);
}

TEST_CASE("a malformed chunk that came with the head is refused before any dial") {
  const Seen seen = run(rules_for(false),
                        "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", {});
  CHECK(seen.outcome == Outcome::refuse);
  CHECK(seen.reason == Reason::bad_framing);
  CHECK(seen.log_host == "example.com");
  CHECK(seen.log_port == 80);
}

TEST_CASE("pipelined handshakes in one read: method choice, credentials, request and data") {
  const std::string all = bytes({5, 1, 2}) + bytes({1, 1}) + "u" + bytes({static_cast<int>(kToken.size())}) +
                          std::string(kToken) + bytes({5, 1, 0, 1, 1, 2, 3, 4, 1, 0}) + "data";
  const Seen seen = run(rules_for(true), all, {});
  CHECK(seen.outcome == Outcome::decided);
  CHECK(seen.sent == bytes({5, 2, 1, 0}));
  CHECK(seen.host == "1.2.3.4");
  CHECK(seen.port == 256);
  CHECK(seen.rest == "data");
}

TEST_CASE("a keep-alive connection's next request starts from the bytes pipelined") {
  Handshake handshake(rules_for(false));
  CHECK(handshake.feed("GET http://a.test/ HTTP/1.1\r\n\r\n") == Outcome::decided);
  CHECK(handshake.take_rest().empty());
  CHECK(handshake.next_http_request("GET http://b.test:81/ HTTP/1.1\r\n\r\nGET") == Outcome::decided);
  CHECK(handshake.target().host == "b.test");
  CHECK(handshake.target().port == 81);
  CHECK(handshake.take_rest() == "GET");
  CHECK(handshake.next_http_request("") == Outcome::need_more);
  CHECK(handshake.feed("CONNECT c.test:1 HTTP/1.1\r\n\r\n") == Outcome::decided);
  CHECK(handshake.kind() == Kind::connect);
}

TEST_CASE("the replies of an allowed request and of a refusal, per protocol") {
  CHECK(allowed_reply_for(Protocol::http) == "HTTP/1.1 200 Connection Established\r\n\r\n");
  CHECK(allowed_reply_for(Protocol::socks5) == bytes({5, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  CHECK(allowed_reply_for(Protocol::socks4) == bytes({0, 0x5A, 0, 0, 0, 0, 0, 0}));
  CHECK(refusal_reply_for(Protocol::socks5, Reason::dial_failed) == bytes({5, 5, 0, 1, 0, 0, 0, 0, 0, 0}));
  CHECK(refusal_reply_for(Protocol::socks5, Reason::head_too_large) == bytes({5, 1, 0, 1, 0, 0, 0, 0, 0, 0}));
  CHECK(refusal_reply_for(Protocol::socks4, Reason::loopback) == bytes({0, 0x5B, 0, 0, 0, 0, 0, 0}));
  const std::string http = refusal_reply_for(Protocol::http, Reason::not_listed, "a.test is not on this box's network list");
  CHECK(http.starts_with("HTTP/1.1 403 a.test is not on this box's network list\r\n"));
}

}  // namespace boxproxy
