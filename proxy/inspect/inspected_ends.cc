// SPDX-License-Identifier: Apache-2.0
// How an inspected request and an inspected connection end (proxy/inspect/inspected_connection.h):
// a refusal answered inside TLS (the connection going on when its framing is sound), the one
// record of each request, and the connection's close, after its last bytes or at once.
#include "proxy/inspect/inspected_connection.h"

namespace boxproxy {

void InspectedConnection::refuse(Reason refusal, std::optional<TunnelEnd> close_with, std::string_view detail) {
  const ReasonInfo& row = info(refusal);
  RefusalAnswer answer = inspect_refusal_answer(refusal, close_with.has_value(), detail);
  static_cast<void>(send_answer_head(std::move(answer.head), false));  // not staged: it cannot fail
  queue_to_client(answer.body);
  record_request(refusal, row.http_status);
  if (close_with) {
    close_after_flush(*close_with);
    return;
  }
  // The connection goes on (SPEC §18): the refused request's body is read and dropped first.
  phase_ = Phase::refusing;
  arm(TimerRole::drain);
}

void InspectedConnection::refuse_unparsed(Reason refusal) {
  exchange_ = InspectedExchange{};
  exchange_.started = Clock::now();
  exchange_.record.method = "-";
  exchange_.record.rule = "-";
  refuse(refusal, TunnelEnd::error);  // where this request ends and the next begins is unknown
}

void InspectedConnection::refuse_connection(Reason refusal) {
  connection_refusal_ = refusal;
  box_.abort();  // no answer at all: not even a close_notify
  end_now(TunnelEnd::error);
}

void InspectedConnection::record_request(std::optional<Reason> refusal, std::uint16_t status) {
  if (exchange_.recorded) return;  // one line per request, however it ends
  exchange_.recorded = true;
  InspectorRequest record = exchange_.record;
  record.id = setup_.id;
  record.refusal = refusal;
  record.status = status;
  record.ms = static_cast<std::uint64_t>(Clock::seconds_since(exchange_.started) * 1000.0);
  due_.records.push_back(std::move(record));
}

void InspectedConnection::record_exchange() {
  if (exchange_.response_stages && !exchange_.recorded) {
    for (const TraceEntry& entry : exchange_.response_stages->trace()) {
      if (entry.stage == "scrub") exchange_.record.scrub.push_back(entry.what);
    }
  }
  // A report-mode denial keeps its class on the line (SPEC §18: class request denied, report=1).
  record_request(exchange_.judged.report ? std::optional(Reason::request_denied) : std::nullopt,
                 exchange_.record.status);
}

void InspectedConnection::close_after_flush(TunnelEnd end) {
  if (exchange_open()) record_exchange();
  if (h2()) h2()->go_away();  // the box learns which streams were taken; no new one is
  closing_end_ = end;
  phase_ = Phase::closing;
  arm(TimerRole::drain);  // reading stops (update_reading): only what is queued still goes out
}

void InspectedConnection::end_now(TunnelEnd end) {
  if (phase_ == Phase::ended) return;
  if (exchange_open()) record_exchange();
  phase_ = Phase::ended;
  timer_.disarm();
  timer_role_ = TimerRole::none;
  due_.need_upstream = false;
  box_.close(end != TunnelEnd::error, setup_.closer);
  // A clean end leaves an idle, clean origin connection to the pool (origin_pool.h): serve keeps
  // its slot until it is taken, evicted or closed. Not one whose endpoint was removed, however
  // this connection ended (a box that asked to close as the endpoint went ends as closed, not
  // shut down: found in review): no later connection could take it, and serve has already
  // evicted that endpoint's kept ones.
  const bool kept = !connection_refusal_ && end != TunnelEnd::shutdown && setup_.endpoint != nullptr &&
                    keep_idle_origin();
  link_.drop();
  InspectorEnded record;
  record.id = setup_.id;
  record.up = link_.sent();
  record.down = box_.queued();
  record.end = end;
  record.refusal = connection_refusal_;
  record.tls = connection_refusal_ == Reason::upstream_tls ? link_.tls_failure() : box_.tls_failure();
  record.pooled = kept;
  due_.ended = record;
}

bool InspectedConnection::close_when_flushed() {
  // A side that has closed takes nothing more: its output is not waited for.
  const bool client_flushed = !box_.stream() || (box_.stream()->output_length() == 0 && (!h2() || h2()->flushed()));
  const bool origin_flushed = link_.flushed();
  if (!client_flushed || !origin_flushed) return false;
  if (h2() && box_.stream() && !box_.eof() && timer_role_ != TimerRole::linger) {
    // HTTP/2: the box may be sending frames (acknowledgements, window updates) as the last answer
    // goes, and closing with them unread resets the connection, which can cost the box answers it
    // has not read. GOAWAY is out: the box is given kH2LingerSeconds to close first, its bytes
    // dropped (H2Front::stop) so that nothing it sends keeps the connection.
    h2()->stop();
    box_.stream()->send_close_notify();
    arm(TimerRole::linger);
    return false;
  }
  if (timer_role_ == TimerRole::linger && !box_.eof()) return false;
  end_now(closing_end_.value_or(TunnelEnd::error));
  return true;
}

}  // namespace boxproxy
