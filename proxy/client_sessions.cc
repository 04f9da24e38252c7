// SPDX-License-Identifier: Apache-2.0
// An allowed client (proxy/client_connection.h): the decision's line, then a session has the
// sockets until it ends (a tunnel, or plain-HTTP exchanges one request at a time), and its done
// line.
#include "proxy/client_connection.h"

#include <new>
#include <utility>

#include "proxy/plain_http_session.h"
#include "proxy/proxy_server.h"
#include "proxy/tunnel_session.h"
#include "proxy/wire/replies.h"

namespace boxproxy {

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

ClientConnection::Next ClientConnection::after(SessionNext session_next) {
  switch (session_next) {
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
