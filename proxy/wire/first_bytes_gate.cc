// SPDX-License-Identifier: Apache-2.0
// The SNI and Host checks on a tunnel's first client bytes (proxy/wire/first_bytes_gate.h).
#include "proxy/wire/first_bytes_gate.h"

#include <algorithm>

namespace boxproxy {

FirstBytesGate::FirstBytesGate(std::string_view host, std::uint16_t port, std::size_t max_head_bytes) noexcept
    : host_(host), max_head_bytes_(max_head_bytes) {
  sni_.emplace();
  host_check_.emplace(host, port, max_head_bytes);
}

FirstBytesGate::Verdict FirstBytesGate::start(std::string early) {
  held_ = std::move(early);
  return judge(held_);
}

FirstBytesGate::Verdict FirstBytesGate::feed(std::string_view fresh) {
  held_.append(fresh);
  return judge(fresh);
}

FirstBytesGate::Verdict FirstBytesGate::finish() {
  return host_check_ ? judge_host(host_check_->finish(held_)) : Verdict::pass;
}

// Feeds the readers the client's newest bytes (`fresh`, already held) and says what they answer
// together. TLS is asked first: its first byte (22) is never an HTTP request's.
FirstBytesGate::Verdict FirstBytesGate::judge(std::string_view fresh) {
  if (sni_) {
    const SniReader::Verdict verdict = sni_->feed(fresh);
    if (verdict != SniReader::Verdict::not_tls) {
      // A TLS record has begun: the Host reader has nothing to read in it.
      if (sni_->taken() > 0) host_check_.reset();
      return judge_sni(verdict);
    }
    sni_.reset();
  }
  if (host_check_) return judge_host(host_check_->feed(held_));
  return Verdict::pass;
}

FirstBytesGate::Verdict FirstBytesGate::judge_sni(SniReader::Verdict verdict) const {
  switch (verdict) {
    case SniReader::Verdict::need_more:
      return Verdict::wait;
    case SniReader::Verdict::not_tls:
    case SniReader::Verdict::no_sni:
      return Verdict::pass;  // no name to compare (SPEC §16: "or none")
    case SniReader::Verdict::sni:
      return sni_names_host(sni_->name(), host_) ? Verdict::pass : Verdict::sni_mismatch;
    case SniReader::Verdict::unreadable:
      return Verdict::sni_mismatch;  // fail closed: a server might read a name we could not
  }
  return Verdict::sni_mismatch;
}

FirstBytesGate::Verdict FirstBytesGate::judge_host(TunnelHostReader::Verdict verdict) noexcept {
  switch (verdict) {
    case TunnelHostReader::Verdict::need_more:
      return Verdict::wait;
    case TunnelHostReader::Verdict::not_http:
    case TunnelHostReader::Verdict::names_host:
      return Verdict::pass;
    case TunnelHostReader::Verdict::other_host:
      return Verdict::host_mismatch;  // includes fail closed: HTTP we could not read strictly
  }
  return Verdict::host_mismatch;
}

// Each reader still waiting answers by its own bound (kMaxSniHoldBytes, --max-head-bytes), so
// there is room while any waits.
std::size_t FirstBytesGate::room() const noexcept {
  std::size_t bound = 0;
  if (sni_) bound = kMaxSniHoldBytes;
  if (host_check_) bound = std::max(bound, max_head_bytes_);
  return bound > held_.size() ? bound - held_.size() : 0;
}

Reason FirstBytesGate::overflow_reason() const noexcept {
  return sni_ ? Reason::sni_mismatch : Reason::host_mismatch;
}

std::string_view FirstBytesGate::take_forwardable() noexcept {
  if (sni_ || !host_check_) return {};
  return host_check_->take_forwardable(held_);
}

std::string_view FirstBytesGate::unforwarded() const noexcept {
  const std::size_t sent = host_check_ ? host_check_->forwarded() : 0;  // went up while it waited
  return std::string_view(held_).substr(sent);
}

}  // namespace boxproxy
