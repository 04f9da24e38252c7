// SPDX-License-Identifier: Apache-2.0
// The bytes of SOCKS5 (RFC 1928), its user/password sub-negotiation (RFC 1929), Tor's RESOLVE
// extension and SOCKS4/4a, named once for the parsers, the handshake, the replies and the in-box
// bridge's SOCKS5 client. Pure constants.
#pragma once

#include <cstdint>
#include <string_view>

namespace boxproxy::socks {

inline constexpr std::uint8_t kVersion5 = 5;
inline constexpr std::uint8_t kVersion4 = 4;

// RFC 1928 methods.
inline constexpr std::uint8_t kMethodNoAuth = 0;
inline constexpr std::uint8_t kMethodUserPass = 2;
inline constexpr std::uint8_t kNoAcceptableMethod = 0xFF;

// RFC 1929: the sub-negotiation's version, echoed in its status, and the status.
inline constexpr std::uint8_t kAuthVersion = 1;
inline constexpr std::uint8_t kAuthOk = 0;
inline constexpr std::uint8_t kAuthFailed = 1;

// Commands: CONNECT, and Tor's RESOLVE (doc/socks/socks-extensions.txt: a name in, an address out).
inline constexpr std::uint8_t kCommandConnect = 1;
inline constexpr std::uint8_t kCommandResolve = 0xF0;

// Address types.
inline constexpr std::uint8_t kAtypIpv4 = 1;
inline constexpr std::uint8_t kAtypDomain = 3;
inline constexpr std::uint8_t kAtypIpv6 = 4;

// SOCKS5 reply codes this proxy sends itself (the refusals' codes are table/reason.cc's column).
inline constexpr std::uint8_t kReplySucceeded = 0;
inline constexpr std::uint8_t kReplyGeneralFailure = 1;

// SOCKS4 reply codes (the reply's version byte is 0).
inline constexpr std::uint8_t kSocks4Granted = 0x5A;
inline constexpr std::uint8_t kSocks4Refused = 0x5B;

// The byte at `i` of a message, as a number.
[[nodiscard]] inline std::uint8_t byte_at(std::string_view bytes, std::size_t i) noexcept {
  return static_cast<std::uint8_t>(bytes[i]);
}

}  // namespace boxproxy::socks
