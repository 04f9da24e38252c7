// SPDX-License-Identifier: Apache-2.0
// One request on an inspected connection, judged (proxy/wire/inspected_request.h).
#include "proxy/wire/inspected_request.h"

#include <array>
#include <variant>

#include "proxy/wire/http_forward.h"
#include "table/ascii.h"
#include "table/reason.h"

namespace boxproxy {
namespace {

// The classes and statuses §6 already names come from its table (table/reason.cc), so the two
// never disagree; §18's own come from table/inspect_endpoint.h's verdict_class or are §18's words.
const std::array<InspectRefusalInfo, 12>& refusal_table() noexcept {
  static const std::array<InspectRefusalInfo, 12> table = {{
      {InspectRefusal::not_tls, "not tls", 0},
      {InspectRefusal::sni_mismatch, log_class(Reason::sni_mismatch), 0},
      {InspectRefusal::bad_request, log_class(Reason::bad_request), info(Reason::bad_request).http_status},
      {InspectRefusal::head_too_large, log_class(Reason::head_too_large), info(Reason::head_too_large).http_status},
      {InspectRefusal::bad_framing, log_class(Reason::bad_framing), info(Reason::bad_framing).http_status},
      {InspectRefusal::host_mismatch, log_class(Reason::host_mismatch), info(Reason::host_mismatch).http_status},
      {InspectRefusal::bad_path, verdict_class(RequestVerdict::bad_path), 400},
      {InspectRefusal::request_denied, verdict_class(RequestVerdict::request_denied), 403},
      {InspectRefusal::dial_failed, log_class(Reason::dial_failed), info(Reason::dial_failed).http_status},
      {InspectRefusal::upstream_tls, "upstream tls", 502},
      {InspectRefusal::secret_missing, log_class(Reason::secret_missing), info(Reason::secret_missing).http_status},
      {InspectRefusal::secret_misdirected, log_class(Reason::secret_misdirected),
       info(Reason::secret_misdirected).http_status},
  }};
  return table;
}

bool same_host(const Target& a, const Target& b) {
  if (a.address && b.address) return *a.address == *b.address;
  if (a.address || b.address) return false;
  return iequals(a.host, b.host);  // names compare without regard to case (RFC 9110 §4.2.3)
}

// Whether the one Host header names the decided host and port (SPEC §18, "Host"): the port may be
// left out only when the decided one is the scheme's default. What it stops: a box reaching an
// inspected endpoint's address and asking it, by Host, for another site the rules never saw.
bool host_names_origin(const HeaderField& host, const DecidedOrigin& origin) {
  if (host.value.find('@') != std::string_view::npos) return false;  // userinfo: read otherwise elsewhere
  TargetResult named = parse_authority_default_port(host.value, origin.default_port);
  const Target* target = std::get_if<Target>(&named);
  return target != nullptr && same_host(*target, origin.target) && target->port == origin.target.port;
}

bool has_body(const BodyFraming& framing) noexcept {
  return framing.kind == BodyFraming::Kind::chunked ||
         (framing.kind == BodyFraming::Kind::length && framing.length > 0);
}

bool expects_continue(const RequestHead& head) {
  for (const auto& field : head.headers) {
    if (iequals(field.name, "Expect") && iequals(field.value, "100-continue")) return true;
  }
  return false;
}

// What add_credentials reads besides the request.
struct Credentials {
  const DecidedOrigin& origin;
  const SecretLookup& secrets;
  const Placeholders* placeholders;
  RequestVerdict verdict;  // the rules' answer to the request as the box sent it
};

// A request the rules let through, refused by what SPEC §19 adds: as every refusal, it is neither
// a report-mode pass nor an upgrade (nothing is sent, so no 101 can come to switch on).
void refuse_after_rules(InspectedRequest& judged, InspectRefusal refusal) {
  judged.report = false;
  judged.websocket = false;
  judged.refusal = refusal;
}

// Never sent without its credential, whatever the mode: a report-mode denial is not let through,
// and the line says `secret missing`, not report=1. The secret's name is not logged.
void refuse_missing(InspectedRequest& judged) { refuse_after_rules(judged, InspectRefusal::secret_missing); }

// SPEC §19 on a request the rules let through: its placeholders swapped for their values, the
// "inject" headers set, the head the origin gets built. Values are read now, from the store in
// force now, so a rotation applies from the next request of every connection.
void add_credentials(InspectedRequest& judged, const RequestHead& head, const InspectEndpoint& endpoint,
                     const Credentials& with) {
  static const Placeholders kNone;
  const SwappedHead swapped(head, endpoint, with.placeholders != nullptr ? *with.placeholders : kNone, with.secrets);
  if (swapped.missing()) return refuse_missing(judged);
  // A value in the target changes the path the rules judged (a value may hold '/', '?', '%'):
  // judged again, and any other answer is `bad path`, so a value never opens a path its
  // placeholder did not.
  if (swapped.target_changed()) {
    const RequestJudgement again = judge_request(endpoint, head.method, swapped.head().target);
    if (again.verdict != with.verdict || again.rule != judged.rule) return refuse_after_rules(judged, InspectRefusal::bad_path);
  }
  InjectedFields injected;
  if (!endpoint.inject.empty()) {
    injected = expand_endpoint_inject(endpoint, with.secrets);
    if (injected.missing) return refuse_missing(judged);
  }
  const RequestHead& sent = swapped.head();
  std::string text = forward_origin_form_head(endpoint.inject.empty() ? sent : without_injected_headers(sent, endpoint),
                                              origin_host_field(with.origin), judged.websocket,
                                              !judged.client_keep_alive);
  judged.upstream_head = injected.fields.empty() ? std::move(text) : add_injected_fields(text, injected);
}

}  // namespace

const InspectRefusalInfo& inspect_refusal_info(InspectRefusal refusal) noexcept {
  return refusal_table()[static_cast<std::size_t>(refusal)];
}

std::string inspect_refusal_response(InspectRefusal refusal, bool close) {
  const InspectRefusalInfo& row = inspect_refusal_info(refusal);
  const std::string words = "egress refused: " + std::string(row.log_class);
  std::string out;
  out.reserve(192);
  out += "HTTP/1.1 ";
  out += std::to_string(row.status);
  out += ' ';
  out += words;
  out += "\r\nx-egress-refused: ";
  out += row.log_class;
  out += "\r\ncontent-type: text/plain\r\ncontent-length: ";
  out += std::to_string(words.size() + 1);
  out += close ? "\r\nconnection: close\r\n\r\n" : "\r\n\r\n";
  out += words;
  out += '\n';
  return out;
}

std::string origin_host_field(const DecidedOrigin& origin) {
  const Target& target = origin.target;
  const bool bracket = target.address && !target.address->is_v4();
  std::string out;
  if (bracket) out += '[';
  out += target.host;
  if (bracket) out += ']';
  if (target.port != origin.default_port) {
    out += ':';
    out += std::to_string(target.port);
  }
  return out;
}

InspectedRequest judge_inspected_request(const RequestHead& head, const InspectEndpoint& endpoint,
                                         const DecidedOrigin& origin, const SecretLookup& secrets,
                                         const Placeholders* placeholders) {
  InspectedRequest judged;
  judged.client_keep_alive = client_wants_keep_alive(head);
  judged.client_http10 = head.version == "HTTP/1.0";

  auto framing = request_framing(head);
  if (std::holds_alternative<Reason>(framing)) {
    judged.refusal = InspectRefusal::bad_framing;
    return judged;
  }
  judged.framing = std::get<BodyFraming>(framing);

  const HeaderField* host = nullptr;
  for (const auto& field : head.headers) {
    if (!iequals(field.name, "Host")) continue;
    if (host != nullptr) {
      judged.refusal = InspectRefusal::bad_request;  // which one counts is anyone's guess
      return judged;
    }
    host = &field;
  }
  // From here on the body can be found, so a refusal need not end the connection.
  judged.keep_after_refusal =
      judged.client_keep_alive && !(has_body(judged.framing) && expects_continue(head));
  if (host == nullptr || !host_names_origin(*host, origin)) {
    judged.refusal = InspectRefusal::host_mismatch;
    return judged;
  }

  // SPEC §19: a placeholder where its secret may not go, found before the path and the rules so
  // that the tripwire is never hidden behind another refusal.
  if (placeholders != nullptr) {
    if (auto name = misdirected_placeholder(head, endpoint, *placeholders)) {
      judged.refusal = InspectRefusal::secret_misdirected;
      judged.misdirected = std::move(name);
      return judged;
    }
  }

  const RequestJudgement verdict = judge_request(endpoint, head.method, head.target);
  judged.rule = verdict.rule;
  switch (verdict.verdict) {
    case RequestVerdict::allowed:
      break;
    case RequestVerdict::bad_path:
      judged.refusal = InspectRefusal::bad_path;
      return judged;
    case RequestVerdict::request_denied:
      if (endpoint.mode != InspectMode::report) {
        judged.refusal = InspectRefusal::request_denied;
        return judged;
      }
      judged.report = true;  // logged as denied, with report=1, and sent on (SPEC §18)
      break;
  }

  judged.websocket = is_websocket_upgrade(head);
  add_credentials(judged, head, endpoint, Credentials{origin, secrets, placeholders, verdict.verdict});
  return judged;
}

}  // namespace boxproxy
