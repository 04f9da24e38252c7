// SPDX-License-Identifier: Apache-2.0
// A client connection's life (proxy/client_connection.h): its making and its end, the trampolines,
// its reads, writes and timer before and during a session, and the handshake. What follows the
// handshake is in files of their own: the decision and the dial (client_decision.cc), a RESOLVE's
// answer (client_resolve.cc), the sessions once allowed (client_sessions.cc), and request
// inspection (client_inspected.cc).
#include "proxy/client_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <new>
#include <utility>

#include "proxy/inspector_link.h"
#include "proxy/proxy_server.h"
#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// Client bytes kept while the decision and the dial are under way (data sent after the head, to
// go upstream first). Past this, the client's reads pause until the session starts.
constexpr std::size_t kMaxEarlyBytes = 16 * 1024;

// True when the peer of a Unix socket has closed its end entirely (not just shut down its writing):
// the kernel then reports POLLHUP. A client that only half-closed still reads our reply.
bool peer_fully_closed(int fd) noexcept {
  pollfd p{fd, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

}  // namespace

ClientConnection* ClientConnection::open(ProxyServer& server, int client_fd) {
  auto* connection = new ClientConnection(server, client_fd);
  if (!connection->init_events()) {
    delete connection;
    return nullptr;
  }
  return connection;
}

ClientConnection::ClientConnection(ProxyServer& server, int client_fd)
    : server_(server),
      id_(server.next_connection_id()),
      dialer_(UpstreamEvents{server.base(), &on_event<&ClientConnection::upstream_readable>,
                             &on_event<&ClientConnection::upstream_writable>, this}),
      timer_(server.base(), &on_timer, this) {
  client_.adopt(client_fd);
  client_count_ = server_.count_client();
  undecided_ = server_.mark_undecided();
}

bool ClientConnection::init_events() {
  event_base* base = server_.base();
  const bool watched = client_.watch(base, &on_event<&ClientConnection::client_readable>,
                                     &on_event<&ClientConnection::client_writable>, this);
  handshake_ = new_handshake();
  if (!watched || !timer_.valid() || !handshake_) return false;
  update_reading(client_);
  timer_.arm(server_.config().head_timeout);
  return true;
}

ClientConnection::~ClientConnection() {
  // A pending lookup keeps its token; the callback frees it and no longer reaches us.
  Resolver::cancel(lookup_);
  if (session_) {
    if (server_.stopping()) session_->end_by(TunnelEnd::shutdown);
    log_done();
  }
  // A connection the inspector holds, going without its word (serve stops): nothing more is
  // routed to it.
  if (evicting_) {
    if (InspectorLink* link = server_.inspector()) link->forget_waiter(*evicting_);
  }
  if (phase_ == Phase::handed_over) {
    if (InspectorLink* link = server_.inspector()) link->forget(id_);
  } else if (pooled_from_) {
    // It took over a kept origin connection with its slot but never handed it to the inspector
    // (the client left, sent bytes early, the endpoint went): the inspector is told to close it
    // and its slot is held until it says it has (SPEC §5). Not filed again for reuse: its
    // "unpooled" may have crossed the take (the origin closed it meanwhile), and a dead entry
    // would hold a slot no word would ever free (found in review).
    if (InspectorLink* link = server_.inspector()) link->close_kept(*pooled_from_, dialer_.give_slot());
  }
  // The tunnel slot, the undecided mark and the client count are given back by their tokens.
  server_.forget(this);
  // Events are freed (and so deleted from the base) before the descriptors they watch close:
  // members are destroyed in reverse order, but be explicit for the reader.
  timer_.disarm();
  dialer_.release();
  client_.reset();
}

// ---------------------------------------------------------------------------------------------
// Trampolines: the only places a connection is deleted.

void ClientConnection::finish(ClientConnection* connection, Next next) noexcept {
  if (next == Next::close) delete connection;
}

template <ClientConnection::Next (ClientConnection::*kMember)()>
void ClientConnection::on_event(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, (c->*kMember)());
}

void ClientConnection::on_timer(void* self) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->timer_fired());
}

void ClientConnection::on_ask_verdict(void* self, AskVerdict verdict) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->ask_verdict(verdict));
}

void ClientConnection::on_resolved(void* self, std::vector<IpAddress> answers) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  c->lookup_ = nullptr;
  finish(c, c->answers_known(std::move(answers)));
}

// ---------------------------------------------------------------------------------------------
// Reading, writing, the timer.

ClientConnection::Next ClientConnection::client_writable() {
  if (phase_ == Phase::session) return after(session_->writable(client_));
  if (!flush_queued(client_)) return Next::close;
  if (client_.has_queued()) return Next::keep;
  if (phase_ == Phase::inspected) return hand_over();
  // Before a session, only a handshake's answers and a final reply go to the client.
  return phase_ == Phase::replying ? Next::close : Next::keep;
}

ClientConnection::Next ClientConnection::upstream_writable() {
  if (phase_ == Phase::dialling) return after(dialer_.connect_finished());
  if (phase_ == Phase::session) return after(session_->writable(dialer_.upstream()));
  return flush_queued(dialer_.upstream()) ? Next::keep : Next::close;
}

ClientConnection::Next ClientConnection::upstream_readable() {
  return phase_ == Phase::session ? after(session_->upstream_readable()) : Next::keep;
}

ClientConnection::Next ClientConnection::client_readable() {
  return phase_ == Phase::session ? after(session_->client_readable()) : read_before_session();
}

// The client's bytes before a session has them: the handshake's, then (waiting on the decision or
// the dial) early data, and after a refusal whatever it still sends, read and dropped.
ClientConnection::Next ClientConnection::read_before_session() {
  const bool handshaking = phase_ == Phase::sniffing || phase_ == Phase::handshake;
  std::size_t cap = kReadChunk;
  if (handshaking) {
    cap = handshake_->want();  // its bound: it answers once past it
  } else if (phase_ != Phase::replying) {
    // What the client already holds here counts: early data, and a plain request's head rewritten
    // for the origin, so a waiting client never holds more than a handshaking one (or 16 KiB).
    const std::size_t held = request_.early.size() + (request_.plain ? request_.plain->upstream_head.size() : 0);
    cap = kMaxEarlyBytes > held ? kMaxEarlyBytes - held : 0;
    if (cap == 0) {
      pause_reading(client_, pause_no_more_wanted);
      return Next::keep;
    }
  }
  char buffer[kReadChunk];
  const ssize_t n = ::recv(client_.fd(), buffer, std::min(cap, sizeof buffer), 0);
  if (n == -1) return transient_error(errno) ? Next::keep : Next::close;
  if (n == 0) return client_read_ended();
  if (phase_ == Phase::replying) return Next::keep;
  const std::string_view bytes(buffer, static_cast<std::size_t>(n));
  if (handshaking) return handshake_answered(handshake_->feed(bytes));
  append_bounded(request_.early, bytes, request_.early.size() + cap);
  return Next::keep;
}

// The client sent FIN before a session had it.
ClientConnection::Next ClientConnection::client_read_ended() {
  if (phase_ == Phase::replying) {
    // A client that shut down its writing still reads its refusal: close once it is written.
    client_.set_read_eof();
    update_reading(client_);
    return client_.has_queued() ? Next::keep : Next::close;
  }
  if (phase_ == Phase::asking || phase_ == Phase::resolving || phase_ == Phase::dialling) {
    // The client has left, or only shut down its writing (it may still read the reply).
    if (peer_fully_closed(client_.fd())) return Next::close;  // gives the slot back at once
    client_.set_read_eof();
    update_reading(client_);
    return Next::keep;
  }
  return Next::close;
}

ClientConnection::Next ClientConnection::timer_fired() {
  switch (phase_) {
    case Phase::sniffing:
    case Phase::handshake:
    case Phase::replying:
      return Next::close;  // too slow: no reply is owed to a client that never finished asking
    case Phase::asking:
      return Next::keep;  // not armed: the ask has its own timer (--ask-timeout)
    case Phase::resolving:
      Resolver::cancel(lookup_);
      lookup_ = nullptr;
      return refuse(Reason::name_not_resolved);
    case Phase::dialling:
      return refuse(Reason::dial_timed_out, dialer_.address_text());
    case Phase::session:
      return idle_check();
    case Phase::inspected:
      return Next::close;  // the tunnel's answer was not taken in time
    case Phase::handed_over:
      return Next::keep;  // not armed: the inspector bounds its connections
  }
  return Next::close;
}

// The idle timer (--idle-timeout): it fires at the latest time the session could have gone idle,
// and is armed again for what is left when bytes moved since.
ClientConnection::Next ClientConnection::idle_check() {
  const double idle = server_.config().idle_timeout;
  const double quiet_seconds = Clock::seconds_since(session_->last_activity());
  if (quiet_seconds >= idle) {
    session_->end_by(TunnelEnd::idle_timeout);
    return Next::close;
  }
  timer_.arm(idle - quiet_seconds);
  return Next::keep;
}

// ---------------------------------------------------------------------------------------------
// The handshake.

std::unique_ptr<Handshake> ClientConnection::new_handshake() const noexcept {
  HandshakeRules rules;
  rules.max_head_bytes = server_.config().max_head_bytes;
  if (server_.config().auth_token) rules.auth_token = *server_.config().auth_token;
  return std::unique_ptr<Handshake>(new (std::nothrow) Handshake(rules));
}

ClientConnection::Next ClientConnection::handshake_answered(Handshake::Outcome outcome) {
  request_.protocol = handshake_->protocol();
  request_.kind = handshake_->kind();
  if (phase_ == Phase::sniffing && request_.protocol != ClientProtocol::unknown) phase_ = Phase::handshake;
  // What the protocol answers on the way (SOCKS5's method choice, RFC 1929's status) goes first.
  if (!handshake_->to_send().empty() && !send_or_queue(client_, handshake_->take_to_send())) return Next::close;
  switch (outcome) {
    case Handshake::Outcome::need_more:
      return Next::keep;
    case Handshake::Outcome::close:
      return Next::close;
    case Handshake::Outcome::answer_and_close:
      return refused_before_target();
    case Handshake::Outcome::refuse: {
      // Logged with the host and port as sent, when the client may name one (SPEC §11, §12).
      request_.target = Target{};
      request_.target.host.assign(handshake_->log_host());
      request_.target.port = handshake_->log_port();
      request_.logged_port = request_.target.port;
      const Reason reason = handshake_->reason().value_or(Reason::bad_request);
      handshake_.reset();
      return refuse(reason);
    }
    case Handshake::Outcome::decided:
      return handshake_decided();
  }
  return Next::close;
}

// The handshake's own answer is the last (SOCKS5 with no method we take, or wrong credentials).
ClientConnection::Next ClientConnection::refused_before_target() {
  if (const auto reason = handshake_->reason()) {
    // A client that did not prove the token: logged without a host (SPEC §11).
    server_.count_refusal(*reason);
    server_.log().decision({id_, request_.kind, std::nullopt, 0, "-", *reason});
  }
  handshake_.reset();
  phase_ = Phase::replying;
  undecided_.release();
  return client_.has_queued() ? Next::keep : Next::close;
}

// A complete request: what came after it is kept (early data, or a body), the handshake and its
// buffer are given back, and the target goes on to the decision. The client stays counted among
// the undecided until it is allowed or refused: waiting on DNS or on a dial, it still holds a
// descriptor and its buffers, for as long as the box makes it wait (kMaxHandshakingClients).
ClientConnection::Next ClientConnection::handshake_decided() {
  request_.early = handshake_->take_rest();
  request_.plain = std::move(handshake_->plain());
  // The rewritten head at its size: the buffer it was built in (up to --max-head-bytes) goes back.
  // Without this, thousands of clients waiting on a silent DNS server would each hold a head's
  // worth of memory they no longer need.
  if (request_.plain) request_.plain->upstream_head.shrink_to_fit();
  Target target = handshake_->target();
  request_.logged_port = handshake_->logged_port();
  handshake_.reset();
  return decide(std::move(target));
}

}  // namespace boxproxy
