// SPDX-License-Identifier: Apache-2.0
// ASCII text helpers: case, white space, hex digits. One copy for table/, proxy/ and socketd/.
//
// Byte-wise and locale-free on purpose. The names, header fields and chunk sizes they read are
// ASCII by their RFCs, and <cctype> is neither: it follows the process's locale (which may fold
// more than A-Z) and is undefined for a negative char, which every byte >= 0x80 is here. So a
// byte outside the ranges named below is never changed, never white space, never a hex digit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace boxproxy {

// 'A'..'Z' to 'a'..'z'; every other byte as it is.
[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `text` with every 'A'..'Z' lowered (a name as a map's key, a name as matched).
[[nodiscard]] inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

// Whether `a` and `b` are the same text but for the case of 'A'..'Z' (header names, tokens,
// schemes, host names).
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

// HTTP's optional white space (OWS, RFC 9110 §5.6.3): SP or HTAB, nothing else.
[[nodiscard]] constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

// `s` without OWS at either end.
[[nodiscard]] constexpr std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// White space as isspace() reads it in the "C" locale: SP, HTAB, LF, VT, FF, CR. Wider than OWS:
// for text a person wrote (a host file's lines), not for protocol fields.
[[nodiscard]] constexpr bool is_ascii_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// `s` without is_ascii_space bytes at either end.
[[nodiscard]] constexpr std::string_view trim_ascii_space(std::string_view s) noexcept {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

// The value of a hex digit ('0'..'9', 'a'..'f', 'A'..'F'), or -1 for any other byte.
[[nodiscard]] constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace boxproxy
