// SPDX-License-Identifier: Apache-2.0
// An inspected connection's link to its origin (proxy/inspect/inspected_origin_link.h): the proxy's
// own TLS connection to the checked address (verified, the decided host's name checked), its
// events, and what its owner asks of it.
#include "proxy/inspect/inspected_origin_link.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include "proxy/inspect/inspected_connection.h"

namespace boxproxy {
namespace {

// How long the origin may be quiet before what the stages hold goes to the box anyway (SPEC §19a:
// 50 ms): a stream (server-sent events, a streamed completion, a WebSocket) never stalls on a
// hold; a value split across a longer pause is not caught, and the manual says so.
constexpr double kQuietOriginSeconds = 0.05;

}  // namespace

bool InspectedOriginLink::decide(std::string_view host, std::uint16_t port) {
  TargetResult decided = parse_host(host, port);
  if (!std::holds_alternative<Target>(decided)) return false;
  decided_ = DecidedOrigin{std::get<Target>(std::move(decided)), kInspectDefaultPort};
  return true;
}

bool InspectedOriginLink::open(UniqueFd fd, const Opening& opening) {
  drop();
  SslPtr ssl(SSL_new(opening.ctx));
  if (!ssl) {
    ERR_clear_error();
    return false;
  }
  SSL* s = ssl.get();
  // Set here as well as on the context: a context made without it must never carry a box's
  // requests to an origin nobody checked.
  SSL_set_verify(s, SSL_VERIFY_PEER, nullptr);
  const Target& decided = decided_.target;
  bool named = true;
  if (decided.address) {
    // An address literal: no SNI (RFC 6066 names hosts only), its IP subjectAltName is checked.
    named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), decided.host.c_str()) == 1;
  } else {
    // SNI the decided host, and the certificate must name it (SPEC §18): the origin is asked for
    // the site that was judged, and a certificate for any other name is refused.
    named = SSL_set_tlsext_host_name(s, decided.host.c_str()) == 1 && SSL_set1_host(s, decided.host.c_str()) == 1;
  }
  // "h2" and "http/1.1" (SPEC §19: what the origin offers, in any pairing with the box's side).
  const bool alpn = SSL_set_alpn_protos(s, reinterpret_cast<const unsigned char*>(kAlpnOrigin.data()),
                                        static_cast<unsigned int>(kAlpnOrigin.size())) == 0;  // 0: success
  if (!named || !alpn) {
    ERR_clear_error();
    return false;
  }
  // A session this host and port gave an earlier connection, if any (origin_sessions.h says why
  // that is safe); without one, or where it cannot be attached, a full handshake.
  if (opening.sessions != nullptr) {
    session_slot_.sessions = opening.sessions;
    session_slot_.key = OriginSessions::key_of(decided.host, decided.port);
    (void)offer_origin_session(s, &session_slot_);
  }
  stream_ = TlsStream::open(opening.base, std::move(fd), std::move(ssl), TlsStream::Role::connect, kMaxQueued / 2,
                            opening.callbacks, opening.closer);
  if (!stream_) return false;
  state_ = State::handshaking;
  used_ = false;
  carrying_ = false;
  end_ = End::open;
  return true;
}

std::unique_ptr<TlsStream> InspectedOriginLink::release_idle() noexcept {
  // HTTP/2 origin connections are not pooled (origin_pool.h): only an HTTP/1.1 one between requests.
  if (state_ != State::ready || carrying_ || h2_ || !reusable() || !stream_->quiet()) return nullptr;
  (void)attach_origin_slot(stream_->ssl(), nullptr);  // the pool points it at its own slot next
  state_ = State::gone;
  return std::move(stream_);
}

void InspectedOriginLink::adopt(std::unique_ptr<TlsStream> stream, const Opening& opening) {
  std::string key = OriginSessions::key_of(decided_.target.host, decided_.target.port);  // may throw: first
  drop();
  stream_ = std::move(stream);
  session_slot_.sessions = opening.sessions;
  session_slot_.key = std::move(key);
  (void)attach_origin_slot(stream_->ssl(), opening.sessions != nullptr ? &session_slot_ : nullptr);
  stream_->set_callbacks(opening.callbacks);
  state_ = State::ready;
  used_ = true;
  carrying_ = false;
  end_ = End::open;
}

void InspectedOriginLink::handshake_done() {
  if (state_ != State::handshaking) return;
  // The handshake verified the chain and the name (SSL_VERIFY_PEER and the host set on the SSL);
  // asked again here, so that nothing but a verified origin that showed a certificate is used.
  SSL* ssl = stream_->ssl();
  if (SSL_get0_peer_certificate(ssl) == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    fail_tls(stream_->handshake_failure().value_or(TlsFailure::verify_failed));
    return;
  }
  // The origin chose "h2": the back stands between its stream and the state machine.
  const unsigned char* chosen = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &chosen, &length);
  if (chosen != nullptr && std::string_view(reinterpret_cast<const char*>(chosen), length) == kAlpnH2) {
    h2_ = H2Back::open(kMaxResponseHeadBytes);
    if (!h2_) {
      drop_as(State::gone);  // out of memory: the next request asks for another
      return;
    }
  }
  state_ = State::ready;
}

void InspectedOriginLink::event(short what) {
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    handshake_done();
    return;
  }
  if ((what & BEV_EVENT_ERROR) != 0) {
    stream_->note_failed();
    end_ = End::failed;
  }
  if (state_ == State::handshaking) {
    // Why (the upstream tls line's tls=): the verify result (name-mismatch, expired, unknown-ca,
    // ...), the origin's alert, or an end in the middle of the handshake. A failed handshake or
    // certificate is SPEC §18's `upstream tls`.
    fail_tls((what & BEV_EVENT_ERROR) != 0 ? stream_->handshake_failure().value_or(TlsFailure::error)
                                           : TlsFailure::eof);
    return;
  }
  if (end_ == End::open) end_ = End::closed;  // EOF or error alike: this origin connection is over
  if (h2_) h2_->origin_closed();
}

void InspectedOriginLink::drop() noexcept {
  h2_.reset();
  if (!stream_) return;
  if (end_ != End::failed) stream_->send_close_notify();
  stream_.reset();
  end_ = End::open;
  carrying_ = false;
}

bool InspectedOriginLink::pump() {
  if (!stream_ || !h2_) return false;
  return h2_->pump(stream_->input(), stream_->output(), kMaxQueued);
}

void InspectedOriginLink::hold_writes() noexcept {
  if (stream_) stream_->hold_writes();
}

void InspectedOriginLink::release_writes() noexcept {
  if (stream_) stream_->release_writes();
}

bool InspectedOriginLink::may_read() const noexcept {
  // Over HTTP/2 the back takes every byte read at once; DATA is bounded by its window, and
  // nothing is read while the responses it wrote wait or its frames to the origin have no room.
  if (h2_) {
    return stream_->output_length() < kMaxQueued && evbuffer_get_length(in()) < kMaxQueued && h2_->wants_read();
  }
  return stream_->input_length() <= kMaxResponseHeadBytes;
}

void InspectedOriginLink::set_reading(bool on) noexcept {
  if (stream_) stream_->set_reading(on);
}

bool InspectedOriginLink::has_room() const noexcept {
  return stream_ && stream_->output_length() < kMaxQueued && evbuffer_get_length(out()) < kMaxQueued;
}

bool InspectedOriginLink::stale() const noexcept {
  return end_ != End::open || evbuffer_get_length(in()) > 0 || (h2_ && !h2_->reusable());
}

bool InspectedOriginLink::reusable() const noexcept {
  return stream_ && !over() && evbuffer_get_length(in()) == 0 &&  // bytes past the response: never a next answer
         (!h2_ || h2_->reusable());
}

bool InspectedOriginLink::closed_cleanly() const noexcept {
  return !h2_ && end_ != End::failed && stream_->received_close_notify();
}

bool InspectedOriginLink::flushed() const noexcept {
  return !stream_ || end_ != End::open || stream_->output_length() == 0;
}

void InspectedOriginLink::watch_quiet(bool holding) noexcept {
  if (holding) {
    quiet_.arm(kQuietOriginSeconds);  // again from now: the origin just sent something
  } else {
    quiet_.disarm();
  }
}

}  // namespace boxproxy
