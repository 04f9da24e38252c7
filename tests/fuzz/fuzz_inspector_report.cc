// SPDX-License-Identifier: Apache-2.0
// What serve reads from its inspector (proxy/inspector_messages: parse_inspector_report). The
// inspector parses every hostile byte of an inspected connection with OpenSSL, so serve takes
// nothing it says on trust: its messages are checked here as a compromised inspector could write
// them. Invariants:
//   - a message is refused or read, never more (no crash, no leak, nothing undefined);
//   - what is read holds what serve's log lines may carry: a request's method, rule, path and
//     secret name are printable ASCII with no space, each within its bound, its status at most
//     999; its class, and an end's, a typed value of the vocabulary (Reason, TunnelEnd), never text;
//   - what is read, written again (inspector_message) and read back is the same report, and
//     writing that again gives the same bytes: the writer and the reader agree on every accepted
//     message, the hand-written request line's included.
#include <string>
#include <string_view>
#include <variant>

#include "proxy/inspector_messages.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

bool printable(std::string_view s, bool spaces) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  for (const char c : s) {
    if ((c < 0x21 && !(spaces && c == ' ')) || c > 0x7e) return false;
  }
  return true;
}

void check_request(const InspectorRequest& r) {
  FUZZ_CHECK(printable(r.method, false) && r.method.size() <= kMaxReportedMethodBytes);
  FUZZ_CHECK(printable(r.rule, false) && r.rule.size() <= kMaxReportedRuleBytes);
  FUZZ_CHECK(r.status <= 999);
  FUZZ_CHECK(!r.path || (printable(*r.path, false) && r.path->size() <= kMaxReportedPathBytes));
  FUZZ_CHECK(!r.secret || (printable(*r.secret, false) && r.secret->size() <= 32));
}

bool same(const InspectorReport& a, const InspectorReport& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<InspectorRequest>(&a)) {
    const auto& y = std::get<InspectorRequest>(b);
    return x->id == y.id && x->method == y.method && x->rule == y.rule && x->refusal == y.refusal &&
           x->status == y.status && x->up == y.up && x->down == y.down && x->ms == y.ms &&
           x->report == y.report && x->path == y.path && x->secret == y.secret && x->swap == y.swap &&
           x->inject == y.inject && x->sign == y.sign && x->asked == y.asked && x->scrub == y.scrub;
  }
  if (const auto* x = std::get_if<InspectorEnded>(&a)) {
    const auto& y = std::get<InspectorEnded>(b);
    return x->id == y.id && x->up == y.up && x->down == y.down && x->end == y.end && x->refusal == y.refusal &&
           x->tls == y.tls && x->pooled == y.pooled;
  }
  if (const auto* x = std::get_if<InspectorDial>(&a)) return x->id == std::get<InspectorDial>(b).id;
  if (const auto* x = std::get_if<InspectorUnpooled>(&a)) return x->id == std::get<InspectorUnpooled>(b).id;
  if (const auto* x = std::get_if<InspectorAsk>(&a)) {
    const auto& y = std::get<InspectorAsk>(b);
    return x->id == y.id && x->n == y.n && x->method == y.method && x->path == y.path && x->query == y.query &&
           x->rule == y.rule;
  }
  return std::get<InspectorReady>(a).ca_pem == std::get<InspectorReady>(b).ca_pem;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parsed = parse_inspector_report(fuzz::as_text(data, size));
  const auto* report = std::get_if<InspectorReport>(&parsed);
  if (report == nullptr) return 0;
  if (const auto* request = std::get_if<InspectorRequest>(report)) check_request(*request);
  if (const auto* ask = std::get_if<InspectorAsk>(report)) {
    // SPEC §20: what reaches the supervisor's event and the always set: printable, bounded, no query.
    FUZZ_CHECK(printable(ask->method, false) && ask->method.size() <= kMaxReportedMethodBytes);
    FUZZ_CHECK(printable(ask->path, false) && ask->path.size() <= kMaxAskedPathBytes && ask->path.starts_with('/') &&
               ask->path.find('?') == std::string::npos);
  }
  const std::string written = inspector_message(*report);
  const auto again = parse_inspector_report(written);
  const auto* back = std::get_if<InspectorReport>(&again);
  FUZZ_CHECK(back != nullptr);
  FUZZ_CHECK(same(*report, *back));
  FUZZ_CHECK(inspector_message(*back) == written);
  return 0;
}
