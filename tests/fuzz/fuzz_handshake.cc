// SPDX-License-Identifier: Apache-2.0
// proxy/handshake: the whole handshake a box's client drives, from its first byte to a target.
//
// Input: a rules byte (bit 0: a session token is required; bits 1-2 pick --max-head-bytes from
// 1024, 4096, 32768), then the Split framing (fuzz_support.h), then the bytes a client sends.
// The bytes are fed as a connection feeds them: never more than want() at once, in the pieces the
// framing says, and (separately) in the largest pieces want() allows. Invariants:
//   - the same answer however the bytes are split: the outcome, the protocol and kind, the bytes
//     to send (concatenated), the refusal's reason, host and port, the target, and for a decided
//     handshake what follows it (the rest it hands back, then what was never fed);
//   - it never takes more than want() says, and want() is never above its bound: at most
//     --max-head-bytes + 1 of an HTTP head, 1025 of a SOCKS handshake;
//   - a decided target has a host and a port from 1 to 65535; a refusal has a reason and an answer
//     in the protocol spoken (an HTTP status line is printable ASCII); a host logged for a refusal
//     with a token required is only ever one the client named after proving it.
#include <algorithm>
#include <optional>
#include <string>

#include "proxy/wire/handshake.h"
#include "proxy/wire/replies.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

constexpr std::string_view kToken = "fuzz-token";

struct Result {
  Handshake::Outcome outcome = Handshake::Outcome::need_more;
  Handshake::Protocol protocol = Handshake::Protocol::unknown;
  ClientKind kind = ClientKind::connect;
  std::string sent;
  std::optional<Reason> reason;
  std::string log_host;
  std::uint16_t log_port = 0;
  std::string target_host;
  std::uint16_t target_port = 0;
  std::string after;  // the rest handed back, then the bytes never fed
  std::string refusal;
};

std::size_t bound(const HandshakeRules& rules) { return std::max<std::size_t>(rules.max_head_bytes, 1024) + 1; }

// Feeds `payload` in pieces of at most `piece(i)` bytes and at most want(), until an answer.
template <typename Piece>
Result drive(const HandshakeRules& rules, std::string_view payload, Piece piece) {
  Handshake handshake(rules);
  Result result;
  std::size_t at = 0;
  for (std::size_t i = 0; at < payload.size(); ++i) {
    const std::size_t want = handshake.want();
    FUZZ_CHECK(want <= bound(rules));
    if (want == 0) break;
    const std::size_t n = std::min({piece(i), want, payload.size() - at});
    result.outcome = handshake.feed(payload.substr(at, n));
    at += n;
    result.sent += handshake.take_to_send();
    if (result.outcome != Handshake::Outcome::need_more) break;
  }
  result.protocol = handshake.protocol();
  result.kind = handshake.kind();
  result.reason = handshake.reason();
  switch (result.outcome) {
    case Handshake::Outcome::decided:
      result.target_host = handshake.target().host;
      result.target_port = handshake.target().port;
      result.after = handshake.take_rest();
      break;
    case Handshake::Outcome::refuse:
      result.log_host = std::string(handshake.log_host());
      result.log_port = handshake.log_port();
      // The answer the connection sends for it (proxy/client_decision.cc).
      result.refusal = refusal_reply_for(handshake.protocol(), handshake.reason().value_or(Reason::bad_request));
      break;
    default:
      break;
  }
  // What follows a decided handshake goes upstream: the rest, then what was never fed. After any
  // other answer nothing more is read, so where within the bytes it answered does not matter.
  if (result.outcome == Handshake::Outcome::decided) result.after.append(payload.substr(at));
  return result;
}

void check_answer(const Result& r, const HandshakeRules& rules) {
  if (r.outcome == Handshake::Outcome::decided) {
    FUZZ_CHECK(!r.target_host.empty());
    FUZZ_CHECK(r.target_port >= 1);
  }
  if (r.outcome == Handshake::Outcome::refuse) {
    FUZZ_CHECK(r.reason.has_value());
    FUZZ_CHECK(!r.refusal.empty());
    if (r.protocol == Handshake::Protocol::socks5) FUZZ_CHECK(r.refusal[0] == 0x05);
    if (r.protocol == Handshake::Protocol::socks4) FUZZ_CHECK(r.refusal[0] == 0x00);
    if (r.protocol == Handshake::Protocol::http) {
      FUZZ_CHECK(r.refusal.starts_with("HTTP/1.1 "));
      const std::string_view status_line = std::string_view(r.refusal).substr(0, r.refusal.find("\r\n"));
      for (const char c : status_line) FUZZ_CHECK(c >= 0x20 && c <= 0x7e);
    }
  }
  // SOCKS4 cannot carry a token: with one required it is refused, never decided.
  if (rules.auth_token && r.protocol == Handshake::Protocol::socks4) {
    FUZZ_CHECK(r.outcome != Handshake::Outcome::decided);
  }
}

bool same(const Result& a, const Result& b) {
  return a.outcome == b.outcome && a.protocol == b.protocol && a.kind == b.kind && a.sent == b.sent &&
         a.reason == b.reason && a.log_host == b.log_host && a.log_port == b.log_port &&
         a.target_host == b.target_host && a.target_port == b.target_port && a.after == b.after &&
         a.refusal == b.refusal;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  HandshakeRules rules;
  const unsigned flags = data[0];
  if ((flags & 1u) != 0) rules.auth_token = kToken;
  static constexpr std::size_t kHeadBytes[] = {1024, 4096, 32768, 32768};
  rules.max_head_bytes = kHeadBytes[(flags >> 1) & 3u];
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  // An HTTP head is parsed again only when a piece brings a line end (a head trickled a byte at a
  // time must not cost O(n^2)): an early refusal then waits for the next line end. The payload
  // ends in one, so every way of feeding it reaches the same answer by its end.
  const std::string payload = std::string(split.payload) + "\n";

  const auto piece = [&](std::size_t i) { return split.chunks.empty() ? 1 : split.chunks[i % split.chunks.size()]; };
  const Result in_pieces = drive(rules, payload, piece);
  const Result at_once = drive(rules, payload, [](std::size_t) { return std::string_view::npos; });
  check_answer(in_pieces, rules);
  check_answer(at_once, rules);
  FUZZ_CHECK(same(in_pieces, at_once));
  return 0;
}
