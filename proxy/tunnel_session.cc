// SPDX-License-Identifier: Apache-2.0
// A tunnel and its first-bytes gate (proxy/tunnel_session.h).
#include "proxy/tunnel_session.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "proxy/transient_error.h"

namespace boxproxy {
SessionNext TunnelSession::start(std::string_view reply, std::string early, std::unique_ptr<FirstBytesGate> gate) {
  if (!send_or_queue(client_, reply)) return SessionNext::close;
  mark_start();  // the reply above is not the tunnel's
  if (!gate) return after(tunnel_.start(early));
  gate_ = std::move(gate);
  FirstBytesGate::Verdict verdict = gate_->start(std::move(early));
  // A client that already half-closed sends nothing more: what it sent is all there is.
  if (verdict == FirstBytesGate::Verdict::wait && client_.read_eof()) verdict = gate_->finish();
  if (verdict == FirstBytesGate::Verdict::wait) {
    if (tunnel_.start() == Tunnel::Step::over) return SessionNext::close;
    return forward_undecided_bytes();
  }
  if (verdict != FirstBytesGate::Verdict::pass) return act_on(verdict, false);  // before anything went up
  const Tunnel::Step step = tunnel_.start(gate_->unforwarded());
  gate_.reset();
  return after(step);
}

SessionNext TunnelSession::client_readable() {
  // The gate reads the client's first bytes itself.
  if (gate_) return gate_readable();
  return after(tunnel_.readable(client_));
}

// The client's read event while the gate waits: its bytes are read here, not by the tunnel.
SessionNext TunnelSession::gate_readable() {
  const std::size_t room = gate_->room();
  if (room == 0) return gate_->overflow_reason() == Reason::sni_mismatch ? SessionNext::sni_mismatch
                                                                        : SessionNext::host_mismatch;
  char buffer[kReadChunk];
  const ssize_t n = ::recv(client_.fd(), buffer, std::min(room, sizeof buffer), 0);
  if (n == -1) {
    if (transient_error(errno)) return SessionNext::keep;
    tunnel_.end_by(TunnelEnd::error);
    return SessionNext::close;
  }
  if (n == 0) return act_on(gate_->finish(), true);  // the client half-closed
  return act_on(gate_->feed(std::string_view(buffer, static_cast<std::size_t>(n))), false);
}

// Acts on the gate's answer; `client_sent_fin`: the client's read just ended (after the bytes).
// A mismatch closes the tunnel before any held byte a server could act on went upstream.
SessionNext TunnelSession::act_on(FirstBytesGate::Verdict verdict, bool client_sent_fin) {
  switch (verdict) {
    case FirstBytesGate::Verdict::wait:
      return forward_undecided_bytes();
    case FirstBytesGate::Verdict::pass:
      return release_held_bytes(client_sent_fin);
    case FirstBytesGate::Verdict::sni_mismatch:
      return SessionNext::sni_mismatch;
    case FirstBytesGate::Verdict::host_mismatch:
      return SessionNext::host_mismatch;
  }
  return SessionNext::close;
}

// The gate let the bytes through (or the client sent FIN first): they go upstream, and from now
// on the tunnel reads the client.
SessionNext TunnelSession::release_held_bytes(bool client_sent_fin) {
  const Tunnel::Step step = tunnel_.client_sent(gate_->unforwarded());  // queued: copied if not sent
  gate_.reset();
  if (step == Tunnel::Step::over) return SessionNext::close;
  // A socket at EOF reads 0 again: the tunnel reads the FIN itself and passes it on after them.
  if (client_sent_fin) return after(tunnel_.readable(client_));
  return SessionNext::keep;
}

SessionNext TunnelSession::forward_undecided_bytes() {
  return after(tunnel_.client_sent(gate_->take_forwardable()));
}

}  // namespace boxproxy
