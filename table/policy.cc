// SPDX-License-Identifier: Apache-2.0
#include "table/policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "table/ascii.h"

namespace boxproxy {
namespace {

std::string normalise_name(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return ascii_lower(name);
}

constexpr bool is_printable(char c) noexcept { return c >= 0x20 && c <= 0x7e; }

// A --resolve answer: a strict address (parse_strict_address), IPv6 bracketed or not, as curl's
// --resolve takes it.
std::optional<IpAddress> parse_strict_answer(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  return parse_strict_address(text);
}

}  // namespace

std::optional<HostList::Match> check_host_list(const Policy& policy, const Target& target) {
  if (!policy.allow) return std::nullopt;
  // An address literal is never on a list of names: else a box allowed example.com could reach
  // any address by writing it out.
  if (!target.is_name()) return HostList::Match::not_listed;
  const HostList::Match match = policy.allow->match(target.host, target.port);
  if (match == HostList::Match::listed) return std::nullopt;
  return match;
}

const std::vector<IpAddress>* fixed_answers_for(const Policy& policy, std::string_view name) {
  if (policy.fixed_answers.empty()) return nullptr;
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  // Lower-cased on the stack: this runs in every decision for a name, and a name is at most 253
  // characters (is_valid_name); a longer text names no --resolve entry.
  char lowered[253];
  if (name.size() > sizeof lowered) return nullptr;
  std::transform(name.begin(), name.end(), lowered, [](char c) { return ascii_lower(c); });
  const auto it = policy.fixed_answers.find(std::string_view(lowered, name.size()));
  return it == policy.fixed_answers.end() ? nullptr : &it->second;
}

std::variant<ResolveEntry, std::string> parse_resolve_entry(std::string_view text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos) return fmt::format("{}: must be NAME=ADDR[,ADDR]...", text);
  const std::string_view name_text = text.substr(0, equals);
  ResolveEntry entry;
  entry.name = normalise_name(name_text);
  if (parse_ip_literal(entry.name)) {
    return fmt::format("{}: {} is an IP address, not a name", text, name_text);
  }
  if (!is_valid_name(entry.name)) return fmt::format("{}: {} is not a valid name", text, name_text);
  std::string_view rest = text.substr(equals + 1);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto address = parse_strict_answer(item);
    if (!address) {
      return fmt::format("{}: '{}' is not an IP address (a dotted quad such as 192.0.2.1, or IPv6)", text, item);
    }
    entry.addresses.push_back(*address);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return entry;
}

std::string not_listed_words(const Target& target, HostList::Match match, std::string_view hint) {
  // Only a host made of printable characters is repeated back; it goes into a status line.
  const bool plain = !target.host.empty() && target.host.size() <= 253 &&
                     std::all_of(target.host.begin(), target.host.end(),
                                 [](char c) { return is_printable(c) && c != ' '; });
  std::string words;
  if (!plain) {
    words = "egress refused: not-listed";
  } else if (!target.is_name()) {
    words = fmt::format("{} is an address, not a name on this box's network list", target.host);
  } else if (match == HostList::Match::port_not_open) {
    words = fmt::format("{}:{} is not open on this box's network list", target.host, target.port);
  } else {
    words = fmt::format("{} is not on this box's network list", target.host);
  }
  if (!hint.empty()) {
    words += ": ";
    for (const char c : hint) words += is_printable(c) ? c : '?';
  }
  return words;
}

}  // namespace boxproxy
