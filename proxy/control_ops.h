// The requests of the supervisor's channel (SPEC §15): one JSON line in, one reply line out.
//
//   {"op":"hello"}                                   {"id":..,"ok":true,"v":1,"version":..,"pid":N}
//   {"op":"allow","add"|"remove"|"set":[E,...]}      {"id":..,"ok":true,"list":[...]|null}
//   {"op":"allow","set":null}
//   {"op":"stats"}                                   the stats object (SPEC §12) with "ok":true
//   {"op":"subscribe"}                               {"id":..,"ok":true}, then decision events
//   {"op":"drain"}                                   {"id":..,"ok":true}, then the proxy drains
//   {"op":"answer","ask":K,"verdict":V}              {"id":..,"ok":true}
//
// Every reply carries "id" (the request's, as given, or null) and "ok". A request that is not
// understood, or that cannot be done, gets {"id":..,"ok":false,"error":"<words>"} and changes
// nothing: every part of it is checked before anything is changed.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace boxproxy {

class ProxyServer;
class ControlChannel;

// What a request may act on.
struct ControlContext {
  ProxyServer& server;
  ControlChannel& channel;             // the channel that asked (subscribe marks it)
  const std::function<void()>& drain;  // starts a drain (the reply goes out first)
};

// The reply (one line, ASCII, no newline) to the request `line`.
[[nodiscard]] std::string control_reply(std::string_view line, ControlContext& context);

// The error reply for a line longer than kMaxControlLineBytes.
[[nodiscard]] std::string line_too_long_reply();

// The protocol's version, "v" in hello's reply.
inline constexpr int kControlProtocolVersion = 1;

}  // namespace boxproxy
