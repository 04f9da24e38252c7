// SPDX-License-Identifier: Apache-2.0
// Strict HTTP/1.x head parsing (SPEC §7, §8).
//
// The proxy stands between a hostile client and origins whose parsers differ, so every shape that
// two parsers could read differently is refused rather than repaired:
//   - lines end in CRLF only: a bare CR or a bare LF anywhere is refused (one parser ends a line
//     there, another does not, and a header hides inside another);
//   - no control character or NUL anywhere (HTAB only inside a header value or reason phrase);
//   - no obs-fold (a line starting with SP or HTAB continues the previous one for some parsers);
//   - a header name is a token immediately followed by ':' ("Host :" is a different header to
//     some parsers and the same one to others);
//   - the request line is exactly METHOD SP TARGET SP HTTP/1.0|HTTP/1.1, single spaces;
//   - an empty line before the request line is refused too (RFC 9112 lets servers skip it; we have
//     no reason to, and a keep-alive client has no reason to send it).
//
// Errors are reported as soon as the bytes received show them: a bare LF in the first line is
// refused even if the head has not ended yet, so a hostile client cannot make us buffer up to
// max_head_bytes of something that is already known to be bad.
//
// The parser keeps no state between calls: it is handed everything received so far and scans it
// from the start. A head is at most max_head_bytes (32 KiB by default), so a rescan is cheap.
#include "proxy/wire/http_head.h"

#include <algorithm>
#include <cstdint>

#include "table/ascii.h"

namespace boxproxy {
namespace {


constexpr bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_token_char(static_cast<unsigned char>(c)); });
}

// A control character: C0 (NUL included) or DEL. HTAB is one too; callers allow it where RFC 9110
// does (inside field values and the reason phrase).
constexpr bool is_ctl(unsigned char c) noexcept { return c < 0x20 || c == 0x7f; }

// field-vchar / SP / HTAB: visible ASCII and obs-text (bytes >= 0x80, passed through untouched).
constexpr bool is_value_char(unsigned char c) noexcept { return c == '\t' || !is_ctl(c); }

// A request target: visible ASCII only (no SP, no obs-text, no controls).
constexpr bool is_target_char(unsigned char c) noexcept { return c > 0x20 && c < 0x7f; }

bool is_http1_version(std::string_view v) noexcept { return v == "HTTP/1.0" || v == "HTTP/1.1"; }

// "name: value" (the line without its CRLF). The name must be a token directly followed by ':'
// (so white space before the colon, an empty name and obs-fold are all refused); the value is any
// field-vchar, SP or HTAB, trimmed.
bool parse_field_line(std::string_view line, HeaderField& out) noexcept {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  const auto name = line.substr(0, colon);
  if (!is_token(name)) return false;
  const auto value = line.substr(colon + 1);
  for (char c : value) {
    if (!is_value_char(static_cast<unsigned char>(c))) return false;
  }
  out.name = name;
  out.value = trim_ows(value);
  return true;
}

// METHOD SP TARGET SP VERSION, single spaces, nothing else.
bool parse_request_line(std::string_view line, RequestHead& out) noexcept {
  const auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  const auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  const auto method = line.substr(0, sp1);
  const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto version = line.substr(sp2 + 1);
  if (!is_token(method)) return false;
  if (target.empty()) return false;
  for (char c : target) {
    if (!is_target_char(static_cast<unsigned char>(c))) return false;
  }
  if (!is_http1_version(version)) return false;  // also refuses a third space
  out.method = method;
  out.target = target;
  out.version = version;
  return true;
}

// HTTP/1.x SP 3DIGIT [SP reason]. The reason may be empty, and the space before an empty reason
// may be missing (common in the wild, and not ambiguous).
bool parse_status_line(std::string_view line, ResponseHead& out) noexcept {
  if (line.size() < 12) return false;
  const auto version = line.substr(0, 8);
  if (!is_http1_version(version) || line[8] != ' ') return false;
  unsigned status = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    const char c = line[i];
    if (c < '0' || c > '9') return false;
    status = status * 10 + static_cast<unsigned>(c - '0');
  }
  if (status < 100) return false;
  std::string_view reason;
  if (line.size() > 12) {
    if (line[12] != ' ') return false;
    reason = line.substr(13);
    for (char c : reason) {
      if (!is_value_char(static_cast<unsigned char>(c))) return false;
    }
  }
  out.version = version;
  out.status = status;
  out.reason = reason;
  return true;
}

// The scan shared by requests and responses. `Head` is RequestHead or ResponseHead;
// `parse_first` parses the start line into it.
template <typename Head, typename FirstLine>
ParseResult<Head> parse_head(std::string_view buffer, std::size_t max_head_bytes, FirstLine parse_first) {
  using Result = ParseResult<Head>;
  Head head;
  // Only the first max_head_bytes can be part of an acceptable head (the count includes the final
  // CRLF CRLF); nothing past them is looked at.
  const std::size_t limit = std::min(buffer.size(), max_head_bytes);
  std::size_t line_start = 0;
  bool first_line = true;
  for (std::size_t i = 0; i < limit; ++i) {
    const auto c = static_cast<unsigned char>(buffer[i]);
    if (c == '\n') return Result::refuse(Reason::bad_request);  // bare LF: a CR would have taken it
    if (c == '\r') {
      // The LF may still come, or (when the limit is reached) would be past it: too large, below.
      // Nothing past the limit is judged, so the answer never depends on how bytes arrived.
      if (i + 1 >= limit) break;
      if (buffer[i + 1] != '\n') return Result::refuse(Reason::bad_request);  // bare CR
      const auto line = buffer.substr(line_start, i - line_start);
      const std::size_t next = i + 2;
      if (first_line) {
        if (!parse_first(line, head)) return Result::refuse(Reason::bad_request);
        first_line = false;
      } else if (line.empty()) {
        return Result::done(std::move(head), next);
      } else {
        HeaderField field;
        // A line starting with SP or HTAB (obs-fold) fails here: its "name" is not a token.
        if (!parse_field_line(line, field)) return Result::refuse(Reason::bad_request);
        head.headers.push_back(field);
      }
      line_start = next;
      i = next - 1;  // the loop's ++i lands on `next`
      continue;
    }
    // HTAB is checked by the line parsers (allowed only in values); every other control char,
    // NUL included, is refused wherever it stands.
    if (c != '\t' && is_ctl(c)) return Result::refuse(Reason::bad_request);
    // A folded line or white space before a colon is refused as soon as it is seen.
    if (!first_line && i == line_start && (c == ' ' || c == '\t')) return Result::refuse(Reason::bad_request);
  }
  if (buffer.size() >= max_head_bytes) return Result::refuse(Reason::head_too_large);
  return Result::need_more();
}

}  // namespace

ParseResult<RequestHead> parse_request_head(std::string_view buffer, std::size_t max_head_bytes) {
  return parse_head<RequestHead>(buffer, max_head_bytes, parse_request_line);
}

ParseResult<ResponseHead> parse_response_head(std::string_view buffer, std::size_t max_head_bytes) {
  return parse_head<ResponseHead>(buffer, max_head_bytes, parse_status_line);
}

}  // namespace boxproxy
