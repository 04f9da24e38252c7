// ClientConnection, part 3: the decision of SPEC §5 (host list, resolve, address rule,
// admission), the dial, and every refusal's answer.
#include "proxy/client_connection.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "proxy/proxy_server.h"
#include "proxy/refusal_reply.h"
#include "table/policy.h"

namespace boxproxy {
namespace {

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

ClientConnection::Next ClientConnection::decide(TargetResult parsed) {
  // The client stays counted among the undecided until it is allowed or refused: waiting on DNS
  // or on a dial, it still holds a descriptor and its buffers, for as long as the box makes it
  // wait (kMaxHandshakingClients).
  if (auto* reason = std::get_if<Reason>(&parsed)) return refuse(*reason);
  give_back_head_buffers();
  return decide_parsed(std::move(std::get<Target>(parsed)));
}

// The head has been parsed: the buffer it was read into (up to --max-head-bytes) is given back,
// and only what must be kept stays, at its size: early data, and for plain HTTP the head
// rewritten for the origin. Without this, thousands of clients waiting on a silent DNS server
// would each hold a head's worth of memory they no longer need.
void ClientConnection::give_back_head_buffers() {
  if (inbox_.capacity() > inbox_.size()) std::string(inbox_).swap(inbox_);
  if (upstream_prefix_.capacity() > upstream_prefix_.size()) std::string(upstream_prefix_).swap(upstream_prefix_);
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
  // With --audit this line is on disk before the refusal is answered: one fdatasync for every
  // refusal of this loop iteration (group commit), so the answer waits for it (below).
  server_.log().decision({kind_,
                          target_.host.empty() ? std::nullopt : std::optional<std::string_view>(target_.host),
                          target_.port, ip, reason},
                         AuditSync::with_turn);
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
  if (server_.log().audit_sync_owed()) {
    if (!client_.has_queued()) {
      // The answer waits for the client's write event, which only the loop's next poll can fire:
      // the log syncs the audit before that poll (DecisionLog::audit_sync_owed). Nothing holds
      // this connection, so it may die meanwhile.
      client_.out.assign(reply);
      client_.out_offset = 0;
      event_add(client_.write_event.get(), nullptr);
      return Next::keep;
    }
    server_.log().sync_audit_now();  // the write event may already be due in this iteration
  }
  if (queue(client_, reply) == Next::close) return Next::close;
  return client_.out.empty() ? Next::close : Next::keep;
}

ClientConnection::Next ClientConnection::refuse_unauthenticated() {
  // An unauthenticated peer never puts a host name into the log or the audit.
  target_ = Target{};
  return refuse(Reason::auth_required);
}

}  // namespace boxproxy
