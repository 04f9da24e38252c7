// ClientConnection, part 4: plain HTTP (SPEC §8). The exchange itself (proxy/http_exchange.h)
// moves the bodies; the connection gives the upstream back when the response is read, logs the
// done line once it is written, and then reads the next request or closes.
#include "proxy/client_connection.h"

#include "proxy/proxy_server.h"

namespace boxproxy {

ClientConnection::Next ClientConnection::after(HttpExchange::Step step) {
  switch (step) {
    case HttpExchange::Step::keep:
      return Next::keep;
    case HttpExchange::Step::close:
      return Next::close;
    case HttpExchange::Step::refuse_bad_framing:
      return refuse(Reason::bad_framing);
    case HttpExchange::Step::response_read:
      return end_exchange();
    case HttpExchange::Step::finished:
      return finish_exchange();
  }
  return Next::close;
}

ClientConnection::Next ClientConnection::end_exchange() {
  // The response is all read: the upstream connection and its slot are given back at once.
  release_upstream();
  // Nothing more is read from the client for this exchange (a body the origin did not wait for
  // is not passed on; a pipelined request waits its turn).
  pause(client_, pause_no_more_wanted);
  // The done line and the next request wait until the response is all written to the client
  // (side_writable calls finish_exchange then): so a client that shut down its writing after its
  // request still gets every byte before the close, and the line counts only what it was given.
  if (client_.has_queued()) return Next::keep;
  return finish_exchange();
}

ClientConnection::Next ClientConnection::finish_exchange() {
  // The response reached the client whole: the origin's response ended the exchange (its
  // upstream connection was asked for Connection: close and given back already), so the done
  // line says upstream-closed, whether or not the client sends a next request (SPEC §12).
  exchange_end_ = TunnelEnd::upstream_closed;
  log_done();
  // A client that has shut down its writing sends no next request: close, the response all out.
  if (!exchange_->keep_alive() || !exchange_->request_done() || client_.read_eof) return Next::close;
  // Keep-alive: the next request on this connection is a new decision (SPEC §8).
  const std::string pipelined = exchange_->take_pipelined();
  exchange_.reset();
  phase_ = Phase::handshake;
  target_ = Target{};
  ip_text_.assign(1, '-');  // (not = "-": GCC 12 warns falsely there, bug 105329)
  undecided_ = server_.mark_undecided();
  arm_timer(server_.config().head_timeout);
  resume(client_, pause_no_more_wanted | pause_peer_full);
  handshake_ = new_handshake();
  if (!handshake_) return Next::close;
  return handshake_answered(handshake_->next_http_request(pipelined));
}

}  // namespace boxproxy
