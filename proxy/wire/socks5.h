// SPDX-License-Identifier: Apache-2.0
// SOCKS5 handshake parsing (RFC 1928, RFC 1929; SPEC §9). Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/wire/parse_result.h"
#include "table/target.h"

namespace boxproxy {

// Handshake bytes the proxy will read before the request is complete (greeting, authentication and
// request, not the data after it). Past this the connection closes: 1024 is far above the largest
// legal handshake (2+255 greeting, 3+255+255 auth, 7+255 request = 1029 in theory, but no real
// client sends 255 methods and a 255-byte user name at once).
inline constexpr std::size_t socks5_max_handshake_bytes = 1024;

struct Socks5Greeting {
  bool offers_no_auth = false;   // method 0
  bool offers_user_pass = false; // method 2
};
// Version 5, a method count, the methods. A version other than 5: refused without a reason
// (close). need_more until all methods are in.
[[nodiscard]] ParseResult<Socks5Greeting> parse_socks5_greeting(std::string_view bytes);

struct Socks5Credentials {
  std::string user;
  std::string password;
};
// RFC 1929: version 1, ulen, user, plen, password. Another version: refused without a reason.
[[nodiscard]] ParseResult<Socks5Credentials> parse_socks5_credentials(std::string_view bytes);

struct Socks5Request {
  std::uint8_t command = 0;  // 1 CONNECT; others are refused by the caller with their reason
  // The host as text for the log and the decision: a domain name as sent, or the address in
  // canonical form (IPv6 without brackets).
  std::string host;
  std::uint16_t port = 0;
};
// Version 5, command, reserved, address type (1 IPv4, 3 domain, 4 IPv6), address, port.
// A version other than 5: refused without a reason (close). An address type other than 1, 3, 4:
// refused with socks_address_type (reply 8; the length of what follows cannot be known).
[[nodiscard]] ParseResult<Socks5Request> parse_socks5_request(std::string_view bytes);

// The reason a non-CONNECT command is refused with: socks_bind, socks_udp_associate, socks_command.
[[nodiscard]] Reason socks5_command_refusal(std::uint8_t command) noexcept;

}  // namespace boxproxy
