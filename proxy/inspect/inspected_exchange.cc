// SPDX-License-Identifier: Apache-2.0
// An inspected connection's requests (proxy/inspect/inspected_connection.h): each head read and
// judged alone (proxy/stages/inspected_request.h), a refused one's body dropped, an allowed one sent
// to the origin with its body exactly as framed, and the response passed back (interim ones too)
// until the exchange ends and the connection goes on or closes.
#include "proxy/inspect/inspected_connection.h"

#include <algorithm>
#include <new>
#include <utility>

#include "proxy/inspect/sigv4_request_signer.h"
#include "proxy/inspector_messages.h"
#include "proxy/stages/refusal_detail.h"
#include "proxy/stages/scope_judgement.h"
#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"

namespace boxproxy {
namespace {

bool body_done_at_start(const BodyFraming& framing) noexcept {
  return framing.kind == BodyFraming::Kind::none || (framing.kind == BodyFraming::Kind::length && framing.length == 0);
}

// The first `n` bytes of `buffer`, made contiguous; valid until the buffer changes.
std::string_view front_of(evbuffer* buffer, std::size_t n) {
  const unsigned char* data = evbuffer_pullup(buffer, static_cast<ev_ssize_t>(n));
  if (data == nullptr) throw std::bad_alloc();
  return {reinterpret_cast<const char*>(data), n};
}

// What the request line may carry of a method or a path: printable ASCII already (the head parser
// allows nothing else in them), cut to what serve takes (proxy/inspector_messages.h), never empty.
std::string reported(std::string_view text, std::size_t most) {
  if (text.empty()) return "-";
  return std::string(text.substr(0, most));
}

}  // namespace

bool InspectedConnection::read_head() {
  // The endpoint was removed: the connection closes before its next request (SPEC §18), once the
  // answers already queued are out.
  if (!setup_.endpoint) {
    close_after_flush(TunnelEnd::shutdown);
    return true;
  }
  // Earlier answers go out first: pipelined requests refused one after another never pile up.
  if (evbuffer_get_length(client_out()) >= kMaxQueued) return false;
  if (h2()) return read_h2_head();
  evbuffer* in = client_in();
  const std::size_t length = evbuffer_get_length(in);
  if (length == 0) {
    if (!box_.eof()) return false;
    close_after_flush(TunnelEnd::client_closed);  // a client that shut down its writing still gets every byte
    return true;
  }
  const std::size_t max_head = setup_.max_head_bytes;
  const auto parsed = parse_request_head(front_of(in, std::min(length, max_head + 1)), max_head);
  switch (parsed.status) {
    case ParseResult<RequestHead>::Status::need_more:
      if (length > max_head) {
        refuse_unparsed(Reason::head_too_large);
        return true;
      }
      if (!box_.eof()) return false;
      close_after_flush(TunnelEnd::client_closed);  // it left in the middle of a head
      return true;
    case ParseResult<RequestHead>::Status::refused:
      refuse_unparsed(parsed.refusal == Reason::head_too_large ? Reason::head_too_large
                                                               : Reason::bad_request);
      return true;
    case ParseResult<RequestHead>::Status::complete:
      begin_request(*parsed.value, parsed.consumed);
      return true;
  }
  return false;
}

// Over HTTP/2 the front gives the head as a message, checked as it was built (h2_request.h): it
// is judged as it is, never printed and parsed again.
bool InspectedConnection::read_h2_head() {
  const RequestMessage* message = h2()->request();
  if (message == nullptr) {
    if (!box_.eof()) return false;
    close_after_flush(TunnelEnd::client_closed);
    return true;
  }
  begin_request(message->view(), 0);
  return true;
}

void InspectedConnection::take_head(std::size_t head_bytes) {
  if (h2()) {
    h2()->take_request();
  } else {
    evbuffer_drain(client_in(), head_bytes);
  }
}

void InspectedConnection::begin_request(const RequestHead& head, std::size_t head_bytes) {
  scrub(exchange_.judged.upstream);  // the last request's injected credential (SPEC §19)
  const std::optional<InspectedAsks::Answer> answer = asks_.take(h2());
  exchange_ = InspectedExchange{};
  exchange_.started = answer ? answer->since : Clock::now();  // a held request's time counts its wait
  exchange_.method.assign(head.method);
  InspectorRequest& record = exchange_.record;
  record.method = reported(head.method, kMaxReportedMethodBytes);
  if (setup_.log_paths) record.path = reported(head.target.substr(0, head.target.find('?')), kMaxReportedPathBytes);
  exchange_.judged = judge_inspected_request(head, *setup_.endpoint, link_.decided(),
                                             setup_.secrets != nullptr ? *setup_.secrets : no_secrets(),
                                             setup_.placeholders, setup_.max_head_bytes,
                                             answer ? std::optional(answer->asked) : std::nullopt,
                                             &sigv4_request_signer());
  if (exchange_.judged.wait) return hold_for_ask(head);  // the head stays in the input, judged again
  record.asked = exchange_.judged.asked;
  record.secret = exchange_.judged.misdirected;
  note_trace(record, exchange_.judged.trace);
  record.rule = exchange_.judged.rule;
  record.report = exchange_.judged.report;
  // What a refusal's body names on a "hint" endpoint (the method, path and endpoint judged), made
  // while `head` lives.
  const std::string detail = exchange_.judged.refusal ? refusal_detail(*setup_.endpoint, head.method, head.target,
                                                                       *exchange_.judged.refusal)
                                                      : std::string();
  const InspectedRequest& judged = exchange_.judged;
  exchange_.request_body = BodyCursor(judged.framing);
  exchange_.request_done = body_done_at_start(judged.framing);
  if (judged.hold_body) start_holding(head);  // copies the head
  take_head(head_bytes);  // `head` points into what this drops: not used after
  if (judged.hold_body) return;
  if (judged.refusal) {
    // The connection ends after the answer when the body cannot be found, or the client leaves.
    std::optional<TunnelEnd> close_with;
    if (!judged.keep_after_refusal) close_with = judged.client_keep_alive ? TunnelEnd::error : TunnelEnd::client_closed;
    refuse(*judged.refusal, close_with, detail);
    return;
  }
  exchange_.start_response_stages(setup_.scrub);
  phase_ = Phase::waiting_upstream;
  arm(TimerRole::upstream);
}

void InspectedConnection::hold_for_ask(const RequestHead& head) {
  phase_ = Phase::asking;
  arm(TimerRole::none);  // serve answers within --ask-timeout, with `timeout` when nobody did
  const std::uint64_t n = asks_.begin(exchange_.started);
  InspectorAsk ask{setup_.id, n, std::string(head.method),
                   std::string(head.target.substr(0, head.target.find('?'))),
                   head.target.find('?') != std::string_view::npos, exchange_.judged.rule};
  // What serve takes (inspector_messages.h): a method or path it would have to cut is never asked
  // about (an `always` for a cut path would cover every path that starts so), and neither is one
  // with a byte the supervisor's line must not carry. Refused: asked=none.
  const auto printable = [](std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  };
  // Over HTTP/2 a held stream holds no other up: at most kMaxParkedStreams wait at once.
  if (hooks_.ask == nullptr || ask.method.size() > kMaxReportedMethodBytes || ask.path.size() > kMaxAskedPathBytes ||
      !printable(ask.method) || !printable(ask.path) || !ask.path.starts_with('/') ||
      (h2() && asks_.parking_full())) {
    asks_.answer_now(RequestAsked::none);  // the next step judges it again, with this answer
    return;
  }
  if (h2()) {
    // The stream steps aside with what of it the front had fed; the next one is served.
    asks_.park(ask.n, *h2(), exchange_.started);
    phase_ = Phase::reading_head;
    arm(TimerRole::head);
  }
  due_.asks.push_back(std::move(ask));
}

void InspectedConnection::answer_ask(std::uint64_t n, RequestAsked asked) {
  if (h2()) {
    if (asks_.resume(n, asked, *h2(), phase_ == Phase::ended || phase_ == Phase::closing)) kick();
    return;
  }
  if (phase_ != Phase::asking || !asks_.answer(n, asked)) return;
  kick();
}

bool InspectedConnection::drop_refused_body() {
  if (!exchange_.request_done) {
    std::uint64_t dropped = 0;
    const Moved moved = move_body(client_in(), nullptr, exchange_.request_body, dropped);
    if (moved.malformed) {
      close_after_flush(TunnelEnd::error);  // its answer is queued; the next request cannot be found
      return true;
    }
    if (moved.done) exchange_.request_done = true;
    if (!moved.done) {
      if (moved.moved) return true;
      if (!box_.eof()) return false;
      close_after_flush(TunnelEnd::client_closed);
      return true;
    }
  }
  phase_ = Phase::reading_head;
  arm(TimerRole::head);
  return true;
}

bool InspectedConnection::exchange() {
  bool progress = false;
  if (!exchange_.request_done) progress = pass_request_body();
  if (phase_ != Phase::exchanging) return true;
  if (exchange_.awaiting_head()) {
    progress = read_response_head() || progress;
  } else if (exchange_.response != InspectedExchange::Response::done) {
    progress = pass_response_body() || progress;
  }
  if (phase_ != Phase::exchanging) return true;
  if (exchange_.response == InspectedExchange::Response::done) {
    finish_exchange();
    return true;
  }
  return progress;
}

bool InspectedConnection::pass_request_body() {
  const Moved moved = move_toward(Toward::origin, exchange_.request_body);
  if (moved.malformed) {
    // Half a request went to the origin: its connection is never used again. The client gets its
    // 400 unless the response has begun to reach it.
    link_.drop_as(InspectedOriginLink::State::gone);
    if (!exchange_.response_started()) {
      refuse(Reason::bad_framing, TunnelEnd::error);
    } else {
      box_.abort();
      end_now(TunnelEnd::error);
    }
    return true;
  }
  if (moved.done) {
    exchange_.request_done = true;
    return true;
  }
  if (!moved.moved && box_.eof() && evbuffer_get_length(client_in()) == 0) {
    end_now(TunnelEnd::client_closed);  // it left in the middle of its body
    return true;
  }
  return moved.moved;
}

InspectedConnection::OriginHead InspectedConnection::next_origin_head() {
  using Status = OriginHead::Status;
  const Status none = link_.over() ? Status::ended : Status::waiting;
  if (const H2Back* back = link_.h2()) {
    const ResponseMessage* head = back->head();  // made from the HEADERS, checked and bounded there
    if (head == nullptr) return {none, {}, 0};
    return {Status::ready, head->view(), 0};
  }
  evbuffer* in = link_.in();
  const std::size_t length = evbuffer_get_length(in);
  if (length == 0) return {none, {}, 0};
  const auto parsed = parse_response_head(front_of(in, std::min(length, kMaxResponseHeadBytes + 1)),
                                          kMaxResponseHeadBytes);
  if (parsed.status == ParseResult<ResponseHead>::Status::need_more) {
    return {length > kMaxResponseHeadBytes ? Status::broke : none, {}, 0};
  }
  if (parsed.status == ParseResult<ResponseHead>::Status::refused) return {Status::broke, {}, 0};
  return {Status::ready, *parsed.value, parsed.consumed};
}

void InspectedConnection::take_origin_head(std::size_t consumed) {
  if (H2Back* back = link_.h2()) {
    back->take_head();
  } else {
    evbuffer_drain(link_.in(), consumed);
  }
}

bool InspectedConnection::read_response_head() {
  bool progress = false;
  for (;;) {
    // Interim responses are passed one at a time, each once the client has room: an origin sending
    // them without end never makes the client's output grow past its bound.
    if (evbuffer_get_length(client_out()) >= kMaxQueued) return progress;
    const OriginHead next = next_origin_head();
    switch (next.status) {
      case OriginHead::Status::waiting: return progress;
      case OriginHead::Status::ended: return origin_ended_early();
      case OriginHead::Status::broke: return origin_broke();
      case OriginHead::Status::ready: break;
    }
    const ResponseHead& head = next.head;
    if (head.status == 101) return switch_to_relay(head, next.consumed);  // never from a back (h2_upstream.h)
    if (head.status < 200) {
      // An interim response (100 Continue): passed on and the final one follows; never to an
      // HTTP/1.0 client, which does not know them (RFC 9110 §15.2).
      const bool pass = !exchange_.judged.client_http10;
      ResponseMessage answer = pass ? rewrite_response_message(head, exchange_.judged.client_keep_alive)
                                    : ResponseMessage{};
      take_origin_head(next.consumed);  // `head` is not read after this
      if (pass) {
        if (!send_answer_head(std::move(answer), true)) return origin_broke();
        exchange_.response = InspectedExchange::Response::interim;
      }
      progress = true;
      continue;
    }
    auto framing = response_framing(exchange_.method, head);
    if (std::holds_alternative<Reason>(framing)) return origin_broke();  // a body nobody can delimit
    const BodyFraming body = std::get<BodyFraming>(framing);
    // Over HTTP/2 a body read to the origin's close ends only its stream (the front is told when
    // the exchange ends): the box's connection goes on.
    const bool until_close = body.kind == BodyFraming::Kind::until_close && !h2();
    // The client's connection goes on only while it asks to, the body ends by its framing, its own
    // request was read whole (else where its next one starts is unknown) and the endpoint stands.
    // Over HTTP/2 the stream's end says where the request ends, so an answer that begins before it
    // (a gRPC stream, an early 100-less answer to an upload) need not cost the connection: whether
    // the request is whole is asked again when the answer ends (finish_exchange).
    exchange_.keep_client = exchange_.judged.client_keep_alive && !until_close && (exchange_.request_done || h2()) &&
                            !box_.eof() && setup_.endpoint != nullptr;
    exchange_.origin_reusable = origin_keeps_alive(head) && body.kind != BodyFraming::Kind::until_close &&
                                !exchange_.judged.origin_asked_to_close;
    if (coding_unreadable(head)) return origin_broke();  // the connection ends: nothing of it reaches the box
    ResponseMessage answer = rewrite_response_message(head, exchange_.keep_client);
    exchange_.record.status = static_cast<std::uint16_t>(head.status);
    take_origin_head(next.consumed);  // `head` is not read after this
    if (!send_answer_head(std::move(answer), true)) return origin_broke();
    // Its trailers pass, filtered (ChunkedScanner::Trailers): gRPC's status travels in them (SPEC §19).
    exchange_.response_body = BodyCursor(body, ChunkedScanner::Trailers::filtered);
    using Response = InspectedExchange::Response;
    exchange_.response = body_done_at_start(body) ? Response::done : Response::body;
    return true;
  }
}

bool InspectedConnection::pass_response_body() {
  const Moved moved = move_toward(Toward::client, exchange_.response_body);
  if (moved.malformed) return origin_broke();
  if (moved.done) {
    exchange_.response = InspectedExchange::Response::done;
    return true;
  }
  if (link_.over() && evbuffer_get_length(link_.in()) == 0) {
    if (exchange_.response_body.framing().kind == BodyFraming::Kind::until_close) {
      // The close ends the body. One without close_notify may have been cut by anyone on the path:
      // the client then sees its own connection end the same way, never a clean end.
      if (!link_.closed_cleanly()) box_.abort();
      release_held_response();
      exchange_.response = InspectedExchange::Response::done;
      return true;
    }
    link_.drop_as(InspectedOriginLink::State::gone);
    box_.abort();  // a body cut short: the client must not take it for whole
    end_now(TunnelEnd::upstream_closed);
    return true;
  }
  return moved.moved;
}

void InspectedConnection::finish_exchange() {
  record_exchange();
  // The head the origin got is sent again only before its answer begins: from here its injected
  // credential is not held while the connection waits for the next request (SPEC §19).
  scrub(exchange_.judged.upstream);
  exchange_.end_response_stages();  // everything passed (the body's end flushed them), their trace recorded
  // A response the client must not take for whole (read to an origin close that came without
  // close_notify: anyone on the path may have cut it). Over HTTP/1.1 the box's connection ends
  // without close_notify after it; over HTTP/2 ending the stream would tell the box the body is
  // complete, so the stream is never ended: what came of it is passed on, then the connection goes
  // the same unclean way (box_.aborted(): no close_notify).
  if (h2() && box_.aborted()) {
    link_.drop_as(InspectedOriginLink::State::gone);
    close_after_flush(TunnelEnd::upstream_closed);
    return;
  }
  if (h2()) h2()->exchange_ended();
  const bool reusable = exchange_.origin_reusable && exchange_.request_done && link_.reusable();
  if (!reusable) link_.drop_as(InspectedOriginLink::State::gone);
  if (reusable) link_.exchange_done();  // idle again: it may go to the pool (origin_pool.h)
  if (exchange_.keep_client && exchange_.request_done && !box_.eof()) {
    phase_ = Phase::reading_head;
    arm(TimerRole::head);
    return;
  }
  TunnelEnd end = TunnelEnd::upstream_closed;  // the response's framing or the origin ended it
  if (!exchange_.judged.client_keep_alive || box_.eof()) {
    end = TunnelEnd::client_closed;
  } else if (!setup_.endpoint) {
    end = TunnelEnd::shutdown;
  }
  close_after_flush(end);
}

}  // namespace boxproxy
