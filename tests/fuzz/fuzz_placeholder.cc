// SPDX-License-Identifier: Apache-2.0
// Placeholder substitution (table/placeholder, SPEC §19). Three placeholders (one of them for a
// name that itself starts "bxp_"); the first byte picks which names the endpoint may have and
// which of their values are set; the rest is a header value or a request target. Invariants:
//   - swapping agrees with a plain replace-each-placeholder written here (the values all set);
//   - with every value set, nothing is missing and no allowed placeholder is left as made; with
//     some unset, `missing` names exactly the unset allowed ones the text holds, once each;
//   - text without "bxp_" is never changed; swapping again changes nothing more;
//   - find_misdirected finds every placeholder outside the allowed set that the once-decoded,
//     lower-cased search form holds (it looks in more spellings too: decoded repeatedly, base64),
//     and never names an allowed one.
#include <array>
#include <string>
#include <vector>

#include "table/placeholder.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

struct Secret {
  std::string name;
  std::string placeholder;
  std::string value;
};

std::vector<Secret> secrets() {
  std::vector<Secret> out;
  const char* names[] = {"github", "npm_token", "bxp_x"};
  for (std::size_t i = 0; i < 3; ++i) {
    std::array<std::uint8_t, kPlaceholderRandomBytes> random{};
    for (std::size_t j = 0; j < random.size(); ++j) random[j] = static_cast<std::uint8_t>(i * 91 + j * 13 + 5);
    out.push_back({names[i], make_placeholder(names[i], random), "VALUE" + std::to_string(i)});
  }
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const std::vector<Secret> all = secrets();
  Placeholders placeholders;
  for (const Secret& s : all) placeholders.set(s.name, s.placeholder);
  const unsigned shape = data[0];
  std::vector<std::string> allowed;
  std::vector<bool> set(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (shape & (1u << i)) allowed.push_back(all[i].name);
    set[i] = (shape & (8u << i)) != 0;
  }
  const std::string text(fuzz::as_text(data + 1, size - 1));

  const auto every_value = [&](const std::string& name) -> const std::string* {
    for (const Secret& s : all) {
      if (s.name == name) return &s.value;
    }
    return nullptr;
  };
  const auto some_values = [&](const std::string& name) -> const std::string* {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].name == name) return set[i] ? &all[i].value : nullptr;
    }
    return nullptr;
  };

  const auto swapped = placeholders.swap(text, allowed, every_value);
  std::string reference = text;
  for (const Secret& s : all) {
    for (const std::string& name : allowed) {
      if (name == s.name) reference = replace_all(reference, s.placeholder, s.value);
    }
  }
  FUZZ_CHECK(swapped.text == reference);
  FUZZ_CHECK(swapped.missing.empty());
  if (text.find(kPlaceholderPrefix) == std::string::npos) FUZZ_CHECK(swapped.text == text);
  FUZZ_CHECK(placeholders.swap(swapped.text, allowed, every_value).text == swapped.text);

  const auto partly = placeholders.swap(text, allowed, some_values);
  for (std::size_t i = 0; i < all.size(); ++i) {
    bool is_allowed = false;
    for (const std::string& name : allowed) is_allowed = is_allowed || name == all[i].name;
    const bool held = text.find(all[i].placeholder) != std::string::npos;
    std::size_t named = 0;
    for (const std::string& name : partly.missing) named += name == all[i].name ? 1 : 0;
    FUZZ_CHECK(named == ((is_allowed && !set[i] && held) ? 1u : 0u));
  }

  const auto found = placeholders.find_misdirected(text, allowed);
  const std::string searched = placeholder_search_form(text);
  bool any = false;
  for (const Secret& s : all) {
    bool is_allowed = false;
    for (const std::string& name : allowed) is_allowed = is_allowed || name == s.name;
    any = any || (!is_allowed && searched.find(s.placeholder) != std::string::npos);
    if (found && *found == s.name) FUZZ_CHECK(!is_allowed);
  }
  if (any) FUZZ_CHECK(found.has_value());
  // Decoding until nothing changes: decoding once more changes nothing.
  const std::string decoded = percent_decode_fully(text);
  FUZZ_CHECK(percent_decode_fully(decoded) == decoded);
  return 0;
}
