// SPDX-License-Identifier: Apache-2.0
// An inspected connection's box-facing steps (proxy/inspect/inspected_connection.h): what the
// first byte, peeked, says (a TLS handshake record or `not tls`), the box's TLS handshake with the
// decided host's leaf (an SNI naming another host: `sni mismatch`), and the events of its stream.
// The side itself (socket, TLS stream, HTTP/2 front) is inspected_box_side.h's.
#include "proxy/inspect/inspected_connection.h"

#include <algorithm>
#include <string_view>

#include "proxy/inspector_messages.h"

namespace boxproxy {
bool InspectedConnection::open_client_tls() {
  return box_.open_tls({base_, setup_.client_ctx, setup_.port, setup_.leaf->certificate.get(), setup_.leaf_key,
                        setup_.closer, {&on_client_io, &on_client_io, &on_client_event, this}});
}

void InspectedConnection::sniff() {
  if (phase_ != Phase::sniffing) return;
  switch (box_.sniff()) {
    case InspectedBoxSide::Sniffed::waiting:
      return;
    case InspectedBoxSide::Sniffed::failed:
      end_now(TunnelEnd::error);
      return;
    case InspectedBoxSide::Sniffed::closed:
      end_now(TunnelEnd::client_closed);
      return;
    case InspectedBoxSide::Sniffed::not_tls:
      refuse_connection(Reason::not_tls);  // closed without a word (SPEC §18)
      return;
    case InspectedBoxSide::Sniffed::tls:
      break;
  }
  if (!open_client_tls()) {
    end_now(TunnelEnd::error);
    return;
  }
  phase_ = Phase::handshaking;
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
  c->due_.records.push_back(std::move(record));
}

void InspectedConnection::client_event(short what) {
  if (phase_ == Phase::ended || !box_.stream()) return;
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    if (phase_ != Phase::handshaking) return;
    if (!box_.start_h2_if_chosen(setup_.max_head_bytes, {this, &on_h2_refused})) {
      end_now(TunnelEnd::error);
      return;
    }
    phase_ = Phase::reading_head;
    last_activity_ = Clock::now();  // the handshake was the box's: its idle time starts here
    arm(TimerRole::head);  // the first head gets a head timeout of its own, as every later one
    return;
  }
  if ((what & BEV_EVENT_ERROR) != 0) box_.stream()->note_failed();
  if (phase_ == Phase::handshaking) {
    // A ClientHello naming another host fails the handshake in the SNI callback (tls_contexts.cc).
    if (box_.sni_mismatched()) {
      refuse_connection(Reason::sni_mismatch);
      return;
    }
    // Why, as the box's client said it (its alert: unknown-ca from a client without the session
    // CA) or as OpenSSL met it: the done line's tls= (SPEC §12 leaves it open; the manual names
    // the words).
    const bool eof = (what & BEV_EVENT_EOF) != 0;
    box_.note_tls_failure(eof ? TlsFailure::eof : box_.stream()->handshake_failure().value_or(TlsFailure::error));
    end_now(eof ? TunnelEnd::client_closed : TunnelEnd::error);
    return;
  }
  if ((what & BEV_EVENT_EOF) != 0) {
    box_.note_eof();  // what it sent before is still served; advance() decides when to close
    // HTTP/2 has no half-close (a stream ends with END_STREAM, not the connection): a box that
    // closes has left with every stream on it, and waiting on the origin's answers for no one would
    // hold the tunnel's slot as long as the origin takes (without --idle-timeout, for ever). Over
    // HTTP/1.1 a box's end after a whole request may be a half-close, and its answer is still sent.
    // A lingering close (closing_end_ set) keeps its own end.
    if (h2() && timer_role_ != TimerRole::linger) end_now(TunnelEnd::client_closed);
    return;
  }
  box_.abort();
  end_now(TunnelEnd::error);
}

}  // namespace boxproxy
