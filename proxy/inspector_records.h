// SPDX-License-Identifier: Apache-2.0
// What the inspector reports of a request and of a connection, in one vocabulary on both sides of
// the process boundary: the inspected connection (proxy/inspect/inspected_connection.h) fills
// these very structs, the inspector sends them as they are (proxy/inspector_messages.h writes
// them), and serve reads them back into the same structs, every typed value checked once there:
// a class is a Reason or "ok", an end a TunnelEnd, a TLS failure a TlsFailure, an asked= one of
// its five words; a word of no vocabulary refuses the whole message. serve never matches a class
// or an end as text after that.
//
// No OpenSSL and nothing of the inspector's library here: serve includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "proxy/stages/request_context.h"
#include "proxy/tunnel_end.h"
#include "table/reason.h"
#include "table/tls_failure.h"

namespace boxproxy {

// Bounds on what the inspector may report (the log's lines stay short whatever it says).
inline constexpr std::size_t kMaxReportedMethodBytes = 32;
inline constexpr std::size_t kMaxReportedRuleBytes = 80;
inline constexpr std::size_t kMaxReportedPathBytes = 2048;
inline constexpr std::size_t kMaxReportedClassBytes = 32;  // table/reason.h's longest is 21
// SPEC §20: the longest path an ask carries whole (a request's path is asked about exactly, never
// cut: `always` for a cut path would cover every path that starts so). A longer one is not asked
// about: refused with asked=none.
inline constexpr std::size_t kMaxAskedPathBytes = 8 * 1024;

// SPEC §20's trace items of one kind, as the request line carries them and the log writes them:
// joined by ','. Each item is a name (NAME@PLACE for a swap), never a value; serve checks every
// item when it reads the list.
class TraceList {
 public:
  TraceList() = default;
  explicit TraceList(std::string joined) : joined_(std::move(joined)) {}

  void push_back(std::string_view item) {
    if (!joined_.empty()) joined_ += ',';
    joined_.append(item);
  }
  void clear() noexcept { joined_.clear(); }
  [[nodiscard]] bool empty() const noexcept { return joined_.empty(); }
  [[nodiscard]] std::string_view text() const noexcept { return joined_; }  // "a,b"
  bool operator==(const TraceList&) const = default;

 private:
  std::string joined_;
};

// One request of an inspected connection, when it ends or is refused (the "request" message).
struct InspectorRequest {
  std::uint64_t id = 0;   // the connection's
  std::string method{"-"};  // as sent, cut to kMaxReportedMethodBytes; "-" when the head did not parse
  std::string rule = "-";  // the deciding rule's label (deny[N] | rules[N] | access | a name), or "-"
  std::optional<Reason> refusal{};  // none: "ok"; a report-mode denial: request denied (with report)
  std::uint16_t status = 0;  // what the client was answered; 0 when no answer reached it
  std::uint64_t up = 0;      // bytes of this request sent to the origin (head and body)
  std::uint64_t down = 0;    // bytes of its answer queued to the client (head and body)
  std::uint64_t ms = 0;      // from its head's end to its end
  bool report = false;       // a report-mode denial, let through
  std::optional<std::string> path{};  // with --log-paths: the target without its query, cut to kMaxReportedPathBytes
  std::optional<std::string> secret{};  // secret misdirected: the secret's name (never its value)
  // SPEC §20's trace, never a value: each swap as NAME@PLACE, each injected header's name, the
  // signature made, and the secrets found in its response and scrubbed.
  TraceList swap{};
  TraceList inject{};
  std::string sign{};  // "aws-sigv4" (the only one); empty: none
  std::optional<RequestAsked> asked{};  // held for the supervisor: what became of it
  TraceList scrub{};
};

// SPEC §20: a request held for the supervisor's answer (the "ask" message; serve answers with
// the "answer" order, the inspected connection takes it with answer_ask).
struct InspectorAsk {
  std::uint64_t id = 0;  // the connection's
  std::uint64_t n = 0;   // the ask's number on that connection (from 1)
  std::string method{};  // as sent (a token, at most kMaxReportedMethodBytes)
  std::string path{};    // as sent, without its query (at most kMaxAskedPathBytes)
  bool query = false;    // it had one
  std::string rule{};    // the rule= label
};

// The connection, when it ends (the "ended" message).
struct InspectorEnded {
  std::uint64_t id = 0;    // the connection's
  std::uint64_t up = 0;    // every byte sent to origins (requests, and a relay's)
  std::uint64_t down = 0;  // every byte queued to the client (responses, refusals, a relay's)
  // Why it ended, in the words of a tunnel's done line (SPEC §12): client-closed, upstream-closed
  // (the origin's response ended it), idle-timeout (the head timeout as much as --idle-timeout: the
  // box sent nothing in time), error (a side failed, or a refusal closed it), shutdown (its
  // endpoint was removed).
  TunnelEnd end = TunnelEnd::error;
  // The connection's own refusal (not tls, sni mismatch, upstream tls; or bad request, request
  // denied, upstream tls when the inspector could not take it): serve logs it in place of the done line.
  std::optional<Reason> refusal{};
  std::optional<TlsFailure> tls{};  // why a handshake failed: the origin's for upstream tls, else the box's
  // Its origin connection, idle and reusable, was kept by the inspector under this connection's id
  // (proxy/inspect/origin_pool.h): serve keeps the slot, filed for the next connection to the same
  // host, port and address (proxy/origin_ledger.h), until the inspector says "unpooled" or serve
  // evicts it.
  bool pooled = false;
};

}  // namespace boxproxy
