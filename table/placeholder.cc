// SPDX-License-Identifier: Apache-2.0
#include "table/placeholder.h"

#include "table/ascii.h"
#include "table/base64.h"
#include "table/secret_spellings.h"

namespace boxproxy {
namespace {

// How deep base64 inside base64 (or inside a percent-decoded text) is looked into. Each level
// reads at most 3/4 of the bytes of the one above, twice (as sent and decoded), so the work stays
// within a few times the text's size.
constexpr int kBase64Depth = 3;
// A run shorter than this cannot hold a placeholder ("bxp_" NAME "_" and 32 hex digits is 38
// bytes at least, 52 characters of base64).
constexpr std::size_t kShortestBase64Run = 48;

}  // namespace

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

std::string percent_decode_fully(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    out.push_back(c);
    // A byte just placed may end a "%XX"; its decoded byte may end another with what is before.
    while (out.size() >= 3 && out[out.size() - 3] == '%' && hex_value(out[out.size() - 2]) >= 0 &&
           hex_value(out.back()) >= 0) {
      const char decoded = static_cast<char>(hex_value(out[out.size() - 2]) * 16 + hex_value(out.back()));
      out.resize(out.size() - 3);
      out.push_back(decoded);
    }
  }
  return out;
}

void Placeholders::set(std::string name, std::string placeholder) {
  bool replaced = false;
  for (Entry& entry : entries_) {
    if (entry.name == name) {
      entry.placeholder = std::move(placeholder);
      replaced = true;
    }
  }
  if (!replaced) entries_.push_back(Entry{std::move(name), std::move(placeholder)});
  rebuild();
}

// The tripwire's patterns: each placeholder as made (looked for in lower-cased text, so in any
// case), and the interiors of its base64 in both alphabets at the three alignments (looked for in
// the text as it is: base64 is read case and all).
void Placeholders::rebuild() {
  std::vector<std::string> patterns;
  entry_of_.clear();
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    patterns.push_back(entries_[i].placeholder);
    entry_of_.push_back(i);
    for (const Base64Alphabet alphabet : {Base64Alphabet::standard, Base64Alphabet::url}) {
      for (std::size_t filler = 0; filler < 3; ++filler) {
        patterns.push_back(base64_interior(entries_[i].placeholder, filler, alphabet));
        entry_of_.push_back(i);
      }
    }
  }
  std::vector<std::string_view> views(patterns.begin(), patterns.end());
  finder_ = MultiMatcher(views);
}

// Marks in `found` each entry `text` holds in a spelling of the top of placeholder.h.
void Placeholders::found_in(std::string_view text, std::vector<bool>& found, int depth) const {
  const auto scan = [&](std::string_view form) {
    MultiMatcher::State state = MultiMatcher::kStart;
    for (const char c : form) {
      state = finder_.step(state, static_cast<unsigned char>(c));
      const std::uint32_t pattern = finder_.match(state);
      if (pattern != MultiMatcher::kNoMatch) found[entry_of_[pattern]] = true;
    }
  };
  const std::string decoded = percent_decode_fully(text);
  for (const std::string_view form : {text, std::string_view(decoded)}) {
    scan(form);
    scan(ascii_lower(form));
    if (depth >= kBase64Depth) continue;
    // Each maximal run of base64 characters, decoded from its start (a `Basic` credential, a
    // token=, a JSON blob), and its text searched again: base64 of a percent-encoded or
    // upper-cased placeholder has no interior of the placeholder's own.
    for (std::size_t at = 0; at < form.size();) {
      if (!is_base64_char(form[at])) {
        ++at;
        continue;
      }
      std::size_t end = at;
      while (end < form.size() && is_base64_char(form[end])) ++end;
      std::string_view run = form.substr(at, end - at);
      if (run.size() % 4 == 1) run.remove_suffix(1);
      if (run.size() >= kShortestBase64Run) {
        if (auto inner = base64_decode_lenient(run)) found_in(*inner, found, depth + 1);
      }
      at = end;
    }
    if (decoded == text) break;  // nothing was encoded: the second form is the first
  }
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
  std::vector<bool> found(entries_.size());
  found_in(text, found, 0);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    bool may = false;
    for (const std::string& name : allowed) may = may || name == entries_[i].name;
    // Placeholders are made lower-case, so the lower-cased forms never hide one.
    if (!may && found[i]) return entries_[i].name;
  }
  return std::nullopt;
}

}  // namespace boxproxy
