// ClientConnection, part 4: plain HTTP (SPEC §8). The request body goes up exactly as framed;
// the response comes back exactly as framed; nothing after either end is taken for part of it.
#include "proxy/client_connection.h"

#include <sys/socket.h>

#include <cerrno>

#include "proxy/http_forward.h"
#include "proxy/http_head.h"
#include "proxy/proxy_server.h"
#include "proxy/refusal_reply.h"

namespace boxproxy {
namespace {

// The largest response head an origin may send. An origin is not the adversary the client is, but
// a head without end must not grow without bound either.
constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

}  // namespace

ClientConnection::Next ClientConnection::forward_client_readable() {
  if (!exchange_ || exchange_->request_done) {
    pause(client_, pause_no_more_wanted);
    return Next::keep;
  }
  std::size_t want = kReadChunk;
  if (exchange_->request_body.kind == BodyFraming::Kind::length) {
    want = static_cast<std::size_t>(std::min<std::uint64_t>(want, exchange_->request_body.length));
  }
  char buffer[kReadChunk];
  const ssize_t n = ::recv(client_.fd.get(), buffer, want, 0);
  if (n == -1) {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Next::keep : Next::close;
  }
  if (n == 0) return Next::close;  // the client left in the middle of its body
  last_activity_ = std::chrono::steady_clock::now();
  return pass_request_body({buffer, static_cast<std::size_t>(n)});
}

ClientConnection::Next ClientConnection::pass_request_body(std::string_view bytes) {
  Exchange& exchange = *exchange_;
  std::size_t take = 0;                         // bytes of `bytes` that belong to the body
  std::size_t pass = std::string_view::npos;    // of those, the ones passed on (all, unless trailers)
  std::string_view ending;                      // what closes a chunked body in place of its trailers
  switch (exchange.request_body.kind) {
    case BodyFraming::Kind::none:
    case BodyFraming::Kind::until_close:
      exchange.request_done = true;
      break;
    case BodyFraming::Kind::length:
      take = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), exchange.request_body.length));
      exchange.request_body.length -= take;
      exchange.request_done = exchange.request_body.length == 0;
      break;
    case BodyFraming::Kind::chunked: {
      const auto step = exchange.request_chunks.feed(bytes);
      if (step.malformed) {
        // The head has gone upstream already: the exchange ends. The client still gets its 400
        // unless the origin's response has begun to reach it.
        if (exchange.response_head_done || client_.has_queued()) return Next::close;
        return refuse(Reason::bad_framing);
      }
      take = step.consumed;
      pass = step.passed;
      ending = step.ending;
      exchange.request_done = step.finished;
      break;
    }
  }
  // Trailers are not passed on (SPEC §8): `pass` stops before them and `ending` closes the body.
  pass = std::min(pass, take);
  if (queue(upstream_, bytes.substr(0, pass)) == Next::close) return Next::close;
  if (queue(upstream_, ending) == Next::close) return Next::close;
  // Bytes past the body are the client's next request: kept until this exchange ends.
  inbox_.append(bytes.substr(take));
  if (exchange.request_done) pause(client_, pause_no_more_wanted);
  if (upstream_.has_queued()) pause(client_, pause_peer_full);
  return Next::keep;
}

ClientConnection::Next ClientConnection::forward_upstream_readable() {
  char buffer[kReadChunk];
  const ssize_t n = ::recv(upstream_.fd.get(), buffer, sizeof buffer, 0);
  if (n == -1) {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Next::keep : Next::close;
  }
  Exchange& exchange = *exchange_;
  if (n == 0) {
    upstream_.read_eof = true;
    update_reading(upstream_);
    if (exchange.response_head_done && exchange.response_body.kind == BodyFraming::Kind::until_close) {
      exchange.response_done = true;
      return end_exchange();
    }
    return Next::close;  // no response, or one cut short: the client must not wait for the rest
  }
  last_activity_ = std::chrono::steady_clock::now();
  if (exchange.response_head_done) return pass_response({buffer, static_cast<std::size_t>(n)});
  exchange.response_head.append(buffer, static_cast<std::size_t>(n));
  return parse_response_heads();
}

// Interim responses are passed on one at a time, each only once the client has taken the one
// before: while anything is queued for the client, parsing stops and the upstream's reads pause
// (side_writable resumes both). Without this an origin sending "100 Continue" without end to a
// client that does not read would have the proxy queue them without bound. What is parsed stays
// within one read past the 64 KiB head limit, and what is queued within one rewritten head.
ClientConnection::Next ClientConnection::parse_response_heads() {
  Exchange& exchange = *exchange_;
  std::size_t offset = 0;  // bytes of response_head taken by interim responses so far
  const auto drop_parsed = [&] { exchange.response_head.erase(0, offset); };
  for (;;) {
    if (client_.has_queued()) {
      pause(upstream_, pause_peer_full);
      drop_parsed();
      return Next::keep;
    }
    const std::string_view unparsed = std::string_view(exchange.response_head).substr(offset);
    auto parsed = parse_response_head(unparsed, kMaxResponseHeadBytes);
    if (parsed.status == ParseResult<ResponseHead>::Status::need_more) {
      drop_parsed();
      return Next::keep;
    }
    if (parsed.status == ParseResult<ResponseHead>::Status::refused) return Next::close;
    const ResponseHead& head = *parsed.value;
    if (head.status >= 100 && head.status < 200) {
      // An interim response (100 Continue): passed on, and the final one follows. Never to an
      // HTTP/1.0 client, which does not know them (RFC 9110 §15.2): dropped.
      if (!exchange.client_http10) {
        const std::string interim = rewrite_response_head(head, exchange.client_keep_alive);
        if (queue(client_, interim) == Next::close) return Next::close;
      }
      offset += parsed.consumed;
      continue;
    }
    auto framing = response_framing(exchange.method, head);
    if (std::holds_alternative<Reason>(framing)) return Next::close;
    exchange.response_body = std::get<BodyFraming>(framing);
    exchange.keep_alive = exchange.client_keep_alive && exchange.response_body.kind != BodyFraming::Kind::until_close;
    const std::string rewritten = rewrite_response_head(head, exchange.keep_alive);
    if (queue(client_, rewritten) == Next::close) return Next::close;
    std::string rest = std::string(unparsed.substr(parsed.consumed));
    std::string().swap(exchange.response_head);
    exchange.response_head_done = true;
    return pass_response(rest);
  }
}

ClientConnection::Next ClientConnection::pass_response(std::string_view bytes) {
  Exchange& exchange = *exchange_;
  std::size_t take = 0;                         // bytes of `bytes` that belong to the body
  std::size_t pass = std::string_view::npos;    // of those, the ones passed on (all, unless trailers)
  std::string_view ending;                      // what closes a chunked body in place of its trailers
  switch (exchange.response_body.kind) {
    case BodyFraming::Kind::none:
      exchange.response_done = true;
      break;
    case BodyFraming::Kind::length:
      take = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), exchange.response_body.length));
      exchange.response_body.length -= take;
      exchange.response_done = exchange.response_body.length == 0;
      break;
    case BodyFraming::Kind::chunked: {
      const auto step = exchange.response_chunks.feed(bytes);
      if (step.malformed) return Next::close;
      take = step.consumed;
      pass = step.passed;
      ending = step.ending;
      exchange.response_done = step.finished;
      break;
    }
    case BodyFraming::Kind::until_close:
      take = bytes.size();
      break;
  }
  // Trailers are not passed on (SPEC §8): `pass` stops before them and `ending` closes the body.
  pass = std::min(pass, take);
  if (queue(client_, bytes.substr(0, pass)) == Next::close) return Next::close;
  if (queue(client_, ending) == Next::close) return Next::close;
  // Anything an origin sends past its response's end is dropped with the upstream connection:
  // it must never reach the client as the answer to its next request.
  if (exchange.response_done) return end_exchange();
  if (client_.has_queued()) pause(upstream_, pause_peer_full);
  return Next::keep;
}

ClientConnection::Next ClientConnection::end_exchange() {
  // The response is all read: the upstream connection and its slot are given back at once.
  release_upstream();
  // Nothing more is read from the client for this exchange (a body the origin did not wait for
  // is not passed on; a pipelined request waits its turn).
  pause(client_, pause_no_more_wanted);
  // The done line and the next request wait until the response is all written to the client
  // (side_writable calls finish_exchange then): so a client that shut down its writing after its
  // request still gets every byte before the close, and the line counts only what it was given.
  if (client_.has_queued()) return Next::keep;
  return finish_exchange();
}

ClientConnection::Next ClientConnection::finish_exchange() {
  log_done();
  const Exchange& exchange = *exchange_;
  // A client that has shut down its writing sends no next request: close, the response all out.
  if (!exchange.keep_alive || !exchange.request_done || client_.read_eof) return Next::close;
  // Keep-alive: the next request on this connection is a new decision (SPEC §8).
  exchange_.reset();
  phase_ = Phase::handshake;
  target_ = Target{};
  ip_text_.assign(1, '-');  // (not = "-": GCC 12 warns falsely there, bug 105329)
  undecided_ = server_.mark_undecided();
  arm_timer(server_.config().head_timeout);
  resume(client_, pause_no_more_wanted | pause_peer_full);
  handshake_ = new_handshake();
  if (!handshake_) return Next::close;
  const Handshake::Outcome outcome = handshake_->next_http_request(inbox_);
  std::string().swap(inbox_);  // the handshake holds them now
  return handshake_answered(outcome);
}

}  // namespace boxproxy
