// ClientConnection, part 1: its life (open, trampolines, teardown), reading and writing, timers,
// and what follows an allowed decision: the reply, then the tunnel (proxy/tunnel.h) relays. The handshakes, the decision and
// plain HTTP are parts 2 to 4 (client_handshake.cc, client_decision.cc, client_forward.cc).
#include "proxy/client_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "proxy/proxy_server.h"

namespace boxproxy {
namespace {

// Client bytes kept while the decision and the dial are under way (data sent after the head, to
// go upstream first). Past this, the client's reads pause until the tunnel is up.
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
    : server_(server), id_(server.next_connection_id()), started_(std::chrono::steady_clock::now()) {
  client_.fd.reset(client_fd);
  client_count_ = server_.count_client();
  undecided_ = server_.mark_undecided();
}

bool ClientConnection::init_events() {
  event_base* base = server_.base();
  client_.read_event = make_event(base, client_.fd.get(), EV_READ | EV_PERSIST, &on_client_read, this);
  client_.write_event = make_event(base, client_.fd.get(), EV_WRITE | EV_PERSIST, &on_client_write, this);
  timer_ = make_event(base, -1, 0, &on_timer, this);
  handshake_ = new_handshake();
  if (!client_.read_event || !client_.write_event || !timer_ || !handshake_) return false;
  update_reading(client_);
  arm_timer(server_.config().head_timeout);
  return true;
}

ClientConnection::~ClientConnection() {
  // A pending lookup keeps its token; the callback frees it and no longer reaches us.
  Resolver::cancel(lookup_);
  if (server_.stopping()) {
    if (phase_ == Phase::relaying) tunnel_.end_by(TunnelEnd::shutdown);
    if (phase_ == Phase::forwarding && !exchange_end_) exchange_end_ = TunnelEnd::shutdown;
  }
  if (done_owed_) log_done();
  // The tunnel slot, the undecided mark and the client count are given back by their tokens.
  server_.forget(this);
  // Events are freed (and so deleted from the base) before the descriptors they watch close:
  // members are destroyed in reverse order, but be explicit for the reader.
  timer_.reset();
  upstream_.read_event.reset();
  upstream_.write_event.reset();
  client_.read_event.reset();
  client_.write_event.reset();
}

// ---------------------------------------------------------------------------------------------
// Trampolines: the only places a connection is deleted.

void ClientConnection::finish(ClientConnection* connection, Next next) noexcept {
  if (next == Next::close) delete connection;
}

void ClientConnection::on_client_read(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->client_readable());
}

void ClientConnection::on_client_write(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->side_writable(c->client_));
}

void ClientConnection::on_upstream_read(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->upstream_readable());
}

void ClientConnection::on_upstream_write(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<ClientConnection*>(self);
  if (c->phase_ == Phase::dialling) {
    finish(c, c->dial_finished());
  } else {
    finish(c, c->side_writable(c->upstream_));
  }
}

void ClientConnection::on_timer(evutil_socket_t, short, void* self) noexcept {
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
// Reading, writing, pausing.

void ClientConnection::arm_timer(double seconds) {
  if (seconds <= 0) {
    event_del(timer_.get());
    return;
  }
  const timeval tv = to_timeval(seconds);
  event_add(timer_.get(), &tv);
}

ClientConnection::Next ClientConnection::side_writable(Side& side) {
  if (phase_ == Phase::relaying) return after(tunnel_.writable(side));
  if (flush_out(side) == Next::close) return Next::close;
  if (side.has_queued()) return Next::keep;
  // The queue is empty: the side feeding it may read again.
  resume(other(side), pause_peer_full);
  switch (phase_) {
    case Phase::replying:
      return &side == &client_ ? Next::close : Next::keep;
    case Phase::forwarding:
      return &side == &client_ && exchange_ ? after(exchange_->client_drained()) : Next::keep;
    default:
      return Next::keep;
  }
}

ClientConnection::Next ClientConnection::client_readable() {
  switch (phase_) {
    case Phase::relaying:
      // The SNI and Host checks read the client's first bytes themselves.
      if (sni_ || host_check_) return first_bytes_readable();
      return after(tunnel_.readable(client_));
    case Phase::forwarding:
      if (!exchange_) {
        pause(client_, pause_no_more_wanted);
        return Next::keep;
      }
      return after(exchange_->client_readable());
    case Phase::replying:
      // Whatever a refused client still sends is read and dropped until the reply is out.
      break;
    default:
      break;
  }
  std::size_t cap = kReadChunk;
  if (phase_ == Phase::sniffing || phase_ == Phase::handshake) {
    cap = handshake_->want();  // its bound: it answers once past it
  } else if (phase_ == Phase::asking || phase_ == Phase::resolving || phase_ == Phase::dialling) {
    // What the client already holds here counts: early data, and a plain request's head rewritten
    // for the origin, so a waiting client never holds more than a handshaking one (or 16 KiB).
    const std::size_t held = inbox_.size() + upstream_prefix_.size();
    cap = kMaxEarlyBytes > held ? kMaxEarlyBytes - held : 0;
    if (cap == 0) {
      pause(client_, pause_no_more_wanted);
      return Next::keep;
    }
  }
  char buffer[kReadChunk];
  const ssize_t n = ::recv(client_.fd.get(), buffer, std::min(cap, sizeof buffer), 0);
  if (n == -1) {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Next::keep : Next::close;
  }
  if (n == 0) {
    if (phase_ == Phase::replying) {
      // A client that shut down its writing still reads its refusal: close once it is written.
      client_.read_eof = true;
      update_reading(client_);
      return client_.has_queued() ? Next::keep : Next::close;
    }
    if (phase_ == Phase::asking || phase_ == Phase::resolving || phase_ == Phase::dialling) {
      // The client has left, or only shut down its writing (it may still read the reply).
      if (peer_fully_closed(client_.fd.get())) return Next::close;  // gives the slot back at once
      client_.read_eof = true;
      update_reading(client_);
      return Next::keep;
    }
    return Next::close;
  }
  if (phase_ == Phase::replying) return Next::keep;
  const std::string_view bytes(buffer, static_cast<std::size_t>(n));
  if (phase_ == Phase::sniffing || phase_ == Phase::handshake) return feed_handshake(bytes);
  append_bounded(inbox_, bytes, inbox_.size() + cap);
  return Next::keep;
}

ClientConnection::Next ClientConnection::upstream_readable() {
  if (phase_ == Phase::relaying) return after(tunnel_.readable(upstream_));
  if (phase_ == Phase::forwarding && exchange_) return after(exchange_->upstream_readable());
  return Next::keep;
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
      return refuse(Reason::dial_timed_out, ip_text_);
    case Phase::relaying:
    case Phase::forwarding: {
      const double idle = server_.config().idle_timeout;
      const auto last = phase_ == Phase::relaying ? tunnel_.last_activity()
                        : exchange_                   ? exchange_->last_activity()
                                                      : started_;
      const auto quiet = std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count();
      if (quiet >= idle) {
        if (phase_ == Phase::relaying) tunnel_.end_by(TunnelEnd::idle_timeout);
        if (phase_ == Phase::forwarding && !exchange_end_) exchange_end_ = TunnelEnd::idle_timeout;
        return Next::close;
      }
      arm_timer(idle - quiet);
      return Next::keep;
    }
  }
  return Next::close;
}

// ---------------------------------------------------------------------------------------------
// Allowed: the reply, then a tunnel or a plain-HTTP exchange.

ClientConnection::Next ClientConnection::allowed() {
  undecided_.release();
  server_.log().decision({id_, kind_, target_.host, target_.port, ip_text_, std::nullopt, asked_text()});
  done_owed_ = true;  // however the tunnel or exchange ends, its done line follows
  started_ = std::chrono::steady_clock::now();
  arm_timer(server_.config().idle_timeout);
  resume(client_, pause_no_more_wanted);
  up_mark_ = upstream_.written;
  if (kind_ == ClientKind::http) {
    phase_ = Phase::forwarding;
    down_mark_ = client_.written + client_.queued_bytes();
    if (queue(upstream_, upstream_prefix_) == Next::close) return Next::close;
    std::string().swap(upstream_prefix_);
    update_reading(upstream_);
    std::string early;
    early.swap(inbox_);
    return after(exchange_->start(early));
  }
  if (queue(client_, allowed_reply_for(protocol_)) == Next::close) return Next::close;
  phase_ = Phase::relaying;
  down_mark_ = client_.written + client_.queued_bytes();  // the reply above is not the tunnel's
  // Bytes the client sent after its head or request go upstream first (and its FIN after them,
  // when it half-closed while we dialled), once the SNI check, if any, has let them through.
  return start_tunnel();
}

void ClientConnection::log_done() {
  done_owed_ = false;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  // What the other side was given: bytes still queued (or in a pipe) when a tunnel or an exchange
  // ends by an error never reached anyone, and are not counted.
  const std::uint64_t up = upstream_.written - up_mark_;
  const std::uint64_t down = client_.written > down_mark_ ? client_.written - down_mark_ : 0;
  server_.stats().up += up;
  server_.stats().down += down;
  // A tunnel knows which side ended it; one that never started (its reply could not be sent)
  // ended by an error.
  const TunnelEnd end = kind_ == ClientKind::http ? exchange_end() : tunnel_.end().value_or(TunnelEnd::error);
  exchange_end_.reset();  // a keep-alive connection's next request starts afresh
  server_.log().done(
      {id_, kind_, target_.host, target_.port, ip_text_, up, down, static_cast<std::uint64_t>(ms.count()), end});
}

TunnelEnd ClientConnection::exchange_end() const noexcept {
  if (exchange_end_) return *exchange_end_;
  // Ended by one of the exchange's own steps: a side that sent FIN ended it (the client first,
  // as for a tunnel: a client that shut down its writing after its request closed first);
  // otherwise a read or write failed.
  if (client_.read_eof) return TunnelEnd::client_closed;
  if (upstream_.read_eof) return TunnelEnd::upstream_closed;
  return TunnelEnd::error;
}

}  // namespace boxproxy
