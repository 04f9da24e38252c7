// SPDX-License-Identifier: Apache-2.0
// The messages serve and its inspector (boxproxy-inspect, proxy/inspect/DESIGN.md) exchange over
// their FdChannel (proxy/fd_channel.h): one JSON object each, {"op": ..., ...}, with the
// descriptors each kind carries.
//
//   serve -> inspector
//     start       {"op":"start","label":L,"log_paths":B,"head_timeout":S,"idle_timeout":S,
//                  "max_head_bytes":N,"max_held_body":N,"endpoints":[...]}                     fds: trust store
//                 file[, CA certificate file, CA key file] (the operator's --ca-cert/--ca-key)
//     endpoints   {"op":"endpoints","endpoints":[...]}                      (a live change)
//     connection  {"op":"connection","id":N,"host":H,"port":P,"endpoint":E[,"pooled":X]}
//                 fds: client, upstream; or client alone: with "pooled", the inspector's kept origin
//                 connection X is this one's; without, it has none yet and asks for a "dial"
//     evict       {"op":"evict","id":X}   (close the kept origin connection X; answered by "unpooled")
//     dialled     {"op":"dialled","id":N,"ok":B}                            fds: upstream when ok
//     secret      {"op":"secret","name":NAME,"value":HEX|null}   (SPEC §19: set, or revoke with null)
//     placeholder {"op":"placeholder","name":NAME,"value":P}     (SPEC §19: NAME's stand-in, bxp_...)
//     answer      {"op":"answer","id":N,"n":K,"asked":"once"|"always"|"deny"|"timeout"|"none"}
//                 (SPEC §20: what became of the connection's ask K)
//   inspector -> serve
//     ready       {"op":"ready","ca":PEM}
//     request     {"op":"request","id":N,"method":M,"rule":R,"class":C,"status":S,"up":U,
//                  "down":D,"ms":T,"report":B[,"path":P][,"secret":NAME][,"swap":"NAME@PLACE,..."][,"inject":"H,..."]
//                  [,"sign":"aws-sigv4"][,"asked":A][,"scrub":"NAME,..."]}
//     ask         {"op":"ask","id":N,"n":K,"method":M,"path":P,"query":B,"rule":R}
//                 (SPEC §20: the connection's request K waits for the supervisor; K counts from 1)
//     dial        {"op":"dial","id":N}             (the origin closed a kept-alive connection)
//     ended       {"op":"ended","id":N,"up":U,"down":D,"end":E[,"class":C][,"tls":T][,"pooled":true]}
//                 ("pooled": its idle origin connection is kept under N: serve keeps N's slot)
//     unpooled    {"op":"unpooled","id":X}  (the kept origin connection X closed: its slot is free)
//
// C is "ok" or a refusal's class (table/reason.h), E an end's word (proxy/tunnel_end.h), T a TLS
// failure's word (table/tls_failure.h), A an asked= word: each is read into its typed value
// (proxy/inspector_records.h) and any other word refuses the message.
//
// A request line, one for every request inspected, is written and read by hand in exactly the
// shape above, keys in that order (no JSON document on either side: inspector_messages.cc says
// what it saved), both driven by one table of its fields; a "request" of any other shape is
// refused.
//
// A secret's value goes as hex (table/secret_value.h's secret_hex): no JSON escape can change it.
// Its message is written and read by hand, into strings that are scrubbed (SecretText, and
// FdChannel scrubs every message it sends or receives), never through a JSON document whose
// strings would be freed as they are.
//
// "endpoints" is the config file's "inspect" array as --check-config writes it; E in
// "connection" is the host entry of the endpoint the connection reaches, as written there.
//
// The inspector parses hostile TLS and HTTP, so serve takes nothing it says on trust: every
// message is checked here for its shape and bounds (its nesting before it is parsed, each string's
// length and bytes, each number's range), and what does not hold ends the inspector. What it
// reports is logged as data, through the same escaping as a box's host names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "proxy/defaults.h"
#include "proxy/inspector_records.h"
#include "proxy/stages/request_context.h"
#include "table/secret_value.h"

namespace boxproxy {

// The longest CA certificate the ready message may carry.
inline constexpr std::size_t kMaxCaPemBytes = 8 * 1024;

// ---- inspector -> serve ------------------------------------------------------------------------

struct InspectorReady {
  std::string ca_pem;  // the CA certificate, PEM
};

// InspectorRequest, InspectorAsk and InspectorEnded: proxy/inspector_records.h.

struct InspectorDial {
  std::uint64_t id = 0;
};

// A kept origin connection closed by the inspector (its idle time, the origin's close or bytes,
// the pool's bounds): serve frees the slot it filed under `id`, if it still holds it.
struct InspectorUnpooled {
  std::uint64_t id = 0;
};

using InspectorReport =
    std::variant<InspectorReady, InspectorRequest, InspectorDial, InspectorEnded, InspectorAsk, InspectorUnpooled>;

// A message from the inspector, checked; or why it is refused (the caller ends the inspector).
[[nodiscard]] std::variant<InspectorReport, std::string> parse_inspector_report(std::string_view bytes);

// The inspector's side of the same messages; a request's (one for every request) without a copy
// into a report.
[[nodiscard]] std::string inspector_message(const InspectorReport& report);
[[nodiscard]] std::string inspector_message(const InspectorRequest& request);

// ---- serve -> inspector ------------------------------------------------------------------------

struct InspectorStart {
  std::string label;
  bool log_paths = false;
  std::string endpoints_json;  // the "inspect" array, as --check-config writes it
  // serve's own bounds, for every inspected connection: --head-timeout (the box's TLS handshake,
  // each request head), --idle-timeout (0: none) and --max-head-bytes (each request head), each
  // within its option's range.
  double head_timeout = defaults::kHeadTimeoutSeconds;
  double idle_timeout = defaults::kIdleTimeoutSeconds;
  std::size_t max_head_bytes = defaults::kMaxHeadBytes;
  std::size_t max_held_body = defaults::kMaxHeldBody;  // --max-held-body (SPEC §20)
};

struct InspectorEndpoints {
  std::string endpoints_json;
};

struct InspectorConnection {
  std::uint64_t id = 0;
  std::string host;  // decided
  std::uint16_t port = 0;
  std::string endpoint;  // its host entry
  // The kept origin connection (an earlier connection's id) this one takes over; with it, or
  // without an upstream descriptor, serve sent the client's descriptor alone.
  std::optional<std::uint64_t> pooled{};
};

// The kept origin connection `id` must close (its slot went to a new connection at the tunnel cap,
// or past serve's bounds, or its endpoint was removed): the inspector closes it, then says
// "unpooled" (serve frees a slot it still held for it).
struct InspectorEvict {
  std::uint64_t id = 0;
};

struct InspectorDialled {
  std::uint64_t id = 0;
  bool ok = false;
};

// A secret set (value) or revoked (no value). The name is a checked secret name; the value a
// checked one (check_secret_value).
struct InspectorSecret {
  std::string name;
  std::optional<SecretText> value;
};

// A secret's placeholder (make_placeholder's), which the box may hold: not a secret itself.
struct InspectorPlaceholder {
  std::string name;
  std::string value;
};

// SPEC §20: the answer to ask `n` of connection `id`.
struct InspectorAnswer {
  std::uint64_t id = 0;
  std::uint64_t n = 0;
  RequestAsked asked = RequestAsked::none;
};

using InspectorOrder = std::variant<InspectorStart, InspectorEndpoints, InspectorConnection, InspectorDialled,
                                    InspectorSecret, InspectorPlaceholder, InspectorAnswer, InspectorEvict>;

// The caller scrubs what a secret's message returns once it is sent (FdChannel::send copies it).
[[nodiscard]] std::string serve_message(const InspectorOrder& order);
// The inspector trusts serve, but a message cut or garbled still gets a clear error.
[[nodiscard]] std::variant<InspectorOrder, std::string> parse_serve_message(std::string_view bytes);

}  // namespace boxproxy
