// SPDX-License-Identifier: Apache-2.0
// An inspected connection's box-facing side (proxy/inspect/inspected_connection.h): the first
// byte, peeked (a TLS handshake record or `not tls`), the box's TLS handshake with the decided
// host's leaf (an SNI naming another host: `sni mismatch`), and the events of its stream.
#include "proxy/inspect/inspected_connection.h"

#include <openssl/err.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "proxy/inspector_messages.h"

#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// The first byte of a TLS record that carries a handshake message (a ClientHello first).
constexpr unsigned char kTlsHandshakeRecord = 0x16;

}  // namespace

bool InspectedConnection::open_client_tls() {
  SslPtr ssl(SSL_new(setup_.client_ctx));
  if (!ssl || SSL_use_certificate(ssl.get(), setup_.leaf->certificate.get()) != 1 ||
      SSL_use_PrivateKey(ssl.get(), setup_.leaf_key) != 1 || !attach_server_name_check(ssl.get(), &sni_check_)) {
    ERR_clear_error();
    return false;
  }
  client_ = TlsStream::open(base_, std::move(client_fd_), std::move(ssl), TlsStream::Role::accept, kMaxQueued / 2,
                            {&on_client_io, &on_client_io, &on_client_event, this}, setup_.closer);
  return client_ != nullptr;
}

void InspectedConnection::sniff() {
  if (phase_ != Phase::sniffing) return;
  unsigned char first = 0;
  const ssize_t n = ::recv(client_fd_.get(), &first, 1, MSG_PEEK);
  if (n == -1) {
    if (!transient_error(errno)) end_now(TunnelEnd::error);
    return;
  }
  event_del(sniff_event_.get());
  if (n == 0) {
    end_now(TunnelEnd::client_closed);
    return;
  }
  // Anything but a TLS handshake record is `not tls` (SPEC §18), closed without a word: what it
  // stops is plaintext to an inspected endpoint going anywhere uninspected, and OpenSSL being fed
  // what is not TLS at all.
  if (first != kTlsHandshakeRecord) {
    refuse_connection(Reason::not_tls);
    return;
  }
  if (!open_client_tls()) {
    end_now(TunnelEnd::error);
    return;
  }
  phase_ = Phase::handshaking;
}

bool InspectedConnection::start_h2_if_chosen() {
  const unsigned char* chosen = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(client_->ssl(), &chosen, &length);
  if (chosen == nullptr || std::string_view(reinterpret_cast<const char*>(chosen), length) != kAlpnH2) return true;
  h2_ = H2Front::open(setup_.max_head_bytes, {this, &on_h2_refused});
  return h2_ != nullptr;
}

// A stream the front refused before it became a request: its line, as any refused request's.
void InspectedConnection::on_h2_refused(void* self, const H2Front::Refused& refused) {
  auto* c = static_cast<InspectedConnection*>(self);
  // Only what is printable goes on the line: a refused list may hold any byte (that is often why
  // it was refused), and a line must never carry a byte that could forge another.
  const auto printable = [](std::string_view text, std::size_t most) {
    const bool ok = !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
      return static_cast<unsigned char>(ch) > 0x20 && static_cast<unsigned char>(ch) < 0x7f;
    });
    return ok ? std::string(text.substr(0, most)) : std::string("-");
  };
  const ReasonInfo& row = info(refused.refusal);
  InspectorRequest record;
  record.id = c->setup_.id;
  record.method = printable(refused.method, kMaxReportedMethodBytes);
  record.refusal = refused.refusal;
  record.status = row.http_status;
  if (c->setup_.log_paths) {
    record.path = printable(std::string_view(refused.path).substr(0, refused.path.find('?')), kMaxReportedPathBytes);
  }
  c->records_.push_back(std::move(record));
}

void InspectedConnection::client_event(short what) {
  if (phase_ == Phase::ended || !client_) return;
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    if (phase_ != Phase::handshaking) return;
    if (!start_h2_if_chosen()) {
      end_now(TunnelEnd::error);
      return;
    }
    phase_ = Phase::reading_head;
    last_activity_ = Clock::now();  // the handshake was the box's: its idle time starts here
    arm(TimerRole::head);  // the first head gets a head timeout of its own, as every later one
    return;
  }
  if ((what & BEV_EVENT_ERROR) != 0) client_->note_failed();
  if (phase_ == Phase::handshaking) {
    // A ClientHello naming another host fails the handshake in the SNI callback (tls_contexts.cc).
    if (sni_check_.mismatched) {
      refuse_connection(Reason::sni_mismatch);
      return;
    }
    // Why, as the box's client said it (its alert: unknown-ca from a client without the session
    // CA) or as OpenSSL met it: the done line's tls= (SPEC §12 leaves it open; the manual names
    // the words).
    const bool eof = (what & BEV_EVENT_EOF) != 0;
    client_tls_failure_ = eof ? TlsFailure::eof : client_->handshake_failure().value_or(TlsFailure::error);
    end_now(eof ? TunnelEnd::client_closed : TunnelEnd::error);
    return;
  }
  if ((what & BEV_EVENT_EOF) != 0) {
    client_eof_ = true;  // what it sent before is still served; advance() decides when to close
    // HTTP/2 has no half-close (a stream ends with END_STREAM, not the connection): a box that
    // closes has left with every stream on it, and waiting on the origin's answers for no one would
    // hold the tunnel's slot as long as the origin takes (without --idle-timeout, for ever). Over
    // HTTP/1.1 a box's end after a whole request may be a half-close, and its answer is still sent.
    // A lingering close (closing_end_ set) keeps its own end.
    if (h2_ && timer_role_ != TimerRole::linger) end_now(TunnelEnd::client_closed);
    return;
  }
  abort_client_ = true;
  end_now(TunnelEnd::error);
}

}  // namespace boxproxy
