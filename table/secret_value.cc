// SPDX-License-Identifier: Apache-2.0
#include "table/secret_value.h"

#include <string.h>  // explicit_bzero

#include <fmt/format.h>

#include "table/ascii.h"

namespace boxproxy {

std::optional<std::string> check_secret_value(std::string_view value) {
  if (value.empty()) return std::string("is empty");
  if (value.size() < kMinSecretValueBytes) {
    // The length alone: it says nothing of the value a log reader could use beyond its size.
    return fmt::format("is shorter than {} bytes (a short value would match at random in the responses searched "
                       "for it)", kMinSecretValueBytes);
  }
  if (value.size() > kMaxSecretValueBytes) {
    return fmt::format("is longer than {} bytes", kMaxSecretValueBytes);
  }
  for (const char c : value) {
    // See the header: CR, LF and NUL would end or add a header; the rest are refused so that
    // the origin reads exactly the value that was set.
    if (c < 0x21 || c > 0x7e) {
      return std::string("holds a byte that is not visible ASCII (0x21 to 0x7e): a space, a tab, a line end, "
                         "a control byte or a byte above 0x7e");
    }
  }
  return std::nullopt;
}

void scrub(std::string& text) noexcept {
  // The whole buffer, not only the characters in use: a value shortened in place, or the bytes
  // of a short string's inline buffer, would otherwise stay behind it.
  ::explicit_bzero(text.data(), text.capacity());
  text.clear();
}

SecretText::SecretText(SecretText&& other) noexcept {
  // A copy, then the source scrubbed: a moved short string leaves its bytes in the source's inline
  // buffer, and a moved long one hands its buffer over (no copy left to scrub then).
  text_ = std::move(other.text_);
  scrub(other.text_);
}

SecretText& SecretText::operator=(SecretText&& other) noexcept {
  if (this != &other) {
    scrub(text_);
    text_ = std::move(other.text_);
    scrub(other.text_);
  }
  return *this;
}

SecretText SecretText::adopt(std::string&& text) noexcept {
  SecretText out;
  out.text_ = std::move(text);
  scrub(text);
  return out;
}

SecretOrError secret_from_file_contents(std::string& contents) {
  SecretOrError out;
  std::string_view value = contents;
  if (value.ends_with('\n')) value.remove_suffix(1);
  if (value.ends_with('\r')) value.remove_suffix(1);
  if (auto error = check_secret_value(value)) {
    out.error = std::move(*error);
  } else {
    out.value.emplace(value);
  }
  scrub(contents);
  return out;
}

SecretText secret_hex(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  SecretText out;
  out.text().reserve(value.size() * 2);  // no growth: no unscrubbed buffer left behind
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    out.text().push_back(kHex[byte >> 4]);
    out.text().push_back(kHex[byte & 0xf]);
  }
  return out;
}

std::optional<SecretText> secret_from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0 || hex.size() > 2 * kMaxSecretValueBytes) return std::nullopt;
  SecretText out;
  out.text().reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_value(hex[i]);
    const int low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out.text().push_back(static_cast<char>(high * 16 + low));
  }
  if (check_secret_value(out.view())) return std::nullopt;
  return out;
}

}  // namespace boxproxy
