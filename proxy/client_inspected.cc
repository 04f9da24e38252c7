// SPDX-License-Identifier: Apache-2.0
// Request inspection (SPEC §18): a tunnel to an inspected endpoint is answered as allowed, then its
// client and upstream sockets go to the inspector (proxy/inspect/DESIGN.md), which takes the TLS
// handshake and judges each request. This connection keeps the slot, and writes the lines the
// inspector reports, until it says the connection ended.
// Plain HTTP to an inspected endpoint's port is judged here too, by the same rules.
#include "proxy/client_connection.h"

#include "proxy/inspector_link.h"
#include "proxy/stages/refusal_detail.h"
#include "proxy/stages/scope_judgement.h"
#include "proxy/proxy_server.h"
#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/replies.h"
#include "table/policy.h"

namespace boxproxy {

// Plain HTTP to an inspected endpoint's port (SPEC §18): its rules judge the request before any
// upstream socket opens, as they would inside TLS. (A tunnel to one is judged request by request
// by the inspector.) A refusal's request line is written here; an allowed request's when it ends.
std::optional<Reason> ClientConnection::judge_inspected_plain(std::string& detail) {
  const Target& target = request_.target;
  if (!target.is_name()) return std::nullopt;
  const InspectEndpoint* endpoint = server_.config().policy.inspect.find(target.host, target.port);
  if (endpoint == nullptr) return std::nullopt;
  const std::string& upstream_head = request_.plain->upstream_head;
  // serve's own rewrite of the request (SPEC §8): it parses, or the request is refused as one the
  // stages cannot read, never let through unjudged.
  const auto parsed = parse_request_head(upstream_head, upstream_head.size());
  std::optional<Reason> refusal;
  ClientRequest::Inspected inspected{"-", false, std::nullopt, {}};
  if (parsed.status != ParseResult<RequestHead>::Status::complete) {
    refusal = Reason::bad_request;
  } else {
    // The plain scope's stages (proxy/stages/request_pipeline.cc): serve holds no secret, so an
    // endpoint that injects refuses every plain request as `secret missing`, in both modes: a
    // credential must never cross the network in clear text, and a request is never sent without it.
    const DecidedOrigin origin{target, 80};
    const ScopeJudgement judged = judge_in_scope(StageScope::plain, *parsed.value, *endpoint, origin);
    inspected.rule = judged.rule;
    inspected.report = judged.report;  // report mode: logged as denied (report=1), and let through
    if (judged.asked) inspected.asked = boxproxy::asked_text(*judged.asked);  // plain HTTP is never held: asked=none
    refusal = judged.refusal;
    if (refusal) detail = refusal_detail(*endpoint, parsed.value->method, parsed.value->target, *refusal);
  }
  const std::string_view asked = origin_target_of(upstream_head);
  if (server_.config().log_paths) inspected.path = std::string(asked.substr(0, asked.find('?')));
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
  // A report-mode denial keeps its class (SPEC §18: request denied, report=1) and is counted apart
  // from refusals: it was let through.
  if (inspected.report && !refusal) refusal = Reason::request_denied;
  RequestEntry line{id_, request_.target.host, request_.target.port, method,
                    inspected.rule, refusal, status, traffic.up, traffic.down, traffic.ms, inspected.report,
                    std::nullopt};
  if (inspected.report) ++server_.stats().reported;
  if (inspected.path) line.path = *inspected.path;
  line.asked = inspected.asked;
  server_.log().request(line);
}

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
  InspectorConnection what{id_, target.host, target.port, entry_text(endpoint->host)};
  what.pooled = pooled_from_;  // a kept origin connection, taken over: the client's socket goes alone
  // The sockets go with their events freed; the link closes serve's copies once the loop has
  // taken them out of epoll (proxy/loop_pass_closer.h).
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
  // Every value was checked and typed as the line was read (parse_inspector_report): a class serve
  // does not know never reaches here, it ended the inspector.
  RequestEntry entry{connection->id_, target.host, target.port, line.method, line.rule, line.refusal, line.status,
                     line.up, line.down, line.ms, line.report, std::nullopt};
  // A path only with --log-paths (SPEC §18: never a path otherwise, report mode included).
  if (line.path && connection->server_.config().log_paths) entry.path = *line.path;
  if (line.secret) entry.secret = *line.secret;
  entry.swap = line.swap.text();
  entry.inject = line.inject.text();
  entry.sign = line.sign;
  if (line.asked) entry.asked = boxproxy::asked_text(*line.asked);
  entry.scrub = line.scrub.text();
  // A report-mode denial was let through: counted apart ("reported"), never as a refusal.
  if (line.report) {
    ++connection->server_.stats().reported;
  } else if (entry.refusal) {
    connection->server_.count_refusal(*entry.refusal);
  }
  connection->server_.log().request(entry);
}

void ClientConnection::inspected_dial(ClientConnection* connection) noexcept {
  UniqueFd upstream = connection->dialer_.connect_again();
  if (InspectorLink* link = connection->server_.inspector()) link->dialled(connection->id_, upstream.get());
}

// SPEC §20: a request of this connection waits for the supervisor; its answer goes back to the
// inspector, which still holds the connection (it is answered only while the link is up).
void ClientConnection::inspected_ask(ClientConnection* connection, const InspectorAsk& ask) noexcept {
  try {
    if (!connection->request_asks_) {
      ProxyServer& server = connection->server_;
      const ConnectionId id = connection->id_;
      connection->request_asks_ = std::make_unique<RequestAsks>(
          server.asks(), connection->request_.target.host, connection->request_.target.port,
          [&server, id](std::uint64_t n, RequestAsked asked) {
            if (InspectorLink* link = server.inspector()) link->answer(InspectorAnswer{id, n, asked});
          });
    }
    connection->request_asks_->ask(ask);
  } catch (const std::bad_alloc&) {
    // Unanswered: the request waits until the box or the inspector's own bounds end it.
  }
}

void ClientConnection::inspected_ended(ClientConnection* connection, const InspectorEnded& ended) noexcept {
  connection->log_inspected_end(ended);
  // Its origin connection, kept by the inspector, is still open: the slot stays taken, filed for
  // the next connection to the same host, port and address (proxy/origin_ledger.h).
  InspectorLink* link = connection->server_.inspector();
  if (ended.pooled && link != nullptr) {
    const Target& target = connection->request_.target;
    link->keep_pooled(connection->id_, target.host, target.port, connection->dialer_.address(),
                      connection->dialer_.give_slot());
  }
  delete connection;
}

// The connection's own last line: the refusal that closed it (not tls, sni mismatch, upstream tls)
// in place of the done line, as close_mismatch writes one; else the done line with the inspector's
// counts.
void ClientConnection::log_inspected_end(const InspectorEnded& ended) {
  const Target& target = request_.target;
  if (ended.refusal) {
    server_.count_refusal(*ended.refusal);
    DecisionEntry line{id_, request_.kind, target.host, target.port, dialer_.address_text(), *ended.refusal};
    line.tls = ended.tls;  // why the origin's handshake failed (upstream tls)
    server_.log().decision(line);
    return;
  }
  server_.stats().up += ended.up;
  server_.stats().down += ended.down;
  const auto ms = static_cast<std::uint64_t>(Clock::seconds_since(handed_over_at_) * 1000);
  server_.log().done({id_, request_.kind, target.host, target.port, dialer_.address_text(), ended.up, ended.down, ms,
                      ended.end, ended.tls});
}

}  // namespace boxproxy
