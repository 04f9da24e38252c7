// SPDX-License-Identifier: Apache-2.0
// The requests of the supervisor's channel (SPEC §15): one JSON line in, one reply line out.
//
//   {"op":"hello"}                                   {"id":..,"ok":true,"v":1,"version":..,"pid":N}
//   {"op":"allow","add"|"remove"|"set":[E,...]}      {"id":..,"ok":true,"list":[...]|null}
//   {"op":"allow","set":null}
//   {"op":"inspect","add"|"set":[OBJECT,...]}        {"id":..,"ok":true,"inspect":[OBJECT,...]}
//   {"op":"inspect","remove":[E,...]}
//   {"op":"stats"}                                   the stats object (SPEC §12) with "ok":true
//   {"op":"subscribe"}                               {"id":..,"ok":true}, then decision events
//   {"op":"drain"}                                   {"id":..,"ok":true}, then the proxy drains
//   {"op":"answer","ask":K,"verdict":V}              {"id":..,"ok":true}
//   {"op":"secret","name":N,"value":"..."|null}      {"id":..,"ok":true}   (SPEC §19; never echoes the value)
//
// Every reply carries "id" (the request's, as given, or null) and "ok". A request that is not
// understood, or that cannot be done, gets {"id":..,"ok":false,"error":"<words>"} and changes
// nothing: every part of it is checked before anything is changed.
#pragma once

#include <string>
#include <string_view>

#include "proxy/session_control.h"

namespace boxproxy {

// What a request may act on, and what it asks of the channel it came on.
struct ControlContext {
  SessionControl& session;
  bool subscribe = false;  // set by "subscribe": the caller marks its channel before the reply goes out
};

// The reply (one line, ASCII, no newline) to the request `line`.
[[nodiscard]] std::string control_reply(std::string_view line, ControlContext& context);

// The error reply for a line longer than kMaxControlLineBytes.
[[nodiscard]] std::string line_too_long_reply();

// The protocol's version, "v" in hello's reply.
inline constexpr int kControlProtocolVersion = 1;

}  // namespace boxproxy
