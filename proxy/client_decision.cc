// SPDX-License-Identifier: Apache-2.0
// A client's decision (SPEC §5) and dial (proxy/client_connection.h): table/'s decision, the same
// for `boxproxy check`; only the waiting is ours (the lookup, the supervisor's ask, the admission
// and the dial), and the refusal that ends a decision.
#include "proxy/client_connection.h"

#include "proxy/inspector_link.h"

#include <utility>

#include "proxy/proxy_server.h"
#include "proxy/wire/replies.h"
#include "proxy/wire/resolve_request.h"
#include "table/policy.h"

namespace boxproxy {

ClientConnection::Next ClientConnection::decide(Target target) {
  request_.target = std::move(target);
  if (request_.kind == ClientKind::resolve) {
    request_.target.port = resolve_judged_port(server_.config().policy.allow, request_.target);
  }
  request_.asked.reset();  // each request of a keep-alive connection is a decision of its own
  // SPEC §19: a plain request is never a place for a placeholder (serve holds no value to swap,
  // and the request would go in clear text), nor is any target's name (a lookup would hand it to
  // whoever answers for that domain): refused before any lookup, wherever it goes. A plain
  // request's head holds its host too (Host).
  const std::string_view searched = request_.plain ? std::string_view(request_.plain->upstream_head)
                                                   : std::string_view(request_.target.host);
  request_.misdirected_secret = server_.placeholders().find_misdirected(searched);
  if (request_.misdirected_secret) return refuse(Reason::secret_misdirected);
  const auto asking = server_.name_asks() != nullptr ? Decision::Asking::on : Decision::Asking::off;
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
  ask_ticket_ = server_.name_asks()->ask(target.host, target.port, request_.kind, id_, this, &on_ask_verdict);
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
    std::string detail;
    if (const auto refusal = judge_inspected_plain(detail)) return refuse(*refusal, "-", {}, detail);
  }
  if (const auto pooled = admit_from_pool()) return *pooled;
  auto slot = server_.take_slot();
  if (auto* full = std::get_if<Reason>(&slot)) {
    if (*full == Reason::tunnel_cap && wait_for_eviction()) return Next::keep;
    return refuse(*full);
  }
  phase_ = Phase::dialling;
  timer_.arm(server_.config().connect_timeout);
  return after(dialer_.start(std::move(std::get<TunnelSlot>(slot)), decision_.answers(), request_.target.port));
}

// A kept origin connection is an upstream connection open under its slot (SPEC §5; proxy/
// origin_ledger.h). One kept for this decided host and port, at an address among this decision's
// checked answers, is taken over with its slot: no dial, so no new upstream connection and nothing
// of the budget spent. At the tunnel cap with one kept, the oldest is evicted and its slot taken,
// which spends the budget (this connection dials, once it asks): the inspector closes the evicted
// one before it reads this connection (the channel keeps order), so the count never passes the cap.
std::optional<ClientConnection::Next> ClientConnection::admit_from_pool() {
  InspectorLink* link = server_.inspector();
  if (request_.plain || link == nullptr || inspected_endpoint() == nullptr) return std::nullopt;
  const Target& target = request_.target;
  if (auto taken = link->take_pooled(target.host, target.port, decision_.answers())) {
    dialer_.hold(std::move(taken->slot), decision_.answers(), target.port, taken->answer);
    pooled_from_ = taken->id;
    return allowed();
  }
  ProxyStats& stats = server_.stats();
  const ProxyConfig& config = server_.config();
  if (stats.open < config.max_tunnels || decision_.answers().empty()) return std::nullopt;
  if (stats.used >= config.max_connections) return std::nullopt;  // take_slot refuses: connection budget
  auto slot = link->evict_oldest();
  if (!slot) return std::nullopt;  // nothing kept: take_slot refuses, tunnel cap
  ++stats.used;
  dialer_.hold(std::move(*slot), decision_.answers(), target.port, 0);
  return allowed();
}

bool ClientConnection::wait_for_eviction() {
  InspectorLink* link = server_.inspector();
  std::uint64_t id = 0;
  // take_slot says tunnel cap before connection budget: a spent budget is still refused.
  if (server_.stats().used >= server_.config().max_connections) return false;
  if (link == nullptr || !link->evict_for(*this, id)) return false;
  ++server_.stats().used;  // the dial that follows spends one of the budget (take_slot refused at the cap first)
  evicting_ = id;
  phase_ = Phase::dialling;
  timer_.arm(server_.config().connect_timeout);  // the wait counts in the dial's time
  return true;
}

void ClientConnection::evicted(ClientConnection* connection, TunnelSlot slot) noexcept {
  if (!connection->evicting_ || connection->phase_ != Phase::dialling) return;  // the slot is freed here
  connection->evicting_.reset();
  const Target& target = connection->request_.target;
  finish(connection, connection->after(connection->dialer_.start(std::move(slot), connection->decision_.answers(),
                                                                 target.port)));
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

ClientConnection::Next ClientConnection::refuse(Reason reason, std::string_view ip, std::string words,
                                                std::string_view detail) {
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
  const std::optional<std::string> secret = std::exchange(request_.misdirected_secret, std::nullopt);
  server_.log().decision({id_, request_.kind,
                          target.host.empty() ? std::nullopt : std::optional<std::string_view>(target.host),
                          request_.logged_port, ip, reason, asked_text(),
                          secret ? std::optional<std::string_view>(*secret) : std::nullopt},
                         AuditSync::with_turn);
  phase_ = Phase::replying;
  timer_.arm(server_.config().head_timeout);  // a client that never reads its refusal is not kept
  return send_refusal(refusal_reply_for(request_.protocol, reason, words, detail));
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

}  // namespace boxproxy
