// SPDX-License-Identifier: Apache-2.0
// proxy/socks5, proxy/socks4: handshakes in any chunking (SPEC §9, §10).
#include <doctest/doctest.h>

#include <string>

#include "proxy/wire/socks4.h"
#include "proxy/wire/socks5.h"

using namespace boxproxy;
using namespace std::string_literals;

namespace {

std::string bytes(std::initializer_list<int> list) {
  std::string out;
  for (int b : list) out += static_cast<char>(b);
  return out;
}

// Every strict prefix of `message` must be need_more, the whole must be complete with consumed ==
// message.size(), and the same with trailing early data after it. Returns the value.
template <typename T, typename Parse>
T check_incremental(const std::string& message, Parse parse) {
  using Status = typename ParseResult<T>::Status;
  for (std::size_t n = 0; n < message.size(); ++n) {
    CAPTURE(n);
    const auto r = parse(std::string_view(message).substr(0, n));
    CHECK(r.status == Status::need_more);
  }
  const auto early = parse(message + "\x16\x03\x01 early data");
  REQUIRE(early.status == Status::complete);
  CHECK(early.consumed == message.size());
  const auto r = parse(message);
  REQUIRE(r.status == Status::complete);
  CHECK(r.consumed == message.size());
  return *r.value;
}

}  // namespace

TEST_CASE("SOCKS5 greeting") {
  auto g = check_incremental<Socks5Greeting>(bytes({5, 1, 0}), parse_socks5_greeting);
  CHECK(g.offers_no_auth);
  CHECK_FALSE(g.offers_user_pass);
  g = check_incremental<Socks5Greeting>(bytes({5, 2, 0, 2}), parse_socks5_greeting);
  CHECK(g.offers_no_auth);
  CHECK(g.offers_user_pass);
  g = check_incremental<Socks5Greeting>(bytes({5, 1, 2}), parse_socks5_greeting);
  CHECK_FALSE(g.offers_no_auth);
  CHECK(g.offers_user_pass);
  g = check_incremental<Socks5Greeting>(bytes({5, 3, 1, 0x80, 0xff}), parse_socks5_greeting);
  CHECK_FALSE(g.offers_no_auth);
  CHECK_FALSE(g.offers_user_pass);
  g = check_incremental<Socks5Greeting>(bytes({5, 0}), parse_socks5_greeting);
  CHECK_FALSE(g.offers_no_auth);
  // 255 methods
  std::string many = bytes({5, 255});
  for (int i = 0; i < 255; ++i) many += static_cast<char>(i);
  g = check_incremental<Socks5Greeting>(many, parse_socks5_greeting);
  CHECK(g.offers_no_auth);
  CHECK(g.offers_user_pass);
}

TEST_CASE("SOCKS5 greeting: wrong version closes without a reason") {
  for (int version : {0, 4, 6, int{'G'}, 0xff}) {
    const auto r = parse_socks5_greeting(bytes({version, 1, 0}));
    CHECK(r.status == ParseResult<Socks5Greeting>::Status::refused);
    CHECK_FALSE(r.refusal.has_value());
  }
}

TEST_CASE("SOCKS5 credentials") {
  auto c = check_incremental<Socks5Credentials>(bytes({1, 4, 'u', 's', 'e', 'r', 3, 't', 'o', 'k'}),
                                                parse_socks5_credentials);
  CHECK(c.user == "user");
  CHECK(c.password == "tok");
  c = check_incremental<Socks5Credentials>(bytes({1, 0, 0}), parse_socks5_credentials);
  CHECK(c.user.empty());
  CHECK(c.password.empty());
  const std::string long_user(255, 'u');
  const std::string long_pass(255, 'p');
  c = check_incremental<Socks5Credentials>("\x01\xff"s + long_user + "\xff" + long_pass, parse_socks5_credentials);
  CHECK(c.user == long_user);
  CHECK(c.password == long_pass);
  c = check_incremental<Socks5Credentials>(bytes({1, 1, 0, 2, 0, ':'}), parse_socks5_credentials);
  CHECK(c.user == "\0"s);
  CHECK(c.password == "\0:"s);

  const auto r = parse_socks5_credentials(bytes({5, 1, 'u', 1, 'p'}));
  CHECK(r.status == ParseResult<Socks5Credentials>::Status::refused);
  CHECK_FALSE(r.refusal.has_value());
}

TEST_CASE("SOCKS5 request: IPv4, domain, IPv6") {
  auto q = check_incremental<Socks5Request>(bytes({5, 1, 0, 1, 93, 184, 216, 34, 0x01, 0xbb}), parse_socks5_request);
  CHECK(q.command == 1);
  CHECK(q.host == "93.184.216.34");
  CHECK(q.port == 443);

  q = check_incremental<Socks5Request>(bytes({5, 1, 0, 3, 11}) + "example.com" + bytes({0, 80}), parse_socks5_request);
  CHECK(q.host == "example.com");
  CHECK(q.port == 80);

  q = check_incremental<Socks5Request>(
      bytes({5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff}), parse_socks5_request);
  CHECK(q.host == "2001:db8::1");
  CHECK(q.port == 65535);

  q = check_incremental<Socks5Request>(
      bytes({5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 0, 22}), parse_socks5_request);
  CHECK(q.host == "::ffff:127.0.0.1");
  CHECK(q.port == 22);

  // A zero-length domain is still returned (the decision refuses it as invalid host).
  q = check_incremental<Socks5Request>(bytes({5, 1, 0, 3, 0, 0, 80}), parse_socks5_request);
  CHECK(q.host.empty());
  CHECK(q.port == 80);

  // A 255-byte domain, and odd bytes in a domain, are passed on as sent.
  const std::string long_name(255, 'a');
  q = check_incremental<Socks5Request>("\x05\x01\x00\x03\xff"s + long_name + bytes({1, 0}), parse_socks5_request);
  CHECK(q.host == long_name);
  CHECK(q.port == 256);
  q = check_incremental<Socks5Request>(bytes({5, 1, 0, 3, 3, 'a', 0, 'b', 0, 1}), parse_socks5_request);
  CHECK(q.host == "a\0b"s);
  CHECK(q.port == 1);
  // Port 0 is parsed; the decision refuses it.
  q = check_incremental<Socks5Request>(bytes({5, 1, 0, 1, 1, 1, 1, 1, 0, 0}), parse_socks5_request);
  CHECK(q.port == 0);
}

TEST_CASE("SOCKS5 request: other commands are parsed and mapped to their refusal") {
  for (int command : {0, 2, 3, 4, 0x80, 0xff}) {
    CAPTURE(command);
    auto q = check_incremental<Socks5Request>(bytes({5, command, 0, 1, 1, 2, 3, 4, 0, 80}), parse_socks5_request);
    CHECK(q.command == command);
  }
  CHECK(socks5_command_refusal(2) == Reason::socks_bind);
  CHECK(socks5_command_refusal(3) == Reason::socks_udp_associate);
  CHECK(socks5_command_refusal(0) == Reason::socks_command);
  CHECK(socks5_command_refusal(4) == Reason::socks_command);
  CHECK(socks5_command_refusal(0xff) == Reason::socks_command);
  CHECK(info(socks5_command_refusal(2)).socks5_reply == 7);
  CHECK(info(socks5_command_refusal(3)).socks5_reply == 7);
  CHECK(info(socks5_command_refusal(9)).socks5_reply == 7);
}

TEST_CASE("SOCKS5 request: address types other than 1, 3, 4 are refused with reply 8 as soon as seen") {
  for (int atyp : {0, 2, 5, 6, 0xff}) {
    CAPTURE(atyp);
    for (const auto& text : {bytes({5, 1, 0, atyp}), bytes({5, 1, 0, atyp, 1, 2, 3, 4, 0, 80}),
                             bytes({5, 2, 0, atyp})}) {
      const auto r = parse_socks5_request(text);
      CHECK(r.status == ParseResult<Socks5Request>::Status::refused);
      CHECK(r.refusal == Reason::socks_address_type);
    }
  }
  CHECK(info(Reason::socks_address_type).socks5_reply == 8);
}

TEST_CASE("SOCKS5 request: wrong version closes without a reason") {
  for (int version : {4, 0, 1, 6}) {
    const auto r = parse_socks5_request(bytes({version, 1, 0, 1, 1, 2, 3, 4, 0, 80}));
    CHECK(r.status == ParseResult<Socks5Request>::Status::refused);
    CHECK_FALSE(r.refusal.has_value());
  }
}

TEST_CASE("SOCKS5: a whole pipelined handshake in one buffer") {
  const std::string all = bytes({5, 2, 0, 2}) + bytes({1, 1, 'u', 2, 't', 'k'}) + bytes({5, 1, 0, 3, 1, 'h', 0, 80}) +
                          "GET / HTTP/1.1\r\n\r\n";
  std::string_view rest = all;
  const auto g = parse_socks5_greeting(rest);
  REQUIRE(g.status == ParseResult<Socks5Greeting>::Status::complete);
  rest.remove_prefix(g.consumed);
  const auto c = parse_socks5_credentials(rest);
  REQUIRE(c.status == ParseResult<Socks5Credentials>::Status::complete);
  CHECK(c.value->password == "tk");
  rest.remove_prefix(c.consumed);
  const auto q = parse_socks5_request(rest);
  REQUIRE(q.status == ParseResult<Socks5Request>::Status::complete);
  CHECK(q.value->host == "h");
  rest.remove_prefix(q.consumed);
  CHECK(rest == "GET / HTTP/1.1\r\n\r\n");
}

TEST_CASE("SOCKS5: the handshake bound") {
  CHECK(socks5_max_handshake_bytes == 1024);
}

TEST_CASE("SOCKS4 request") {
  auto q = check_incremental<Socks4Request>(bytes({4, 1, 0x01, 0xbb, 93, 184, 216, 34}) + "user" + bytes({0}),
                                            parse_socks4_request);
  CHECK(q.command == 1);
  CHECK(q.port == 443);
  CHECK(q.host == "93.184.216.34");
  CHECK_FALSE(q.is_4a);

  // Empty user id.
  q = check_incremental<Socks4Request>(bytes({4, 1, 0, 80, 127, 0, 0, 1, 0}), parse_socks4_request);
  CHECK(q.host == "127.0.0.1");
  CHECK(q.port == 80);
  CHECK_FALSE(q.is_4a);

  // 0.0.0.0 is plain SOCKS4 (x == 0), not 4a.
  q = check_incremental<Socks4Request>(bytes({4, 1, 0, 80, 0, 0, 0, 0, 0}), parse_socks4_request);
  CHECK(q.host == "0.0.0.0");
  CHECK_FALSE(q.is_4a);
  // 0.0.1.1 is not 4a either.
  q = check_incremental<Socks4Request>(bytes({4, 1, 0, 80, 0, 0, 1, 1, 0}), parse_socks4_request);
  CHECK(q.host == "0.0.1.1");
  CHECK_FALSE(q.is_4a);

  // BIND and others are parsed; the caller refuses them.
  q = check_incremental<Socks4Request>(bytes({4, 2, 0, 80, 1, 2, 3, 4, 0}), parse_socks4_request);
  CHECK(q.command == 2);
  q = check_incremental<Socks4Request>(bytes({4, 9, 0, 80, 1, 2, 3, 4, 0}), parse_socks4_request);
  CHECK(q.command == 9);
}

TEST_CASE("SOCKS4a request") {
  auto q = check_incremental<Socks4Request>(
      bytes({4, 1, 0x01, 0xbb, 0, 0, 0, 1}) + "u" + bytes({0}) + "example.com" + bytes({0}), parse_socks4_request);
  CHECK(q.is_4a);
  CHECK(q.host == "example.com");
  CHECK(q.port == 443);
  q = check_incremental<Socks4Request>(bytes({4, 1, 0, 80, 0, 0, 0, 255, 0}) + "h" + bytes({0}), parse_socks4_request);
  CHECK(q.is_4a);
  CHECK(q.host == "h");
  // An empty 4a host is returned empty (the decision refuses it).
  q = check_incremental<Socks4Request>(bytes({4, 1, 0, 80, 0, 0, 0, 7, 0, 0}), parse_socks4_request);
  CHECK(q.is_4a);
  CHECK(q.host.empty());
}

TEST_CASE("SOCKS4: wrong version closes without a reason") {
  const auto r = parse_socks4_request(bytes({5, 1, 0, 80, 1, 2, 3, 4, 0}));
  CHECK(r.status == ParseResult<Socks4Request>::Status::refused);
  CHECK_FALSE(r.refusal.has_value());
}

TEST_CASE("SOCKS4: the request bound") {
  using Status = ParseResult<Socks4Request>::Status;
  const std::string head = bytes({4, 1, 0, 80, 1, 2, 3, 4});
  // Exactly at the bound: fine.
  const std::string fits = head + std::string(socks4_max_request_bytes - head.size() - 1, 'u') + bytes({0});
  REQUIRE(fits.size() == socks4_max_request_bytes);
  auto r = parse_socks4_request(fits + "early");
  CHECK(r.status == Status::complete);
  CHECK(r.consumed == socks4_max_request_bytes);
  // A user id that has not ended by the bound: close, no reply.
  const std::string endless = head + std::string(socks4_max_request_bytes, 'u');
  r = parse_socks4_request(std::string_view(endless).substr(0, socks4_max_request_bytes - 1));
  CHECK(r.status == Status::need_more);
  r = parse_socks4_request(std::string_view(endless).substr(0, socks4_max_request_bytes));
  CHECK(r.status == Status::refused);
  CHECK_FALSE(r.refusal.has_value());
  r = parse_socks4_request(endless + bytes({0}));
  CHECK(r.status == Status::refused);
  // The same for a 4a host.
  const std::string endless_host = bytes({4, 1, 0, 80, 0, 0, 0, 1, 0}) + std::string(2000, 'h') + bytes({0});
  r = parse_socks4_request(endless_host);
  CHECK(r.status == Status::refused);
  CHECK_FALSE(r.refusal.has_value());
}
