// SPDX-License-Identifier: Apache-2.0
// SPEC §20: a request the signer must hash the body of (proxy/stages/sign_stage.h). Its body is
// read into the exchange whole, at most --max-held-body bytes as framed (past it `body too large`,
// 413), before an origin connection is asked for; then hashed (a chunked body over its decoded
// bytes, as AWS hashes the payload), the head judged again with the hash (the stages are pure, so
// everything before the sign stage decides as it did), and the request sent with the held body.
//
// Over HTTP/2 the front gives back connection-window credit for every byte as it comes
// (h2_front.cc) and opens the held stream's own window as its bytes are taken here: a held stream
// takes no more of the box connection's window than its own, and other streams' bytes still come.
#include "proxy/inspect/inspected_connection.h"

#include "proxy/inspect/packed_move.h"
#include <new>

#include "proxy/inspect/sigv4_request_signer.h"
#include "proxy/stages/refusal_detail.h"
#include "proxy/stages/scope_judgement.h"
#include "proxy/wire/h2_request.h"
#include "table/ascii.h"

namespace boxproxy {

void InspectedConnection::note_trace(InspectorRequest& record, const std::vector<TraceEntry>& trace) {
  for (const TraceEntry& entry : trace) {
    if (entry.stage == "swap") record.swap.push_back(entry.what);
    if (entry.stage == "inject") record.inject.push_back(entry.what);
    if (entry.stage == "sign") record.sign = entry.what;
  }
}

namespace {

bool expects_continue(const RequestHead& head) {
  for (const HeaderField& field : head.headers) {
    if (iequals(field.name, "expect") && iequals(field.value, "100-continue")) return true;
  }
  return false;
}

}  // namespace

void InspectedConnection::start_holding(const RequestHead& head) {
  const BodyFraming& framing = exchange_.judged.framing;
  // A body declared longer than the bound is refused before a byte of it is held; the body is then
  // read and dropped as a refused one's is (the framing is sound).
  if (framing.kind == BodyFraming::Kind::length && framing.length > setup_.max_held_body) {
    std::optional<TunnelEnd> close_with;
    if (!exchange_.judged.keep_after_refusal) close_with = TunnelEnd::error;
    refuse(Reason::body_too_large, close_with,
           refusal_detail(*setup_.endpoint, head.method, head.target, Reason::body_too_large));
    return;
  }
  auto held = std::make_unique<InspectedExchange::HeldRequest>();
  held->head = RequestMessage::from(head);  // owned: the box's input (or the front's message) moves on
  held->endpoint = setup_.endpoint;  // the endpoint it was judged by, even if it changes meanwhile
  held->body.reset(evbuffer_new());
  if (!held->body) throw std::bad_alloc();
  exchange_.held = std::move(held);
  // A client waiting for 100 Continue before its body is told to go on here: the body is wanted
  // before any origin is asked (the signer drops its Expect: the body follows the head at once).
  if (expects_continue(head) && !exchange_.judged.client_http10) {
    static_cast<void>(send_answer_head(ResponseMessage{100, "Continue", "HTTP/1.1", {}}, false));
  }
  phase_ = Phase::holding_body;
  arm(TimerRole::drain);  // a box that stops sending its body is cut after head_timeout of quiet
}

bool InspectedConnection::hold_body() {
  InspectedExchange::HeldRequest& held = *exchange_.held;
  bool progress = false;
  while (!exchange_.request_done) {
    evbuffer_iovec piece{};
    if (evbuffer_peek(client_in(), -1, nullptr, &piece, 1) < 1 || piece.iov_len == 0) break;
    const BodyCursor::Take take =
        exchange_.request_body.feed({static_cast<const char*>(piece.iov_base), piece.iov_len});
    if (take.malformed) {
      refuse_held(Reason::bad_framing, TunnelEnd::error);  // where its next request begins is unknown
      return true;
    }
    // Kept as framed (a chunked body's trailers dropped, `ending` closing it), as it will be sent.
    move_packed(client_in(), held.body.get(), take.pass);  // bounded in memory too, not in bytes only
    evbuffer_drain(client_in(), take.take - take.pass);
    if (!take.ending.empty() && evbuffer_add(held.body.get(), take.ending.data(), take.ending.size()) != 0) {
      throw std::bad_alloc();
    }
    if (take.take > 0) progress = true;
    if (take.done) exchange_.request_done = true;
    // What stops: a box making the proxy hold a body without end (a chunked one, whose length
    // no header says). Its framing counts against the bound.
    if (evbuffer_get_length(held.body.get()) > setup_.max_held_body) {
      refuse_held(Reason::body_too_large, TunnelEnd::error);  // the rest of it is never read
      return true;
    }
    if (take.take < piece.iov_len) break;
  }
  if (exchange_.request_done) {
    sign_held();
    return true;
  }
  if (!progress && box_.eof() && evbuffer_get_length(client_in()) == 0) {
    end_now(TunnelEnd::client_closed);  // it left in the middle of its body
    return true;
  }
  return progress;
}

void InspectedConnection::sign_held() {
  InspectedExchange::HeldRequest& held = *exchange_.held;
  const auto hash = exchange_.held_body_hash();
  if (!hash) {
    refuse_held(Reason::request_denied, TunnelEnd::error);  // OpenSSL failed: never sent unsigned
    return;
  }
  InspectorRequest& record = exchange_.record;
  // Judged again as it was, with the supervisor's answer when it was asked about (the ask stage,
  // before the sign stage, must not ask twice), and now the body's hash.
  const std::optional<RequestAsked> asked = exchange_.judged.asked;
  exchange_.judged = judge_inspected_request(held.head.view(), *held.endpoint, link_.decided(),
                                             setup_.secrets != nullptr ? *setup_.secrets : no_secrets(),
                                             setup_.placeholders, setup_.max_head_bytes, asked,
                                             &sigv4_request_signer(), *hash);
  const InspectedRequest& judged = exchange_.judged;
  record.swap.clear();
  record.inject.clear();
  note_trace(record, judged.trace);
  record.report = judged.report;
  if (judged.refusal || judged.hold_body || judged.wait) {
    // The body was read whole: the connection goes on after the answer when the client allows it.
    refuse_held(judged.refusal.value_or(Reason::request_denied),
                judged.client_keep_alive ? std::nullopt : std::optional<TunnelEnd>(TunnelEnd::client_closed));
    return;
  }
  exchange_.start_response_stages(setup_.scrub);
  phase_ = Phase::waiting_upstream;
  arm(TimerRole::upstream);
}

void InspectedConnection::refuse_held(Reason refusal, std::optional<TunnelEnd> close_with) {
  const InspectedExchange::HeldRequest& held = *exchange_.held;
  // What the refusal's body names.
  refuse(refusal, close_with, refusal_detail(*held.endpoint, held.head.method, held.head.target, refusal));
}

void InspectedConnection::send_held_body() {
  evbuffer* body = exchange_.held->body.get();
  const std::size_t length = evbuffer_get_length(body);
  if (evbuffer_add_buffer(link_.out(), body) != 0) throw std::bad_alloc();
  link_.count_sent(length);
  exchange_.record.up += length;
}

}  // namespace boxproxy
