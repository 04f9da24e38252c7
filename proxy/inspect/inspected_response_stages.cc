// SPDX-License-Identifier: Apache-2.0
// An inspected connection's response stages (proxy/stages/response_chain.h; SPEC §19a: the
// scrubber): made for each allowed request when the session holds a secret, given every head and
// body byte the origin sends back (interim heads, the head, the body, trailers, an upgraded
// stream), and released to the box when the response ends or the origin has been quiet a while.
#include "proxy/inspect/inspected_connection.h"

#include "proxy/stages/coding_stage.h"
#include "proxy/stages/scrub_stage.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// How long the origin may be quiet before what the stages hold goes to the box anyway (SPEC §19a:
// 50 ms): a stream (server-sent events, a streamed completion, a WebSocket) never stalls on a
// hold; a value split across a longer pause is not caught, and the manual says so.
constexpr double kQuietOriginSeconds = 0.05;

}  // namespace

void InspectedConnection::renew_response_stages() {
  std::string out;
  exchange_.renew_response_stages(setup_.scrub, out);
  queue_to_client(out);
}

bool InspectedConnection::coding_unreadable(const ResponseHead& head) const {
  if (!setup_.endpoint || !carries_credentials(*setup_.endpoint)) return false;
  for (const HeaderField& field : head.headers) {
    const bool coded = iequals(field.name, "Content-Encoding") || iequals(field.name, "grpc-encoding");
    if (coded && !iequals(field.value, "identity")) return true;
  }
  return false;
}

void InspectedConnection::release_held_response() {
  quiet_origin_.disarm();
  std::string out;
  exchange_.flush_response_stages(out);
  queue_to_client(out);
}

void InspectedConnection::watch_quiet_origin() {
  const ResponseChain* stages = exchange_.response_stages.get();
  if (stages != nullptr && stages->held() > 0) {
    quiet_origin_.arm(kQuietOriginSeconds);  // again from now: the origin just sent something
  } else {
    quiet_origin_.disarm();
  }
}

}  // namespace boxproxy
