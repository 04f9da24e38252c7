// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 to HTTP/2 toward the origin and back (proxy/wire/h2_upstream.h).
#include "proxy/wire/h2_upstream.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_set>

#include "proxy/wire/h2_fields.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// RFC 9113 §8.2.2's connection-specific fields, and HTTP2-Settings (RFC 7540's h2c upgrade):
// never in an HTTP/2 message, never taken from one.
constexpr std::array<std::string_view, 6> kConnectionSpecific = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "http2-settings"};

bool connection_specific(std::string_view name) noexcept {
  for (const std::string_view n : kConnectionSpecific) {
    if (iequals(name, n)) return true;
  }
  return false;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The tokens Connection lists (any of its lines), lowercased: gathered once, so that asking for
// each field is a lookup rather than a scan of every header (a head of many tiny fields would
// otherwise cost fields x headers).
std::unordered_set<std::string> connection_tokens(const RequestHead& head) {
  std::unordered_set<std::string> tokens;
  for (const HeaderField& f : head.headers) {
    if (!iequals(f.name, "connection")) continue;
    std::string_view rest = f.value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view token = trim_ows(rest.substr(0, comma));
      if (!token.empty()) tokens.insert(lowercase(token));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return tokens;
}

bool plain_digits(std::string_view text) noexcept {
  if (text.empty() || text.size() > 18) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string_view reason_phrase(unsigned status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

}  // namespace

std::optional<H2UpstreamRequest> h2_upstream_request(const RequestHead& head) {
  if (head.method == "CONNECT") return std::nullopt;  // a tunnel: nothing here carries one
  if (head.method.empty() || !std::all_of(head.method.begin(), head.method.end(), [](char c) {
        return is_token_char(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;  // as the request line's parser: a method is a token
  }
  if (head.target.empty() || (head.target.front() != '/' && head.target != "*")) return std::nullopt;
  const auto framing = request_framing(head);
  if (!std::holds_alternative<BodyFraming>(framing)) return std::nullopt;
  const HeaderField* host = nullptr;
  for (const HeaderField& f : head.headers) {
    if (!iequals(f.name, "host")) continue;
    if (host != nullptr) return std::nullopt;
    host = &f;
  }
  if (host == nullptr || host->value.empty()) return std::nullopt;

  H2UpstreamRequest out;
  out.framing = std::get<BodyFraming>(framing);
  out.method.assign(head.method);
  out.fields.reserve(head.headers.size() + 5);
  out.fields.push_back({":method", std::string(head.method)});
  out.fields.push_back({":scheme", "https"});
  out.fields.push_back({":authority", std::string(host->value)});
  out.fields.push_back({":path", std::string(head.target)});
  const std::unordered_set<std::string> listed = connection_tokens(head);
  for (const HeaderField& f : head.headers) {
    if (iequals(f.name, "host") || iequals(f.name, "te") || connection_specific(f.name)) continue;
    std::string name = lowercase(f.name);
    // A name Connection lists is hop-by-hop for this hop only (RFC 9110 §7.6.1); the framing one
    // (content-length) is never taken away by it.
    if (name != "content-length" && listed.contains(name)) continue;
    // Checked as the HTTP/1.1 parser checked the text this replaced (nghttp2 sends what it is
    // given): what it stops is a field some later stage adds, unchecked, reaching the origin with a
    // CR, LF or NUL in it, or a name that is no token (review). Today every field arrives checked.
    if (!is_lower_token(name) || !is_carriable_value(f.value)) return std::nullopt;
    out.fields.push_back({std::move(name), std::string(f.value)});
  }
  out.fields.push_back({"te", "trailers"});
  return out;
}

std::optional<H1Response> h1_response_head(std::vector<H2Field> fields, std::string_view method, bool end_stream) {
  std::optional<unsigned> status;
  bool regular_seen = false;
  const std::string* content_length = nullptr;
  for (const H2Field& f : fields) {
    if (!f.name.empty() && f.name.front() == ':') {
      if (regular_seen || f.name != ":status" || status) return std::nullopt;
      if (f.value.size() != 3 || !plain_digits(f.value)) return std::nullopt;
      status = static_cast<unsigned>(std::stoul(f.value));
      continue;
    }
    regular_seen = true;
    if (!is_lower_token(f.name) || !is_carriable_value(f.value)) return std::nullopt;
    if (f.name == "content-length") {
      if (!plain_digits(f.value) || (content_length != nullptr && *content_length != f.value)) return std::nullopt;
      content_length = &f.value;
    }
  }
  if (!status || *status < 100 || *status == 101) return std::nullopt;

  H1Response out;
  const unsigned code = *status;
  out.interim = code < 200;
  const bool bodiless = out.interim || code == 204 || code == 304 || method == "HEAD";
  if (bodiless) {
    out.framing = {BodyFraming::Kind::none, 0};
  } else if (content_length != nullptr) {
    out.framing = {BodyFraming::Kind::length, std::stoull(*content_length)};
    if (end_stream && out.framing.length != 0) return std::nullopt;  // a length nothing will fill
  } else if (end_stream) {
    out.framing = {BodyFraming::Kind::length, 0};
  } else {
    out.framing = {BodyFraming::Kind::chunked, 0};
  }

  ResponseMessage& head = out.head;
  head.status = code;
  head.reason = reason_phrase(code);
  head.fields.reserve(fields.size() + 1);
  for (H2Field& f : fields) {
    if (f.name.front() == ':' || connection_specific(f.name) || f.name == "te" || f.name == "x-egress-refused") {
      continue;
    }
    if (f.name == "content-length") continue;  // written below, from the framing (content_length stays valid)
    head.fields.push_back({std::move(f.name), std::move(f.value)});  // moved, not copied: one list in memory
  }
  if (out.framing.kind == BodyFraming::Kind::length) {
    head.fields.push_back({"content-length", std::to_string(out.framing.length)});
  } else if (out.framing.kind == BodyFraming::Kind::chunked) {
    head.fields.push_back({"transfer-encoding", "chunked"});
  } else if (content_length != nullptr && (code == 304 || (method == "HEAD" && code >= 200 && code != 204))) {
    // A HEAD's or a 304's length describes the representation, not a body that follows.
    head.fields.push_back({"content-length", *content_length});
  }
  return out;
}

std::string h1_last_chunk_with_trailers(const std::vector<H2Field>& trailers) {
  std::string out = "0\r\n";
  for (const H2Field& f : trailers) {
    if (!is_lower_token(f.name) || !is_carriable_value(f.value) || !trailer_field_passes(f.name)) continue;
    out.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  out.append("\r\n");
  constexpr std::size_t kLastChunkLine = 3;  // "0\r\n"
  if (out.size() - kLastChunkLine > kMaxTrailerSection) return std::string(kH2LastChunk);
  return out;
}

std::vector<H2Field> h2_trailers_from_section(std::string_view section) {
  std::vector<H2Field> out;
  while (!section.empty()) {
    const std::size_t end = section.find("\r\n");
    const std::string_view line = section.substr(0, end);
    section.remove_prefix(end == std::string_view::npos ? section.size() : end + 2);
    const std::size_t colon = line.find(':');
    if (line.empty() || colon == std::string_view::npos || colon == 0) continue;
    const std::string_view name = line.substr(0, colon);
    bool token = true;
    for (const char c : name) token = token && is_token_char(static_cast<unsigned char>(c));
    const std::string_view value = trim_ows(line.substr(colon + 1));
    if (!token || !is_carriable_value(value) || !trailer_field_passes(name)) continue;
    out.push_back({lowercase(name), std::string(value)});
  }
  return out;
}

}  // namespace boxproxy
