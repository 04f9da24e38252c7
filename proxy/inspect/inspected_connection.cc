// SPDX-License-Identifier: Apache-2.0
// One inspected connection (proxy/inspect/inspected_connection.h).
#include "proxy/inspect/inspected_connection.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <algorithm>
#include <new>

#include "proxy/inspector_messages.h"
#include "proxy/transient_error.h"
#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"

namespace boxproxy {
namespace {

// The first byte of a TLS record that carries a handshake message (a ClientHello first).
constexpr unsigned char kTlsHandshakeRecord = 0x16;
// Steps advance() takes per wake-up before it yields to the loop (and kicks itself to go on): one
// client's pipelined requests never hold the loop for long.
constexpr int kMaxStepsPerWake = 64;
// The least the box-facing input may hold before its reading stops, whatever --max-head-bytes is:
// one TLS record.
constexpr std::size_t kMinClientInputBound = 16 * 1024;

// Methods sent again on a new origin connection when a reused one closed before answering (the
// origin may have dropped it just as the request went out). Safe methods only: a proxy must not
// repeat a request that may have changed something (RFC 9110 §9.2.2).
bool safe_to_repeat(std::string_view method) noexcept {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

bool body_done_at_start(const BodyFraming& framing) noexcept {
  return framing.kind == BodyFraming::Kind::none || (framing.kind == BodyFraming::Kind::length && framing.length == 0);
}

// The first `n` bytes of `buffer`, made contiguous; valid until the buffer changes.
std::string_view front_of(evbuffer* buffer, std::size_t n) {
  const unsigned char* data = evbuffer_pullup(buffer, static_cast<ev_ssize_t>(n));
  if (data == nullptr) throw std::bad_alloc();
  return {reinterpret_cast<const char*>(data), n};
}

void add_or_throw(evbuffer* to, std::string_view bytes) {
  if (!bytes.empty() && evbuffer_add(to, bytes.data(), bytes.size()) == -1) throw std::bad_alloc();
}

// What the request line may carry of a method or a path: printable ASCII already (the head parser
// allows nothing else in them), cut to what serve takes (proxy/inspector_messages.h), never empty.
std::string reported(std::string_view text, std::size_t most) {
  if (text.empty()) return "-";
  return std::string(text.substr(0, most));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Set-up.

std::unique_ptr<InspectedConnection> InspectedConnection::start(event_base* base, UniqueFd client, UniqueFd upstream,
                                                                InspectedSetup setup, Hooks hooks) {
  if (base == nullptr || !client.valid() || !upstream.valid() || !setup.endpoint || !setup.leaf ||
      !setup.leaf->certificate || setup.leaf_key == nullptr || setup.client_ctx == nullptr ||
      setup.origin_ctx == nullptr || hooks.request == nullptr || hooks.need_upstream == nullptr ||
      hooks.ended == nullptr) {
    return nullptr;
  }
  try {
    std::unique_ptr<InspectedConnection> connection(
        new InspectedConnection(base, std::move(client), std::move(setup), hooks));
    if (!connection->init(std::move(upstream))) return nullptr;
    return connection;
  } catch (const std::bad_alloc&) {
    return nullptr;  // the sockets, moved into the parameters, close here
  }
}

InspectedConnection::InspectedConnection(event_base* base, UniqueFd client, InspectedSetup setup, Hooks hooks)
    : base_(base),
      setup_(std::move(setup)),
      hooks_(hooks),
      client_fd_(std::move(client)),
      timer_(base, &on_timer, this) {
  sni_check_.host = setup_.host;
}

bool InspectedConnection::init(UniqueFd upstream) {
  TargetResult decided = parse_host(setup_.host, setup_.port);
  if (!std::holds_alternative<Target>(decided)) return false;
  origin_ = DecidedOrigin{std::get<Target>(std::move(decided)), kInspectDefaultPort};
  sniff_event_ = make_event(base_, client_fd_.get(), EV_READ | EV_PERSIST, &on_sniff, this);
  kick_event_ = make_event(base_, -1, 0, &on_kick, this);
  if (!sniff_event_ || !kick_event_ || !timer_.valid()) return false;
  if (event_add(sniff_event_.get(), nullptr) == -1) return false;
  // The origin's handshake goes on while the box's first byte is awaited: the first request does
  // not wait for it more than it must.
  if (!open_origin_tls(std::move(upstream))) return false;
  arm(TimerRole::head);
  return true;
}

InspectedConnection::~InspectedConnection() {
  if (alive_ != nullptr) *alive_ = false;
}

bool InspectedConnection::open_client_tls() {
  SslPtr ssl(SSL_new(setup_.client_ctx));
  if (!ssl || SSL_use_certificate(ssl.get(), setup_.leaf->certificate.get()) != 1 ||
      SSL_use_PrivateKey(ssl.get(), setup_.leaf_key) != 1 || !attach_server_name_check(ssl.get(), &sni_check_)) {
    ERR_clear_error();
    return false;
  }
  client_ = TlsStream::open(base_, std::move(client_fd_), std::move(ssl), TlsStream::Role::accept, kMaxQueued / 2,
                            {&on_client_io, &on_client_io, &on_client_event, this});
  return client_ != nullptr;
}

bool InspectedConnection::open_origin_tls(UniqueFd fd) {
  drop_origin();
  SslPtr ssl(SSL_new(setup_.origin_ctx));
  if (!ssl) {
    ERR_clear_error();
    return false;
  }
  SSL* s = ssl.get();
  // Set here as well as on the context: a context made without it must never carry a box's
  // requests to an origin nobody checked.
  SSL_set_verify(s, SSL_VERIFY_PEER, nullptr);
  const Target& decided = origin_.target;
  bool named = true;
  if (decided.address) {
    // An address literal: no SNI (RFC 6066 names hosts only), its IP subjectAltName is checked.
    named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), decided.host.c_str()) == 1;
  } else {
    // SNI the decided host, and the certificate must name it (SPEC §18): the origin is asked for
    // the site that was judged, and a certificate for any other name is refused.
    named = SSL_set_tlsext_host_name(s, decided.host.c_str()) == 1 && SSL_set1_host(s, decided.host.c_str()) == 1;
  }
  const bool alpn = SSL_set_alpn_protos(s, reinterpret_cast<const unsigned char*>(kAlpnHttp11.data()),
                                        static_cast<unsigned int>(kAlpnHttp11.size())) == 0;  // 0: success
  if (!named || !alpn) {
    ERR_clear_error();
    return false;
  }
  origin_side_ = TlsStream::open(base_, std::move(fd), std::move(ssl), TlsStream::Role::connect, kMaxQueued / 2,
                                 {&on_origin_io, &on_origin_io, &on_origin_event, this});
  if (!origin_side_) return false;
  origin_state_ = Origin::handshaking;
  origin_used_ = false;
  origin_eof_ = false;
  origin_error_ = false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// The owner's calls: each records what changed and kicks; the work (and any hook) follows from the
// loop, so the owner is never called back from inside its own call.

void InspectedConnection::give_upstream(UniqueFd fd) {
  // Not asked for (an origin connection is open, or the connection is ending): `fd` closes here.
  if (phase_ == Phase::ended || phase_ == Phase::closing || origin_side_) return;
  if (!open_origin_tls(std::move(fd))) origin_state_ = Origin::tls_failed;
  kick();
}

void InspectedConnection::upstream_failed() {
  if (origin_state_ != Origin::asked) return;
  origin_state_ = Origin::dial_failed;
  kick();
}

void InspectedConnection::set_endpoint(std::shared_ptr<const InspectEndpoint> endpoint) {
  setup_.endpoint = std::move(endpoint);
  kick();
}

void InspectedConnection::kick() noexcept {
  if (kick_event_) event_active(kick_event_.get(), EV_TIMEOUT, 0);
}

// ---------------------------------------------------------------------------------------------
// libevent's callbacks. Each acts on what happened, then settles: advances the state machine and
// delivers the hooks it queued. Nothing runs after settle(): the owner may have deleted us.

void InspectedConnection::on_sniff(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  try {
    c->sniff();
  } catch (...) {
    c->end_now(TunnelEnd::error);
  }
  c->settle();
}

void InspectedConnection::on_kick(evutil_socket_t, short, void* self) noexcept {
  static_cast<InspectedConnection*>(self)->settle();
}

void InspectedConnection::on_client_io(bufferevent*, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  c->last_activity_ = Clock::now();
  c->settle();
}

void InspectedConnection::on_client_event(bufferevent*, short what, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  try {
    c->client_event(what);
  } catch (...) {
    c->end_now(TunnelEnd::error);
  }
  c->settle();
}

void InspectedConnection::on_origin_io(bufferevent* bev, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  if (!c->origin_side_ || !c->origin_side_->is(bev)) return;  // a side dropped since
  c->last_activity_ = Clock::now();
  c->settle();
}

void InspectedConnection::on_origin_event(bufferevent* bev, short what, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  if (!c->origin_side_ || !c->origin_side_->is(bev)) return;
  try {
    c->origin_event(what);
  } catch (...) {
    c->end_now(TunnelEnd::error);
  }
  c->settle();
}

void InspectedConnection::on_timer(void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  try {
    c->timer_fired();
  } catch (...) {
    c->end_now(TunnelEnd::error);
  }
  c->settle();
}

void InspectedConnection::settle() noexcept {
  try {
    advance();
  } catch (...) {  // std::bad_alloc: this connection ends, the process goes on
    abort_client_ = true;
    end_now(TunnelEnd::error);
  }
  update_reading();
  deliver_hooks();
}

// Each side reads only while its input is under its bound and what it feeds has room (SPEC §18's
// bounds): a side whose peer does not take its bytes is not read, so nothing grows without end
// whatever either side does. Asked after every step, as anything may have drained or filled.
void InspectedConnection::update_reading() noexcept {
  if (phase_ == Phase::ended) return;
  const auto room = [](const std::unique_ptr<TlsStream>& side) { return side && side->output_length() < kMaxQueued; };
  if (client_) {
    bool want = client_->input_length() < std::max(setup_.max_head_bytes + 1, kMinClientInputBound);
    switch (phase_) {
      case Phase::reading_head:
        want = want && room(client_);  // its answers go out before another head is read
        break;
      case Phase::exchanging:
        want = want && (exchange_.request_done || room(origin_side_));
        break;
      case Phase::relaying:
        want = want && room(origin_side_);
        break;
      case Phase::closing:
        want = false;
        break;
      default:
        break;
    }
    client_->set_reading(want);
  }
  if (origin_side_) {
    bool want = origin_side_->input_length() <= kMaxResponseHeadBytes;
    if (phase_ == Phase::exchanging || phase_ == Phase::relaying) want = want && room(client_);
    if (phase_ == Phase::closing) want = false;
    origin_side_->set_reading(want);  // between requests it reads, to see the origin close
  }
}

void InspectedConnection::deliver_hooks() noexcept {
  bool alive = true;
  alive_ = &alive;
  while (!records_.empty()) {
    const RequestRecord record = std::move(records_.front());
    records_.pop_front();
    hooks_.request(hooks_.owner, record);
    if (!alive) return;
  }
  if (need_upstream_due_) {
    need_upstream_due_ = false;
    hooks_.need_upstream(hooks_.owner);
    if (!alive) return;
  }
  alive_ = nullptr;
  if (ended_due_) {
    const EndRecord record = *ended_due_;
    ended_due_.reset();
    hooks_.ended(hooks_.owner, record);  // the last hook: the owner may delete us in it
  }
}

void InspectedConnection::sniff() {
  if (phase_ != Phase::sniffing) return;
  unsigned char first = 0;
  const ssize_t n = ::recv(client_fd_.get(), &first, 1, MSG_PEEK);
  if (n == -1) {
    if (!transient_error(errno)) end_now(TunnelEnd::error);
    return;
  }
  event_del(sniff_event_.get());
  if (n == 0) {
    end_now(TunnelEnd::client_closed);
    return;
  }
  // Anything but a TLS handshake record is `not tls` (SPEC §18), closed without a word: what it
  // stops is plaintext to an inspected endpoint going anywhere uninspected, and OpenSSL being fed
  // what is not TLS at all.
  if (first != kTlsHandshakeRecord) {
    refuse_connection(InspectRefusal::not_tls);
    return;
  }
  if (!open_client_tls()) {
    end_now(TunnelEnd::error);
    return;
  }
  phase_ = Phase::handshaking;
}

void InspectedConnection::client_event(short what) {
  if (phase_ == Phase::ended || !client_) return;
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    if (phase_ != Phase::handshaking) return;
    phase_ = Phase::reading_head;
    arm(TimerRole::head);  // the first head gets a head timeout of its own, as every later one
    return;
  }
  if ((what & BEV_EVENT_ERROR) != 0) client_->note_failed();
  if (phase_ == Phase::handshaking) {
    // A ClientHello naming another host fails the handshake in the SNI callback (tls_contexts.cc).
    if (sni_check_.mismatched) {
      refuse_connection(InspectRefusal::sni_mismatch);
      return;
    }
    end_now((what & BEV_EVENT_EOF) != 0 ? TunnelEnd::client_closed : TunnelEnd::error);
    return;
  }
  if ((what & BEV_EVENT_EOF) != 0) {
    client_eof_ = true;  // what it sent before is still served; advance() decides when to close
    return;
  }
  abort_client_ = true;
  end_now(TunnelEnd::error);
}

void InspectedConnection::origin_event(short what) {
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    if (origin_state_ != Origin::handshaking) return;
    // The handshake verified the chain and the name (SSL_VERIFY_PEER and the host set on the SSL);
    // asked again here, so that nothing but a verified origin that showed a certificate is used.
    SSL* ssl = origin_side_->ssl();
    if (SSL_get0_peer_certificate(ssl) == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
      drop_origin();
      origin_state_ = Origin::tls_failed;
      return;
    }
    origin_state_ = Origin::ready;
    return;
  }
  if ((what & BEV_EVENT_ERROR) != 0) {
    origin_side_->note_failed();
    origin_error_ = true;
  }
  if (origin_state_ == Origin::handshaking) {
    drop_origin();  // a failed handshake or certificate: SPEC §18's `upstream tls`
    origin_state_ = Origin::tls_failed;
    return;
  }
  origin_eof_ = true;  // EOF or error alike: this origin connection is over
}

void InspectedConnection::timer_fired() {
  if (phase_ == Phase::ended) return;
  const auto quiet_for = [&](double limit) {
    const double quiet = Clock::seconds_since(last_activity_);
    if (quiet < limit) {
      timer_.arm(limit - quiet);
      return false;
    }
    return true;
  };
  switch (timer_role_) {
    case TimerRole::none:
      return;
    case TimerRole::head:
      end_now(TunnelEnd::idle_timeout);  // the box did not finish its handshake or head in time
      return;
    case TimerRole::upstream:
      // No origin connection in time: a handshake that never ends is `upstream tls`; serve's dial
      // never answered is `dial failed` (the request gets its 502 either way).
      if (origin_state_ == Origin::handshaking) {
        drop_origin();
        origin_state_ = Origin::tls_failed;
      } else if (origin_state_ == Origin::asked) {
        origin_state_ = Origin::dial_failed;
      }
      return;
    case TimerRole::drain:
      if (quiet_for(setup_.head_timeout)) end_now(TunnelEnd::idle_timeout);
      return;
    case TimerRole::idle:
      if (quiet_for(setup_.idle_timeout)) end_now(TunnelEnd::idle_timeout);
      return;
  }
}

void InspectedConnection::arm(TimerRole role) {
  timer_role_ = role;
  switch (role) {
    case TimerRole::none:
      timer_.disarm();
      return;
    case TimerRole::head:
    case TimerRole::upstream:
    case TimerRole::drain:
      timer_.arm(setup_.head_timeout);
      return;
    case TimerRole::idle:
      timer_.arm(setup_.idle_timeout);  // 0: none (disarms)
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// The state machine.

void InspectedConnection::advance() {
  for (int steps = 0; steps < kMaxStepsPerWake; ++steps) {
    if (!step()) return;
  }
  kick();  // more to do: on the loop's next turn, after the other connections had theirs
}

bool InspectedConnection::step() {
  if (phase_ == Phase::ended) return false;
  // An origin connection that closed between requests is dropped, and so is one that speaks out of
  // turn (what it sends unasked must never be taken for the next answer); the next request asks
  // for another.
  if (origin_state_ == Origin::ready && phase_ != Phase::exchanging && phase_ != Phase::relaying &&
      (origin_eof_ || origin_side_->input_length() > 0)) {
    drop_origin();
    origin_state_ = Origin::gone;
    return true;
  }
  switch (phase_) {
    case Phase::sniffing:
    case Phase::handshaking:
    case Phase::ended:
      return false;
    case Phase::reading_head:
      return read_head();
    case Phase::refusing:
      return drop_refused_body();
    case Phase::waiting_upstream:
      return wait_for_origin();
    case Phase::exchanging:
      return exchange();
    case Phase::relaying:
      return relay();
    case Phase::closing:
      return close_when_flushed();
  }
  return false;
}

bool InspectedConnection::read_head() {
  // The endpoint was removed: the connection closes before its next request (SPEC §18), once the
  // answers already queued are out.
  if (!setup_.endpoint) {
    close_after_flush(TunnelEnd::shutdown);
    return true;
  }
  // Earlier answers go out first: pipelined requests refused one after another never pile up.
  if (client_->output_length() >= kMaxQueued) return false;
  evbuffer* in = client_->input();
  const std::size_t length = evbuffer_get_length(in);
  if (length == 0) {
    if (!client_eof_) return false;
    close_after_flush(TunnelEnd::client_closed);  // a client that shut down its writing still gets every byte
    return true;
  }
  const std::size_t max_head = setup_.max_head_bytes;
  const auto parsed = parse_request_head(front_of(in, std::min(length, max_head + 1)), max_head);
  switch (parsed.status) {
    case ParseResult<RequestHead>::Status::need_more:
      if (length > max_head) {
        refuse_unparsed(InspectRefusal::head_too_large);
        return true;
      }
      if (!client_eof_) return false;
      close_after_flush(TunnelEnd::client_closed);  // it left in the middle of a head
      return true;
    case ParseResult<RequestHead>::Status::refused:
      refuse_unparsed(parsed.refusal == Reason::head_too_large ? InspectRefusal::head_too_large
                                                               : InspectRefusal::bad_request);
      return true;
    case ParseResult<RequestHead>::Status::complete:
      begin_request(*parsed.value, parsed.consumed);
      return true;
  }
  return false;
}

void InspectedConnection::begin_request(const RequestHead& head, std::size_t head_bytes) {
  exchange_ = Exchange{};
  exchange_.started = Clock::now();
  exchange_.method.assign(head.method);
  RequestRecord& record = exchange_.record;
  record.method = reported(head.method, kMaxReportedMethodBytes);
  if (setup_.log_paths) record.path = reported(head.target.substr(0, head.target.find('?')), kMaxReportedPathBytes);
  exchange_.judged = judge_inspected_request(head, *setup_.endpoint, origin_);
  record.rule = exchange_.judged.rule;
  record.report = exchange_.judged.report;
  evbuffer_drain(client_->input(), head_bytes);  // `head` points into what this drops: not used after

  const InspectedRequest& judged = exchange_.judged;
  exchange_.request_body = BodyCursor(judged.framing);
  exchange_.request_done = body_done_at_start(judged.framing);
  if (judged.refusal) {
    // The connection ends after the answer when the body cannot be found, or the client leaves.
    std::optional<TunnelEnd> close_with;
    if (!judged.keep_after_refusal) close_with = judged.client_keep_alive ? TunnelEnd::error : TunnelEnd::client_closed;
    refuse(*judged.refusal, close_with);
    return;
  }
  phase_ = Phase::waiting_upstream;
  arm(TimerRole::upstream);
}

bool InspectedConnection::drop_refused_body() {
  if (!exchange_.request_done) {
    std::uint64_t dropped = 0;
    const Moved moved = move_body(client_->input(), nullptr, exchange_.request_body, dropped);
    if (moved.malformed) {
      close_after_flush(TunnelEnd::error);  // its answer is queued; the next request cannot be found
      return true;
    }
    if (moved.done) exchange_.request_done = true;
    if (!moved.done) {
      if (moved.moved) return true;
      if (!client_eof_) return false;
      close_after_flush(TunnelEnd::client_closed);
      return true;
    }
  }
  phase_ = Phase::reading_head;
  arm(TimerRole::head);
  return true;
}

bool InspectedConnection::wait_for_origin() {
  switch (origin_state_) {
    case Origin::ready:
      queue_to_origin(exchange_.judged.upstream_head);
      exchange_.reused_origin = origin_used_;
      origin_used_ = true;
      phase_ = Phase::exchanging;
      arm(TimerRole::idle);
      return true;
    case Origin::handshaking:
    case Origin::asked:
      return false;
    case Origin::gone:
      origin_state_ = Origin::asked;
      need_upstream_due_ = true;
      return true;
    case Origin::dial_failed: {
      origin_state_ = Origin::gone;
      std::optional<TunnelEnd> close_with;
      if (!exchange_.judged.keep_after_refusal) close_with = TunnelEnd::error;
      refuse(InspectRefusal::dial_failed, close_with);
      return true;
    }
    case Origin::tls_failed:
      // SPEC §18: 502 inside TLS, and the connection ends (its origin cannot be trusted).
      connection_refusal_ = InspectRefusal::upstream_tls;
      refuse(InspectRefusal::upstream_tls, TunnelEnd::error);
      return true;
  }
  return false;
}

bool InspectedConnection::exchange() {
  bool progress = false;
  if (!exchange_.request_done) progress = pass_request_body();
  if (phase_ != Phase::exchanging) return true;
  if (!exchange_.response_head_done) {
    progress = read_response_head() || progress;
  } else if (!exchange_.response_done) {
    progress = pass_response_body() || progress;
  }
  if (phase_ != Phase::exchanging) return true;
  if (exchange_.response_done) {
    finish_exchange();
    return true;
  }
  return progress;
}

bool InspectedConnection::pass_request_body() {
  std::uint64_t sent = 0;
  const Moved moved = move_body(client_->input(), origin_side_->output(), exchange_.request_body, sent);
  up_ += sent;
  exchange_.record.up += sent;
  if (moved.malformed) {
    // Half a request went to the origin: its connection is never used again. The client gets its
    // 400 unless the response has begun to reach it.
    drop_origin();
    origin_state_ = Origin::gone;
    if (!exchange_.response_started) {
      refuse(InspectRefusal::bad_framing, TunnelEnd::error);
    } else {
      abort_client_ = true;
      end_now(TunnelEnd::error);
    }
    return true;
  }
  if (moved.done) {
    exchange_.request_done = true;
    return true;
  }
  if (!moved.moved && client_eof_ && client_->input_length() == 0) {
    end_now(TunnelEnd::client_closed);  // it left in the middle of its body
    return true;
  }
  return moved.moved;
}

bool InspectedConnection::read_response_head() {
  evbuffer* in = origin_side_->input();
  bool progress = false;
  for (;;) {
    // Interim responses are passed one at a time, each once the client has room: an origin sending
    // them without end never makes the client's output grow past its bound.
    if (client_->output_length() >= kMaxQueued) return progress;
    const std::size_t length = evbuffer_get_length(in);
    if (length == 0) return origin_eof_ ? origin_ended_early() : progress;
    const auto parsed = parse_response_head(front_of(in, std::min(length, kMaxResponseHeadBytes + 1)),
                                            kMaxResponseHeadBytes);
    if (parsed.status == ParseResult<ResponseHead>::Status::need_more) {
      if (length > kMaxResponseHeadBytes) return origin_broke();
      return origin_eof_ ? origin_ended_early() : progress;
    }
    if (parsed.status == ParseResult<ResponseHead>::Status::refused) return origin_broke();
    const ResponseHead& head = *parsed.value;
    if (head.status == 101) {
      // Only a WebSocket that was asked for, and allowed, is switched to (SPEC §18).
      if (!exchange_.judged.websocket || !switches_to_websocket(head)) return origin_broke();
      const std::string answer = rewrite_switching_head(head);
      evbuffer_drain(in, parsed.consumed);
      queue_to_client(answer);
      exchange_.response_started = true;
      exchange_.record.status = 101;
      exchange_.request_body = BodyCursor(BodyFraming{BodyFraming::Kind::until_close, 0});
      exchange_.response_body = BodyCursor(BodyFraming{BodyFraming::Kind::until_close, 0});
      phase_ = Phase::relaying;
      arm(TimerRole::idle);
      return true;
    }
    if (head.status < 200) {
      // An interim response (100 Continue): passed on and the final one follows; never to an
      // HTTP/1.0 client, which does not know them (RFC 9110 §15.2).
      std::string answer;
      if (!exchange_.judged.client_http10) answer = rewrite_response_head(head, exchange_.judged.client_keep_alive);
      evbuffer_drain(in, parsed.consumed);
      if (!answer.empty()) {
        queue_to_client(answer);
        exchange_.response_started = true;
      }
      progress = true;
      continue;
    }
    auto framing = response_framing(exchange_.method, head);
    if (std::holds_alternative<Reason>(framing)) return origin_broke();  // a body nobody can delimit
    const BodyFraming body = std::get<BodyFraming>(framing);
    const bool until_close = body.kind == BodyFraming::Kind::until_close;
    // The client's connection goes on only while it asks to, the body ends by its framing, its own
    // request was read whole (else where its next one starts is unknown) and the endpoint stands.
    exchange_.keep_client = exchange_.judged.client_keep_alive && !until_close && exchange_.request_done &&
                            !client_eof_ && setup_.endpoint != nullptr;
    exchange_.origin_reusable = origin_keeps_alive(head) && !until_close;
    const std::string answer = rewrite_response_head(head, exchange_.keep_client);
    exchange_.record.status = static_cast<std::uint16_t>(head.status);
    evbuffer_drain(in, parsed.consumed);
    queue_to_client(answer);
    exchange_.response_started = true;
    exchange_.response_head_done = true;
    exchange_.response_body = BodyCursor(body);
    exchange_.response_done = body_done_at_start(body);
    return true;
  }
}

bool InspectedConnection::pass_response_body() {
  std::uint64_t passed = 0;
  const Moved moved = move_body(origin_side_->input(), client_->output(), exchange_.response_body, passed);
  down_ += passed;
  exchange_.record.down += passed;
  if (moved.malformed) return origin_broke();
  if (moved.done) {
    exchange_.response_done = true;
    return true;
  }
  if (origin_eof_ && origin_side_->input_length() == 0) {
    if (exchange_.response_body.framing().kind == BodyFraming::Kind::until_close) {
      // The close ends the body. One without close_notify may have been cut by anyone on the path:
      // the client then sees its own connection end the same way, never a clean end.
      if (origin_error_ || !origin_side_->received_close_notify()) abort_client_ = true;
      exchange_.response_done = true;
      return true;
    }
    drop_origin();
    origin_state_ = Origin::gone;
    abort_client_ = true;  // a body cut short: the client must not take it for whole
    end_now(TunnelEnd::upstream_closed);
    return true;
  }
  return moved.moved;
}

// The origin closed before a final response head. A reused connection closing just as a safe
// request without a body went out is the keep-alive race: the request goes once more on a new
// connection. Otherwise the client's connection ends, as the plain path's does.
bool InspectedConnection::origin_ended_early() {
  drop_origin();
  origin_state_ = Origin::gone;
  const bool repeatable = exchange_.reused_origin && !exchange_.response_started && !exchange_.retried &&
                          exchange_.judged.framing.kind == BodyFraming::Kind::none &&
                          safe_to_repeat(exchange_.method);
  if (repeatable) {
    exchange_.retried = true;
    phase_ = Phase::waiting_upstream;
    arm(TimerRole::upstream);
    return true;
  }
  if (exchange_.response_started) abort_client_ = true;
  end_now(TunnelEnd::upstream_closed);
  return true;
}

// The origin sent what cannot be passed on (a head that does not parse or has no end, framing
// nobody can delimit, a 101 nobody asked for): the client's connection ends, as the plain path's.
bool InspectedConnection::origin_broke() {
  drop_origin();
  origin_state_ = Origin::gone;
  abort_client_ = true;
  end_now(TunnelEnd::error);
  return true;
}

void InspectedConnection::finish_exchange() {
  record_exchange();
  const bool reusable = exchange_.origin_reusable && exchange_.request_done && origin_side_ && !origin_eof_ &&
                        origin_side_->input_length() == 0;  // bytes past the response: never a next answer
  if (!reusable) {
    drop_origin();
    origin_state_ = Origin::gone;
  }
  if (exchange_.keep_client && !client_eof_) {
    phase_ = Phase::reading_head;
    arm(TimerRole::head);
    return;
  }
  TunnelEnd end = TunnelEnd::upstream_closed;  // the response's framing or the origin ended it
  if (!exchange_.judged.client_keep_alive || client_eof_) {
    end = TunnelEnd::client_closed;
  } else if (!setup_.endpoint) {
    end = TunnelEnd::shutdown;
  }
  close_after_flush(end);
}

bool InspectedConnection::relay() {
  std::uint64_t up = 0;
  std::uint64_t down = 0;
  const Moved to_origin = move_body(client_->input(), origin_side_->output(), exchange_.request_body, up);
  const Moved to_client = move_body(origin_side_->input(), client_->output(), exchange_.response_body, down);
  up_ += up;
  down_ += down;
  exchange_.record.up += up;
  exchange_.record.down += down;
  if (client_eof_ && client_->input_length() == 0) {
    close_after_flush(TunnelEnd::client_closed);
    return true;
  }
  if (origin_eof_ && origin_side_->input_length() == 0) {
    if (origin_error_) abort_client_ = true;
    close_after_flush(TunnelEnd::upstream_closed);
    return true;
  }
  return to_origin.moved || to_client.moved;
}

bool InspectedConnection::close_when_flushed() {
  // A side that has closed takes nothing more: its output is not waited for.
  const bool client_flushed = !client_ || client_->output_length() == 0;
  const bool origin_flushed = !origin_side_ || origin_eof_ || origin_side_->output_length() == 0;
  if (!client_flushed || !origin_flushed) return false;
  end_now(closing_end_.value_or(TunnelEnd::error));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Moving bytes, answers and ends.

InspectedConnection::Moved InspectedConnection::move_body(evbuffer* from, evbuffer* to, BodyCursor& cursor,
                                                          std::uint64_t& count) {
  Moved out;
  for (;;) {
    const std::size_t queued = to != nullptr ? evbuffer_get_length(to) : 0;
    if (queued >= kMaxQueued) return out;
    evbuffer_iovec piece{};
    if (evbuffer_peek(from, -1, nullptr, &piece, 1) < 1 || piece.iov_len == 0) return out;
    const std::string_view bytes(static_cast<const char*>(piece.iov_base), std::min(piece.iov_len, kMaxQueued - queued));
    const BodyCursor::Take take = cursor.feed(bytes);
    if (take.malformed) {
      out.malformed = true;
      return out;
    }
    if (to != nullptr) {
      // Passed as framed, byte for byte; a chunked body's trailers are dropped and `ending` closes it.
      if (take.pass > 0 && evbuffer_remove_buffer(from, to, take.pass) != static_cast<int>(take.pass)) {
        throw std::bad_alloc();
      }
      evbuffer_drain(from, take.take - take.pass);
      add_or_throw(to, take.ending);
      count += take.pass + take.ending.size();
    } else {
      evbuffer_drain(from, take.take);
    }
    if (take.take > 0) out.moved = true;
    if (take.done) {
      out.done = true;
      return out;
    }
    if (take.take < bytes.size()) return out;  // the cursor wants no more of it now
  }
}

void InspectedConnection::queue_to_client(std::string_view bytes) {
  add_or_throw(client_->output(), bytes);
  down_ += bytes.size();
  exchange_.record.down += bytes.size();
}

void InspectedConnection::queue_to_origin(std::string_view bytes) {
  add_or_throw(origin_side_->output(), bytes);
  up_ += bytes.size();
  exchange_.record.up += bytes.size();
}

void InspectedConnection::refuse(InspectRefusal refusal, std::optional<TunnelEnd> close_with) {
  const InspectRefusalInfo& row = inspect_refusal_info(refusal);
  queue_to_client(inspect_refusal_response(refusal, close_with.has_value()));
  record_request(row.log_class, row.status);
  if (close_with) {
    close_after_flush(*close_with);
    return;
  }
  // The connection goes on (SPEC §18): the refused request's body is read and dropped first.
  phase_ = Phase::refusing;
  arm(TimerRole::drain);
}

void InspectedConnection::refuse_unparsed(InspectRefusal refusal) {
  exchange_ = Exchange{};
  exchange_.started = Clock::now();
  exchange_.record.method = "-";
  exchange_.record.rule = "-";
  refuse(refusal, TunnelEnd::error);  // where this request ends and the next begins is unknown
}

void InspectedConnection::refuse_connection(InspectRefusal refusal) {
  connection_refusal_ = refusal;
  abort_client_ = true;  // no answer at all: not even a close_notify
  end_now(TunnelEnd::error);
}

void InspectedConnection::record_request(std::string_view log_class, std::uint16_t status) {
  if (exchange_.recorded) return;  // one line per request, however it ends
  exchange_.recorded = true;
  RequestRecord record = exchange_.record;
  record.log_class.assign(log_class);
  record.status = status;
  record.ms = static_cast<std::uint64_t>(Clock::seconds_since(exchange_.started) * 1000.0);
  records_.push_back(std::move(record));
}

void InspectedConnection::record_exchange() {
  // A report-mode denial keeps its class on the line (SPEC §18: class request denied, report=1).
  record_request(exchange_.judged.report ? verdict_class(RequestVerdict::request_denied) : "ok",
                 exchange_.record.status);
}

void InspectedConnection::close_after_flush(TunnelEnd end) {
  if (exchange_open()) record_exchange();
  closing_end_ = end;
  phase_ = Phase::closing;
  arm(TimerRole::drain);  // reading stops (update_reading): only what is queued still goes out
}

void InspectedConnection::end_now(TunnelEnd end) {
  if (phase_ == Phase::ended) return;
  if (exchange_open()) record_exchange();
  phase_ = Phase::ended;
  timer_.disarm();
  timer_role_ = TimerRole::none;
  if (sniff_event_) event_del(sniff_event_.get());
  need_upstream_due_ = false;
  if (client_) {
    if (!abort_client_ && end != TunnelEnd::error) client_->send_close_notify();
    client_.reset();
  }
  client_fd_.reset();
  drop_origin();
  EndRecord record;
  record.up = up_;
  record.down = down_;
  record.end = end;
  if (connection_refusal_) record.log_class.emplace(inspect_refusal_info(*connection_refusal_).log_class);
  ended_due_ = record;
}

void InspectedConnection::drop_origin() {
  if (!origin_side_) return;
  if (!origin_error_) origin_side_->send_close_notify();
  origin_side_.reset();
  origin_eof_ = false;
  origin_error_ = false;
}

}  // namespace boxproxy
