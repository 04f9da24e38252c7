// SPDX-License-Identifier: Apache-2.0
#include "table/placeholder.h"

#include "table/ascii.h"

namespace boxproxy {

std::string make_placeholder(std::string_view name, const std::array<std::uint8_t, kPlaceholderRandomBytes>& random) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kPlaceholderPrefix);
  out.append(name);
  out.push_back('_');
  for (const std::uint8_t byte : random) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

std::string placeholder_search_form(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out.push_back(ascii_lower(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]))));
      i += 2;
      continue;
    }
    out.push_back(ascii_lower(text[i]));
  }
  return out;
}

void Placeholders::set(std::string name, std::string placeholder) {
  for (Entry& entry : entries_) {
    if (entry.name == name) {
      entry.placeholder = std::move(placeholder);
      return;
    }
  }
  entries_.push_back(Entry{std::move(name), std::move(placeholder)});
}

const std::string* Placeholders::of(std::string_view name) const noexcept {
  for (const Entry& entry : entries_) {
    if (entry.name == name) return &entry.placeholder;
  }
  return nullptr;
}

std::optional<std::string> Placeholders::find_misdirected(std::string_view text,
                                                         const std::vector<std::string>& allowed) const {
  if (entries_.empty()) return std::nullopt;
  const std::string searched = placeholder_search_form(text);
  for (const Entry& entry : entries_) {
    bool may = false;
    for (const std::string& name : allowed) may = may || name == entry.name;
    // Placeholders are made lower-case, so the search form's lower-casing never hides one.
    if (!may && searched.find(entry.placeholder) != std::string::npos) return entry.name;
  }
  return std::nullopt;
}

}  // namespace boxproxy
