// SPDX-License-Identifier: Apache-2.0
// A plain-HTTP exchange as a session (proxy/plain_http_session.h).
#include "proxy/plain_http_session.h"

namespace boxproxy {

SessionNext PlainHttpSession::start(std::string_view upstream_head, std::string_view early) {
  if (!send_or_queue(upstream_, upstream_head)) return SessionNext::close;
  update_reading(upstream_);
  return after(exchange_.start(early));
}

SessionNext PlainHttpSession::after(HttpExchange::Step step) {
  switch (step) {
    case HttpExchange::Step::keep:
      return SessionNext::keep;
    case HttpExchange::Step::close:
      return SessionNext::close;
    case HttpExchange::Step::refuse_bad_framing:
      return SessionNext::refuse_bad_framing;
    case HttpExchange::Step::response_read:
      return SessionNext::response_read;
    case HttpExchange::Step::finished:
      return response_delivered();
  }
  return SessionNext::close;
}

SessionNext PlainHttpSession::writable(Endpoint& end) {
  if (!flush_queued(end)) return SessionNext::close;
  if (end.has_queued()) return SessionNext::keep;
  // The queue is empty: the side feeding it may read again.
  resume_reading(&end == &client_ ? upstream_ : client_, pause_peer_full);
  return &end == &client_ ? after(exchange_.client_drained()) : SessionNext::keep;
}

// The upstream is given back: nothing more is read from the client for this exchange (a body the
// origin did not wait for is not passed on; a pipelined request waits its turn). The done line and
// the next request wait until the response is all written to the client: so a client that shut
// down its writing after its request still gets every byte before the close, and the line counts
// only what it was given.
SessionNext PlainHttpSession::upstream_released() {
  pause_reading(client_, pause_no_more_wanted);
  if (client_.has_queued()) return SessionNext::keep;
  return response_delivered();
}

// The response reached the client whole: the origin's response ended the exchange (its upstream
// connection was asked for Connection: close and given back already), so the done line says
// upstream-closed, whether or not the client sends a next request (SPEC §12).
SessionNext PlainHttpSession::response_delivered() {
  end_ = TunnelEnd::upstream_closed;
  return SessionNext::exchange_done;
}

std::optional<std::string> PlainHttpSession::next_request() {
  // A client that has shut down its writing sends no next request: close, the response all out.
  if (!exchange_.keep_alive() || !exchange_.request_done() || client_.read_eof()) return std::nullopt;
  return exchange_.take_pipelined();
}

TunnelEnd PlainHttpSession::end() const noexcept {
  if (end_) return *end_;
  // Ended by one of the exchange's own steps: a side that sent FIN ended it (the client first,
  // as for a tunnel: a client that shut down its writing after its request closed first);
  // otherwise a read or write failed.
  if (client_.read_eof()) return TunnelEnd::client_closed;
  if (upstream_.read_eof()) return TunnelEnd::upstream_closed;
  return TunnelEnd::error;
}

}  // namespace boxproxy
