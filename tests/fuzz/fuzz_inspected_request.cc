// SPDX-License-Identifier: Apache-2.0
// The inspected HTTP/1.1 request path (SPEC §18), as an inspected connection runs it on every
// request it reads inside TLS: parse_request_head, then judge_inspected_request, then the head the
// origin gets (forward_origin_form_message) or the refusal's answer (inspect_refusal_response).
//
// The first byte picks the endpoint (no rules, read-only, rules with a deny, report mode) and the
// origin (a name on 443, an IPv6 literal on a port of its own, plain HTTP on 80); the rest is what
// the client sends. Invariants:
//   - a refusal has no head for the origin; an allowed request (or a report-mode denial) has one;
//   - the head the origin gets parses again, whole, with the same method and target, HTTP/1.1,
//     exactly one Host, and that Host is origin_host_field's; judged again it is allowed by the
//     same rule (nothing the proxy writes can turn into another verdict at the origin); no
//     hop-by-hop header the client sent survives, and Connection is the proxy's own;
//   - a refusal's answer parses as a whole response with the table's status and a Content-Length
//     that is its body's length, and x-egress-refused naming the class;
//   - keep_after_refusal only with a client that keeps its connection; websocket and report never
//     with a refusal; a report is always a denial's, so its rule is not "access".
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"
#include "proxy/stages/inspected_request.h"
#include "table/ascii.h"
#include "table/inspect_endpoint.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

constexpr std::size_t kMaxHead = 4096;
// Shape bit 32: the endpoint injects Authorization; bit 64: its secret is set.
constexpr unsigned kInjects = 32;
constexpr unsigned kSecretSet = 64;
constexpr std::string_view kSecretValue = "s3cr3t";

struct FuzzSecrets final : SecretLookup {
  bool set = false;
  std::optional<std::string_view> secret(std::string_view name) const override {
    if (set && name == "k") return kSecretValue;
    return std::nullopt;
  }
};

InspectRule rule(std::string_view method, std::string_view path) {
  auto made = make_inspect_rule(method, path, std::nullopt);
  FUZZ_CHECK(std::holds_alternative<InspectRule>(made));
  return std::get<InspectRule>(std::move(made));
}

InspectEndpoint endpoint_for(unsigned shape) {
  auto parsed = parse_inspect_entry("api.example.com");
  FUZZ_CHECK(std::holds_alternative<InspectEndpoint>(parsed));
  InspectEndpoint endpoint = std::get<InspectEndpoint>(std::move(parsed));
  switch (shape % 4) {
    case 0:  // no rules: every sound request
      break;
    case 1:
      endpoint.access = InspectAccess::read_only;
      break;
    case 2:
      endpoint.rules = std::vector<InspectRule>{rule("GET", "/repos/*/**"), rule("post", "/a/*/b")};
      endpoint.deny.push_back(rule("*", "/repos/*/hooks/**"));
      break;
    default:
      endpoint.rules = std::vector<InspectRule>{rule("GET", "/**")};
      endpoint.mode = InspectMode::report;
      break;
  }
  if ((shape & kInjects) != 0) endpoint.inject = {{"Authorization", "Bearer {k}"}};
  return endpoint;
}

DecidedOrigin origin_for(unsigned shape) {
  static const std::array<std::pair<std::string_view, std::uint16_t>, 3> hosts{
      {{"api.example.com", 443}, {"::1", 8443}, {"api.example.com", 80}}};
  const auto& [host, port] = hosts[(shape / 4) % hosts.size()];
  auto target = parse_host(host, port);
  FUZZ_CHECK(std::holds_alternative<Target>(target));
  return DecidedOrigin{std::get<Target>(std::move(target)), port == 80 ? std::uint16_t{80} : std::uint16_t{443}};
}

std::size_t count_headers(const RequestHead& head, std::string_view name) {
  std::size_t n = 0;
  for (const auto& field : head.headers) n += iequals(field.name, name) ? 1 : 0;
  return n;
}

const HeaderField* find_header(const std::vector<HeaderField>& headers, std::string_view name) {
  for (const auto& field : headers)
    if (iequals(field.name, name)) return &field;
  return nullptr;
}

void check_refusal_answer(const InspectedRequest& judged) {
  const ReasonInfo& row = info(*judged.refusal);
  FUZZ_CHECK(row.reason == *judged.refusal);
  if (row.http_status == 0) return;
  for (const bool close : {false, true}) {
    const std::string answer = inspect_refusal_response(*judged.refusal, close);
    const auto parsed = parse_response_head(answer, kMaxHead);
    FUZZ_CHECK(parsed.status == ParseResult<ResponseHead>::Status::complete);
    FUZZ_CHECK(parsed.value->status == row.http_status);
    const HeaderField* length = find_header(parsed.value->headers, "Content-Length");
    FUZZ_CHECK(length != nullptr && length->value == std::to_string(answer.size() - parsed.consumed));
    const HeaderField* refused = find_header(parsed.value->headers, "x-egress-refused");
    FUZZ_CHECK(refused != nullptr && refused->value == row.log_class);
    FUZZ_CHECK((find_header(parsed.value->headers, "Connection") != nullptr) == close);
  }
}

void check_upstream_head(const RequestHead& head, const InspectedRequest& judged, const InspectEndpoint& endpoint,
                         const DecidedOrigin& origin, const FuzzSecrets& secrets) {
  // As an HTTP/1.1 origin gets it: the message's text, which parses back whole.
  const std::string text = judged.upstream.text();
  FUZZ_CHECK(text.size() == judged.upstream.text_size());
  const auto again = parse_request_head(text, kMaxHead + 1024);
  FUZZ_CHECK(again.status == ParseResult<RequestHead>::Status::complete);
  FUZZ_CHECK(again.consumed == text.size());
  FUZZ_CHECK(again.value->headers.size() == judged.upstream.fields.size());
  const RequestHead& sent = *again.value;
  FUZZ_CHECK(sent.method == head.method && sent.target == head.target && sent.version == "HTTP/1.1");
  FUZZ_CHECK(count_headers(sent, "Host") == 1);
  FUZZ_CHECK(find_header(sent.headers, "Host")->value == origin_host_field(origin));
  for (const std::string_view hop : {"Keep-Alive", "Proxy-Connection", "TE", "Proxy-Authorization"})
    FUZZ_CHECK(count_headers(sent, hop) == 0);
  FUZZ_CHECK(count_headers(sent, "Connection") <= 1);
  FUZZ_CHECK(count_headers(sent, "Upgrade") == (judged.websocket ? 1u : 0u));
  // Injected: exactly one, the proxy's, whatever the box sent.
  if (!endpoint.inject.empty()) {
    FUZZ_CHECK(count_headers(sent, "Authorization") == 1);
    FUZZ_CHECK(find_header(sent.headers, "Authorization")->value == "Bearer " + std::string(kSecretValue));
  }

  const InspectedRequest rejudged = judge_inspected_request(sent, endpoint, origin, secrets);
  FUZZ_CHECK(!rejudged.refusal.has_value());
  FUZZ_CHECK(rejudged.rule == judged.rule && rejudged.report == judged.report);
  FUZZ_CHECK(rejudged.websocket == judged.websocket);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned shape = data[0];
  const std::string_view bytes = fuzz::as_text(data + 1, size - 1);
  const InspectEndpoint endpoint = endpoint_for(shape);
  const DecidedOrigin origin = origin_for(shape);

  const auto parsed = parse_request_head(bytes, kMaxHead);
  if (parsed.status != ParseResult<RequestHead>::Status::complete) return 0;
  const RequestHead& head = *parsed.value;
  FuzzSecrets secrets;
  secrets.set = (shape & kSecretSet) != 0;
  const InspectedRequest judged = judge_inspected_request(head, endpoint, origin, secrets);
  // Never sent without its credential: a missing secret is the only way an injecting endpoint's
  // sound request fails past the rules.
  if (judged.refusal == Reason::secret_missing) FUZZ_CHECK(!endpoint.inject.empty() && !secrets.set);

  if (judged.refusal) {
    FUZZ_CHECK(judged.upstream.method.empty());
    FUZZ_CHECK(!judged.websocket && !judged.report);
    FUZZ_CHECK(!judged.keep_after_refusal || judged.client_keep_alive);
    check_refusal_answer(judged);
    return 0;
  }
  FUZZ_CHECK(!judged.upstream.method.empty());
  FUZZ_CHECK(!judged.report || (endpoint.mode == InspectMode::report && judged.rule != "access"));
  check_upstream_head(head, judged, endpoint, origin, secrets);
  return 0;
}
