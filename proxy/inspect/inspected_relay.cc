// SPDX-License-Identifier: Apache-2.0
// An inspected connection's WebSocket relay (proxy/inspect/inspected_connection.h): a 101 to an
// upgrade that was asked for and allowed switches the connection to passing bytes both ways, until
// either side closes.
#include "proxy/inspect/inspected_connection.h"

#include "proxy/wire/http_forward.h"

namespace boxproxy {

// The origin's 101, whose head is the first `head_bytes` of its input.
bool InspectedConnection::switch_to_relay(const ResponseHead& head, std::size_t head_bytes) {
  // Only a WebSocket that was asked for, and allowed, is switched to (SPEC §18).
  if (!exchange_.judged.websocket || !switches_to_websocket(head)) return origin_broke();
  std::string answer = rewrite_switching_head(head);
  evbuffer_drain(link_.stream()->input(), head_bytes);  // `head` points into what this drops: not used after
  if (!exchange_.stage_head(answer, kMaxResponseHeadBytes)) return origin_broke();
  queue_to_client(answer);
  exchange_.response = InspectedExchange::Response::body;  // the 101's: the relay carries the rest
  exchange_.record.status = 101;
  // After a 101 the head is never sent again, and the relay never reaches finish_exchange: its
  // injected credential (SPEC §19) is overwritten now, not when the connection goes (review).
  scrub(exchange_.judged.upstream);
  exchange_.request_body = BodyCursor(BodyFraming{BodyFraming::Kind::until_close, 0});
  exchange_.response_body = BodyCursor(BodyFraming{BodyFraming::Kind::until_close, 0});
  phase_ = Phase::relaying;
  arm(TimerRole::idle);
  return true;
}

bool InspectedConnection::relay() {
  const Moved to_origin = move_toward(Toward::origin, exchange_.request_body);
  const Moved to_client = move_toward(Toward::client, exchange_.response_body);
  if (box_.eof() && box_.stream()->input_length() == 0) {
    release_held_response();  // the origin's last bytes, held by the stages, still go out
    close_after_flush(TunnelEnd::client_closed);
    return true;
  }
  if (link_.end() != InspectedOriginLink::End::open && link_.stream()->input_length() == 0) {
    if (link_.end() == InspectedOriginLink::End::failed) box_.abort();
    release_held_response();  // the stream's last bytes, held by the stages
    close_after_flush(TunnelEnd::upstream_closed);
    return true;
  }
  return to_origin.moved || to_client.moved;
}

}  // namespace boxproxy
