// SPDX-License-Identifier: Apache-2.0
// An inspected connection's response stages (proxy/stages/response_chain.h; SPEC §19a: the
// scrubber): made for each allowed request when the session holds a secret, given every head and
// body byte the origin sends back (interim heads, the head, the body, trailers, an upgraded
// stream), and released to the box when the response ends or the origin has been quiet a while.
#include "proxy/inspect/inspected_connection.h"

#include "proxy/stages/coding_stage.h"
#include "table/ascii.h"

namespace boxproxy {

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
  link_.watch_quiet(false);
  std::string out;
  exchange_.flush_response_stages(out);
  queue_to_client(out);
}

void InspectedConnection::watch_quiet_origin() {
  const ResponseChain* stages = exchange_.response_stages.get();
  link_.watch_quiet(stages != nullptr && stages->held() > 0);
}

}  // namespace boxproxy
