// SPDX-License-Identifier: Apache-2.0
#include "table/target.h"

namespace boxproxy {
namespace {

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

constexpr bool is_name_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '.' || c == '_' || c == '-';
}

// Where the port separator of an authority is: the ':' right after a bracketed host, else the
// last ':'. npos when there is none.
std::size_t port_colon(std::string_view text) noexcept {
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close != std::string_view::npos) {
      const std::size_t colon = text.find(':', close);
      return colon;  // after the brackets, or npos ("[::1]" has no port)
    }
  }
  return text.rfind(':');
}

// host:port with the port required (`default_port` unset) or optional.
TargetResult split_and_parse(std::string_view text, std::optional<std::uint16_t> default_port) {
  const std::size_t colon = port_colon(text);
  if (colon == std::string_view::npos) {
    if (!default_port) return Reason::invalid_target;  // nothing to split: no port
    return parse_host(text, *default_port);
  }
  // A bad port is checked before the host: the target as a whole cannot be split.
  const auto port = parse_port(text.substr(colon + 1));
  if (!port) return Reason::invalid_target;
  const std::string_view host = text.substr(0, colon);
  // An authority writes an IPv6 host in brackets (RFC 3986 §3.2.2, SPEC §7). Without them
  // "::1:443" could be ::1 port 443 or ::1:443 with no port, and "1::2:80" is either 1::2 port 80
  // or 1::2:80 port 443 to another reader: a target two readers split differently is refused,
  // never judged as one of them.
  if (host.find(':') != std::string_view::npos && !host.starts_with('[')) return Reason::invalid_target;
  return parse_host(host, *port);
}

}  // namespace

std::optional<std::uint16_t> parse_port(std::string_view text) noexcept {
  if (text.empty() || text.size() > 5) return std::nullopt;
  std::uint32_t value = 0;
  for (const char c : text) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value < 1 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

bool is_valid_name(std::string_view text) noexcept {
  if (text.empty() || text.size() > 253) return false;
  std::size_t label_start = 0;
  bool label_all_digits = true;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '.') {
      if (i == label_start) return false;  // an empty label: ".a", "a..b", "a."
      if (i == text.size()) break;
      label_start = i + 1;
      label_all_digits = true;
      continue;
    }
    if (!is_name_char(text[i])) return false;
    if (!is_digit(text[i])) label_all_digits = false;
  }
  // A last label of digits only means the text was meant as an address ("256.1.1.1",
  // "1.2.3.4.5"); some resolvers would read parts of it as one, so it is never a name.
  if (label_all_digits) return false;
  // Nor is an address in any inet_aton form ("0x7f", "0x7f.1", "1.2.3.0x4"): every caller asks
  // about addresses first today, but a name is only ever handed to a resolver, and a resolver
  // reads these as the address, so "is a valid name" must never be true of one.
  return !parse_ipv4(text).has_value();
}

TargetResult parse_host(std::string_view host, std::uint16_t port) {
  // A port is 1 to 65535 (SPEC §5 step 1); text forms are checked by parse_port, and a SOCKS
  // request's two bytes are checked here, so port 0 is never dialled whichever protocol sent it.
  if (port == 0) return Reason::invalid_target;
  Target target;
  target.port = port;
  if (!host.empty() && host.front() == '[') {
    // Bracketed: an IPv6 address and nothing else, not even a trailing dot ("[::1]." is invalid).
    if (host.size() < 2 || host.back() != ']') return Reason::invalid_host;
    const std::string_view inner = host.substr(1, host.size() - 2);
    auto address = parse_ipv6(inner);
    if (!address) return Reason::invalid_host;
    target.host = std::string(inner);
    target.address = std::move(*address);
    return target;
  }
  if (host.find(':') != std::string_view::npos) {
    // Only an IPv6 address holds a colon; it is taken as written, never trimmed of a dot.
    auto address = parse_ipv6(host);
    if (!address) return Reason::invalid_host;
    target.host = std::string(host);
    target.address = std::move(*address);
    return target;
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (auto address = parse_ipv4(host)) {
    target.host = std::string(host);
    target.address = std::move(*address);
    return target;
  }
  if (!is_valid_name(host)) return Reason::invalid_host;
  target.host = std::string(host);
  return target;
}

TargetResult parse_authority(std::string_view text) { return split_and_parse(text, std::nullopt); }

TargetResult parse_authority_default_port(std::string_view text, std::uint16_t default_port) {
  return split_and_parse(text, default_port);
}

AuthorityText split_authority_text(std::string_view authority, std::optional<std::uint16_t> default_port) noexcept {
  const std::size_t colon = port_colon(authority);
  if (colon == std::string_view::npos) return {authority, default_port.value_or(0)};
  return {authority.substr(0, colon), parse_port(authority.substr(colon + 1)).value_or(0)};
}

TargetResult parse_check_target(std::string_view text, std::uint16_t default_port) {
  if (text.empty() || text.front() != '[') {
    std::size_t colons = 0;
    for (const char c : text) colons += c == ':' ? 1 : 0;
    // Two colons or more without brackets: a bare IPv6 address, which takes the default port.
    if (colons >= 2) return parse_host(text, default_port);
  }
  return split_and_parse(text, default_port);
}

}  // namespace boxproxy
