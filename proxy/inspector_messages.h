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
//     connection  {"op":"connection","id":N,"host":H,"port":P,"endpoint":E} fds: client, upstream
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
//     ended       {"op":"ended","id":N,"up":U,"down":D,"end":E[,"class":C][,"tls":T]}
//
// A request line, one for every request inspected, is written and read by hand in exactly the
// shape above, keys in that order (no JSON document on either side: inspector_messages.cc says
// what it saved); a "request" of any other shape is refused.
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
#include "proxy/stages/request_context.h"
#include "table/secret_value.h"
#include "table/tls_failure.h"

namespace boxproxy {

// Bounds on what the inspector may report (the log's lines stay short whatever it says).
inline constexpr std::size_t kMaxReportedMethodBytes = 32;
inline constexpr std::size_t kMaxReportedRuleBytes = 80;
inline constexpr std::size_t kMaxReportedPathBytes = 2048;
inline constexpr std::size_t kMaxCaPemBytes = 8 * 1024;
// SPEC §20: the longest path an ask carries whole (a request's path is asked about exactly, never
// cut: `always` for a cut path would cover every path that starts so). A longer one is not asked
// about: refused with asked=none.
inline constexpr std::size_t kMaxAskedPathBytes = 8 * 1024;

// ---- inspector -> serve ------------------------------------------------------------------------

struct InspectorReady {
  std::string ca_pem;  // the CA certificate, PEM
};

struct InspectorRequest {
  std::uint64_t id = 0;  // the connection's
  std::string method;
  std::string rule;        // deny[N] | rules[N] | access | a name | -
  std::string log_class;   // "ok", or a refusal's class
  std::uint16_t status = 0;
  std::uint64_t up = 0;
  std::uint64_t down = 0;
  std::uint64_t ms = 0;
  bool report = false;
  std::optional<std::string> path;  // with --log-paths, and for a report-mode denial
  std::optional<std::string> secret;  // secret misdirected: the secret's name (never its value)
  // SPEC §20's trace, each a list joined by ',', never a value: the swaps (NAME@PLACE), the
  // injected headers' names, the secrets found in the response and scrubbed (names).
  std::string swap;
  std::string inject;
  std::string sign;  // the signature made: "aws-sigv4" (the only one), or empty
  std::optional<RequestAsked> asked;  // held for the supervisor: what became of it
  std::string scrub;
};

// SPEC §20: a request held for the supervisor's answer.
struct InspectorAsk {
  std::uint64_t id = 0;  // the connection's
  std::uint64_t n = 0;   // the ask's number on that connection (from 1)
  std::string method;    // as sent (a token, at most kMaxReportedMethodBytes)
  std::string path;      // as sent, without its query (at most kMaxAskedPathBytes)
  bool query = false;    // it had one
  std::string rule;      // the rule= label
};

struct InspectorDial {
  std::uint64_t id = 0;
};

struct InspectorEnded {
  std::uint64_t id = 0;
  std::uint64_t up = 0;
  std::uint64_t down = 0;
  std::string end;                       // client-closed, upstream-closed, idle, error, ...
  std::optional<std::string> log_class;  // the connection's refusal: not tls, sni mismatch, ...
  std::optional<TlsFailure> tls = std::nullopt;  // why a handshake failed (table/tls_failure.h's words only)
};

using InspectorReport = std::variant<InspectorReady, InspectorRequest, InspectorDial, InspectorEnded, InspectorAsk>;

// A message from the inspector, checked; or why it is refused (the caller ends the inspector).
[[nodiscard]] std::variant<InspectorReport, std::string> parse_inspector_report(std::string_view bytes);

// The inspector's side of the same messages.
[[nodiscard]] std::string inspector_message(const InspectorReport& report);

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
                                    InspectorSecret, InspectorPlaceholder, InspectorAnswer>;

// The caller scrubs what a secret's message returns once it is sent (FdChannel::send copies it).
[[nodiscard]] std::string serve_message(const InspectorOrder& order);
// The inspector trusts serve, but a message cut or garbled still gets a clear error.
[[nodiscard]] std::variant<InspectorOrder, std::string> parse_serve_message(std::string_view bytes);

}  // namespace boxproxy
