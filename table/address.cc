// SPDX-License-Identifier: Apache-2.0
#include "table/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "table/ascii.h"

namespace boxproxy {
namespace {

// The address and port of a sockaddr_in (In) or sockaddr_in6, copied out of `address` whole into
// the family's own struct first: no field is read through a cast.
template <typename In, auto kAddressField, auto kPortField>
IpAddressAndPort read_sockaddr(const sockaddr& address, IpAddress::Family family) noexcept {
  In in{};
  std::memcpy(&in, &address, sizeof in);
  IpAddressAndPort out;
  out.address.family = family;
  std::memcpy(out.address.bytes.data(), &(in.*kAddressField), sizeof(in.*kAddressField));
  out.port = ntohs(in.*kPortField);
  return out;
}

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// One part of an inet_aton address: decimal, "0x"/"0X" and at least one hex digit, or '0'
// followed by octal digits. The value must stay <= `max` (the room the part has: 255 for an
// inner part, up to 2^32-1 for the last); a longer run of leading zeros is fine, as in glibc.
// nullopt for an empty part, a sign, white space, a stray character, or a value out of range.
std::optional<std::uint32_t> parse_aton_part(std::string_view part, std::uint32_t max) noexcept {
  if (part.empty() || !is_digit(part.front())) return std::nullopt;
  std::uint32_t base = 10;
  std::size_t i = 0;
  if (part.size() >= 2 && part[0] == '0' && (part[1] == 'x' || part[1] == 'X')) {
    base = 16;
    i = 2;
    if (part.size() == 2) return std::nullopt;  // "0x" alone names no number (glibc agrees)
  } else if (part[0] == '0') {
    base = 8;
  }
  std::uint64_t value = 0;
  for (; i < part.size(); ++i) {
    const int digit = hex_value(part[i]);
    if (digit < 0 || static_cast<std::uint32_t>(digit) >= base) return std::nullopt;
    value = value * base + static_cast<std::uint64_t>(digit);
    // Checked per digit so that a long run of digits cannot wrap around into range.
    if (value > max) return std::nullopt;
  }
  return static_cast<std::uint32_t>(value);
}

// Copies `text` into `out` with a terminating NUL, for inet_pton. False when it does not fit, or
// when it holds a NUL: inet_pton would stop there and read only what comes before it, so
// "2606:4700::1111\0junk" would be judged as an address the client never wrote in full.
template <std::size_t N>
bool to_c_string(std::string_view text, char (&out)[N]) noexcept {
  if (text.size() >= N || text.find('\0') != std::string_view::npos) return false;
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return true;
}

constexpr bool is_zone_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '.' || c == '_' || c == '-';
}

}  // namespace

IpAddress IpAddress::v4(std::uint32_t host_order) noexcept {
  IpAddress a;
  a.family = Family::v4;
  a.bytes[0] = static_cast<std::uint8_t>(host_order >> 24);
  a.bytes[1] = static_cast<std::uint8_t>(host_order >> 16);
  a.bytes[2] = static_cast<std::uint8_t>(host_order >> 8);
  a.bytes[3] = static_cast<std::uint8_t>(host_order);
  return a;
}

IpAddress IpAddress::v6(const std::array<std::uint8_t, 16>& network_order) noexcept {
  IpAddress a;
  a.family = Family::v6;
  a.bytes = network_order;
  return a;
}

std::uint32_t IpAddress::v4_value() const noexcept {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) | (std::uint32_t{bytes[2]} << 8) |
         std::uint32_t{bytes[3]};
}

IpAddress IpAddress::embedded_v4(std::size_t offset) const noexcept {
  IpAddress a;
  a.family = Family::v4;
  if (offset + 4 <= bytes.size()) {
    for (std::size_t i = 0; i < 4; ++i) a.bytes[i] = bytes[offset + i];
  }
  return a;
}

std::string IpAddress::to_string() const {
  char buffer[INET6_ADDRSTRLEN] = {};
  const int af = is_v4() ? AF_INET : AF_INET6;
  if (inet_ntop(af, bytes.data(), buffer, sizeof buffer) == nullptr) return "?";
  return buffer;
}

SocketAddress IpAddress::to_sockaddr(std::uint16_t port, std::uint32_t scope_id) const noexcept {
  SocketAddress out;
  // Built in the family's own struct and copied in whole: no field is written through a cast.
  if (is_v4()) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    std::memcpy(&sin.sin_addr, bytes.data(), 4);
    std::memcpy(&out.storage, &sin, sizeof sin);
    out.length = sizeof sin;
  } else {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(port);
    std::memcpy(&sin6.sin6_addr, bytes.data(), 16);
    sin6.sin6_scope_id = scope_id;
    std::memcpy(&out.storage, &sin6, sizeof sin6);
    out.length = sizeof sin6;
  }
  return out;
}

std::optional<IpAddressAndPort> IpAddress::from_sockaddr(const sockaddr& address, socklen_t length) noexcept {
  if (address.sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    return read_sockaddr<sockaddr_in, &sockaddr_in::sin_addr, &sockaddr_in::sin_port>(address, Family::v4);
  }
  if (address.sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    return read_sockaddr<sockaddr_in6, &sockaddr_in6::sin6_addr, &sockaddr_in6::sin6_port>(address, Family::v6);
  }
  return std::nullopt;
}

std::optional<IpAddress> parse_ipv4(std::string_view text) noexcept {
  // Split into at most four parts; a fifth is not an address ("1.2.3.4.5").
  std::string_view parts[4];
  std::size_t count = 0;
  std::size_t start = 0;
  while (true) {
    if (count == 4) return std::nullopt;
    const std::size_t dot = text.find('.', start);
    parts[count++] = text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  // Every inner part is one byte; the last fills the bytes that remain ("127.1": 1 fills three).
  std::uint32_t value = 0;
  for (std::size_t i = 0; i + 1 < count; ++i) {
    const auto part = parse_aton_part(parts[i], 0xff);
    if (!part) return std::nullopt;
    value |= *part << (8 * (3 - i));
  }
  const std::size_t last_bytes = 4 - (count - 1);
  const std::uint32_t last_max =
      last_bytes == 4 ? 0xffffffffU : (std::uint32_t{1} << (8 * last_bytes)) - 1;
  const auto last = parse_aton_part(parts[count - 1], last_max);
  if (!last) return std::nullopt;
  value |= *last;
  return IpAddress::v4(value);
}

std::optional<IpAddress> parse_ipv6(std::string_view text) noexcept {
  std::string_view address = text;
  std::string_view zone;
  if (const std::size_t percent = text.find('%'); percent != std::string_view::npos) {
    address = text.substr(0, percent);
    zone = text.substr(percent + 1);
    // "%25" is the URI spelling of '%' (RFC 6874): "fe80::1%25eth0" names zone "eth0".
    if (zone.size() > 2 && zone.substr(0, 2) == "25") zone.remove_prefix(2);
    if (zone.empty()) return std::nullopt;
    for (const char c : zone) {
      if (!is_zone_char(c)) return std::nullopt;
    }
  }
  char buffer[64];
  if (address.empty() || !to_c_string(address, buffer)) return std::nullopt;
  std::array<std::uint8_t, 16> bytes{};
  if (inet_pton(AF_INET6, buffer, bytes.data()) != 1) return std::nullopt;
  IpAddress result = IpAddress::v6(bytes);
  result.zone = std::string(zone);
  return result;
}

std::optional<IpAddress> parse_ip_literal(std::string_view text) noexcept {
  if (!text.empty() && text.front() == '[') {
    if (text.size() < 2 || text.back() != ']') return std::nullopt;
    return parse_ipv6(text.substr(1, text.size() - 2));
  }
  if (auto v4 = parse_ipv4(text)) return v4;
  return parse_ipv6(text);
}

std::optional<IpAddress> parse_strict_address(std::string_view text) noexcept {
  char buffer[64];
  if (text.empty() || text.size() >= sizeof buffer) return std::nullopt;
  // inet_pton stops at a NUL: what follows it would go unjudged.
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  std::array<std::uint8_t, 16> bytes{};
  if (inet_pton(AF_INET, buffer, bytes.data()) == 1) {
    IpAddress a;
    a.family = IpAddress::Family::v4;
    a.bytes = bytes;
    return a;
  }
  if (inet_pton(AF_INET6, buffer, bytes.data()) == 1) return IpAddress::v6(bytes);
  return std::nullopt;
}

}  // namespace boxproxy
