// ClientConnection, part 3: the decision of SPEC §5 (table/decision.h) fed with DNS answers and
// the host's addresses, admission, the dial, and every refusal's answer.
#include "proxy/client_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "proxy/local_addresses.h"
#include "proxy/proxy_server.h"
#include "proxy/refusal_reply.h"
#include "table/policy.h"

namespace boxproxy {

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
  if (kind_ == ClientKind::resolve) widen_resolve_port();
  asked_.reset();  // each request of a keep-alive connection is a decision of its own
  const auto asking = server_.asks() != nullptr ? Decision::Asking::on : Decision::Asking::off;
  return follow(decision_.start(server_.config().policy, target_, asking));
}

// asked= for this decision's line (SPEC §15), once: the next request of a keep-alive connection
// starts without one.
std::optional<std::string_view> ClientConnection::asked_text() noexcept {
  if (!asked_) return std::nullopt;
  return asked_name(*std::exchange(asked_, std::nullopt));
}

// The supervisor's verdict on this client's ask (or the ask's timeout, or no control client left).
ClientConnection::Next ClientConnection::ask_verdict(AskVerdict verdict) {
  ask_ticket_ = {};  // the registry has let go of it already
  asked_ = verdict;
  return follow(decision_.asked(approves(verdict), target_));
}

// The lookup's answers (empty: no answer, or a failed lookup).
ClientConnection::Next ClientConnection::answers_known(std::vector<IpAddress> answers) {
  return follow(decision_.answers_found(std::move(answers)));
}

// Gets the decision what it asks for, until it has decided. The decision itself is table/'s,
// the same for `boxproxy check`: only the waiting is the connection's.
ClientConnection::Next ClientConnection::follow(Decision::Step step) {
  switch (step) {
    case Decision::Step::need_lookup: {
      phase_ = Phase::resolving;
      arm_timer(server_.config().dns_timeout);
      std::optional<std::vector<IpAddress>> immediate;
      lookup_ = server_.resolver().start(target_.host, &on_resolved, this, immediate);
      if (immediate) return answers_known(std::move(*immediate));
      // Neither answered nor asked: --max-lookups is spent (SPEC §14). Refused by name before any
      // query leaves, so a box that floods names gets no more of them out to the resolver.
      if (lookup_ == nullptr) return refuse(Reason::lookup_budget);
      return Next::keep;
    }
    case Decision::Step::need_local_addresses:
      // Read fresh for each decision, as the spec says, but cached until netlink reports a
      // change (LocalAddresses); asked for only when they can change the answer.
      return follow(decision_.local_addresses_read(server_.local_addresses().current()));
    case Decision::Step::refuse: {
      const Reason reason = decision_.reason();
      if (reason == Reason::not_listed) {
        return refuse(reason, "-", not_listed_words(target_, decision_.not_listed_match(), server_.config().allow_hint));
      }
      const IpAddress* refused = decision_.refused_address();
      return refuse(reason, refused != nullptr ? refused->to_string() : "-");
    }
    case Decision::Step::ask:
      // A RESOLVE is never asked about: it has no port and opens no connection (client_resolve.cc).
      if (kind_ == ClientKind::resolve) return resolve_by_name();
      // A name off the list, with --ask: the supervisor is asked, and this client waits (still
      // counted among the undecided, so waiting clients are bounded like every other pending one)
      // for the verdict or the ask's own timeout (--ask-timeout), not its own timer.
      phase_ = Phase::asking;
      arm_timer(0);
      ask_ticket_ = server_.asks()->ask(target_.host, target_.port, kind_, id_, this, &on_ask_verdict);
      // Nobody to ask (no control client open): not-listed at once, and no asked= on the line.
      if (!ask_ticket_.held()) return follow(decision_.asked(false, target_));
      return Next::keep;
    case Decision::Step::dial:
      return kind_ == ClientKind::resolve ? resolved() : admit_and_dial();
  }
  return Next::close;
}

// Step 5, then step 6: the decision's answers, all checked, in order.
ClientConnection::Next ClientConnection::admit_and_dial() {
  auto slot = server_.take_slot();
  if (auto* full = std::get_if<Reason>(&slot)) return refuse(*full);
  slot_ = std::move(std::get<TunnelSlot>(slot));
  next_answer_ = 0;
  phase_ = Phase::dialling;
  arm_timer(server_.config().connect_timeout);
  return dial_next();
}

ClientConnection::Next ClientConnection::dial_next() {
  const std::span<const IpAddress> answers = decision_.answers();
  while (next_answer_ < answers.size()) {
    const IpAddress& address = answers[next_answer_++];
    ip_text_ = address.to_string();
    release_upstream_socket();
    const int fd = ::socket(address.is_v4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) continue;
    upstream_.fd.reset(fd);
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A zone ("fe80::1%eth0") picks the interface; one that names none gives 0, and the kernel
    // refuses a link-local dial without it. Looked up over netlink, which the confinement allows
    // (interface_index says why not if_nametoindex).
    const std::uint32_t scope_id = address.zone.empty() ? 0 : interface_index(address.zone);
    const SocketAddress peer = address.to_sockaddr(target_.port, scope_id);
    if (::connect(fd, peer.get(), peer.length) == -1 && errno != EINPROGRESS) continue;
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
  slot_.release();
}

ClientConnection::Next ClientConnection::refuse(Reason reason, std::string_view ip, std::string words) {
  if (done_owed_) {
    // An allowed exchange refused midway (a malformed body) ends first, as an error.
    if (!exchange_end_) exchange_end_ = TunnelEnd::error;
    log_done();
  }
  release_upstream();
  undecided_.release();
  exchange_.reset();
  server_.count_refusal(reason);
  // With --audit this line is on disk before the refusal is answered: one fdatasync for every
  // refusal of this loop iteration (group commit), so the answer waits for it (below).
  server_.log().decision({id_,
                          kind_,
                          target_.host.empty() ? std::nullopt : std::optional<std::string_view>(target_.host),
                          target_.port, ip, reason, asked_text()},
                         AuditSync::with_turn);
  phase_ = Phase::replying;
  arm_timer(server_.config().head_timeout);  // a client that never reads its refusal is not kept
  std::string reply = refusal_reply_for(protocol_, reason, words);
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

}  // namespace boxproxy
