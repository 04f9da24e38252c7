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

void InspectedConnection::start_response_stages() {
  exchange_.response_stages.reset();
  exchange_.scrub = nullptr;
  if (setup_.scrub == nullptr) return;
  // Every response of a session that holds a secret, on every inspected endpoint: an origin may
  // keep a value one endpoint was given and hand it back through another.
  std::shared_ptr<const ScrubPatterns> patterns = setup_.scrub->patterns();
  if (!patterns) return;
  auto stage = std::make_unique<ScrubStage>(std::move(patterns));
  exchange_.scrub = stage.get();
  exchange_.response_stages = std::make_unique<ResponseChain>();
  exchange_.response_stages->add(std::move(stage));
}

void InspectedConnection::renew_response_stages() {
  if (setup_.scrub == nullptr) return;
  std::shared_ptr<const ScrubPatterns> now = setup_.scrub->patterns();  // the same, unless a secret changed
  const ScrubPatterns* was = exchange_.scrub != nullptr ? exchange_.scrub->patterns() : nullptr;
  if (now.get() == was) return;
  // A stream open for hours (server-sent events, a WebSocket) must not carry a value set after it
  // began: what comes from here on is searched for the secrets in force now.
  if (exchange_.scrub == nullptr) {
    start_response_stages();
    return;
  }
  std::string out;
  exchange_.scrub->renew(std::move(now), out);
  queue_to_client(out);
}

bool InspectedConnection::stage_head(std::string& text) {
  if (exchange_.response_stages) exchange_.response_stages->on_head(text);
  // A match becomes the longer placeholder: a head of many short matches could grow five-fold,
  // past what the box side (and the HTTP/2 front) takes. Such a head is the origin's fault.
  return text.size() <= kMaxResponseHeadBytes;
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
  ResponseChain* stages = exchange_.response_stages.get();
  if (stages == nullptr || stages->held() == 0) return;
  std::string out;
  stages->flush(out);
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
