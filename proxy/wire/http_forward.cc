// SPDX-License-Identifier: Apache-2.0
// Plain HTTP forwarding (SPEC §8).
//
// The request target is judged once, here, and the origin gets a head built from what was judged:
// the host it is told (in Host and by the connection we dial) is always the one the decision saw.
// Anything in a target that some other parser might take for a different host (userinfo, a
// backslash, a fragment) is refused outright rather than normalised.
#include "proxy/wire/http_forward.h"

#include <algorithm>
#include <span>
#include <vector>

#include "table/ascii.h"

namespace boxproxy {
namespace {

// RFC 9110 §7.6.1 plus the de-facto ones: never passed from one hop to the next.
constexpr std::string_view kHopByHop[] = {
    "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
    "Proxy-Authenticate", "TE", "Trailer", "Upgrade",
};

// A Connection header may name these, but they are never removed that way: Host is the judged
// target, and the framing headers say where the body ends (dropping one would reframe it).
constexpr std::string_view kNeverConnectionListed[] = {"Host", "Content-Length", "Transfer-Encoding"};

bool in_list(std::string_view name, std::span<const std::string_view> list) {
  return std::any_of(list.begin(), list.end(), [&](std::string_view x) { return iequals(name, x); });
}

// The comma-separated tokens of every header named `name` (Connection, Proxy-Connection).
std::vector<std::string_view> list_tokens(const std::vector<HeaderField>& headers, std::string_view name) {
  std::vector<std::string_view> tokens;
  for (const auto& field : headers) {
    if (!iequals(field.name, name)) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const auto token = trim_ows(rest.substr(0, comma));
      if (!token.empty()) tokens.push_back(token);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return tokens;
}

// Whether a header goes to the next hop: not hop-by-hop, not named by Connection (except the
// ones that are never removed that way).
bool is_kept(std::string_view name, const std::vector<std::string_view>& connection_listed) {
  if (in_list(name, kHopByHop)) return false;
  if (in_list(name, kNeverConnectionListed)) return true;
  return !in_list(name, connection_listed);
}

bool is_scheme_char(char c, bool first) noexcept {
  const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// The scheme of an absolute-form target (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
// then ':'), or empty when the target has none (origin form, "*", or something else).
std::string_view scheme_of(std::string_view target) noexcept {
  const auto colon = target.find(':');
  if (colon == std::string_view::npos || colon == 0) return {};
  for (std::size_t i = 0; i < colon; ++i) {
    if (!is_scheme_char(target[i], i == 0)) return {};
  }
  return target.substr(0, colon);
}

bool same_host(const Target& a, const Target& b) {
  if (a.address && b.address) return *a.address == *b.address;
  if (a.address || b.address) return false;
  return iequals(a.host, b.host);  // names compare without regard to case (RFC 9110 §4.2.3)
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

bool has_token(const std::vector<std::string_view>& tokens, std::string_view word) {
  return std::any_of(tokens.begin(), tokens.end(), [&](std::string_view t) { return iequals(t, word); });
}

// The one header named `name` when there is exactly one, else nullptr.
const HeaderField* only_field(const std::vector<HeaderField>& headers, std::string_view name) {
  const HeaderField* found = nullptr;
  for (const auto& field : headers) {
    if (!iequals(field.name, name)) continue;
    if (found != nullptr) return nullptr;
    found = &field;
  }
  return found;
}

bool upgrades_to_websocket(const std::vector<HeaderField>& headers) {
  const HeaderField* upgrade = only_field(headers, "Upgrade");
  return upgrade != nullptr && iequals(upgrade->value, "websocket");
}

// Appends the headers of `headers` that go to the next hop: neither hop-by-hop nor named by
// Connection; without x-egress-refused when `drop_refused`, without Host when `drop_host` (the
// caller writes its own); with `one_length`, the first Content-Length only.
template <typename Emit>
void for_each_kept(const std::vector<HeaderField>& headers, bool drop_refused, bool drop_host, bool one_length,
                   Emit emit) {
  const auto connection_listed = list_tokens(headers, "Connection");
  bool length_sent = false;
  for (const auto& field : headers) {
    if (drop_refused && iequals(field.name, "x-egress-refused")) continue;
    if (drop_host && iequals(field.name, "Host")) continue;
    if (!is_kept(field.name, connection_listed)) continue;
    if (one_length && iequals(field.name, "Content-Length")) {
      if (length_sent) continue;
      length_sent = true;
    }
    emit(field);
  }
}

}  // namespace

std::string_view origin_target_of(std::string_view upstream_head) noexcept {
  const std::size_t start = upstream_head.find(' ');
  const std::size_t end = upstream_head.find(" HTTP/1.1\r\n");
  if (start == std::string_view::npos || end == std::string_view::npos || end <= start) return {};
  return upstream_head.substr(start + 1, end - start - 1);
}

std::variant<ForwardRequest, Reason> prepare_forward_request(const RequestHead& head) {
  const std::string_view target = head.target;
  const std::string_view scheme = scheme_of(target);
  if (scheme.empty()) return Reason::not_absolute_uri;
  if (!iequals(scheme, "http")) return Reason::not_http_uri;
  // Each of these is read as another host by some URL parser ("http://evil\@good/",
  // "http://good#@evil/", "http://user@host/"): refused, never judged as either.
  if (target.find('\\') != std::string_view::npos || target.find('#') != std::string_view::npos) {
    return Reason::invalid_target;
  }
  std::string_view rest = target.substr(scheme.size() + 1);
  if (!rest.starts_with("//")) return Reason::invalid_target;  // "http:foo", "http:/foo"
  rest.remove_prefix(2);
  const auto authority_end = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, authority_end);
  const std::string_view path_and_query =
      authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (authority.empty()) return Reason::invalid_target;
  if (authority.find('@') != std::string_view::npos) return Reason::invalid_target;  // userinfo

  TargetResult parsed = parse_authority_default_port(authority, 80);
  if (auto* reason = std::get_if<Reason>(&parsed)) return *reason;
  Target uri_target = std::move(std::get<Target>(parsed));

  // Host, when present, must agree: an origin that routes by Host must not be asked for a host
  // the decision never saw.
  const HeaderField* host_header = nullptr;
  for (const auto& field : head.headers) {
    if (!iequals(field.name, "Host")) continue;
    if (host_header != nullptr) return Reason::bad_request;  // which one counts is anyone's guess
    host_header = &field;
  }
  if (host_header != nullptr) {
    if (host_header->value.find('@') != std::string_view::npos) return Reason::host_mismatch;
    TargetResult named = parse_authority_default_port(host_header->value, 80);
    if (!std::holds_alternative<Target>(named)) return Reason::host_mismatch;
    const Target& host_target = std::get<Target>(named);
    if (!same_host(uri_target, host_target) || host_target.port != uri_target.port) return Reason::host_mismatch;
  }

  for (const auto& field : head.headers) {
    if (iequals(field.name, "Upgrade")) return Reason::upgrade_not_supported;
  }

  auto framing = request_framing(head);
  if (std::holds_alternative<Reason>(framing)) return Reason::bad_framing;

  ForwardRequest request;
  request.framing = std::get<BodyFraming>(framing);

  std::string& out = request.upstream_head;
  out.reserve(256 + target.size());
  out += head.method;
  out += ' ';
  if (path_and_query.empty() || path_and_query.front() == '?') out += '/';
  out += path_and_query;
  out += " HTTP/1.1\r\n";

  out += "Host: ";
  const bool bracket = uri_target.address && !uri_target.address->is_v4();
  if (bracket) out += '[';
  out += uri_target.host;
  if (bracket) out += ']';
  if (uri_target.port != 80) {
    out += ':';
    out += std::to_string(uri_target.port);
  }
  out += "\r\n";

  const auto connection_listed = list_tokens(head.headers, "Connection");
  for (const auto& field : head.headers) {
    if (iequals(field.name, "Host")) continue;  // replaced by the one built above
    if (!is_kept(field.name, connection_listed)) continue;
    append_field(out, field.name, field.value);
  }
  out += "Connection: close\r\n\r\n";

  request.target = std::move(uri_target);
  return request;
}

namespace {

// A response head's status line and kept headers, as the client gets them; the caller adds its
// Connection header(s).
ResponseMessage kept_response(const ResponseHead& head) {
  // Our own version: the client talks to us, and we speak HTTP/1.1.
  ResponseMessage out{head.status, std::string(head.reason), "HTTP/1.1", {}};
  out.fields.reserve(head.headers.size() + 2);
  // x-egress-refused means this proxy refused; an origin must not be able to forge one.
  for_each_kept(head.headers, /*drop_refused=*/true, /*drop_host=*/false, /*one_length=*/false,
                [&](const HeaderField& field) {
                  out.fields.push_back({std::string(field.name), std::string(field.value)});
                });
  return out;
}

}  // namespace

std::string rewrite_response_head(const ResponseHead& head, bool keep_alive) {
  return rewrite_response_message(head, keep_alive).text();
}

ResponseMessage rewrite_response_message(const ResponseHead& head, bool keep_alive) {
  ResponseMessage out = kept_response(head);
  out.fields.push_back({"Connection", keep_alive ? "keep-alive" : "close"});
  return out;
}

bool client_wants_keep_alive(const RequestHead& head) {
  auto tokens = list_tokens(head.headers, "Connection");
  const auto proxy_tokens = list_tokens(head.headers, "Proxy-Connection");
  tokens.insert(tokens.end(), proxy_tokens.begin(), proxy_tokens.end());
  if (has_token(tokens, "close")) return false;
  if (head.version == "HTTP/1.1") return true;
  return has_token(tokens, "keep-alive");
}

bool is_websocket_upgrade(const RequestHead& head) {
  if (head.version != "HTTP/1.1") return false;
  return upgrades_to_websocket(head.headers) && has_token(list_tokens(head.headers, "Connection"), "upgrade");
}

RequestMessage forward_origin_form_message(const RequestHead& head, std::string_view host_field, bool websocket,
                                          bool close, std::size_t more_fields) {
  RequestMessage out{std::string(head.method), std::string(head.target), "HTTP/1.1", {}};
  // Room for every field at once: a short value (a swapped secret) moved by a growing vector would
  // leave its bytes in the storage given back.
  out.fields.reserve(head.headers.size() + 3 + more_fields);
  out.fields.push_back({"Host", std::string(host_field)});
  // SPEC §19a: repeated Content-Lengths go on as one (request_framing refused them if they
  // differ): an origin, or an HTTP/2 origin's nghttp2, may read two as a list it refuses, or one
  // in front of it may pick another.
  for_each_kept(head.headers, /*drop_refused=*/false, /*drop_host=*/true, /*one_length=*/true,
                [&](const HeaderField& field) {
                  out.fields.push_back({std::string(field.name), std::string(field.value)});
                });
  if (websocket) {
    out.fields.push_back({"Connection", "Upgrade"});
    out.fields.push_back({"Upgrade", "websocket"});
  } else if (close) {
    out.fields.push_back({"Connection", "close"});
  }
  return out;
}

std::string forward_origin_form_head(const RequestHead& head, std::string_view host_field, bool websocket,
                                     bool close) {
  return forward_origin_form_message(head, host_field, websocket, close).text();
}

bool switches_to_websocket(const ResponseHead& head) { return upgrades_to_websocket(head.headers); }

std::string rewrite_switching_head(const ResponseHead& head) {
  ResponseMessage out = kept_response(head);
  out.fields.push_back({"Connection", "Upgrade"});
  out.fields.push_back({"Upgrade", "websocket"});
  return out.text();
}

bool origin_keeps_alive(const ResponseHead& head) {
  const auto tokens = list_tokens(head.headers, "Connection");
  if (has_token(tokens, "close")) return false;
  if (head.version == "HTTP/1.1") return true;
  return has_token(tokens, "keep-alive");
}

}  // namespace boxproxy
