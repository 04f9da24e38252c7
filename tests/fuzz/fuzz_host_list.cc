// SPDX-License-Identifier: Apache-2.0
// table/host_list and table/policy's --resolve: parse_host_entry, split_host_items,
// split_host_file, HostList, parse_resolve_entry.
//
// The first byte picks what the rest is fed to. Invariants:
//   - an accepted entry's name is lower-case, without a trailing dot, of two labels or more, a
//     valid name, never an IP literal, and a name parse_host accepts as a name (so it can match);
//   - entries normalise idempotently: the entry written back out ("*." name ":" port) parses to
//     the same entry, and so do its upper-case and trailing-dot spellings;
//   - a list holding the entry matches what the entry names on an open port (any case, trailing
//     dot or not), a wildcard never matches its own name, and a port it does not open is
//     port_not_open;
//   - split items are non-empty views into the text without separators; file items are trimmed,
//     without '#' or line breaks;
//   - an accepted --resolve entry has a normalised valid name and at least one address, and
//     written back as NAME=ADDR,... parses to the same entry.
#include <string>

#include "table/host_list.h"
#include "table/policy.h"
#include "table/target.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

std::string upper(std::string text) {
  for (char& c : text) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return text;
}

void check_entry(const HostEntry& e) {
  FUZZ_CHECK(!e.name.empty());
  FUZZ_CHECK(e.name.back() != '.');
  FUZZ_CHECK(e.name.find('.') != std::string::npos);
  FUZZ_CHECK(is_valid_name(e.name));
  FUZZ_CHECK(!parse_ip_literal(e.name).has_value());
  for (const char c : e.name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
  if (e.port) FUZZ_CHECK(*e.port >= 1);
  const TargetResult as_host = parse_host(e.name, 443);
  FUZZ_CHECK(std::holds_alternative<Target>(as_host) && std::get<Target>(as_host).is_name());

  for (const std::string& spelling : {entry_text(e), upper(entry_text(e)),
                                      (e.wildcard ? "*." + e.name + "." : e.name + ".") +
                                          (e.port ? ":" + std::to_string(*e.port) : std::string())}) {
    const auto again = parse_host_entry(spelling);
    FUZZ_CHECK(std::holds_alternative<HostEntry>(again));
    FUZZ_CHECK(std::get<HostEntry>(again) == e);
  }

  HostList list;
  FUZZ_CHECK(!list.add(entry_text(e)).has_value());
  FUZZ_CHECK(!list.add(upper(entry_text(e))).has_value());
  FUZZ_CHECK(list.entries().size() == 1);  // the repeat is dropped
  const std::uint16_t open = e.port ? *e.port : 443;
  const std::uint16_t closed = e.port ? static_cast<std::uint16_t>(*e.port == 1 ? 2 : 1) : 8080;
  const std::string named = e.wildcard ? "a." + e.name : e.name;
  FUZZ_CHECK(list.match(named, open) == HostList::Match::listed);
  FUZZ_CHECK(list.match(upper(named) + ".", open) == HostList::Match::listed);
  FUZZ_CHECK(list.match(named, closed) == HostList::Match::port_not_open);
  if (!e.port) FUZZ_CHECK(list.match(named, 80) == HostList::Match::listed);
  if (e.wildcard) {
    FUZZ_CHECK(list.match(e.name, open) == HostList::Match::not_listed);
    FUZZ_CHECK(list.match("x" + e.name, open) == HostList::Match::not_listed);
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 2048) return 0;
  const unsigned mode = data[0] % 4;
  const std::string text(fuzz::as_text(data + 1, size - 1));

  if (mode == 0) {
    const auto parsed = parse_host_entry(text);
    if (const auto* e = std::get_if<HostEntry>(&parsed)) check_entry(*e);
    else FUZZ_CHECK(!std::get<std::string>(parsed).empty());
  } else if (mode == 1) {
    HostList list;
    for (const std::string_view item : split_host_items(text)) {
      FUZZ_CHECK(!item.empty());
      FUZZ_CHECK(fuzz::lies_within(item, text));
      for (const char c : item) FUZZ_CHECK(c != ',' && !is_space(c));
      const auto parsed = parse_host_entry(item);
      if (const auto* e = std::get_if<HostEntry>(&parsed)) check_entry(*e);
      FUZZ_CHECK(list.add(item).has_value() == std::holds_alternative<std::string>(parsed));
    }
  } else if (mode == 2) {
    for (const std::string_view item : split_host_file(text)) {
      FUZZ_CHECK(!item.empty());
      FUZZ_CHECK(fuzz::lies_within(item, text));
      FUZZ_CHECK(item.find('\n') == std::string_view::npos && item.find('#') == std::string_view::npos);
      FUZZ_CHECK(!is_space(item.front()) && !is_space(item.back()));
      const auto parsed = parse_host_entry(item);
      if (const auto* e = std::get_if<HostEntry>(&parsed)) check_entry(*e);
    }
  } else {
    const auto parsed = parse_resolve_entry(text);
    if (const auto* entry = std::get_if<ResolveEntry>(&parsed)) {
      FUZZ_CHECK(is_valid_name(entry->name));
      FUZZ_CHECK(!parse_ip_literal(entry->name).has_value());
      for (const char c : entry->name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
      FUZZ_CHECK(!entry->addresses.empty());
      std::string written = upper(entry->name) + ".=";
      for (std::size_t i = 0; i < entry->addresses.size(); ++i) {
        if (i) written += ',';
        written += entry->addresses[i].to_string();
        FUZZ_CHECK(entry->addresses[i].zone.empty());
      }
      const auto again = parse_resolve_entry(written);
      FUZZ_CHECK(std::holds_alternative<ResolveEntry>(again));
      const auto& round = std::get<ResolveEntry>(again);
      FUZZ_CHECK(round.name == entry->name);
      FUZZ_CHECK(round.addresses.size() == entry->addresses.size());
      for (std::size_t i = 0; i < round.addresses.size(); ++i) {
        FUZZ_CHECK(round.addresses[i] == entry->addresses[i]);
        FUZZ_CHECK(round.addresses[i].family == entry->addresses[i].family);
      }
    } else {
      FUZZ_CHECK(!std::get<std::string>(parsed).empty());
    }
  }
  return 0;
}
