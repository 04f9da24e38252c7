// SPDX-License-Identifier: Apache-2.0
#include "proxy/http_exchange.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"
#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// The largest response head an origin may send. An origin is not the adversary the client is, but
// a head without end must not grow without bound either.
constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

}  // namespace

BodyCursor::Take BodyCursor::feed(std::string_view bytes) noexcept {
  Take t;
  switch (framing_.kind) {
    case BodyFraming::Kind::none:
      t.done = true;
      break;
    case BodyFraming::Kind::length:
      t.take = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), framing_.length));
      framing_.length -= t.take;
      t.pass = t.take;
      t.done = framing_.length == 0;
      break;
    case BodyFraming::Kind::chunked: {
      const auto step = chunks_.feed(bytes);
      if (step.malformed) {
        t.malformed = true;
        break;
      }
      t.take = step.consumed;
      // Trailers are not passed on (SPEC §8): `passed` stops before them and `ending` closes the body
      // (with the allowed trailers in it, for an inspected response: ChunkedScanner::Trailers).
      t.pass = std::min(step.passed, step.consumed);
      t.ending = step.ending;
      t.done = step.finished;
      break;
    }
    case BodyFraming::Kind::until_close:
      t.take = t.pass = bytes.size();
      break;
  }
  return t;
}

std::uint64_t BodyCursor::wanted_at_most(std::uint64_t cap) const noexcept {
  return framing_.kind == BodyFraming::Kind::length ? std::min(cap, framing_.length) : cap;
}

HttpExchange::HttpExchange(Endpoint& client, Endpoint& upstream, const PlainRequest& request)
    : client_(client),
      upstream_(upstream),
      method_(request.method),
      request_body_(request.framing),
      client_keep_alive_(request.client_keep_alive),
      client_http10_(request.client_http10) {}

HttpExchange::Step HttpExchange::start(std::string_view early) {
  last_activity_ = Clock::now();
  return pass_request_body(early);
}

HttpExchange::Step HttpExchange::client_readable() {
  if (request_done_) {
    pause_reading(client_, pause_no_more_wanted);
    return Step::keep;
  }
  char buffer[kReadChunk];
  const auto want = static_cast<std::size_t>(request_body_.wanted_at_most(sizeof buffer));
  const ssize_t n = ::recv(client_.fd(), buffer, want, 0);
  if (n == -1) return transient_error(errno) ? Step::keep : Step::close;
  if (n == 0) {
    client_.set_read_eof();  // the client left in the middle of its body (its done line's end=)
    return Step::close;
  }
  last_activity_ = Clock::now();
  return pass_request_body({buffer, static_cast<std::size_t>(n)});
}

HttpExchange::Step HttpExchange::pass_request_body(std::string_view bytes) {
  const BodyCursor::Take t = request_body_.feed(bytes);
  if (t.malformed) {
    // The head has gone upstream already: the exchange ends. The client still gets its 400
    // unless the origin's response has begun to reach it.
    if (response_head_done_ || client_.has_queued()) return Step::close;
    return Step::refuse_bad_framing;
  }
  // A request is never framed until_close: what is not body is the next request.
  const std::size_t take = request_body_.framing().kind == BodyFraming::Kind::until_close ? 0 : t.take;
  request_done_ = t.done || request_body_.framing().kind == BodyFraming::Kind::until_close;
  if (!send_or_queue(upstream_, bytes.substr(0, std::min(t.pass, take)))) return Step::close;
  if (!send_or_queue(upstream_, t.ending)) return Step::close;
  // Bytes past the body are the client's next request: kept until this exchange ends.
  pipelined_.append(bytes.substr(take));
  if (request_done_) pause_reading(client_, pause_no_more_wanted);
  if (upstream_.has_queued()) pause_reading(client_, pause_peer_full);
  return Step::keep;
}

HttpExchange::Step HttpExchange::upstream_readable() {
  char buffer[kReadChunk];
  const ssize_t n = ::recv(upstream_.fd(), buffer, sizeof buffer, 0);
  if (n == -1) return transient_error(errno) ? Step::keep : Step::close;
  if (n == 0) {
    upstream_.set_read_eof();
    update_reading(upstream_);
    if (response_head_done_ && response_body_.framing().kind == BodyFraming::Kind::until_close) {
      response_done_ = true;
      return Step::response_read;
    }
    return Step::close;  // no response, or one cut short: the client must not wait for the rest
  }
  last_activity_ = Clock::now();
  if (response_head_done_) return pass_response({buffer, static_cast<std::size_t>(n)});
  response_head_.append(buffer, static_cast<std::size_t>(n));
  return parse_response_heads();
}

HttpExchange::Step HttpExchange::client_drained() {
  // The response is all written: the exchange ends now (response_read waited for this).
  if (response_done_) return Step::finished;
  // The client took what was queued: response heads read meanwhile are parsed now, not only on
  // the upstream's next read (which may never come: the bytes are all here).
  if (!response_head_done_ && !response_head_.empty()) return parse_response_heads();
  return Step::keep;
}

// Interim responses are passed on one at a time, each only once the client has taken the one
// before: while anything is queued for the client, parsing stops and the upstream's reads pause
// (the owner resumes them when the client's queue empties, and calls client_drained). Without
// this an origin sending "100 Continue" without end to a client that does not read would have the
// proxy queue them without bound. What is parsed stays within one read past the 64 KiB head
// limit, and what is queued within one rewritten head.
HttpExchange::Step HttpExchange::parse_response_heads() {
  std::size_t offset = 0;  // bytes of response_head_ taken by interim responses so far
  const auto drop_parsed = [&] { response_head_.erase(0, offset); };
  for (;;) {
    if (client_.has_queued()) {
      pause_reading(upstream_, pause_peer_full);
      drop_parsed();
      return Step::keep;
    }
    const std::string_view unparsed = std::string_view(response_head_).substr(offset);
    auto parsed = parse_response_head(unparsed, kMaxResponseHeadBytes);
    if (parsed.status == ParseResult<ResponseHead>::Status::need_more) {
      drop_parsed();
      return Step::keep;
    }
    if (parsed.status == ParseResult<ResponseHead>::Status::refused) return Step::close;
    const ResponseHead& head = *parsed.value;
    if (head.status >= 100 && head.status < 200) {
      // An interim response (100 Continue): passed on, and the final one follows. Never to an
      // HTTP/1.0 client, which does not know them (RFC 9110 §15.2): dropped.
      if (!client_http10_) {
        const std::string interim = rewrite_response_head(head, client_keep_alive_);
        if (!send_or_queue(client_, interim)) return Step::close;
      }
      offset += parsed.consumed;
      continue;
    }
    auto framing = response_framing(method_, head);
    if (std::holds_alternative<Reason>(framing)) return Step::close;
    response_body_ = BodyCursor(std::get<BodyFraming>(framing));
    response_status_ = static_cast<std::uint16_t>(head.status);
    keep_alive_ = client_keep_alive_ && response_body_.framing().kind != BodyFraming::Kind::until_close;
    const std::string rewritten = rewrite_response_head(head, keep_alive_);
    if (!send_or_queue(client_, rewritten)) return Step::close;
    std::string rest = std::string(unparsed.substr(parsed.consumed));
    std::string().swap(response_head_);
    response_head_done_ = true;
    return pass_response(rest);
  }
}

HttpExchange::Step HttpExchange::pass_response(std::string_view bytes) {
  const BodyCursor::Take t = response_body_.feed(bytes);
  if (t.malformed) return Step::close;
  response_done_ = t.done;
  if (!send_or_queue(client_, bytes.substr(0, t.pass))) return Step::close;
  if (!send_or_queue(client_, t.ending)) return Step::close;
  // Anything an origin sends past its response's end is dropped with the upstream connection:
  // it must never reach the client as the answer to its next request.
  if (response_done_) return Step::response_read;
  if (client_.has_queued()) pause_reading(upstream_, pause_peer_full);
  return Step::keep;
}

}  // namespace boxproxy
