// SPDX-License-Identifier: Apache-2.0
// The spellings of a secret's value (table/secret_spellings.h).
#include "table/secret_spellings.h"

#include <array>

namespace boxproxy {
namespace {

constexpr bool is_unreserved(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// encodeURIComponent leaves these as they are besides the unreserved ones (ECMA-262 §19.2.6).
constexpr bool is_uri_component_mark(char c) noexcept {
  return c == '!' || c == '\'' || c == '(' || c == ')' || c == '*';
}

void append_hex_byte(std::string& out, char c, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(c);
  out.push_back(digits[byte >> 4]);
  out.push_back(digits[byte & 0xf]);
}

std::string percent_encoded(std::string_view value, bool upper, bool keep_marks) {
  std::string out;
  out.reserve(value.size() * 3);
  for (const char c : value) {
    if (is_unreserved(c) || (keep_marks && is_uri_component_mark(c))) {
      out.push_back(c);
    } else {
      out.push_back('%');
      append_hex_byte(out, c, upper);
    }
  }
  return out;
}

enum class JsonStyle : std::uint8_t {
  minimal,  // only " and \ escaped (RFC 8259 §7's must)
  slash,    // "/" as "\/" too (PHP's json_encode, older encoders)
  go,       // <, > and & as \u003c, \u003e, \u0026 too (Go's encoding/json)
};

std::string json_escaped(std::string_view value, JsonStyle style) {
  std::string out;
  out.reserve(value.size() * 6);
  for (const char c : value) {
    if (c == '"' || c == '\\' || (c == '/' && style == JsonStyle::slash)) {
      out.push_back('\\');
      out.push_back(c);
    } else if (style == JsonStyle::go && (c == '<' || c == '>' || c == '&')) {
      out.append("\\u00");
      append_hex_byte(out, c, false);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// How ' is written by an HTML escaper: Python's html.escape and Go's html.EscapeString give
// "&#x27;" and "&#39;", PHP's htmlspecialchars by default leaves it.
std::string html_escaped(std::string_view value, std::string_view apostrophe) {
  std::string out;
  out.reserve(value.size() * 6);
  for (const char c : value) {
    switch (c) {
      case '&': out.append("&amp;"); break;
      case '<': out.append("&lt;"); break;
      case '>': out.append("&gt;"); break;
      case '"': out.append("&quot;"); break;
      case '\'': out.append(apostrophe); break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string hex_of(std::string_view value, bool upper) {
  std::string out;
  out.reserve(value.size() * 2);
  for (const char c : value) append_hex_byte(out, c, upper);
  return out;
}

void add_once(std::vector<SecretText>& out, std::string&& spelling) {
  if (spelling.empty()) return;
  for (const SecretText& have : out) {
    if (have.view() == spelling) {
      scrub(spelling);
      return;
    }
  }
  out.push_back(SecretText::adopt(std::move(spelling)));
}

}  // namespace

std::string percent_encode_all(std::string_view value) { return percent_encoded(value, true, false); }

std::string base64_interior(std::string_view value, std::size_t filler, Base64Alphabet alphabet) {
  std::string text(filler, '\0');
  text.append(value);
  std::string encoded = base64_encode(text, alphabet, false);
  scrub(text);
  // Characters wholly made of the value's bits: from the first whose six bits all come after the
  // filler, to the last whose six bits all lie within the text.
  const std::size_t first = (filler * 8 + 5) / 6;
  const std::size_t end = (filler + value.size()) * 8 / 6;
  std::string out = end > first ? encoded.substr(first, end - first) : std::string();
  scrub(encoded);
  return out;
}

std::vector<SecretText> secret_spellings(std::string_view value) {
  std::vector<SecretText> out;
  add_once(out, std::string(value));
  bool plain = true;
  for (const char c : value) plain = plain && is_unreserved(c);
  if (!plain) {
    add_once(out, percent_encoded(value, true, false));
    add_once(out, percent_encoded(value, false, false));
    add_once(out, percent_encoded(value, true, true));
    add_once(out, percent_encoded(value, false, true));
    add_once(out, json_escaped(value, JsonStyle::minimal));
    add_once(out, json_escaped(value, JsonStyle::slash));
    add_once(out, json_escaped(value, JsonStyle::go));
    add_once(out, html_escaped(value, "&#39;"));
    add_once(out, html_escaped(value, "&#x27;"));
    add_once(out, html_escaped(value, "'"));
  }
  add_once(out, hex_of(value, false));
  add_once(out, hex_of(value, true));
  for (const Base64Alphabet alphabet : {Base64Alphabet::standard, Base64Alphabet::url}) {
    for (std::size_t filler = 0; filler < 3; ++filler) add_once(out, base64_interior(value, filler, alphabet));
  }
  return out;
}

}  // namespace boxproxy
