// SPDX-License-Identifier: Apache-2.0
#include "table/message_text.h"

#include <fmt/format.h>

namespace boxproxy {
namespace {

constexpr bool is_printable(unsigned char byte) noexcept { return byte >= 0x20 && byte <= 0x7e; }

void append_escaped(std::string& out, unsigned char byte) { out += fmt::format("\\x{:02x}", byte); }

std::string escape_unprintable(std::string_view text, bool keep_line_breaks) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (is_printable(byte) || (keep_line_breaks && byte == '\n')) {
      out += c;
    } else {
      append_escaped(out, byte);
    }
  }
  return out;
}

}  // namespace

std::string quote(std::string_view text) {
  std::string out = "\"";
  std::size_t shown = 0;
  for (const char c : text) {
    if (shown++ == kMaxQuotedChars) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += c;
    } else if (!is_printable(byte)) {
      append_escaped(out, byte);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string printable(std::string_view text) { return escape_unprintable(text, false); }

std::string printable_lines(std::string_view text) { return escape_unprintable(text, true); }

}  // namespace boxproxy
