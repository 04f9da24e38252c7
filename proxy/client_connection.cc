#include "proxy/client_connection.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proxy/http_forward.h"
#include "proxy/http_head.h"
#include "proxy/local_addresses.h"
#include "proxy/proxy_auth.h"
#include "proxy/proxy_server.h"
#include "proxy/refusal_reply.h"
#include "proxy/socks4.h"
#include "proxy/socks5.h"
#include "table/policy.h"

namespace boxproxy {
namespace {

// Client bytes kept while the decision and the dial are under way (data sent after the head, to
// go upstream first). Past this, the client's reads pause until the tunnel is up.
constexpr std::size_t kMaxEarlyBytes = 16 * 1024;

// The largest response head an origin may send. An origin is not the adversary the client is, but
// a head without end must not grow without bound either.
constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

constexpr std::uint8_t kSocks5Version = 5;
constexpr std::uint8_t kMethodNoAuth = 0;
constexpr std::uint8_t kMethodUserPass = 2;

// Appends `bytes` without letting the buffer's capacity grow past `limit` (or what it must hold):
// std::string doubles its capacity, which would let a head just over half the limit hold twice
// the memory the man page promises for a handshaking client.
void append_bounded(std::string& to, std::string_view bytes, std::size_t limit) {
  const std::size_t need = to.size() + bytes.size();
  if (need > to.capacity()) to.reserve(std::max(need, std::min(2 * to.capacity(), limit)));
  to.append(bytes);
}

// True when the peer of a Unix socket has closed its end entirely (not just shut down its writing):
// the kernel then reports POLLHUP. A client that only half-closed still reads our reply.
bool peer_fully_closed(int fd) noexcept {
  pollfd p{fd, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

sockaddr_storage to_sockaddr(const IpAddress& address, std::uint16_t port, socklen_t& length) {
  sockaddr_storage storage{};
  if (address.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, address.bytes.data(), 4);
    length = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, address.bytes.data(), 16);
    if (!address.zone.empty()) sin6->sin6_scope_id = if_nametoindex(address.zone.c_str());
    length = sizeof(sockaddr_in6);
  }
  return storage;
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
    : server_(server), started_(std::chrono::steady_clock::now()), last_activity_(started_) {
  client_.fd.reset(client_fd);
  ++server_.stats().clients;
  ++server_.stats().handshaking;
  counted_handshaking_ = true;
}

bool ClientConnection::init_events() {
  event_base* base = server_.base();
  client_.read_event = make_event(base, client_.fd.get(), EV_READ | EV_PERSIST, &on_client_read, this);
  client_.write_event = make_event(base, client_.fd.get(), EV_WRITE | EV_PERSIST, &on_client_write, this);
  timer_ = make_event(base, -1, 0, &on_timer, this);
  if (!client_.read_event || !client_.write_event || !timer_) return false;
  update_reading(client_);
  arm_timer(server_.config().head_timeout);
  return true;
}

ClientConnection::~ClientConnection() {
  // A pending lookup keeps its token; the callback frees it and no longer reaches us.
  Resolver::cancel(lookup_);
  if (done_owed_) log_done();
  if (holds_slot_) server_.release_slot();
  if (counted_handshaking_) --server_.stats().handshaking;
  --server_.stats().clients;
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

void ClientConnection::finish(ClientConnection* connection, Next next) {
  if (next == Next::close) delete connection;
}

void ClientConnection::on_client_read(evutil_socket_t, short, void* self) {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->client_readable());
}

void ClientConnection::on_client_write(evutil_socket_t, short, void* self) {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->side_writable(c->client_));
}

void ClientConnection::on_upstream_read(evutil_socket_t, short, void* self) {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->upstream_readable());
}

void ClientConnection::on_upstream_write(evutil_socket_t, short, void* self) {
  auto* c = static_cast<ClientConnection*>(self);
  if (c->phase_ == Phase::dialling) {
    finish(c, c->dial_finished());
  } else {
    finish(c, c->side_writable(c->upstream_));
  }
}

void ClientConnection::on_timer(evutil_socket_t, short, void* self) {
  auto* c = static_cast<ClientConnection*>(self);
  finish(c, c->timer_fired());
}

void ClientConnection::on_resolved(void* self, std::vector<IpAddress> answers) {
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
  if (flush_out(side) == Next::close) return Next::close;
  if (side.has_queued()) return Next::keep;
  // The queue is empty: the side feeding it may read again.
  resume(other(side), pause_peer_full);
  switch (phase_) {
    case Phase::replying:
      return &side == &client_ ? Next::close : Next::keep;
    case Phase::relaying:
      return check_tunnel_done();
    case Phase::forwarding:
      if (&side == &client_ && exchange_ && exchange_->response_done && !exchange_->keep_alive) return Next::close;
      return Next::keep;
    default:
      return Next::keep;
  }
}

ClientConnection::Next ClientConnection::client_readable() {
  switch (phase_) {
    case Phase::relaying:
      return relay_readable(client_);
    case Phase::forwarding:
      return forward_client_readable();
    case Phase::replying:
      // Whatever a refused client still sends is read and dropped until the reply is out.
      break;
    default:
      break;
  }
  std::size_t cap = kReadChunk;
  if (phase_ == Phase::sniffing || phase_ == Phase::handshake) {
    const std::size_t limit = protocol_ == Protocol::http || protocol_ == Protocol::unknown
                                  ? server_.config().max_head_bytes
                                  : socks5_max_handshake_bytes - std::min(handshake_consumed_, socks5_max_handshake_bytes);
    cap = limit + 1 > inbox_.size() ? limit + 1 - inbox_.size() : 1;
  } else if (phase_ == Phase::resolving || phase_ == Phase::dialling) {
    cap = kMaxEarlyBytes > inbox_.size() ? kMaxEarlyBytes - inbox_.size() : 0;
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
    if (phase_ == Phase::resolving || phase_ == Phase::dialling) {
      // The client has left, or only shut down its writing (it may still read the reply).
      if (peer_fully_closed(client_.fd.get())) return Next::close;  // gives the slot back at once
      client_.read_eof = true;
      update_reading(client_);
      return Next::keep;
    }
    return Next::close;
  }
  if (phase_ == Phase::replying) return Next::keep;
  append_bounded(inbox_, {buffer, static_cast<std::size_t>(n)}, inbox_.size() + cap);
  if (phase_ == Phase::handshake && protocol_ == Protocol::http && inbox_.size() <= server_.config().max_head_bytes &&
      std::memchr(buffer, '\n', static_cast<std::size_t>(n)) == nullptr) {
    // The head parser reads the whole head again on each call; a client trickling a head a byte
    // at a time would make that quadratic. Without a new line ending, no answer can change but
    // an early refusal, which then comes with the next line instead (the parser's answer does not
    // depend on how the bytes were split).
    return Next::keep;
  }
  if (phase_ == Phase::sniffing || phase_ == Phase::handshake) return advance_handshake();
  return Next::keep;
}

ClientConnection::Next ClientConnection::upstream_readable() {
  if (phase_ == Phase::relaying) return relay_readable(upstream_);
  if (phase_ == Phase::forwarding) return forward_upstream_readable();
  return Next::keep;
}

ClientConnection::Next ClientConnection::timer_fired() {
  switch (phase_) {
    case Phase::sniffing:
    case Phase::handshake:
    case Phase::replying:
      return Next::close;  // too slow: no reply is owed to a client that never finished asking
    case Phase::resolving:
      Resolver::cancel(lookup_);
      lookup_ = nullptr;
      return refuse(Reason::name_not_resolved);
    case Phase::dialling:
      return refuse(Reason::dial_timed_out, ip_text_);
    case Phase::relaying:
    case Phase::forwarding: {
      const double idle = server_.config().idle_timeout;
      const auto quiet = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_activity_).count();
      if (quiet >= idle) return Next::close;
      arm_timer(idle - quiet);
      return Next::keep;
    }
  }
  return Next::close;
}

// ---------------------------------------------------------------------------------------------
// Handshakes: the first byte picks the protocol; the bytes already read go to its parser.

void ClientConnection::leave_handshake() noexcept {
  if (counted_handshaking_) {
    counted_handshaking_ = false;
    --server_.stats().handshaking;
  }
}

ClientConnection::Next ClientConnection::advance_handshake() {
  if (protocol_ == Protocol::unknown) {
    if (inbox_.empty()) return Next::keep;
    const auto first = static_cast<std::uint8_t>(inbox_[0]);
    protocol_ = first == 0x05 ? Protocol::socks5 : first == 0x04 ? Protocol::socks4 : Protocol::http;
    kind_ = protocol_ == Protocol::socks5 ? ClientKind::socks
            : protocol_ == Protocol::socks4 ? ClientKind::socks4
                                             : ClientKind::connect;
    phase_ = Phase::handshake;
  }
  switch (protocol_) {
    case Protocol::socks5: return advance_socks5();
    case Protocol::socks4: return advance_socks4();
    default: return advance_http_head();
  }
}

// True when the first line of `head` is exactly "CONNECT <target> HTTP/1.0|1.1" and CRLF, with
// single spaces and a target of visible ASCII; false when it is not (or not there yet).
bool ClientConnection::is_connect_line(std::string_view head) noexcept {
  const std::size_t end = head.find("\r\n");
  if (end == std::string_view::npos) return false;
  std::string_view line = head.substr(0, end);
  if (!line.starts_with("CONNECT ")) return false;
  line.remove_prefix(8);
  const std::size_t space = line.find(' ');
  if (space == 0 || space == std::string_view::npos) return false;
  for (char c : line.substr(0, space)) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  const std::string_view version = line.substr(space + 1);
  return version == "HTTP/1.1" || version == "HTTP/1.0";
}

bool ClientConnection::authorized_http(const RequestHead& head) const {
  const auto& token = server_.config().auth_token;
  return !token || http_proxy_authorized(head, *token);
}

ClientConnection::Next ClientConnection::advance_http_head() {
  const std::size_t max_head = server_.config().max_head_bytes;
  auto parsed = parse_request_head(inbox_, max_head);
  kind_ = inbox_.starts_with("CONNECT ") ? ClientKind::connect : ClientKind::http;
  if (parsed.status == ParseResult<RequestHead>::Status::need_more) {
    if (inbox_.size() > max_head) return refuse(Reason::head_too_large);
    return Next::keep;
  }
  if (parsed.status == ParseResult<RequestHead>::Status::refused) {
    Reason reason = parsed.refusal.value_or(Reason::bad_request);
    // SPEC §7: anything but "CONNECT <authority> HTTP/1.x" in a CONNECT line is invalid target.
    if (kind_ == ClientKind::connect && reason == Reason::bad_request && !is_connect_line(inbox_)) {
      reason = Reason::invalid_target;
    }
    return refuse(reason);
  }
  const RequestHead& head = *parsed.value;
  // The token is checked before anything in the request is judged or logged (SPEC §11).
  if (!authorized_http(head)) return refuse_unauthenticated();
  if (head.method == "CONNECT") {
    kind_ = ClientKind::connect;
    TargetResult target = parse_authority(head.target);
    // For the log line when the target is refused: the host and port as far as they split.
    const std::size_t colon = head.target.rfind(':');
    target_.host.assign(head.target.substr(0, colon));
    if (colon != std::string_view::npos) target_.port = parse_port(head.target.substr(colon + 1)).value_or(0);
    inbox_.erase(0, parsed.consumed);  // what is left is early data, to go upstream first
    return decide(std::move(target));
  }
  kind_ = ClientKind::http;
  auto forward = prepare_forward_request(head);
  if (auto* reason = std::get_if<Reason>(&forward)) return refuse(*reason);
  auto& request = std::get<ForwardRequest>(forward);
  exchange_.emplace();
  exchange_->method.assign(head.method);
  exchange_->request_body = request.framing;
  exchange_->client_keep_alive = client_wants_keep_alive(head);
  upstream_prefix_ = std::move(request.upstream_head);
  inbox_.erase(0, parsed.consumed);  // what is left is body (and perhaps the next request)
  if (request.framing.kind == BodyFraming::Kind::chunked) {
    // Chunk bytes that came with the head are checked now, so a malformed body that is already
    // here is refused before any upstream socket opens.
    ChunkedScanner lookahead;
    if (lookahead.feed(inbox_).malformed) return refuse(Reason::bad_framing);
  }
  return decide(std::move(request.target));
}

// More than 1024 bytes of handshake without a complete message: the connection closes (SPEC §9).
// Only bytes of the handshake count: data pipelined after a complete request is early data.
ClientConnection::Next ClientConnection::socks5_wait_for_more() const {
  return handshake_consumed_ + inbox_.size() >= socks5_max_handshake_bytes ? Next::close : Next::keep;
}

ClientConnection::Next ClientConnection::advance_socks5() {
  const auto& token = server_.config().auth_token;
  for (;;) {
    switch (socks5_step_) {
      case Socks5Step::greeting: {
        auto r = parse_socks5_greeting(inbox_);
        if (r.status == ParseResult<Socks5Greeting>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Greeting>::Status::refused) return Next::close;
        handshake_consumed_ += r.consumed;
        inbox_.erase(0, r.consumed);
        const std::uint8_t method = token ? kMethodUserPass : kMethodNoAuth;
        const bool offered = token ? r.value->offers_user_pass : r.value->offers_no_auth;
        if (!offered) {
          // 05 FF: no acceptable method. With a token this is a client that did not prove it.
          if (token) {
            server_.count_refusal(Reason::auth_required);
            server_.log().decision({kind_, std::nullopt, 0, "-", Reason::auth_required});
          }
          phase_ = Phase::replying;
          leave_handshake();
          const char reply[2] = {static_cast<char>(kSocks5Version), static_cast<char>(0xFF)};
          if (queue(client_, {reply, 2}) == Next::close) return Next::close;
          return client_.out.empty() ? Next::close : Next::keep;
        }
        const char reply[2] = {static_cast<char>(kSocks5Version), static_cast<char>(method)};
        if (queue(client_, {reply, 2}) == Next::close) return Next::close;
        socks5_step_ = token ? Socks5Step::credentials : Socks5Step::request;
        break;
      }
      case Socks5Step::credentials: {
        auto r = parse_socks5_credentials(inbox_);
        if (r.status == ParseResult<Socks5Credentials>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Credentials>::Status::refused) return Next::close;
        handshake_consumed_ += r.consumed;
        inbox_.erase(0, r.consumed);
        if (!token_matches(*token, r.value->password)) {
          server_.count_refusal(Reason::auth_required);
          server_.log().decision({kind_, std::nullopt, 0, "-", Reason::auth_required});
          phase_ = Phase::replying;
          leave_handshake();
          const char reply[2] = {1, 1};
          if (queue(client_, {reply, 2}) == Next::close) return Next::close;
          return client_.out.empty() ? Next::close : Next::keep;
        }
        const char reply[2] = {1, 0};
        if (queue(client_, {reply, 2}) == Next::close) return Next::close;
        socks5_step_ = Socks5Step::request;
        break;
      }
      case Socks5Step::request: {
        auto r = parse_socks5_request(inbox_);
        if (r.status == ParseResult<Socks5Request>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Request>::Status::refused) {
          return r.refusal ? refuse(*r.refusal) : Next::close;
        }
        inbox_.erase(0, r.consumed);  // what is left is early data
        target_.host = r.value->host;
        target_.port = r.value->port;
        if (r.value->command != 1) return refuse(socks5_command_refusal(r.value->command));
        return decide(socks_target(r.value->host, r.value->port));
      }
    }
  }
}

ClientConnection::Next ClientConnection::advance_socks4() {
  auto r = parse_socks4_request(inbox_);
  if (r.status == ParseResult<Socks4Request>::Status::need_more) {
    return inbox_.size() >= socks4_max_request_bytes ? Next::close : Next::keep;
  }
  if (r.status == ParseResult<Socks4Request>::Status::refused) return Next::close;
  inbox_.erase(0, r.consumed);
  // SOCKS4 cannot carry a token: with one configured, every SOCKS4 client is unauthenticated.
  if (server_.config().auth_token) return refuse_unauthenticated();
  target_.host = r.value->host;
  target_.port = r.value->port;
  if (r.value->command != 1) {
    return refuse(r.value->command == 2 ? Reason::socks_bind : Reason::socks_command);
  }
  return decide(socks_target(r.value->host, r.value->port));
}

// A SOCKS request carries its port as two bytes; zero is not a port (SPEC §5 step 1).
TargetResult ClientConnection::socks_target(const std::string& host, std::uint16_t port) {
  if (port == 0) return Reason::invalid_target;
  return parse_host(host, port);
}

// ---------------------------------------------------------------------------------------------
// The decision (SPEC §5): parse, host list, resolve, address rule, admission, dial.

ClientConnection::Next ClientConnection::decide(TargetResult parsed) {
  leave_handshake();
  if (auto* reason = std::get_if<Reason>(&parsed)) return refuse(*reason);
  return decide_parsed(std::move(std::get<Target>(parsed)));
}

ClientConnection::Next ClientConnection::decide_parsed(Target target) {
  target_ = std::move(target);
  const ProxyConfig& config = server_.config();
  // Step 2 before any lookup: a name off the list never leaves the machine, not even as a query.
  if (auto match = check_host_list(config.policy, target_)) {
    return refuse(Reason::not_listed, "-", not_listed_words(target_, *match, config.allow_hint));
  }
  if (target_.address) return answers_known({*target_.address});
  if (const auto* fixed = fixed_answers_for(config.policy, target_.host)) return answers_known(*fixed);
  phase_ = Phase::resolving;
  arm_timer(config.dns_timeout);
  std::optional<std::vector<IpAddress>> immediate;
  lookup_ = server_.resolver().start(target_.host, &on_resolved, this, immediate);
  if (immediate) return answers_known(std::move(*immediate));
  return Next::keep;
}

ClientConnection::Next ClientConnection::answers_known(std::vector<IpAddress> answers) {
  if (answers.empty()) return refuse(Reason::name_not_resolved);
  // Step 4: every answer is judged, and only judged answers are ever dialled, so a name cannot
  // point somewhere else between the check and the dial.
  const AnswersVerdict verdict = judge_answers_now(answers);
  if (verdict.refusal) {
    return refuse(*verdict.refusal, verdict.refused_address ? verdict.refused_address->to_string() : "-");
  }
  // Step 5.
  if (auto full = server_.take_slot()) return refuse(*full);
  holds_slot_ = true;
  answers_ = std::move(answers);
  next_answer_ = 0;
  phase_ = Phase::dialling;
  arm_timer(server_.config().connect_timeout);
  return dial_next();
}

// Step 4 with the host's interface addresses read fresh, but only when they can change the answer:
// this-host is the rule's last step, so an answer refused before it, or let through by --permit
// (which is final), needs no interface list. The list is cached and re-read on netlink news (LocalAddresses).
AnswersVerdict ClientConnection::judge_answers_now(const std::vector<IpAddress>& answers) {
  const Policy& policy = server_.config().policy;
  AnswersVerdict verdict = judge_answers(policy, answers, {});
  // With one answer, a refusal before this-host is the answer. With several, an earlier answer
  // could be this-host, and the first refused answer names the class: judge them all again.
  if (verdict.refusal && answers.size() == 1) return verdict;
  bool all_permitted = true;
  for (const IpAddress& answer : answers) {
    bool permitted = false;
    for (const Cidr& range : policy.rule.permit) permitted = permitted || range.contains(answer);
    all_permitted = all_permitted && permitted;
  }
  if (all_permitted && !verdict.refusal) return verdict;
  return judge_answers(policy, answers, server_.local_addresses().current());
}

ClientConnection::Next ClientConnection::dial_next() {
  while (next_answer_ < answers_.size()) {
    const IpAddress& address = answers_[next_answer_++];
    ip_text_ = address.to_string();
    release_upstream_socket();
    const int fd = ::socket(address.is_v4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) continue;
    upstream_.fd.reset(fd);
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    socklen_t length = 0;
    const sockaddr_storage peer = to_sockaddr(address, target_.port, length);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&peer), length) == -1 && errno != EINPROGRESS) continue;
    upstream_.read_event = make_event(server_.base(), fd, EV_READ | EV_PERSIST, &on_upstream_read, this);
    upstream_.write_event = make_event(server_.base(), fd, EV_WRITE | EV_PERSIST, &on_upstream_write, this);
    if (!upstream_.read_event || !upstream_.write_event) return Next::close;
    event_add(upstream_.write_event.get(), nullptr);  // writable: the connect has finished
    return Next::keep;
  }
  return refuse(Reason::dial_failed, ip_text_);
}

ClientConnection::Next ClientConnection::dial_finished() {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(upstream_.fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) == -1) error = errno;
  if (error != 0) return dial_next();
  event_del(upstream_.write_event.get());
  return allowed();
}

void ClientConnection::release_upstream_socket() noexcept { upstream_.reset(); }

void ClientConnection::release_upstream() noexcept {
  release_upstream_socket();
  if (holds_slot_) {
    holds_slot_ = false;
    server_.release_slot();
  }
}

ClientConnection::Next ClientConnection::refuse(Reason reason, std::string_view ip, std::string words) {
  if (done_owed_) log_done();  // an allowed exchange refused midway (a malformed body) ends first
  release_upstream();
  leave_handshake();
  exchange_.reset();
  server_.count_refusal(reason);
  // With --audit this line is on disk before the refusal is answered.
  server_.log().decision({kind_,
                          target_.host.empty() ? std::nullopt : std::optional<std::string_view>(target_.host),
                          target_.port, ip, reason});
  phase_ = Phase::replying;
  arm_timer(server_.config().head_timeout);  // a client that never reads its refusal is not kept
  std::string reply;
  switch (protocol_) {
    case Protocol::socks5: {
      const std::uint8_t code = info(reason).socks5_reply != 0 ? info(reason).socks5_reply : 1;
      const auto bytes = socks5_reply(code);
      reply.assign(bytes.begin(), bytes.end());
      break;
    }
    case Protocol::socks4: {
      const auto bytes = socks4_reply(false);
      reply.assign(bytes.begin(), bytes.end());
      break;
    }
    default:
      reply = http_refusal(reason, words.empty() ? refusal_words(reason) : words);
      break;
  }
  if (queue(client_, reply) == Next::close) return Next::close;
  return client_.out.empty() ? Next::close : Next::keep;
}

ClientConnection::Next ClientConnection::refuse_unauthenticated() {
  // An unauthenticated peer never puts a host name into the log or the audit.
  target_ = Target{};
  return refuse(Reason::auth_required);
}

// ---------------------------------------------------------------------------------------------
// Allowed: the reply, then a tunnel or a plain-HTTP exchange.

ClientConnection::Next ClientConnection::allowed() {
  server_.log().decision({kind_, target_.host, target_.port, ip_text_, std::nullopt});
  done_owed_ = true;  // however the tunnel or exchange ends, its done line follows
  started_ = last_activity_ = std::chrono::steady_clock::now();
  arm_timer(server_.config().idle_timeout);
  resume(client_, pause_no_more_wanted);
  if (protocol_ == Protocol::http && kind_ == ClientKind::http) {
    phase_ = Phase::forwarding;
    up_bytes_ += upstream_prefix_.size();
    if (queue(upstream_, upstream_prefix_) == Next::close) return Next::close;
    std::string().swap(upstream_prefix_);
    update_reading(upstream_);
    std::string early;
    early.swap(inbox_);
    return pass_request_body(early);
  }
  switch (protocol_) {
    case Protocol::socks5: {
      const auto reply = socks5_reply(0);
      if (queue(client_, {reinterpret_cast<const char*>(reply.data()), reply.size()}) == Next::close) return Next::close;
      break;
    }
    case Protocol::socks4: {
      const auto reply = socks4_reply(true);
      if (queue(client_, {reinterpret_cast<const char*>(reply.data()), reply.size()}) == Next::close) return Next::close;
      break;
    }
    default:
      if (queue(client_, http_connect_established()) == Next::close) return Next::close;
      break;
  }
  phase_ = Phase::relaying;
  // Bytes the client sent after its head or request go upstream first.
  up_bytes_ += inbox_.size();
  if (queue(upstream_, inbox_) == Next::close) return Next::close;
  std::string().swap(inbox_);
  if (upstream_.has_queued()) pause(client_, pause_peer_full);
  if (client_.read_eof) {
    // The client half-closed while we dialled: pass its FIN on once its early data is written.
    upstream_.shut_after_out = true;
    if (flush_out(upstream_) == Next::close) return Next::close;
  }
  update_reading(client_);
  update_reading(upstream_);
  return check_tunnel_done();
}

ClientConnection::Next ClientConnection::relay_readable(Side& from) {
  const RelayStep step = relay_once(from, other(from));
  if (step.failed) return Next::close;
  if (step.moved > 0) {
    last_activity_ = std::chrono::steady_clock::now();
    (&from == &client_ ? up_bytes_ : down_bytes_) += step.moved;
  }
  return step.eof ? check_tunnel_done() : Next::keep;
}

ClientConnection::Next ClientConnection::check_tunnel_done() {
  if (phase_ != Phase::relaying) return Next::keep;
  return relay_finished(client_, upstream_) ? Next::close : Next::keep;
}

void ClientConnection::log_done() {
  done_owed_ = false;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  server_.stats().up += up_bytes_;
  server_.stats().down += down_bytes_;
  server_.log().done({kind_, target_.host, target_.port, ip_text_, up_bytes_, down_bytes_,
                      static_cast<std::uint64_t>(ms.count())});
  up_bytes_ = down_bytes_ = 0;
}

// ---------------------------------------------------------------------------------------------
// Plain HTTP: the request body goes up exactly as framed; the response comes back exactly as
// framed; nothing after either end is taken for part of it.

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
  std::size_t take = 0;
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
      exchange.request_done = step.finished;
      break;
    }
  }
  up_bytes_ += take;
  if (queue(upstream_, bytes.substr(0, take)) == Next::close) return Next::close;
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
  for (;;) {
    auto parsed = parse_response_head(exchange.response_head, kMaxResponseHeadBytes);
    if (parsed.status == ParseResult<ResponseHead>::Status::need_more) return Next::keep;
    if (parsed.status == ParseResult<ResponseHead>::Status::refused) return Next::close;
    const ResponseHead& head = *parsed.value;
    if (head.status >= 100 && head.status < 200) {
      // An interim response (100 Continue): passed on, and the final one follows.
      const std::string interim = rewrite_response_head(head, exchange.client_keep_alive);
      down_bytes_ += interim.size();
      if (queue(client_, interim) == Next::close) return Next::close;
      exchange.response_head.erase(0, parsed.consumed);
      continue;
    }
    auto framing = response_framing(exchange.method, head);
    if (std::holds_alternative<Reason>(framing)) return Next::close;
    exchange.response_body = std::get<BodyFraming>(framing);
    exchange.keep_alive = exchange.client_keep_alive && exchange.response_body.kind != BodyFraming::Kind::until_close;
    const std::string rewritten = rewrite_response_head(head, exchange.keep_alive);
    down_bytes_ += rewritten.size();
    if (queue(client_, rewritten) == Next::close) return Next::close;
    std::string rest = exchange.response_head.substr(parsed.consumed);
    std::string().swap(exchange.response_head);
    exchange.response_head_done = true;
    return pass_response(rest);
  }
}

ClientConnection::Next ClientConnection::pass_response(std::string_view bytes) {
  Exchange& exchange = *exchange_;
  std::size_t take = 0;
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
      exchange.response_done = step.finished;
      break;
    }
    case BodyFraming::Kind::until_close:
      take = bytes.size();
      break;
  }
  down_bytes_ += take;
  if (queue(client_, bytes.substr(0, take)) == Next::close) return Next::close;
  // Anything an origin sends past its response's end is dropped with the upstream connection:
  // it must never reach the client as the answer to its next request.
  if (exchange.response_done) return end_exchange();
  if (client_.has_queued()) pause(upstream_, pause_peer_full);
  return Next::keep;
}

ClientConnection::Next ClientConnection::end_exchange() {
  log_done();
  release_upstream();
  Exchange& exchange = *exchange_;
  // A client that has shut down its writing sends no next request: close once the response is out.
  if (!exchange.keep_alive || !exchange.request_done || client_.read_eof) {
    exchange.keep_alive = false;
    return client_.has_queued() ? Next::keep : Next::close;
  }
  // Keep-alive: the next request on this connection is a new decision (SPEC §8).
  exchange_.reset();
  phase_ = Phase::handshake;
  target_ = Target{};
  ip_text_ = "-";
  ++server_.stats().handshaking;
  counted_handshaking_ = true;
  arm_timer(server_.config().head_timeout);
  resume(client_, pause_no_more_wanted | pause_peer_full);
  if (inbox_.empty()) return Next::keep;
  return advance_http_head();
}

}  // namespace boxproxy
