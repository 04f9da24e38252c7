// SPDX-License-Identifier: Apache-2.0
// A client connection: its life, its handshake, its decision and dial, and the session it hands
// its sockets to once allowed (proxy/client_connection.h).
#include "proxy/client_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <new>
#include <utility>

#include "proxy/inspector_link.h"
#include "proxy/plain_http_session.h"
#include "proxy/proxy_server.h"
#include "proxy/wire/http_forward.h"
#include "proxy/wire/replies.h"
#include "proxy/wire/resolve_request.h"
#include "proxy/transient_error.h"
#include "proxy/tunnel_session.h"
#include "table/policy.h"

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
  if (phase_ == Phase::handed_over) {
    if (InspectorLink* link = server_.inspector()) link->forget(id_);
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

// ---------------------------------------------------------------------------------------------
// The decision (SPEC §5): table/'s, the same for `boxproxy check`; only the waiting is ours.

ClientConnection::Next ClientConnection::decide(Target target) {
  request_.target = std::move(target);
  if (request_.kind == ClientKind::resolve) {
    request_.target.port = resolve_judged_port(server_.config().policy.allow, request_.target);
  }
  request_.asked.reset();  // each request of a keep-alive connection is a decision of its own
  const auto asking = server_.asks() != nullptr ? Decision::Asking::on : Decision::Asking::off;
  return follow(decision_.start(server_.config().policy, request_.target, asking));
}

// asked= for this decision's line (SPEC §15), once: the next request of a keep-alive connection
// starts without one.
std::optional<std::string_view> ClientConnection::asked_text() noexcept {
  if (!request_.asked) return std::nullopt;
  return asked_name(*std::exchange(request_.asked, std::nullopt));
}

// The supervisor's verdict on this client's ask (or the ask's timeout, or no control client left).
ClientConnection::Next ClientConnection::ask_verdict(AskVerdict verdict) {
  ask_ticket_ = {};  // the registry has let go of it already
  request_.asked = verdict;
  return follow(decision_.asked(approves(verdict), request_.target));
}

// The lookup's answers (empty: no answer, or a failed lookup).
ClientConnection::Next ClientConnection::answers_known(std::vector<IpAddress> answers) {
  return follow(decision_.answers_found(std::move(answers)));
}

// Gets the decision what it asks for, until it has decided.
ClientConnection::Next ClientConnection::follow(Decision::Step step) {
  switch (step) {
    case Decision::Step::need_lookup:
      return look_up();
    case Decision::Step::need_local_addresses:
      // Read fresh for each decision, as the spec says, but cached until netlink reports a
      // change (LocalAddresses); asked for only when they can change the answer.
      return follow(decision_.local_addresses_read(server_.local_addresses().current()));
    case Decision::Step::refuse:
      return refuse_decided();
    case Decision::Step::ask:
      // A RESOLVE is never asked about: it has no port and opens no connection.
      return request_.kind == ClientKind::resolve ? resolve_by_name() : ask_supervisor();
    case Decision::Step::dial:
      return request_.kind == ClientKind::resolve ? resolved() : admit_and_dial();
  }
  return Next::close;
}

ClientConnection::Next ClientConnection::look_up() {
  phase_ = Phase::resolving;
  timer_.arm(server_.config().dns_timeout);
  std::optional<std::vector<IpAddress>> immediate;
  lookup_ = server_.resolver().start(request_.target.host, &on_resolved, this, immediate);
  if (immediate) return answers_known(std::move(*immediate));
  // Neither answered nor asked: --max-lookups is spent (SPEC §14). Refused by name before any
  // query leaves, so a box that floods names gets no more of them out to the resolver.
  if (lookup_ == nullptr) return refuse(Reason::lookup_budget);
  return Next::keep;
}

// A name off the list, with --ask: the supervisor is asked, and this client waits (still counted
// among the undecided, so waiting clients are bounded like every other pending one) for the
// verdict or the ask's own timeout (--ask-timeout), not its own timer.
ClientConnection::Next ClientConnection::ask_supervisor() {
  phase_ = Phase::asking;
  timer_.arm(0);
  const Target& target = request_.target;
  ask_ticket_ = server_.asks()->ask(target.host, target.port, request_.kind, id_, this, &on_ask_verdict);
  // Nobody to ask (no control client open): not-listed at once, and no asked= on the line.
  if (!ask_ticket_.held()) return follow(decision_.asked(false, target));
  return Next::keep;
}

ClientConnection::Next ClientConnection::refuse_decided() {
  const Reason reason = decision_.reason();
  if (reason == Reason::not_listed) {
    const ProxyConfig& config = server_.config();
    return refuse(reason, "-", not_listed_words(request_.target, decision_.not_listed_match(), config.allow_hint));
  }
  const IpAddress* refused = decision_.refused_address();
  return refuse(reason, refused != nullptr ? refused->to_string() : "-");
}

// Step 5, then step 6: the decision's answers, all checked, in order.
ClientConnection::Next ClientConnection::admit_and_dial() {
  if (request_.plain) {
    if (const auto refusal = judge_inspected_plain()) return refuse(*refusal);
  }
  auto slot = server_.take_slot();
  if (auto* full = std::get_if<Reason>(&slot)) return refuse(*full);
  phase_ = Phase::dialling;
  timer_.arm(server_.config().connect_timeout);
  return after(dialer_.start(std::move(std::get<TunnelSlot>(slot)), decision_.answers(), request_.target.port));
}

// Plain HTTP to an inspected endpoint's port (SPEC §18): its rules judge the request before any
// upstream socket opens, as they would inside TLS. (A tunnel to one is judged request by request
// by the inspector.) A refusal's request line is written here; an allowed request's when it ends.
std::optional<Reason> ClientConnection::judge_inspected_plain() {
  const Target& target = request_.target;
  if (!target.is_name()) return std::nullopt;
  const InspectEndpoint* endpoint = server_.config().policy.inspect.find(target.host, target.port);
  if (endpoint == nullptr) return std::nullopt;
  const std::string_view asked = origin_target_of(request_.plain->upstream_head);
  const RequestJudgement judged = judge_request(*endpoint, request_.plain->method, asked);
  ClientRequest::Inspected inspected{judged.rule, false, std::nullopt};
  if (server_.config().log_paths) inspected.path = std::string(asked.substr(0, asked.find('?')));
  std::optional<Reason> refusal;
  if (judged.verdict == RequestVerdict::bad_path) refusal = Reason::bad_path;
  if (judged.verdict == RequestVerdict::request_denied) {
    // Report mode: logged as denied (report=1), and let through.
    if (endpoint->mode == InspectMode::report) {
      inspected.report = true;
    } else {
      refusal = Reason::request_denied;
    }
  }
  request_.inspected = std::move(inspected);
  if (refusal) {
    log_request_line(refusal, info(*refusal).http_status, Session::Traffic{});
    request_.inspected.reset();
  }
  return refusal;
}

void ClientConnection::log_request_line(std::optional<Reason> refusal, std::uint16_t status,
                                        const Session::Traffic& traffic) {
  const ClientRequest::Inspected& inspected = *request_.inspected;
  // A view of the method itself: `cond ? std::string : "-"` would be a temporary string.
  const std::string_view method = request_.plain ? std::string_view(request_.plain->method) : std::string_view("-");
  RequestEntry line{id_, request_.target.host, request_.target.port, method,
                    inspected.rule, refusal, status, traffic.up, traffic.down, traffic.ms, inspected.report,
                    std::nullopt};
  if (inspected.path) line.path = *inspected.path;
  server_.log().request(line);
}

ClientConnection::Next ClientConnection::after(Dialer::Result result) {
  switch (result) {
    case Dialer::Result::pending:
      return Next::keep;
    case Dialer::Result::connected:
      return allowed();
    case Dialer::Result::failed:
      return refuse(Reason::dial_failed, dialer_.address_text());
  }
  return Next::close;
}

ClientConnection::Next ClientConnection::refuse(Reason reason, std::string_view ip, std::string words) {
  if (session_) {
    // An allowed exchange refused midway (a malformed body) ends first, as an error.
    session_->end_by(TunnelEnd::error);
    log_done();
  }
  dialer_.release();
  undecided_.release();
  request_.plain.reset();
  server_.count_refusal(reason);
  // With --audit this line is on disk before the refusal is answered: one fdatasync for every
  // refusal of this loop iteration (group commit), so the answer waits for it (send_refusal).
  const Target& target = request_.target;
  server_.log().decision({id_, request_.kind,
                          target.host.empty() ? std::nullopt : std::optional<std::string_view>(target.host),
                          request_.logged_port, ip, reason, asked_text()},
                         AuditSync::with_turn);
  phase_ = Phase::replying;
  timer_.arm(server_.config().head_timeout);  // a client that never reads its refusal is not kept
  return send_refusal(refusal_reply_for(request_.protocol, reason, words));
}

ClientConnection::Next ClientConnection::send_refusal(std::string reply) {
  if (server_.log().audit_sync_owed()) {
    if (!client_.has_queued()) {
      // The answer waits for the client's write event, which only the loop's next poll can fire:
      // the log syncs the audit before that poll (DecisionLog::audit_sync_owed). Nothing holds
      // this connection, so it may die meanwhile.
      client_.queue_for_later(reply);
      return Next::keep;
    }
    server_.log().sync_audit_now();  // the write event may already be due in this iteration
  }
  if (!send_or_queue(client_, reply)) return Next::close;
  return client_.has_queued() ? Next::keep : Next::close;
}

// ---------------------------------------------------------------------------------------------
// A RESOLVE (SPEC §16), Tor's SOCKS5 0xF0: the name goes through the same decision as a CONNECT
// (steps 1 to 4); an allowed one is answered with a checked address and is never dialled, so it
// takes no tunnel slot and spends none of the connection budget. Its lookup spends one of
// --max-lookups (SPEC §14), and its answer is kept for its TTL, so the connection the box then
// makes to the name costs none. The in-box bridge's DNS responder asks this way, so the box learns
// an address only for a name the proxy would let it reach, and a name off the list never leaves
// the machine.

ClientConnection::Next ClientConnection::resolved() {
  const IpAddress* chosen = resolve_answer(decision_.answers());
  if (chosen == nullptr) return refuse(Reason::name_not_resolved);
  const std::string address = chosen->to_string();
  undecided_.release();
  const Target& target = request_.target;
  server_.log().decision(
      {id_, request_.kind, target.host, request_.logged_port, address, std::nullopt, asked_text()});
  return answer_and_close(socks5_resolved_reply(*chosen));
}

// A name the host list does not cover, under --ask (SPEC §15, §16): answered "by name", neither
// asked about (a RESOLVE has no port; the box's connection that follows is asked, once, about its
// own), nor refused, nor looked up (a name nobody approved never leaves the machine). The bridge's
// DNS responder answers it with its stand-in address. With nobody to ask (no control client open)
// it is not-listed at once, as a CONNECT to it would be: a stand-in would only lead to a refusal.
ClientConnection::Next ClientConnection::resolve_by_name() {
  if (!server_.asks()->can_ask()) return follow(decision_.asked(false, request_.target));
  undecided_.release();
  // Nothing is decided: the port asked with (none was judged), no address, and asked=deferred, so
  // no reader takes the line for an approval.
  server_.log().decision(
      {id_, request_.kind, request_.target.host, request_.logged_port, "-", std::nullopt, "deferred"});
  return answer_and_close(socks5_resolved_by_name_reply(request_.target.host));
}

// Writes a final answer; the connection closes once it is written (client_writable).
ClientConnection::Next ClientConnection::answer_and_close(std::string_view reply) {
  phase_ = Phase::replying;
  timer_.arm(server_.config().head_timeout);
  if (!send_or_queue(client_, reply)) return Next::close;
  return client_.has_queued() ? Next::keep : Next::close;
}

// ---------------------------------------------------------------------------------------------
// Allowed: the decision's line, then a session has the sockets until it ends.

ClientConnection::Next ClientConnection::allowed() {
  undecided_.release();
  const Target& target = request_.target;
  server_.log().decision(
      {id_, request_.kind, target.host, target.port, dialer_.address_text(), std::nullopt, asked_text()});
  if (!request_.plain) {
    if (const InspectEndpoint* endpoint = inspected_endpoint()) return start_inspected(*endpoint);
  }
  phase_ = Phase::session;
  timer_.arm(server_.config().idle_timeout);
  resume_reading(client_, pause_no_more_wanted);
  return request_.plain ? start_plain_exchange() : start_tunnel();
}

ClientConnection::Next ClientConnection::start_tunnel() {
  Endpoint& upstream = dialer_.upstream();
  auto* tunnel = new (std::nothrow) TunnelSession(client_, upstream);
  if (tunnel == nullptr) return Next::close;
  session_.reset(tunnel);  // however it ends, its done line follows
  // Only a name has something to compare with an SNI or a Host. With a host list every allowed
  // target is a name (an IP literal is not-listed), so an address is never checked; without a
  // list nothing narrows the box's names, and any site is as good as the name it could ask for
  // directly. --no-sni-check turns off both checks.
  const ProxyConfig& config = server_.config();
  std::unique_ptr<FirstBytesGate> gate;
  if (config.sni_check && config.policy.allow.has_value() && request_.target.is_name()) {
    gate.reset(new (std::nothrow) FirstBytesGate(request_.target.host, request_.target.port, config.max_head_bytes));
    if (!gate) return Next::close;
  }
  return after(tunnel->start(allowed_reply_for(request_.protocol), std::exchange(request_.early, {}), std::move(gate)));
}

ClientConnection::Next ClientConnection::start_plain_exchange() {
  auto* exchange = new (std::nothrow) PlainHttpSession(client_, dialer_.upstream(), *request_.plain);
  if (exchange == nullptr) return Next::close;
  session_.reset(exchange);
  const std::string head = std::move(request_.plain->upstream_head);
  const std::string early = std::exchange(request_.early, {});
  request_.plain.reset();
  return after(exchange->start(head, early));
}

ClientConnection::Next ClientConnection::after(SessionNext next) {
  switch (next) {
    case SessionNext::keep:
      return Next::keep;
    case SessionNext::close:
      return Next::close;
    case SessionNext::sni_mismatch:
      return close_mismatch(Reason::sni_mismatch);
    case SessionNext::host_mismatch:
      return close_mismatch(Reason::host_mismatch);
    case SessionNext::refuse_bad_framing:
      return refuse(Reason::bad_framing);
    case SessionNext::response_read:
      dialer_.release();  // the response is all read: the upstream and its slot go back at once
      return after(session_->upstream_released());
    case SessionNext::exchange_done:
      return next_request();
  }
  return Next::close;
}

// The tunnel closes before any held byte a server could act on went upstream. Its `sni mismatch`
// or `host mismatch` line takes the place of the done line (the tunnel carried nothing of the
// client's) and is counted as a refusal. No reply: the tunnel's own went out before the client's
// first byte.
ClientConnection::Next ClientConnection::close_mismatch(Reason reason) {
  session_.reset();
  server_.count_refusal(reason);
  const Target& target = request_.target;
  server_.log().decision({id_, request_.kind, target.host, target.port, dialer_.address_text(), reason});
  return Next::close;
}

// A plain response reached the client whole: its done line, then the client's next request on
// this connection (keep-alive: a new decision, SPEC §8), or the close.
ClientConnection::Next ClientConnection::next_request() {
  std::optional<std::string> pipelined = session_->next_request();
  log_done();
  if (!pipelined) return Next::close;
  phase_ = Phase::handshake;
  request_ = ClientRequest{};
  dialer_.reset();
  undecided_ = server_.mark_undecided();
  timer_.arm(server_.config().head_timeout);
  resume_reading(client_, pause_no_more_wanted | pause_peer_full);
  handshake_ = new_handshake();
  if (!handshake_) return Next::close;
  return handshake_answered(handshake_->next_http_request(*pipelined));
}

// ---------------------------------------------------------------------------------------------
// Request inspection (SPEC §18): a tunnel to an inspected endpoint is answered as allowed, then its
// client and upstream sockets go to the inspector (proxy/inspect/DESIGN.md), which takes the TLS
// handshake and judges each request. This connection keeps the slot, and writes the lines the
// inspector reports, until it says the connection ended.

const InspectEndpoint* ClientConnection::inspected_endpoint() const {
  const Target& target = request_.target;
  if (!target.is_name()) return nullptr;
  return server_.config().policy.inspect.find(target.host, target.port);
}

ClientConnection::Next ClientConnection::start_inspected(const InspectEndpoint& endpoint) {
  // Fail closed: with no inspector to hand it to, the connection is refused, never let through
  // opaque (the operator asked for its requests to be judged).
  InspectorLink* link = server_.inspector();
  if (link == nullptr || !link->alive()) return refuse(Reason::upstream_tls, dialer_.address_text());
  // Bytes the client sent before the tunnel's answer would be the start of its TLS handshake,
  // which the inspector must read from the socket itself: a client that does not wait for the
  // answer is not one the inspector can serve.
  if (!request_.early.empty()) return close_mismatch(Reason::not_tls);
  (void)endpoint;  // found again when the sockets go (hand_over): nothing is kept meanwhile
  phase_ = Phase::inspected;
  // The inspector reads both sides, not serve.
  pause_reading(client_, pause_no_more_wanted);
  pause_reading(dialer_.upstream(), pause_no_more_wanted);
  timer_.arm(server_.config().head_timeout);     // the answer must be taken in time
  if (!send_or_queue(client_, allowed_reply_for(request_.protocol))) return Next::close;
  return client_.has_queued() ? Next::keep : hand_over();
}

ClientConnection::Next ClientConnection::hand_over() {
  InspectorLink* link = server_.inspector();
  const InspectEndpoint* endpoint = inspected_endpoint();
  if (link == nullptr || endpoint == nullptr) return Next::close;  // removed meanwhile: not let through
  const Target& target = request_.target;
  const InspectorConnection what{id_, target.host, target.port, entry_text(endpoint->host)};
  // The sockets go with their events freed; the link closes serve's copies once the loop has
  // taken them out of epoll (InspectorLink::close_after_loop_pass).
  if (!link->hand_over(*this, what, client_.release_socket(), dialer_.upstream().release_socket())) {
    return Next::close;
  }
  // The inspector holds its own copies now, and nothing here watches them again.
  phase_ = Phase::handed_over;
  timer_.disarm();
  handed_over_at_ = Clock::now();
  return Next::keep;
}

void ClientConnection::inspected_request(ClientConnection* connection, const InspectorRequest& line) noexcept {
  const Target& target = connection->request_.target;
  const std::optional<Reason> refusal =
      line.log_class == "ok" ? std::nullopt : reason_from_log_class(line.log_class);
  RequestEntry entry{connection->id_, target.host, target.port, line.method, line.rule, refusal, line.status,
                     line.up, line.down, line.ms, line.report, std::nullopt};
  if (line.path && connection->server_.config().log_paths) entry.path = *line.path;
  // A class the inspector should never report is logged as a bad request, not dropped: the line
  // still shows that something was refused.
  if (line.log_class != "ok" && !refusal) entry.refusal = Reason::bad_request;
  if (entry.refusal) connection->server_.count_refusal(*entry.refusal);
  connection->server_.log().request(entry);
}

void ClientConnection::inspected_dial(ClientConnection* connection) noexcept {
  UniqueFd upstream = connection->dialer_.connect_again();
  if (InspectorLink* link = connection->server_.inspector()) link->dialled(connection->id_, upstream.get());
}

void ClientConnection::inspected_ended(ClientConnection* connection, const InspectorEnded& ended) noexcept {
  connection->log_inspected_end(ended);
  delete connection;
}

// The connection's own last line: the refusal that closed it (not tls, sni mismatch, upstream tls)
// in place of the done line, as close_mismatch writes one; else the done line with the inspector's
// counts.
void ClientConnection::log_inspected_end(const InspectorEnded& ended) {
  const Target& target = request_.target;
  if (ended.log_class) {
    const Reason reason = reason_from_log_class(*ended.log_class).value_or(Reason::bad_request);
    server_.count_refusal(reason);
    server_.log().decision({id_, request_.kind, target.host, target.port, dialer_.address_text(), reason});
    return;
  }
  server_.stats().up += ended.up;
  server_.stats().down += ended.down;
  TunnelEnd end = TunnelEnd::error;
  for (const TunnelEnd each : {TunnelEnd::client_closed, TunnelEnd::upstream_closed, TunnelEnd::idle_timeout,
                               TunnelEnd::error, TunnelEnd::shutdown}) {
    if (tunnel_end_name(each) == ended.end) end = each;
  }
  const auto ms = static_cast<std::uint64_t>(Clock::seconds_since(handed_over_at_) * 1000);
  server_.log().done({id_, request_.kind, target.host, target.port, dialer_.address_text(), ended.up, ended.down, ms,
                      end});
}

// The session's done line (SPEC §12); the session ends with it.
void ClientConnection::log_done() {
  const Session::Traffic traffic = session_->traffic();
  server_.stats().up += traffic.up;
  server_.stats().down += traffic.down;
  const Target& target = request_.target;
  if (request_.inspected) {
    // Status 0: the origin sent no response head before the exchange ended.
    log_request_line(std::nullopt, session_->response_status(), traffic);
  }
  server_.log().done({id_, request_.kind, target.host, target.port, dialer_.address_text(), traffic.up, traffic.down,
                      traffic.ms, session_->end()});
  session_.reset();
}

}  // namespace boxproxy
