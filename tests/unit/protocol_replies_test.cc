// SPDX-License-Identifier: Apache-2.0
// proxy/refusal_reply: the exact bytes of every refusal and success reply (SPEC §6, §7, §9, §10).
#include <doctest/doctest.h>

#include <string>

#include "proxy/wire/replies.h"

using namespace boxproxy;
using namespace std::string_literals;

namespace {

std::string expected_refusal(unsigned status, std::string_view cls, std::string_view words, bool auth = false) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(words) + "\r\n";
  out += "x-egress-refused: " + std::string(cls) + "\r\n";
  if (auth) out += "Proxy-Authenticate: Basic realm=\"boxproxy\"\r\n";
  out += "content-type: text/plain\r\n";
  out += "content-length: " + std::to_string(words.size() + 1) + "\r\n";
  out += "connection: close\r\n\r\n";
  out += std::string(words) + "\n";
  return out;
}

struct Row {
  Reason reason;
  unsigned status;
  std::string_view cls;
};

// SPEC §6, written out again by hand: the table in reason.cc must agree with it.
constexpr Row kHttpRows[] = {
    {Reason::invalid_target, 400, "invalid target"},
    {Reason::invalid_host, 400, "invalid host"},
    {Reason::not_listed, 403, "not-listed"},
    {Reason::unspecified, 403, "unspecified"},
    {Reason::loopback, 403, "loopback"},
    {Reason::private_range, 403, "private"},
    {Reason::metadata, 403, "metadata"},
    {Reason::cgnat, 403, "cgnat"},
    {Reason::link_local, 403, "link-local"},
    {Reason::benchmarking, 403, "benchmarking"},
    {Reason::reserved, 403, "reserved"},
    {Reason::multicast, 403, "multicast"},
    {Reason::broadcast, 403, "broadcast"},
    {Reason::this_host, 403, "this-host"},
    {Reason::denied, 403, "denied"},
    {Reason::name_not_resolved, 502, "name not resolved"},
    {Reason::lookup_budget, 429, "lookup budget"},
    {Reason::tunnel_cap, 429, "tunnel cap"},
    {Reason::connection_budget, 429, "connection budget"},
    {Reason::dial_failed, 502, "dial failed"},
    {Reason::dial_timed_out, 504, "dial timed out"},
    {Reason::auth_required, 407, "auth required"},
    {Reason::not_absolute_uri, 400, "not an absolute URI"},
    {Reason::not_http_uri, 400, "not an http URI"},
    {Reason::host_mismatch, 400, "host mismatch"},
    {Reason::upgrade_not_supported, 400, "upgrade not supported"},
    {Reason::bad_request, 400, "bad request"},
    {Reason::bad_framing, 400, "bad framing"},
    {Reason::head_too_large, 431, "head too large"},
};

}  // namespace

TEST_CASE("refusal_words") {
  CHECK(refusal_words(Reason::loopback) == "egress refused: loopback");
  CHECK(refusal_words(Reason::not_absolute_uri) == "egress refused: not an absolute URI");
  CHECK(refusal_words(Reason::head_too_large) == "egress refused: head too large");
}

TEST_CASE("every HTTP refusal, byte for byte") {
  for (const auto& row : kHttpRows) {
    CAPTURE(row.cls);
    const auto words = refusal_words(row.reason);
    CHECK(words == "egress refused: " + std::string(row.cls));
    CHECK(http_refusal(row.reason, words) ==
          expected_refusal(row.status, row.cls, words, row.reason == Reason::auth_required));
  }
}

TEST_CASE("HTTP refusal: one literal example of each shape") {
  CHECK(http_refusal(Reason::loopback, refusal_words(Reason::loopback)) ==
        "HTTP/1.1 403 egress refused: loopback\r\n"
        "x-egress-refused: loopback\r\n"
        "content-type: text/plain\r\n"
        "content-length: 25\r\n"
        "connection: close\r\n"
        "\r\n"
        "egress refused: loopback\n");
  CHECK(http_refusal(Reason::auth_required, refusal_words(Reason::auth_required)) ==
        "HTTP/1.1 407 egress refused: auth required\r\n"
        "x-egress-refused: auth required\r\n"
        "Proxy-Authenticate: Basic realm=\"boxproxy\"\r\n"
        "content-type: text/plain\r\n"
        "content-length: 30\r\n"
        "connection: close\r\n"
        "\r\n"
        "egress refused: auth required\n");
  CHECK(http_refusal(Reason::head_too_large, refusal_words(Reason::head_too_large)) ==
        "HTTP/1.1 431 egress refused: head too large\r\n"
        "x-egress-refused: head too large\r\n"
        "content-type: text/plain\r\n"
        "content-length: 31\r\n"
        "connection: close\r\n"
        "\r\n"
        "egress refused: head too large\n");
}

TEST_CASE("HTTP refusal: a detail follows the words in the body, counted in content-length") {
  const std::string detail = "judged: DELETE /x at endpoint origin.test:80\n";
  CHECK(http_refusal(Reason::request_denied, refusal_words(Reason::request_denied), detail) ==
        "HTTP/1.1 403 egress refused: request denied\r\n"
        "x-egress-refused: request denied\r\n"
        "content-type: text/plain\r\n"
        "content-length: 76\r\n"
        "connection: close\r\n"
        "\r\n"
        "egress refused: request denied\n"
        "judged: DELETE /x at endpoint origin.test:80\n");
}

TEST_CASE("HTTP refusal: not-listed words are the caller's") {
  const std::string words = "example.com is not on this box's network list: ask ops";
  CHECK(http_refusal(Reason::not_listed, words) == expected_refusal(403, "not-listed", words));
}

TEST_CASE("HTTP refusal: only printable ASCII in the status line and body") {
  const auto reply = http_refusal(Reason::not_listed, "ev\r\nil\0x\x7f\xc3\xa9 host is not on this box's network list"s);
  const std::string clean = "ev??il?x??? host is not on this box's network list";
  CHECK(reply == expected_refusal(403, "not-listed", clean));
  CHECK(reply.find('\0') == std::string::npos);
}

TEST_CASE("HTTP refusal: a SOCKS-only reason still makes a well-formed head") {
  const auto reply = http_refusal(Reason::socks_bind, refusal_words(Reason::socks_bind));
  CHECK(reply.rfind("HTTP/1.1 400 egress refused: socks bind\r\n", 0) == 0);
}

TEST_CASE("CONNECT established") {
  CHECK(http_connect_established() == "HTTP/1.1 200 Connection Established\r\n\r\n");
}

TEST_CASE("SOCKS5 replies") {
  CHECK(socks5_reply(0) == std::array<std::uint8_t, 10>{5, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  for (std::uint8_t code : std::array<std::uint8_t, 6>{1, 2, 4, 5, 7, 8}) {
    CAPTURE(code);
    CHECK(socks5_reply(code) == std::array<std::uint8_t, 10>{5, code, 0, 1, 0, 0, 0, 0, 0, 0});
  }
  // SPEC §6's SOCKS5 column.
  CHECK(info(Reason::invalid_target).socks5_reply == 1);
  CHECK(info(Reason::invalid_host).socks5_reply == 4);
  CHECK(info(Reason::not_listed).socks5_reply == 2);
  CHECK(info(Reason::loopback).socks5_reply == 2);
  CHECK(info(Reason::denied).socks5_reply == 2);
  CHECK(info(Reason::name_not_resolved).socks5_reply == 4);
  CHECK(info(Reason::tunnel_cap).socks5_reply == 2);
  CHECK(info(Reason::connection_budget).socks5_reply == 2);
  CHECK(info(Reason::lookup_budget).socks5_reply == 2);
  CHECK(info(Reason::dial_failed).socks5_reply == 5);
  CHECK(info(Reason::dial_timed_out).socks5_reply == 4);
  CHECK(info(Reason::socks_bind).socks5_reply == 7);
  CHECK(info(Reason::socks_udp_associate).socks5_reply == 7);
  CHECK(info(Reason::socks_command).socks5_reply == 7);
  CHECK(info(Reason::socks_address_type).socks5_reply == 8);
}

TEST_CASE("SOCKS4 replies") {
  CHECK(socks4_reply(true) == std::array<std::uint8_t, 8>{0, 0x5A, 0, 0, 0, 0, 0, 0});
  CHECK(socks4_reply(false) == std::array<std::uint8_t, 8>{0, 0x5B, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("RESOLVE answered with an address: 05 00 00 ATYP ADDR 00 00") {
  const auto v4 = parse_strict_address("192.0.2.200");
  REQUIRE(v4.has_value());
  CHECK(socks5_resolved_reply(*v4) == "\x05\x00\x00\x01\xc0\x00\x02\xc8\x00\x00"s);

  const auto v6 = parse_strict_address("2001:db8::a:1");
  REQUIRE(v6.has_value());
  CHECK(socks5_resolved_reply(*v6) ==
        "\x05\x00\x00\x04\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x00\x01\x00\x00"s);
}

TEST_CASE("RESOLVE answered by name: 05 00 00 03 LEN NAME 00 00") {
  CHECK(socks5_resolved_by_name_reply("a") == "\x05\x00\x00\x03\x01" "a\x00\x00"s);
  const std::string longest = std::string(63, 'a') + '.' + std::string(63, 'b') + '.' + std::string(63, 'c') + '.' +
                              std::string(61, 'd');
  REQUIRE(longest.size() == 253);
  const std::string reply = socks5_resolved_by_name_reply(longest);
  CHECK(reply.size() == 4 + 1 + 253 + 2);
  CHECK(reply.substr(0, 5) == "\x05\x00\x00\x03\xfd"s);
  CHECK(reply.substr(5, 253) == longest);
  CHECK(reply.substr(258) == "\x00\x00"s);
}
