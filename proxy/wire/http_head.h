// SPDX-License-Identifier: Apache-2.0
// HTTP/1.x message heads: finding where a head ends and parsing it strictly (SPEC §7, §8).
//
// Strict because the proxy stands between a hostile client and origins that may read a message
// differently: anything two parsers could disagree on (bare CR or LF, folded lines, white space
// before a colon, control characters) is refused rather than guessed at.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "proxy/wire/parse_result.h"
#include "table/ascii.h"  // iequals: header names compare without regard to case

namespace boxproxy {

struct HeaderField {
  std::string_view name;   // as written (compare without regard to case)
  std::string_view value;  // spaces and tabs trimmed at both ends
};

struct RequestHead {
  std::string_view method;   // "GET", "CONNECT", ...
  std::string_view target;   // the request target as written
  std::string_view version;  // "HTTP/1.0" or "HTTP/1.1"
  std::vector<HeaderField> headers;
};

struct ResponseHead {
  std::string_view version;  // "HTTP/1.x"
  unsigned status = 0;       // 100..999
  std::string_view reason;
  std::vector<HeaderField> headers;
};

// Looks for the end of a request head in `buffer` (everything received so far). complete: the head
// is `value` (views into `buffer`) and spans `consumed` bytes, counting the blank line. refused:
// bad_request (bare CR or LF, control character or NUL, malformed line, folded header, white
// space before a colon, a version other than HTTP/1.0 or 1.1) or head_too_large when no end is
// found within `max_head_bytes`. need_more: no end yet.
[[nodiscard]] ParseResult<RequestHead> parse_request_head(std::string_view buffer, std::size_t max_head_bytes);

// The same for a response head from an origin.
[[nodiscard]] ParseResult<ResponseHead> parse_response_head(std::string_view buffer, std::size_t max_head_bytes);

// RFC 9110 §5.6.2 tchar: a character of a token (a method, a header name, a chunk extension).
[[nodiscard]] constexpr bool is_token_char(unsigned char c) noexcept {
  if (c >= '0' && c <= '9') return true;
  if (c >= 'A' && c <= 'Z') return true;
  if (c >= 'a' && c <= 'z') return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

}  // namespace boxproxy
