// SPDX-License-Identifier: Apache-2.0
// An IP address as bytes, and the parsers that turn text into one.
//
// The proxy judges addresses by their bytes, never by their text: "127.1", "0x7f.0.0.1" and
// "2130706433" are all 127.0.0.1, and a rule written for one must catch them all.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

// A socket address as connect(2) and bind(2) take one: room for either family, and its length.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  [[nodiscard]] const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }
  [[nodiscard]] int family() const noexcept { return storage.ss_family; }
};

struct IpAddressAndPort;

struct IpAddress {
  enum class Family : std::uint8_t { v4, v6 };

  Family family = Family::v4;
  // Network byte order. An IPv4 address uses bytes[0..3]; the rest stay zero.
  std::array<std::uint8_t, 16> bytes{};
  // The IPv6 zone as written after '%' (with "%25" undone), e.g. "eth0"; empty when none.
  std::string zone;

  [[nodiscard]] static IpAddress v4(std::uint32_t host_order) noexcept;
  [[nodiscard]] static IpAddress v6(const std::array<std::uint8_t, 16>& network_order) noexcept;

  [[nodiscard]] bool is_v4() const noexcept { return family == Family::v4; }
  [[nodiscard]] std::size_t size() const noexcept { return is_v4() ? 4 : 16; }
  // The IPv4 address in host byte order; only meaningful when is_v4().
  [[nodiscard]] std::uint32_t v4_value() const noexcept;
  // The four bytes at [offset, offset+4) of an IPv6 address, as an IPv4 address.
  [[nodiscard]] IpAddress embedded_v4(std::size_t offset) const noexcept;

  // Canonical text (inet_ntop), without zone or brackets: "127.0.0.1", "::ffff:10.0.0.1".
  [[nodiscard]] std::string to_string() const;

  // The socket address of this address and `port` (host order). `scope_id` is the interface
  // index an IPv6 zone names (sin6_scope_id), 0 for none: the caller looks it up, since
  // if_nametoindex is a system call and table/ makes none.
  [[nodiscard]] SocketAddress to_sockaddr(std::uint16_t port, std::uint32_t scope_id = 0) const noexcept;

  // The address and port (host order) in an AF_INET or AF_INET6 socket address; nullopt for
  // another family, or when `length` (the bytes at `address`, as getaddrinfo or getsockname give
  // it) is too short for the family. getifaddrs gives no length: its addresses are as large as
  // their family needs, which is all that is read, so the default suits it. The zone is left
  // empty: an interface index names no zone without a system call.
  [[nodiscard]] static std::optional<IpAddressAndPort> from_sockaddr(
      const sockaddr& address, socklen_t length = sizeof(sockaddr_storage)) noexcept;

  // Same family and bytes; the zone is ignored (it does not change which host the bytes name).
  friend bool operator==(const IpAddress& a, const IpAddress& b) noexcept {
    return a.family == b.family && a.bytes == b.bytes;
  }
};

struct IpAddressAndPort {
  IpAddress address;
  std::uint16_t port = 0;  // host order
};

// Every IPv4 form glibc's inet_aton reads, and nothing more: one to four parts, each decimal,
// 0x hex or 0-led octal; the last part fills the remaining bytes ("127.1", "192.168.257",
// "2130706433", "017700000001"). The whole text must be the address: unlike inet_aton, trailing
// text ("127.0.0.1 x") is refused, so what we judge is exactly what the client wrote.
[[nodiscard]] std::optional<IpAddress> parse_ipv4(std::string_view text) noexcept;

// An IPv6 address without brackets, optionally with a zone: "fe80::1%eth0", "fe80::1%25eth0".
[[nodiscard]] std::optional<IpAddress> parse_ipv6(std::string_view text) noexcept;

// An address as an operator writes one (--permit, --deny, --resolve): strict inet_pton forms, a
// dotted quad or IPv6 without zone or brackets, never a guess. An embedded NUL ends no address
// ("10.0.0.1\0junk", which a JSON config can hold, is not 10.0.0.1).
[[nodiscard]] std::optional<IpAddress> parse_strict_address(std::string_view text) noexcept;

// An IP literal as a host may carry it: any IPv4 form above, or IPv6 bracketed or not, with or
// without a zone. Never a name.
[[nodiscard]] std::optional<IpAddress> parse_ip_literal(std::string_view text) noexcept;

}  // namespace boxproxy
