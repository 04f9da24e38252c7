// SPDX-License-Identifier: Apache-2.0
// HTTP/2 fields that cross to HTTP/1.1 (proxy/wire/h2_fields.h).
#include "proxy/wire/h2_fields.h"

#include <array>

#include "proxy/wire/http_head.h"

namespace boxproxy {
namespace {

// Each byte's class, looked up once a byte: every field of every head on both HTTP/2 sessions
// passes here, and the comparisons a byte cost (a range, HTAB, DEL; tchar's list) were 2% of an
// HTTP/2-both-sides request's instructions (callgrind: bench/README.md, 2026-12-07 22:30). Built
// from the same predicates, so the classes are the ones the comparisons gave
// (protocol_h2_upstream_test checks all 256 bytes).
constexpr unsigned char kLowerTokenChar = 1;  // tchar, not an uppercase letter
constexpr unsigned char kValueChar = 2;       // not a control character (HTAB aside), not DEL

constexpr std::array<unsigned char, 256> make_classes() noexcept {
  std::array<unsigned char, 256> classes{};
  for (unsigned c = 0; c < 256; ++c) {
    const auto ch = static_cast<unsigned char>(c);
    if (is_token_char(ch) && !(ch >= 'A' && ch <= 'Z')) classes[c] |= kLowerTokenChar;
    if (!((ch < 0x20 && ch != '\t') || ch == 0x7f)) classes[c] |= kValueChar;
  }
  return classes;
}

constexpr std::array<unsigned char, 256> kClasses = make_classes();

}  // namespace

bool is_lower_token(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char ch : name) {
    if ((kClasses[static_cast<unsigned char>(ch)] & kLowerTokenChar) == 0) return false;
  }
  return true;
}

bool is_carriable_value(std::string_view value) noexcept {
  for (const char ch : value) {
    if ((kClasses[static_cast<unsigned char>(ch)] & kValueChar) == 0) return false;
  }
  if (value.empty()) return true;
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  return !blank(value.front()) && !blank(value.back());
}

}  // namespace boxproxy
