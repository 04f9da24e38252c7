// SPDX-License-Identifier: Apache-2.0
#include "proxy/tunnel.h"

namespace boxproxy {

Tunnel::Step Tunnel::start(std::string_view early) {
  last_activity_ = Clock::now();
  resume_reading(client_, pause_no_more_wanted);
  resume_reading(upstream_, pause_no_more_wanted);
  // Bytes the client sent after its head or request go upstream first; until they are written,
  // the client's reads wait (one read's worth at most is ever held for a direction).
  if (!send_or_queue(upstream_, early)) return fail();
  if (upstream_.has_queued()) pause_reading(client_, pause_peer_full);
  if (client_.read_eof()) {
    // The client half-closed while it waited (the dial): its FIN follows its early data.
    note_fin(client_);
    upstream_.shut_after_queue();
    if (!flush_queued(upstream_)) return fail();
  }
  update_reading(client_);
  update_reading(upstream_);
  return check_done();
}

Tunnel::Step Tunnel::readable(Endpoint& from) {
  const RelayStep step = relay_once(from, other(from));
  if (step.failed) return fail();  // an error on either side ends both
  if (step.moved > 0) last_activity_ = Clock::now();
  if (!step.eof) return Step::keep;
  note_fin(from);
  return check_done();
}

Tunnel::Step Tunnel::client_sent(std::string_view bytes) {
  if (bytes.empty()) return Step::keep;
  last_activity_ = Clock::now();
  if (!send_or_queue(upstream_, bytes)) return fail();
  if (upstream_.has_queued()) pause_reading(client_, pause_peer_full);
  return Step::keep;
}

Tunnel::Step Tunnel::writable(Endpoint& end) {
  if (!flush_queued(end)) return fail();
  if (end.has_queued()) return Step::keep;
  // The queue is empty: the side feeding it may read again.
  resume_reading(other(end), pause_peer_full);
  return check_done();
}

void Tunnel::end_by(TunnelEnd cause) noexcept {
  if (!ended_by_) ended_by_ = cause;
}

std::optional<TunnelEnd> Tunnel::end() const noexcept { return ended_by_ ? ended_by_ : first_fin_; }

Tunnel::Step Tunnel::fail() noexcept {
  end_by(TunnelEnd::error);
  return Step::over;
}

Tunnel::Step Tunnel::check_done() noexcept {
  // Over once both sides sent FIN and both were sent FIN (after everything queued for them).
  return relay_finished(client_, upstream_) ? Step::over : Step::keep;
}

void Tunnel::note_fin(const Endpoint& from) noexcept {
  if (!first_fin_) first_fin_ = &from == &client_ ? TunnelEnd::client_closed : TunnelEnd::upstream_closed;
}

}  // namespace boxproxy
