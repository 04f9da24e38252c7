// SPDX-License-Identifier: Apache-2.0
// The host list of SPEC §5 step 2: the names a box may reach when --allow is given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace boxproxy {

struct HostEntry {
  std::string name;                  // lower-cased, trailing dot dropped, two labels or more
  bool wildcard = false;             // "*.name": names strictly below `name`, never `name` itself
  std::optional<std::uint16_t> port; // none: 80 and 443 only
  friend bool operator==(const HostEntry&, const HostEntry&) = default;
};

// An entry in its canonical form: "example.com", "*.example.com", "example.com:8080" (what
// parse_host_entry reads back to the same entry).
[[nodiscard]] std::string entry_text(const HostEntry& entry);

// One entry: "example.com", "*.example.com", "example.com:8080", "*.example.com:8443".
// On error, a message naming the entry and what is wrong with it (an address, a URL, a path,
// a bare "*", a single label, a bad port, ...).
[[nodiscard]] std::variant<HostEntry, std::string> parse_host_entry(std::string_view text);

// The items of an --allow value: names separated by commas or white space; empty items skipped.
[[nodiscard]] std::vector<std::string_view> split_host_items(std::string_view text);

// The items of an --allow-file's text: one entry a line, '#' starts a comment, blank lines skipped.
[[nodiscard]] std::vector<std::string_view> split_host_file(std::string_view text);

class HostList {
 public:
  enum class Match {
    listed,         // a listed name and an open port
    not_listed,     // no entry names the host
    port_not_open,  // an entry names the host but none opens the port
  };

  // Adds one entry (repeats are dropped). Returns an error message naming the entry.
  [[nodiscard]] std::optional<std::string> add(std::string_view entry_text);
  // Adds an entry parsed already (parse_host_entry's): false when it was there (a repeat).
  bool add(HostEntry entry);

  // `name` is a parsed name (never an IP literal: those are refused before this is asked),
  // matched case-insensitively and without a trailing dot.
  [[nodiscard]] Match match(std::string_view name, std::uint16_t port) const;

  [[nodiscard]] const std::vector<HostEntry>& entries() const noexcept { return entries_; }

 private:
  std::vector<HostEntry> entries_;
};

}  // namespace boxproxy
