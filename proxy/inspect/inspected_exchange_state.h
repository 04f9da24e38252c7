// SPDX-License-Identifier: Apache-2.0
// One request of an inspected connection through the stages (proxy/inspect/inspected_connection.h),
// from its head's end to its last byte: how it was judged (proxy/stages/inspected_request.h), its
// request line as it stands, where its body and its response's are, how far its response has come,
// the response's own stages (SPEC §19a) and, while the signer needs its hash, its body held whole
// (SPEC §20). The connection makes a new one for each request and drives it; this object holds
// what is the request's alone, so nothing of one request is ever read as the next one's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "proxy/clock.h"
#include "proxy/inspector_records.h"
#include "proxy/inspect/h2_front.h"
#include "proxy/stages/inspected_request.h"
#include "proxy/stages/response_chain.h"
#include "proxy/http_exchange.h"
#include "table/inspect_endpoint.h"

namespace boxproxy {

class ScrubSource;  // proxy/inspect/scrub_source.h
class ScrubStage;   // proxy/stages/scrub_stage.h

struct InspectedExchange {
  // How far the response has come: one value at a time, in this order. The request's body is not
  // part of it: over HTTP/2, or for an early answer to an upload, the response may begin (and end)
  // while the request's body still comes, so request_done is a fact of its own.
  enum class Response : std::uint8_t {
    awaited,  // no byte of it has reached the box's output yet
    interim,  // an interim response (100 Continue) went to the box; the final head is still to come
    body,     // its final head went to the box (or a 101's: the relay carries the rest); its body passes
    done,     // its body ended: the exchange finishes
  };

  // A request held for its body's hash (SPEC §20, inspected_held_body.cc): its head, copied (the
  // box's input it came in moves on), the endpoint that judged it, and its body as framed.
  struct HeldRequest {
    RequestMessage head;
    std::shared_ptr<const InspectEndpoint> endpoint;
    H2Front::EvBufferPtr body;
  };

  // A byte of the response (an interim one too) reached the box's output.
  [[nodiscard]] bool response_started() const noexcept { return response != Response::awaited; }
  // The final head has not come yet: what the origin sends is read as a head.
  [[nodiscard]] bool awaiting_head() const noexcept {
    return response == Response::awaited || response == Response::interim;
  }

  // The hash the signer signs the held body with (AWS's payload hash: a chunked body's data, not its
  // framing); nullopt when it cannot be made (the decoder did not read the body to its end).
  [[nodiscard]] std::optional<std::string> held_body_hash() const;

  // ---- the response's stages (SPEC §19a: scrubbing), from `source` (null: none) ----
  // Made for an allowed request when the session holds a secret; else the response passes as it
  // comes.
  void start_response_stages(ScrubSource* source);
  // Before more of the response goes through the stages: a secret set, replaced or revoked since
  // they were made applies to what comes next (SPEC §19a: every value in force). What the old
  // patterns held is appended to `out`, for the box.
  void renew_response_stages(ScrubSource* source, std::string& out);
  // A head about to go to the box, through the stages; false when it must not go: grown past
  // `most` by scrubbing.
  [[nodiscard]] bool stage_head(std::string& text, std::size_t most);
  // The same for a head given as a message (to the HTTP/2 front): ResponseChain::on_head's, each
  // field as its line would go; false also when a line no longer reads as a field.
  [[nodiscard]] bool stage_head(ResponseMessage& head, std::size_t most);
  // Everything the stages hold, appended to `out` (for the box).
  void flush_response_stages(std::string& out);
  // The response is whole and recorded: its stages go (a connection left idle must not keep the
  // patterns of a secret since replaced: a table of up to 32 MiB each).
  void end_response_stages() noexcept {
    scrub = nullptr;
    response_stages.reset();
  }

  InspectedRequest judged;
  InspectorRequest record;
  Clock::time_point started{};
  BodyCursor request_body;
  BodyCursor response_body;
  std::string method;  // as sent (response framing depends on it: HEAD)
  bool request_done = false;  // its body was read whole (or it had none)
  Response response = Response::awaited;
  bool origin_reusable = false;  // the origin allows another request on its connection
  bool keep_client = false;      // the client's connection goes on after this exchange
  bool retried = false;          // sent again once on a new origin connection
  bool reused_origin = false;    // its origin connection carried an earlier request
  bool recorded = false;         // its InspectorRequest is queued
  // Its response's stages, when the session holds a secret; null: the response passes as it comes.
  std::unique_ptr<ResponseChain> response_stages;
  ScrubStage* scrub = nullptr;  // the scrubbing stage of response_stages (which owns it), if any
  std::unique_ptr<HeldRequest> held;  // set while (and after) its body is held for signing
};

}  // namespace boxproxy
