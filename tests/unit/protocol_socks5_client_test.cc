// SPDX-License-Identifier: Apache-2.0
// The bridge's side of SOCKS5 (proxy/bridge/socks5_client.h): the request it sends for a captured
// connection, and the reader that takes exactly the proxy's answers, in any pieces.
#include <doctest/doctest.h>

#include <string>

#include "proxy/bridge/socks5_client.h"

using namespace boxproxy;
using State = Socks5ReplyReader::State;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// Feeds `answer` one byte at a time, never more than wanted(); returns the final state and how
// many bytes were taken.
std::pair<State, std::size_t> feed_bytewise(Socks5ReplyReader& reader, const std::string& answer) {
  std::size_t taken = 0;
  while (reader.state() == State::need_more && taken < answer.size()) {
    REQUIRE(reader.wanted() > 0);
    reader.feed(answer.substr(taken, 1));
    ++taken;
  }
  return {reader.state(), taken};
}

}  // namespace

TEST_CASE("requests: the greeting (no authentication) and CONNECT, by address or by name") {
  const auto v4 = parse_strict_address("192.0.2.1");
  REQUIRE(v4);
  CHECK(socks5_connect_request(*v4, 443) == bytes({5, 1, 0, 5, 1, 0, 1, 192, 0, 2, 1, 1, 187}));
  const auto v6 = parse_strict_address("2001:db8::1");
  REQUIRE(v6);
  CHECK(socks5_connect_request(*v6, 80) ==
        bytes({5, 1, 0, 5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80}));
  CHECK(socks5_connect_request("a.test", 65535) == bytes({5, 1, 0, 5, 1, 0, 3, 6, 'a', '.', 't', 'e', 's', 't', 255, 255}));
}

TEST_CASE("requests: Tor's RESOLVE (0xF0) by name, port 0") {
  CHECK(socks5_resolve_request("a.test") == bytes({5, 1, 0, 5, 0xF0, 0, 3, 6, 'a', '.', 't', 'e', 's', 't', 0, 0}));
  const std::string longest(253, 'x');
  const std::string request = socks5_resolve_request(longest);
  CHECK(request.size() == 7 + 1 + 253 + 2);
  CHECK(static_cast<unsigned char>(request[7]) == 253);
}

TEST_CASE("a granted reply is taken to its last byte and no further, for every address type") {
  const std::string after = "SSH-2.0-origin\r\n";  // what a server that speaks first sends next
  for (const std::string& reply : {bytes({5, 0, 5, 0, 0, 1, 127, 0, 0, 2, 0x1f, 0x90}),
                                   bytes({5, 0, 5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}),
                                   bytes({5, 0, 5, 0, 0, 3, 3, 'a', 'b', 'c', 0, 1})}) {
    CAPTURE(reply.size());
    Socks5ReplyReader reader;
    const auto [state, taken] = feed_bytewise(reader, reply + after);
    CHECK(state == State::granted);
    CHECK(taken == reply.size());
    CHECK(reader.wanted() == 0);
    // All at once: wanted() never reaches into the origin's bytes either.
    Socks5ReplyReader whole;
    std::string stream = reply + after;
    std::size_t offset = 0;
    while (whole.state() == State::need_more) {
      const std::size_t n = whole.wanted();
      whole.feed(stream.substr(offset, n));
      offset += n;
    }
    CHECK(whole.state() == State::granted);
    CHECK(offset == reply.size());
  }
}

TEST_CASE("refusals and answers that are not SOCKS5") {
  struct Case {
    std::string answer;
    State state;
    int code;
  };
  const Case cases[] = {
      {bytes({5, 2}), State::refused, 0},                   // wants a user name and password
      {bytes({5, 0xff}), State::refused, 0},                // no acceptable method
      {bytes({5, 0, 5, 2, 0, 1}), State::refused, 2},       // not allowed by the rule set
      {bytes({5, 0, 5, 4}), State::refused, 4},             // host unreachable: final at once
      {bytes({4, 0}), State::malformed, 0},                 // a SOCKS4 answer
      {bytes({'H', 'T', 'T', 'P'}), State::malformed, 0},   // an HTTP one
      {bytes({5, 0, 4, 0}), State::malformed, 0},           // a reply of another version
      {bytes({5, 0, 5, 0, 0, 9, 0, 0}), State::malformed, 0},  // an unknown address type
  };
  for (const Case& c : cases) {
    CAPTURE(c.answer.size());
    Socks5ReplyReader reader;
    const auto [state, taken] = feed_bytewise(reader, c.answer);
    CHECK(state == c.state);
    CHECK(taken <= c.answer.size());
    if (c.state == State::refused) CHECK(reader.reply_code() == c.code);
    CHECK(reader.wanted() == 0);
    CHECK(reader.feed("more") == c.state);  // final: later bytes change nothing
  }
}
