// SPDX-License-Identifier: Apache-2.0
// An inspected connection's origin-facing side (proxy/inspect/inspected_connection.h): the proxy's
// own TLS connection to the checked address (verified, the decided host's name checked), a request
// waiting for one (serve dials again when the kept one has gone), and what follows when the origin
// closes early or sends what cannot be passed on.
#include "proxy/inspect/inspected_connection.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include "proxy/wire/http_forward.h"

namespace boxproxy {
namespace {

// Methods sent again on a new origin connection when a reused one closed before answering (the
// origin may have dropped it just as the request went out). Safe methods only: a proxy must not
// repeat a request that may have changed something (RFC 9110 §9.2.2).
bool safe_to_repeat(std::string_view method) noexcept {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

}  // namespace

bool InspectedConnection::open_origin_tls(UniqueFd fd) {
  drop_origin();
  SslPtr ssl(SSL_new(setup_.origin_ctx));
  if (!ssl) {
    ERR_clear_error();
    return false;
  }
  SSL* s = ssl.get();
  // Set here as well as on the context: a context made without it must never carry a box's
  // requests to an origin nobody checked.
  SSL_set_verify(s, SSL_VERIFY_PEER, nullptr);
  const Target& decided = origin_.target;
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
  if (setup_.origin_sessions != nullptr) {
    session_slot_.sessions = setup_.origin_sessions;
    session_slot_.key = OriginSessions::key_of(decided.host, decided.port);
    (void)offer_origin_session(s, &session_slot_);
  }
  origin_side_ = TlsStream::open(base_, std::move(fd), std::move(ssl), TlsStream::Role::connect, kMaxQueued / 2,
                                 {&on_origin_io, &on_origin_io, &on_origin_event, this}, setup_.closer);
  if (!origin_side_) return false;
  origin_state_ = Origin::handshaking;
  origin_used_ = false;
  origin_eof_ = false;
  origin_error_ = false;
  return true;
}

void InspectedConnection::origin_event(short what) {
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    if (origin_state_ != Origin::handshaking) return;
    // The handshake verified the chain and the name (SSL_VERIFY_PEER and the host set on the SSL);
    // asked again here, so that nothing but a verified origin that showed a certificate is used.
    SSL* ssl = origin_side_->ssl();
    if (SSL_get0_peer_certificate(ssl) == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
      origin_tls_failure_ = origin_side_->handshake_failure().value_or(TlsFailure::verify_failed);
      drop_origin();
      origin_state_ = Origin::tls_failed;
      return;
    }
    // The origin chose "h2": the back stands between its stream and the state machine.
    const unsigned char* chosen = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &chosen, &length);
    if (chosen != nullptr && std::string_view(reinterpret_cast<const char*>(chosen), length) == kAlpnH2) {
      h2_back_ = H2Back::open(kMaxResponseHeadBytes);
      if (!h2_back_) {
        drop_origin();  // out of memory: the next request asks for another
        origin_state_ = Origin::gone;
        return;
      }
    }
    origin_state_ = Origin::ready;
    return;
  }
  if ((what & BEV_EVENT_ERROR) != 0) {
    origin_side_->note_failed();
    origin_error_ = true;
  }
  if (origin_state_ == Origin::handshaking) {
    // Why (the upstream tls line's tls=): the verify result (name-mismatch, expired, unknown-ca,
    // ...), the origin's alert, or an end in the middle of the handshake.
    origin_tls_failure_ = (what & BEV_EVENT_ERROR) != 0 ? origin_side_->handshake_failure().value_or(TlsFailure::error)
                                                         : TlsFailure::eof;
    drop_origin();  // a failed handshake or certificate: SPEC §18's `upstream tls`
    origin_state_ = Origin::tls_failed;
    return;
  }
  origin_eof_ = true;  // EOF or error alike: this origin connection is over
  if (h2_back_) h2_back_->origin_closed();
}

bool InspectedConnection::wait_for_origin() {
  switch (origin_state_) {
    case Origin::ready:
      queue_to_origin(exchange_.judged.upstream_head);
      if (exchange_.held) send_held_body();  // a body held for signing follows its head (SPEC §20)
      exchange_.reused_origin = origin_used_;
      origin_used_ = true;
      phase_ = Phase::exchanging;
      arm(TimerRole::idle);
      return true;
    case Origin::handshaking:
    case Origin::asked:
      return false;
    case Origin::gone:
      origin_state_ = Origin::asked;
      need_upstream_due_ = true;
      return true;
    case Origin::dial_failed: {
      origin_state_ = Origin::gone;
      std::optional<TunnelEnd> close_with;
      if (!exchange_.judged.keep_after_refusal) close_with = TunnelEnd::error;
      refuse(Reason::dial_failed, close_with);
      return true;
    }
    case Origin::tls_failed:
      // SPEC §18: 502 inside TLS, and the connection ends (its origin cannot be trusted).
      connection_refusal_ = Reason::upstream_tls;
      refuse(Reason::upstream_tls, TunnelEnd::error);
      return true;
  }
  return false;
}

// The origin closed before a final response head. A reused connection closing just as a safe
// request without a body went out is the keep-alive race: the request goes once more on a new
// connection. Otherwise the client's connection ends, as the plain path's does.
bool InspectedConnection::origin_ended_early() {
  drop_origin();
  origin_state_ = Origin::gone;
  // Over HTTP/2 a stream the origin refused unprocessed (REFUSED_STREAM, or above a GOAWAY's
  // last-stream-id) may be sent again whatever its method (RFC 9113 §8.7).
  const bool not_processed = h2_back_ && h2_back_->not_processed();
  const bool repeatable = (not_processed || (exchange_.reused_origin && safe_to_repeat(exchange_.method))) &&
                          !exchange_.response_started() && !exchange_.retried &&
                          exchange_.judged.framing.kind == BodyFraming::Kind::none;
  if (repeatable) {
    exchange_.retried = true;
    phase_ = Phase::waiting_upstream;
    arm(TimerRole::upstream);
    return true;
  }
  if (exchange_.response_started()) abort_client_ = true;
  end_now(TunnelEnd::upstream_closed);
  return true;
}

// The origin sent what cannot be passed on (a head that does not parse or has no end, framing
// nobody can delimit, a 101 nobody asked for): the client's connection ends, as the plain path's.
bool InspectedConnection::origin_broke() {
  drop_origin();
  origin_state_ = Origin::gone;
  abort_client_ = true;
  end_now(TunnelEnd::error);
  return true;
}

void InspectedConnection::drop_origin() {
  h2_back_.reset();
  if (!origin_side_) return;
  if (!origin_error_) origin_side_->send_close_notify();
  origin_side_.reset();
  origin_eof_ = false;
  origin_error_ = false;
}

}  // namespace boxproxy
