// SPDX-License-Identifier: Apache-2.0
// The SNI and Host checks (SPEC §16) as a gate on a tunnel's first client bytes. Pure: no socket;
// the tunnel session reads the bytes and does what the gate answers.
//
// With a host list in force, a tunnel to a name starts with the client's bytes held, and two
// readers look at them: proxy/wire/sni.h until it knows whether they are a TLS ClientHello and what its
// server_name says; if they are not TLS, proxy/wire/tunnel_host.h until it knows whether they are an
// HTTP/1.x request and, once its head has ended, what its target and Host say. A ClientHello
// naming another host than the one decided (or one that cannot be read within its bound) is an
// `sni mismatch`; an HTTP/1.x request naming another host or port, or none, or one that cannot be
// read strictly within --max-head-bytes, is a `host mismatch`; either before a server could act
// on it (a ClientHello is held whole; of a request, at most its first line's bytes before its
// line end go up). Anything else passes, and is relayed untouched from then on.
//
// What it stops: a box allowed `good.example` dialling that name's address (a CDN, a shared host)
// and asking the server there, in the ClientHello or in a cleartext request's Host, for a site the
// list does not hold. Only the first request is read: later ones on the same connection pass.
//
// Bounds: it holds at most kMaxSniHoldBytes or --max-head-bytes of the client's bytes (room()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/wire/sni.h"
#include "proxy/wire/tunnel_host.h"
#include "table/reason.h"

namespace boxproxy {

class FirstBytesGate {
 public:
  enum class Verdict : std::uint8_t {
    wait,           // not known yet: hold the bytes, read more
    pass,           // neither TLS nor HTTP/1.x, or naming the decided host (or, for TLS, none)
    sni_mismatch,   // a ClientHello naming another host, or that cannot be read
    host_mismatch,  // an HTTP/1.x request naming another host or port, none, or unreadable
  };

  // `host` (a name, trailing dot dropped; it must outlive the gate) and `port` are the decided
  // target's; `max_head_bytes` bounds the Host reader (>= 1).
  FirstBytesGate(std::string_view host, std::uint16_t port, std::size_t max_head_bytes) noexcept;

  // The client's bytes read before the tunnel began (maybe none): held, and judged.
  [[nodiscard]] Verdict start(std::string early);
  // The client's next bytes: held after the others, and judged. At most room() of them.
  [[nodiscard]] Verdict feed(std::string_view fresh);
  // The client half-closed: what it sent is all there is. An unfinished ClientHello names nothing
  // a server could act on (pass); an unfinished request head might be acted on at the end of the
  // stream by a lenient server (the Host reader judges it).
  [[nodiscard]] Verdict finish();

  // How many more bytes the readers still waiting take; 0 once the held bytes reach their bound,
  // which is then a mismatch: overflow_reason() says which.
  [[nodiscard]] std::size_t room() const noexcept;
  [[nodiscard]] Reason overflow_reason() const noexcept;

  // While the Host reader waits (and the SNI reader no longer does), the first line so far may go
  // upstream (TunnelHostReader::take_forwardable says which bytes, and why they cannot reach a
  // site): a client that sends a short message with no line end and waits for its answer (an
  // echo's `ping`) is answered, as without a host list. Nothing goes up while the SNI reader still
  // waits: a ClientHello is held whole. Each call hands out only bytes not handed out before.
  [[nodiscard]] std::string_view take_forwardable() noexcept;
  // After pass: the held bytes take_forwardable has not handed out; they go upstream now.
  [[nodiscard]] std::string_view unforwarded() const noexcept;

 private:
  [[nodiscard]] Verdict judge(std::string_view fresh);
  [[nodiscard]] Verdict judge_sni(SniReader::Verdict verdict) const;
  [[nodiscard]] static Verdict judge_host(TunnelHostReader::Verdict verdict) noexcept;

  std::string_view host_;  // the decided target's
  std::size_t max_head_bytes_;
  std::string held_;                       // every byte the client sent so far
  std::optional<SniReader> sni_;           // while it may still be TLS
  std::optional<TunnelHostReader> host_check_;   // while it may still be an HTTP/1.x request
};

}  // namespace boxproxy
