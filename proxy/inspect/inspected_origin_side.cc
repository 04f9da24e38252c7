// SPDX-License-Identifier: Apache-2.0
// An inspected connection's origin-facing steps (proxy/inspect/inspected_connection.h): a request
// waiting for an origin connection (serve dials again when the kept one has gone), and what follows
// when the origin closes early or sends what cannot be passed on. The origin connection itself is
// the link's (inspected_origin_link.h).
#include "proxy/inspect/inspected_connection.h"

#include <new>

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
  return link_.open(std::move(fd), {base_, setup_.origin_ctx, setup_.origin_sessions, setup_.closer,
                                    {&on_origin_io, &on_origin_io, &on_origin_event, this}});
}

bool InspectedConnection::start_origin(UniqueFd upstream) {
  if (setup_.pooled && setup_.origin_pool != nullptr) {
    // serve checked that this connection's decided host and port are the kept one's, and that its
    // address is among this decision's checked answers (proxy/origin_ledger.h): the connection
    // was verified for that very host, so it may carry this box's requests.
    std::unique_ptr<TlsStream> stream;
    try {
      stream = setup_.origin_pool->take(*setup_.pooled, OriginSessions::key_of(setup_.host, setup_.port));
    } catch (const std::bad_alloc&) {
      setup_.origin_pool->evict(*setup_.pooled);  // not taken: closed, as this connection holds its slot
    }
    if (stream) {
      link_.adopt(std::move(stream), {base_, setup_.origin_ctx, setup_.origin_sessions, setup_.closer,
                                      {&on_origin_io, &on_origin_io, &on_origin_event, this}});
      return true;
    }
  }
  // The origin's handshake goes on while the box's first byte is awaited: the first request does
  // not wait for it more than it must.
  if (upstream.valid()) return open_origin_tls(std::move(upstream));
  // None (the kept one closed as serve handed this over, or serve evicted one at the tunnel cap to
  // give this its slot): the first request asks for a dial, under the slot serve holds for it.
  link_.set_state(InspectedOriginLink::State::gone);
  return true;
}

bool InspectedConnection::keep_idle_origin() noexcept {
  if (setup_.origin_pool == nullptr) return false;
  try {
    std::unique_ptr<TlsStream> stream = link_.release_idle();
    if (!stream) return false;
    return setup_.origin_pool->put(setup_.id, std::move(stream), setup_.origin_sessions,
                                   OriginSessions::key_of(setup_.host, setup_.port));
  } catch (const std::bad_alloc&) {
    return false;  // the key could not be made: the origin connection (if taken out) closes here
  }
}

bool InspectedConnection::wait_for_origin() {
  using State = InspectedOriginLink::State;
  switch (link_.state()) {
    case State::ready:
      // Marked first: a write that throws (bad_alloc) must not leave the link looking idle, so
      // kept for another box connection with part of a request in it (found in review).
      exchange_.reused_origin = link_.mark_used();
      send_request_head();
      if (exchange_.held) send_held_body();  // a body held for signing follows its head (SPEC §20)
      phase_ = Phase::exchanging;
      arm(TimerRole::idle);
      return true;
    case State::handshaking:
    case State::asked:
      return false;
    case State::gone:
      link_.set_state(State::asked);
      due_.need_upstream = true;
      return true;
    case State::dial_failed: {
      link_.set_state(State::gone);
      std::optional<TunnelEnd> close_with;
      if (!exchange_.judged.keep_after_refusal) close_with = TunnelEnd::error;
      refuse(Reason::dial_failed, close_with);
      return true;
    }
    case State::tls_failed:
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
  // Over HTTP/2 a stream the origin refused unprocessed (REFUSED_STREAM, or above a GOAWAY's
  // last-stream-id) may be sent again whatever its method (RFC 9113 §8.7). Asked before the link
  // is dropped, which forgets its HTTP/2 session (asked after, it was never so: such a request
  // was answered by closing the box's connection).
  const bool not_processed = link_.h2() != nullptr && link_.h2()->not_processed();
  link_.drop_as(InspectedOriginLink::State::gone);
  const bool repeatable = (not_processed || (exchange_.reused_origin && safe_to_repeat(exchange_.method))) &&
                          !exchange_.response_started() && !exchange_.retried &&
                          exchange_.judged.framing.kind == BodyFraming::Kind::none;
  if (repeatable) {
    exchange_.retried = true;
    phase_ = Phase::waiting_upstream;
    arm(TimerRole::upstream);
    return true;
  }
  if (exchange_.response_started()) box_.abort();
  end_now(TunnelEnd::upstream_closed);
  return true;
}

// The origin sent what cannot be passed on (a head that does not parse or has no end, framing
// nobody can delimit, a 101 nobody asked for): the client's connection ends, as the plain path's.
bool InspectedConnection::origin_broke() {
  link_.drop_as(InspectedOriginLink::State::gone);
  box_.abort();
  end_now(TunnelEnd::error);
  return true;
}

}  // namespace boxproxy
