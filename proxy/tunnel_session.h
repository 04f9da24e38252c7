// SPDX-License-Identifier: Apache-2.0
// A tunnel (SPEC §7, §9, §10): a CONNECT or SOCKS request allowed. The reply goes to the client,
// then bytes both ways until both sides have closed (proxy/tunnel.h), with the SNI and Host checks
// (proxy/wire/first_bytes_gate.h, SPEC §16) as a gate on the client's first bytes when they apply.
//
// While the gate waits, the tunnel already runs the other way: a server that speaks first (SMTP,
// SSH on a listed port) is heard, and the client, which answers it, is then read. The idle timer
// is the tunnel's: held bytes are not activity, so a client that never completes its ClientHello
// or request head (however slowly it dribbles it) is closed like a silent one, and it never holds
// more than the gate's bound.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "proxy/clock.h"
#include "proxy/wire/first_bytes_gate.h"
#include "proxy/session.h"
#include "proxy/tunnel.h"

namespace boxproxy {

class TunnelSession final : public Session {
 public:
  TunnelSession(Endpoint& client, Endpoint& upstream) noexcept : Session(client, upstream), tunnel_(client, upstream) {}

  // `reply` (the answer to the request) goes to the client first, and is not counted as the
  // tunnel's; `early` (client bytes read with the request) goes upstream first, and a client that
  // already half-closed has its FIN passed on after them. `gate`: the SNI and Host checks, when
  // they apply (null otherwise); `early` is then the gate's to judge first.
  [[nodiscard]] SessionNext start(std::string_view reply, std::string early, std::unique_ptr<FirstBytesGate> gate);

  [[nodiscard]] SessionNext client_readable() override;
  [[nodiscard]] SessionNext upstream_readable() override { return after(tunnel_.readable(upstream_)); }
  [[nodiscard]] SessionNext writable(Endpoint& end) override { return after(tunnel_.writable(end)); }
  [[nodiscard]] Clock::time_point last_activity() const noexcept override {
    return tunnel_.last_activity();
  }
  void end_by(TunnelEnd cause) noexcept override { tunnel_.end_by(cause); }
  // A tunnel that never started (its reply could not be sent) ended by an error.
  [[nodiscard]] TunnelEnd end() const noexcept override { return tunnel_.end().value_or(TunnelEnd::error); }

 private:
  [[nodiscard]] static SessionNext after(Tunnel::Step step) noexcept {
    return step == Tunnel::Step::over ? SessionNext::close : SessionNext::keep;
  }
  [[nodiscard]] SessionNext gate_readable();
  [[nodiscard]] SessionNext act_on(FirstBytesGate::Verdict verdict, bool client_sent_fin);
  [[nodiscard]] SessionNext release_held_bytes(bool client_sent_fin);
  [[nodiscard]] SessionNext forward_undecided_bytes();

  Tunnel tunnel_;
  // The SNI and Host checks while they wait (the held bytes are the gate's); null otherwise, so a
  // tunnel that is not checked, or no longer, carries nothing of them.
  std::unique_ptr<FirstBytesGate> gate_;
};

}  // namespace boxproxy
