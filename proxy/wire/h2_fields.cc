// SPDX-License-Identifier: Apache-2.0
// HTTP/2 fields that cross to HTTP/1.1 (proxy/wire/h2_fields.h).
#include "proxy/wire/h2_fields.h"

#include "proxy/wire/http_head.h"

namespace boxproxy {

bool is_lower_token(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (!is_token_char(c) || (c >= 'A' && c <= 'Z')) return false;
  }
  return true;
}

bool is_carriable_value(std::string_view value) noexcept {
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  if (value.empty()) return true;
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  return !blank(value.front()) && !blank(value.back());
}

}  // namespace boxproxy
