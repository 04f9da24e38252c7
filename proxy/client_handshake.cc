// ClientConnection, part 2: the handshake. proxy/handshake.h reads the bytes (the first byte picks
// the protocol, then the HTTP head or the SOCKS negotiation); the connection sends what it is told
// to, and takes a complete request on to the decision.
#include "proxy/client_connection.h"

#include <new>

#include "proxy/proxy_server.h"

namespace boxproxy {
namespace {

ClientKind client_kind(Handshake::Kind kind) noexcept {
  switch (kind) {
    case Handshake::Kind::connect: return ClientKind::connect;
    case Handshake::Kind::http: return ClientKind::http;
    case Handshake::Kind::socks: return ClientKind::socks;
    case Handshake::Kind::socks4: return ClientKind::socks4;
    case Handshake::Kind::resolve: return ClientKind::resolve;
  }
  return ClientKind::connect;
}

}  // namespace

std::unique_ptr<Handshake> ClientConnection::new_handshake() const noexcept {
  HandshakeRules rules;
  rules.max_head_bytes = server_.config().max_head_bytes;
  if (server_.config().auth_token) rules.auth_token = *server_.config().auth_token;
  return std::unique_ptr<Handshake>(new (std::nothrow) Handshake(rules));
}

ClientConnection::Next ClientConnection::feed_handshake(std::string_view bytes) {
  return handshake_answered(handshake_->feed(bytes));
}

ClientConnection::Next ClientConnection::handshake_answered(Handshake::Outcome outcome) {
  protocol_ = handshake_->protocol();
  kind_ = client_kind(handshake_->kind());
  if (phase_ == Phase::sniffing && protocol_ != Protocol::unknown) phase_ = Phase::handshake;
  // What the protocol answers on the way (SOCKS5's method choice, RFC 1929's status) goes first.
  if (!handshake_->to_send().empty() && queue(client_, handshake_->take_to_send()) == Next::close) {
    return Next::close;
  }
  switch (outcome) {
    case Handshake::Outcome::need_more:
      return Next::keep;
    case Handshake::Outcome::close:
      return Next::close;
    case Handshake::Outcome::answer_and_close:
      if (const auto reason = handshake_->reason()) {
        // A client that did not prove the token: logged without a host (SPEC §11).
        server_.count_refusal(*reason);
        server_.log().decision({id_, kind_, std::nullopt, 0, "-", *reason});
      }
      handshake_.reset();
      phase_ = Phase::replying;
      undecided_.release();
      return client_.out.empty() ? Next::close : Next::keep;
    case Handshake::Outcome::refuse: {
      // Logged with the host and port as sent, when the client may name one (SPEC §11, §12).
      target_ = Target{};
      target_.host.assign(handshake_->log_host());
      target_.port = handshake_->log_port();
      const Reason reason = handshake_->reason().value_or(Reason::bad_request);
      handshake_.reset();
      return refuse(reason);
    }
    case Handshake::Outcome::decided:
      return handshake_decided();
  }
  return Next::close;
}

// A complete request: what came after it is kept (early data, or a body), the handshake and its
// buffer are given back, and the target goes on to the decision. The client stays counted among
// the undecided until it is allowed or refused: waiting on DNS or on a dial, it still holds a
// descriptor and its buffers, for as long as the box makes it wait (kMaxHandshakingClients).
ClientConnection::Next ClientConnection::handshake_decided() {
  inbox_ = handshake_->take_rest();
  if (auto& plain = handshake_->plain()) {
    exchange_.reset(new (std::nothrow) HttpExchange(client_, upstream_, *plain));
    if (!exchange_) return Next::close;
    upstream_prefix_ = std::move(plain->upstream_head);
  }
  Target target = handshake_->target();
  handshake_.reset();
  give_back_head_buffers();
  return decide_parsed(std::move(target));
}

}  // namespace boxproxy
