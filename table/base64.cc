// SPDX-License-Identifier: Apache-2.0
// Base64, both alphabets (table/base64.h).
#include "table/base64.h"

#include <cstdint>

namespace boxproxy {
namespace {

constexpr std::string_view kStandard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// A character's six bits in either alphabet, or -1.
int sextet(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

}  // namespace

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, bool padding) {
  const std::string_view table = alphabet == Base64Alphabet::standard ? kStandard : kUrl;
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group = (std::uint32_t{static_cast<std::uint8_t>(bytes[i])} << 16) |
                                (std::uint32_t{static_cast<std::uint8_t>(bytes[i + 1])} << 8) |
                                std::uint32_t{static_cast<std::uint8_t>(bytes[i + 2])};
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(table[(group >> shift) & 0x3f]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return out;
  std::uint32_t group = std::uint32_t{static_cast<std::uint8_t>(bytes[i])} << 16;
  if (rest == 2) group |= std::uint32_t{static_cast<std::uint8_t>(bytes[i + 1])} << 8;
  out.push_back(table[(group >> 18) & 0x3f]);
  out.push_back(table[(group >> 12) & 0x3f]);
  if (rest == 2) out.push_back(table[(group >> 6) & 0x3f]);
  if (padding) out.append(rest == 1 ? "==" : "=");
  return out;
}

bool is_base64_char(char c) noexcept { return sextet(c) >= 0; }

std::optional<std::string> base64_decode_lenient(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;  // a lone character carries no whole byte
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const int v = sextet(c);
    if (v < 0) return std::nullopt;  // '=' inside included
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xffu));
    }
  }
  return out;
}

std::optional<std::string> base64_decode_standard(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  for (std::size_t i = 0; i + pad < text.size(); ++i) {
    if (text[i] == '-' || text[i] == '_') return std::nullopt;  // the URL alphabet is not Basic's
  }
  auto out = base64_decode_lenient(text);
  if (!out) return std::nullopt;
  // The bits the padding leaves unused must be zero: otherwise two texts decode the same, and the
  // text encoded again would not be the one the box sent.
  if (base64_encode(*out, Base64Alphabet::standard, true) != text) return std::nullopt;
  return out;
}

}  // namespace boxproxy
