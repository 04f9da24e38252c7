// SPDX-License-Identifier: Apache-2.0
// proxy/http_head, http_body (request_framing, response_framing) and http_forward
// (prepare_forward_request, rewrite_response_head).
//
// Input: a byte whose low bit picks request or response and whose other bits pick
// --max-head-bytes, then the Split framing (fuzz_support.h), then the bytes the peer sends.
// Invariants:
//   - the answer is the same however the bytes are split (parsed as each piece arrives, as the
//     connection does) as for all of them at once: status, consumed, refusal, and the head itself
//     (views at the same places);
//   - consumed <= size (and <= max_head_bytes); every view of a head lies inside the consumed
//     bytes; a refusal is bad_request or head_too_large;
//   - a request accepted for forwarding: its upstream head re-parses as one complete head of
//     exactly its own length, origin-form, HTTP/1.1, with one Host (first) that names the target
//     judged, one "Connection: close" (last), no hop-by-hop header and none that Connection
//     listed, every other header kept in order, and the same body framing as the client's
//     (no smuggling through the rewrite); the target is a valid name or literal with a port;
//   - refused is never dialled: a head with userinfo, a backslash or '#', an Upgrade header, two
//     Host headers, a Host naming another target, or framing request_framing refuses is never
//     given a target;
//   - a response's rewritten head re-parses completely, carries no x-egress-refused, no
//     hop-by-hop header and exactly one Connection.
#include <algorithm>
#include <string>

#include "proxy/wire/http_body.h"
#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

constexpr std::string_view kHopByHop[] = {"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
                                          "Proxy-Authenticate", "TE", "Trailer", "Upgrade"};

bool is_hop_by_hop(std::string_view name) {
  return std::any_of(std::begin(kHopByHop), std::end(kHopByHop), [&](std::string_view h) { return iequals(h, name); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The names every Connection header lists.
std::vector<std::string_view> connection_tokens(const std::vector<HeaderField>& headers) {
  std::vector<std::string_view> out;
  for (const auto& f : headers) {
    if (!iequals(f.name, "Connection")) continue;
    std::string_view rest = f.value;
    while (true) {
      const auto comma = rest.find(',');
      const auto token = trim(rest.substr(0, comma));
      if (!token.empty()) out.push_back(token);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

bool forwarded(std::string_view name, const std::vector<std::string_view>& listed) {
  if (is_hop_by_hop(name)) return false;
  if (iequals(name, "Host") || iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding")) return true;
  return std::none_of(listed.begin(), listed.end(), [&](std::string_view t) { return iequals(t, name); });
}

bool same_view(std::string_view a, std::string_view b) { return a.data() == b.data() && a.size() == b.size(); }

bool same_headers(const std::vector<HeaderField>& a, const std::vector<HeaderField>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_view(a[i].name, b[i].name) || !same_view(a[i].value, b[i].value)) return false;
  }
  return true;
}

template <typename Head>
void check_common(const ParseResult<Head>& result, std::string_view buffer, std::size_t max_head_bytes) {
  using Status = typename ParseResult<Head>::Status;
  FUZZ_CHECK(result.consumed <= buffer.size());
  if (result.status == Status::refused) {
    FUZZ_CHECK(result.refusal == Reason::bad_request || result.refusal == Reason::head_too_large);
    FUZZ_CHECK(!result.value);
  } else if (result.status == Status::need_more) {
    FUZZ_CHECK(!result.value && buffer.size() < max_head_bytes);
  } else {
    FUZZ_CHECK(result.value.has_value());
    FUZZ_CHECK(result.consumed <= max_head_bytes);
    FUZZ_CHECK(buffer.substr(0, result.consumed).ends_with("\r\n\r\n"));
    const std::string_view head_bytes = buffer.substr(0, result.consumed);
    for (const auto& f : result.value->headers) {
      FUZZ_CHECK(fuzz::lies_within(f.name, head_bytes) && fuzz::lies_within(f.value, head_bytes));
      FUZZ_CHECK(!f.name.empty());
    }
  }
}

void check_forward(const RequestHead& head) {
  const auto prepared = prepare_forward_request(head);
  const std::string_view target = head.target;

  // What the decision must refuse, found here without prepare_forward_request's help.
  const auto scheme_end = target.find("://");
  const std::string_view authority =
      scheme_end == std::string_view::npos ? std::string_view{}
                                           : target.substr(scheme_end + 3, target.find_first_of("/?", scheme_end + 3) -
                                                                               (scheme_end + 3));
  std::size_t host_headers = 0, upgrade_headers = 0;
  for (const auto& f : head.headers) {
    host_headers += iequals(f.name, "Host");
    upgrade_headers += iequals(f.name, "Upgrade");
  }
  const bool must_refuse = target.find('\\') != std::string_view::npos || target.find('#') != std::string_view::npos ||
                           authority.find('@') != std::string_view::npos || upgrade_headers > 0 || host_headers > 1 ||
                           std::holds_alternative<Reason>(request_framing(head));

  const auto* request = std::get_if<ForwardRequest>(&prepared);
  if (request == nullptr) return;
  FUZZ_CHECK(!must_refuse);

  // The target judged: a host and a port, from the URI's authority.
  const Target& judged = request->target;
  FUZZ_CHECK(!judged.host.empty() && judged.port >= 1);
  if (judged.is_name()) FUZZ_CHECK(is_valid_name(judged.host));
  const TargetResult from_uri = parse_authority_default_port(authority, 80);
  FUZZ_CHECK(std::holds_alternative<Target>(from_uri));
  FUZZ_CHECK(std::get<Target>(from_uri).host == judged.host && std::get<Target>(from_uri).port == judged.port);
  FUZZ_CHECK(request->framing.kind != BodyFraming::Kind::until_close);

  // The upstream head re-parses as exactly one complete head.
  const std::string& up = request->upstream_head;
  const auto reparsed = parse_request_head(up, up.size() + 1);
  FUZZ_CHECK(reparsed.status == ParseResult<RequestHead>::Status::complete);
  FUZZ_CHECK(reparsed.consumed == up.size());
  const RequestHead& out = *reparsed.value;
  FUZZ_CHECK(out.method == head.method);
  FUZZ_CHECK(out.version == "HTTP/1.1");
  FUZZ_CHECK(!out.target.empty() && out.target.front() == '/');
  FUZZ_CHECK(out.headers.size() >= 2);

  // Host first, naming exactly the target judged.
  FUZZ_CHECK(iequals(out.headers.front().name, "Host"));
  const TargetResult named = parse_authority_default_port(out.headers.front().value, 80);
  FUZZ_CHECK(std::holds_alternative<Target>(named));
  const Target& host_target = std::get<Target>(named);
  FUZZ_CHECK(host_target.host == judged.host && host_target.port == judged.port);
  FUZZ_CHECK(host_target.address.has_value() == judged.address.has_value());
  if (judged.address) FUZZ_CHECK(*host_target.address == *judged.address);
  // A Host header the client sent names the same target (compared as the decision compares).
  for (const auto& f : head.headers) {
    if (!iequals(f.name, "Host")) continue;
    const TargetResult sent = parse_authority_default_port(f.value, 80);
    FUZZ_CHECK(std::holds_alternative<Target>(sent));
    FUZZ_CHECK(std::get<Target>(sent).port == judged.port);
    FUZZ_CHECK(std::get<Target>(sent).address.has_value() == judged.address.has_value());
  }

  // "Connection: close" last; nothing hop-by-hop; the rest kept, in order.
  FUZZ_CHECK(iequals(out.headers.back().name, "Connection") && out.headers.back().value == "close");
  const auto listed = connection_tokens(head.headers);
  std::vector<HeaderField> expected;
  for (const auto& f : head.headers) {
    if (!iequals(f.name, "Host") && forwarded(f.name, listed)) expected.push_back(f);
  }
  FUZZ_CHECK(out.headers.size() == expected.size() + 2);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const HeaderField& got = out.headers[i + 1];
    FUZZ_CHECK(got.name == expected[i].name && got.value == expected[i].value);
    FUZZ_CHECK(!is_hop_by_hop(got.name) && !iequals(got.name, "Host"));
  }

  // The origin delimits the body exactly as the proxy does.
  const auto framing = request_framing(out);
  FUZZ_CHECK(std::holds_alternative<BodyFraming>(framing));
  FUZZ_CHECK(std::get<BodyFraming>(framing).kind == request->framing.kind);
  FUZZ_CHECK(std::get<BodyFraming>(framing).length == request->framing.length);
}

void check_response(const ResponseHead& head, bool keep_alive) {
  FUZZ_CHECK(head.status >= 100 && head.status <= 999);
  (void)response_framing("GET", head);
  (void)response_framing("HEAD", head);
  const std::string rewritten = rewrite_response_head(head, keep_alive);
  const auto reparsed = parse_response_head(rewritten, rewritten.size() + 1);
  FUZZ_CHECK(reparsed.status == ParseResult<ResponseHead>::Status::complete);
  FUZZ_CHECK(reparsed.consumed == rewritten.size());
  std::size_t connections = 0;
  for (const auto& f : reparsed.value->headers) {
    FUZZ_CHECK(!iequals(f.name, "x-egress-refused"));
    if (iequals(f.name, "Connection")) {
      ++connections;
      FUZZ_CHECK(f.value == (keep_alive ? "keep-alive" : "close"));
    } else {
      FUZZ_CHECK(!is_hop_by_hop(f.name));
    }
  }
  FUZZ_CHECK(connections == 1);
  FUZZ_CHECK(reparsed.value->status == head.status);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 70000) return 0;
  const bool response = (data[0] & 1) != 0;
  static constexpr std::size_t kLimits[] = {1024, 32768, 64, 200, 512, 4096, 1, 2};
  const std::size_t max_head_bytes = kLimits[(data[0] >> 1) % 8];
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  const std::string_view buffer = split.payload;

  if (!response) {
    const auto parse = [&](std::string_view b) { return parse_request_head(b, max_head_bytes); };
    const auto whole = parse(buffer);
    const auto pieces = fuzz::parse_in_pieces(split, parse);
    check_common(whole, buffer, max_head_bytes);
    FUZZ_CHECK(whole.status == pieces.status && whole.consumed == pieces.consumed && whole.refusal == pieces.refusal);
    if (whole.value) {
      const RequestHead& a = *whole.value;
      const RequestHead& b = *pieces.value;
      FUZZ_CHECK(same_view(a.method, b.method) && same_view(a.target, b.target) && same_view(a.version, b.version));
      FUZZ_CHECK(same_headers(a.headers, b.headers));
      const std::string_view head_bytes = buffer.substr(0, whole.consumed);
      FUZZ_CHECK(fuzz::lies_within(a.method, head_bytes) && fuzz::lies_within(a.target, head_bytes) &&
                 fuzz::lies_within(a.version, head_bytes));
      FUZZ_CHECK(a.version == "HTTP/1.0" || a.version == "HTTP/1.1");
      (void)request_framing(a);
      (void)client_wants_keep_alive(a);
      check_forward(a);
    }
  } else {
    const auto parse = [&](std::string_view b) { return parse_response_head(b, max_head_bytes); };
    const auto whole = parse(buffer);
    const auto pieces = fuzz::parse_in_pieces(split, parse);
    check_common(whole, buffer, max_head_bytes);
    FUZZ_CHECK(whole.status == pieces.status && whole.consumed == pieces.consumed && whole.refusal == pieces.refusal);
    if (whole.value) {
      const ResponseHead& a = *whole.value;
      const ResponseHead& b = *pieces.value;
      FUZZ_CHECK(same_view(a.version, b.version) && same_view(a.reason, b.reason) && a.status == b.status);
      FUZZ_CHECK(same_headers(a.headers, b.headers));
      check_response(a, (data[0] & 0x80) != 0);
    }
  }
  return 0;
}
