// SPDX-License-Identifier: Apache-2.0
// SOCKS4 and SOCKS4a request parsing (SPEC §10). Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/wire/parse_result.h"

namespace boxproxy {

// The most bytes of a SOCKS4 request (8 fixed, a user id, and for 4a a host, each NUL-ended)
// before the connection closes: the same bound as SOCKS5's handshake.
inline constexpr std::size_t socks4_max_request_bytes = 1024;

struct Socks4Request {
  std::uint8_t command = 0;  // 1 CONNECT, 2 BIND (refused: socks_bind), others: socks_command
  std::uint16_t port = 0;
  // For SOCKS4, the IPv4 address as dotted text; for 4a (0.0.0.x, x != 0), the host after the
  // user id, as sent.
  std::string host;
  bool is_4a = false;
};
// need_more until the NUL ending the user id (and for 4a the host) has come. A version other than
// 4: refused without a reason (close).
[[nodiscard]] ParseResult<Socks4Request> parse_socks4_request(std::string_view bytes);

}  // namespace boxproxy
