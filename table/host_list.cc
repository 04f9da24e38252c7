// SPDX-License-Identifier: Apache-2.0
#include "table/host_list.h"

#include <algorithm>

#include <fmt/format.h>

#include "table/address.h"
#include "table/ascii.h"
#include "table/target.h"

namespace boxproxy {
namespace {

constexpr bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// A name as matched: lower-cased, one trailing dot dropped.
std::string normalise(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return ascii_lower(name);
}

}  // namespace

std::variant<HostEntry, std::string> parse_host_entry(std::string_view text) {
  const std::string shown(text);
  if (text.empty()) return std::string("an empty entry is not a name");
  if (text.find("://") != std::string_view::npos) {
    return fmt::format("{}: is a URL; an entry is a name such as example.com or *.example.com", shown);
  }
  if (text.find('/') != std::string_view::npos) {
    return fmt::format("{}: holds a path ('/'); an entry is a name such as example.com", shown);
  }
  // An address, in any form a client could write it: the list holds names only, so that a box
  // allowed "example.com" cannot reach whatever an address literal names.
  if (parse_ip_literal(text)) {
    return fmt::format("{}: is an IP address; the list holds names only", shown);
  }

  std::string_view host = text;
  HostEntry entry;
  // The port follows the last ':' (a name holds none; an IPv6 address was caught above).
  if (const std::size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    const auto port = parse_port(text.substr(colon + 1));
    if (!port) return fmt::format("{}: bad port (must be 1 to 65535)", shown);
    entry.port = *port;
    if (parse_ip_literal(host)) return fmt::format("{}: is an IP address; the list holds names only", shown);
  }
  if (host == "*" || host == "*.") {
    return fmt::format("{}: a bare '*' would open everything; write *.example.com", shown);
  }
  if (host.size() >= 2 && host.substr(0, 2) == "*.") {
    entry.wildcard = true;
    host.remove_prefix(2);
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::string name = ascii_lower(host);
  if (name.empty()) return fmt::format("{}: has no name", shown);
  for (const char c : name) {
    if (!is_name_char(c)) {
      return fmt::format("{}: bad characters (a name is letters, digits, '.', '-' and '_'; '*' only as a leading \"*.\")",
                         shown);
    }
  }
  if (parse_ipv4(name)) return fmt::format("{}: is an IP address; the list holds names only", shown);
  if (name.find('.') == std::string::npos) {
    return fmt::format("{}: a single label; an entry names two labels or more (example.com)", shown);
  }
  if (!is_valid_name(name)) {
    if (name.size() > 253) return fmt::format("{}: longer than 253 characters", shown);
    if (name.front() == '.' || name.find("..") != std::string::npos) {
      return fmt::format("{}: has an empty label", shown);
    }
    return fmt::format("{}: its last label is all digits, so it is not a name", shown);
  }
  entry.name = std::move(name);
  return entry;
}

std::string entry_text(const HostEntry& entry) {
  std::string text = (entry.wildcard ? "*." : "") + entry.name;
  if (entry.port) text += fmt::format(":{}", *entry.port);
  return text;
}

std::vector<std::string_view> split_host_items(std::string_view text) {
  std::vector<std::string_view> items;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',' || is_ascii_space(text[i])) {
      if (i > start) items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return items;
}

std::vector<std::string_view> split_host_file(std::string_view text) {
  std::vector<std::string_view> items;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim_ascii_space(line);
    if (!line.empty()) items.push_back(line);
  }
  return items;
}

std::optional<std::string> HostList::add(std::string_view entry_text) {
  auto parsed = parse_host_entry(entry_text);
  if (auto* error = std::get_if<std::string>(&parsed)) return std::move(*error);
  (void)add(std::get<HostEntry>(std::move(parsed)));
  return std::nullopt;
}

bool HostList::add(HostEntry entry) {
  if (std::find(entries_.begin(), entries_.end(), entry) != entries_.end()) return false;
  entries_.push_back(std::move(entry));
  return true;
}

HostList::Match HostList::match(std::string_view name, std::uint16_t port) const {
  const std::string wanted = normalise(name);
  bool named = false;
  for (const HostEntry& entry : entries_) {
    bool names_it = false;
    if (entry.wildcard) {
      // "*.example.com" covers a.example.com and a.b.example.com, never example.com itself
      // and never badexample.com.
      names_it = wanted.size() > entry.name.size() + 1 && wanted.ends_with(entry.name) &&
                 wanted[wanted.size() - entry.name.size() - 1] == '.';
    } else {
      names_it = wanted == entry.name;
    }
    if (!names_it) continue;
    named = true;
    const bool open = entry.port ? port == *entry.port : (port == 80 || port == 443);
    if (open) return Match::listed;
  }
  return named ? Match::port_not_open : Match::not_listed;
}

}  // namespace boxproxy
