// SPDX-License-Identifier: Apache-2.0
// Placeholders (SPEC §19): the stand-in a box is given instead of a secret's value,
// "bxp_<NAME>_<32 hex digits>", new each session, and what the proxy does with one in a request:
// swap it for the value where the endpoint may have it, and find it where it may not go. Pure: the
// random digits, the values and the decision which endpoint may have which secret are the caller's.
//
// Finding is wider than swapping, on purpose. A placeholder is swapped only where it stands as
// made (the request an origin will read carries the value in its place). But it is found in a
// request to a wrong destination however it is commonly spelled (SPEC §19a): in any case;
// percent-encoded, however many times over (decoded until nothing changes); in `Basic`
// credentials; and inside base64 (either alphabet) of a text holding it, wherever it sits in
// that text (the interiors of its base64 at the three alignments, table/secret_spellings.h), or
// when a whole run of base64 decodes to a text that holds it in any of these spellings. An
// origin or a log downstream may decode what the proxy did not; a refusal there (`secret
// misdirected`) is a tripwire, and an evasion of it should be as hard as the proxy can make it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "table/multi_match.h"

namespace boxproxy {

inline constexpr std::string_view kPlaceholderPrefix = "bxp_";
inline constexpr std::size_t kPlaceholderRandomBytes = 16;  // 32 hex digits

// "bxp_" NAME "_" and `random` as 32 lower-case hex digits. NAME is a checked secret name
// (check_secret_name: [a-z0-9_], 1 to 32).
[[nodiscard]] std::string make_placeholder(std::string_view name,
                                           const std::array<std::uint8_t, kPlaceholderRandomBytes>& random);

// `text` lower-cased with every "%XX" (two hex digits) decoded, once.
[[nodiscard]] std::string placeholder_search_form(std::string_view text);

// `text` with "%XX" decoded again and again until none is left that decodes ("%2541" is "A"):
// what an origin that decodes more than once reads. Linear time: one pass, in which a decoded byte
// may complete a "%XX" with the bytes before it (the result is the same as decoding the whole
// text repeatedly, since two "%XX" never overlap).
[[nodiscard]] std::string percent_decode_fully(std::string_view text);

// A session's placeholders, by secret name.
class Placeholders {
 public:
  // Keeps `placeholder` (make_placeholder's) as NAME's; a name given again replaces its old one.
  void set(std::string name, std::string placeholder);

  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  [[nodiscard]] const std::string* of(std::string_view name) const noexcept;

  // The name of the first placeholder (in the order set) that `text` holds in any spelling (the
  // top of this file), skipping those of `allowed`; nullopt when none. Linear in `text`'s size (a
  // few passes: as made, decoded, each base64 run decoded, to a bounded depth).
  [[nodiscard]] std::optional<std::string> find_misdirected(std::string_view text,
                                                           const std::vector<std::string>& allowed = {}) const;

  // What swapping does to `text`: each placeholder of a name in `allowed`, as made, is replaced by
  // that secret's value, given by `value_of` (nullptr: not set). The names whose value is not
  // set, once each, are in `missing`; the text then keeps their placeholders (the caller refuses
  // the request as `secret missing`, and sends nothing).
  struct Swapped {
    std::string text;
    std::vector<std::string> missing;
  };
  template <typename ValueOf>
  [[nodiscard]] Swapped swap(std::string_view text, const std::vector<std::string>& allowed, ValueOf value_of) const;

 private:
  struct Entry {
    std::string name;
    std::string placeholder;
  };
  void found_in(std::string_view text, std::vector<bool>& found, int depth) const;
  void rebuild();

  std::vector<Entry> entries_;
  MultiMatcher finder_;            // every entry's placeholder and its base64 interiors
  std::vector<std::size_t> entry_of_;  // the entry each of finder_'s patterns spells
};

// ---- implementation of the template -----------------------------------------------------------

template <typename ValueOf>
Placeholders::Swapped Placeholders::swap(std::string_view text, const std::vector<std::string>& allowed,
                                         ValueOf value_of) const {
  Swapped out;
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t at = text.find(kPlaceholderPrefix, from);
    if (at == std::string_view::npos) break;
    const Entry* hit = nullptr;
    for (const Entry& entry : entries_) {  // the longest that stands here (none is another's prefix)
      const bool here = text.substr(at, entry.placeholder.size()) == entry.placeholder;
      if (here && (hit == nullptr || entry.placeholder.size() > hit->placeholder.size())) hit = &entry;
    }
    bool swappable = false;
    for (const std::string& name : allowed) swappable = swappable || (hit != nullptr && name == hit->name);
    if (!swappable) {
      out.text.append(text.substr(from, at + kPlaceholderPrefix.size() - from));
      from = at + kPlaceholderPrefix.size();
      continue;
    }
    out.text.append(text.substr(from, at - from));
    const std::string* value = value_of(hit->name);
    if (value == nullptr) {
      bool said = false;
      for (const std::string& name : out.missing) said = said || name == hit->name;
      if (!said) out.missing.push_back(hit->name);
      out.text.append(hit->placeholder);
    } else {
      out.text.append(*value);
    }
    from = at + hit->placeholder.size();
  }
  if (from < text.size()) out.text.append(text.substr(from));
  return out;
}

}  // namespace boxproxy
