// SPDX-License-Identifier: Apache-2.0
// SOCKS5 handshake parsing (RFC 1928, RFC 1929; SPEC §9).
//
// Each parser is handed everything received since its message began: a message may come in any
// number of pieces, and a client may send the next message (or tunnel data) in the same packet,
// so `consumed` says exactly where this message ends. Nothing here reads past what it was given.
#include "proxy/wire/socks5.h"

#include <arpa/inet.h>

#include <array>

#include "proxy/wire/socks_wire.h"

namespace boxproxy {

using socks::byte_at;

ParseResult<Socks5Greeting> parse_socks5_greeting(std::string_view bytes) {
  using Result = ParseResult<Socks5Greeting>;
  if (bytes.empty()) return Result::need_more();
  if (byte_at(bytes, 0) != socks::kVersion5) return Result::refuse(std::nullopt);
  if (bytes.size() < 2) return Result::need_more();
  const std::size_t count = byte_at(bytes, 1);
  const std::size_t total = 2 + count;
  if (bytes.size() < total) return Result::need_more();
  Socks5Greeting greeting;
  for (std::size_t i = 2; i < total; ++i) {
    if (byte_at(bytes, i) == socks::kMethodNoAuth) greeting.offers_no_auth = true;
    if (byte_at(bytes, i) == socks::kMethodUserPass) greeting.offers_user_pass = true;
  }
  return Result::done(greeting, total);
}

ParseResult<Socks5Credentials> parse_socks5_credentials(std::string_view bytes) {
  using Result = ParseResult<Socks5Credentials>;
  if (bytes.empty()) return Result::need_more();
  if (byte_at(bytes, 0) != socks::kAuthVersion) return Result::refuse(std::nullopt);
  if (bytes.size() < 2) return Result::need_more();
  const std::size_t user_length = byte_at(bytes, 1);
  if (bytes.size() < 2 + user_length + 1) return Result::need_more();
  const std::size_t password_length = byte_at(bytes, 2 + user_length);
  const std::size_t total = 3 + user_length + password_length;
  if (bytes.size() < total) return Result::need_more();
  Socks5Credentials credentials;
  credentials.user.assign(bytes.substr(2, user_length));
  credentials.password.assign(bytes.substr(3 + user_length, password_length));
  return Result::done(std::move(credentials), total);
}

ParseResult<Socks5Request> parse_socks5_request(std::string_view bytes) {
  using Result = ParseResult<Socks5Request>;
  if (bytes.empty()) return Result::need_more();
  if (byte_at(bytes, 0) != socks::kVersion5) return Result::refuse(std::nullopt);
  // VER CMD RSV ATYP: the address type decides how long the rest is, so it is judged as soon as it
  // arrives (an unknown one cannot be skipped: reply 8 and close). RSV is not judged.
  if (bytes.size() < 4) return Result::need_more();
  const std::uint8_t atyp = byte_at(bytes, 3);
  Socks5Request request;
  request.command = byte_at(bytes, 1);
  std::size_t address_end = 0;
  if (atyp == socks::kAtypIpv4) {
    address_end = 4 + 4;
    if (bytes.size() < address_end + 2) return Result::need_more();
    char text[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, bytes.data() + 4, text, sizeof text) == nullptr) return Result::refuse(std::nullopt);
    request.host = text;
  } else if (atyp == socks::kAtypIpv6) {
    address_end = 4 + 16;
    if (bytes.size() < address_end + 2) return Result::need_more();
    char text[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, bytes.data() + 4, text, sizeof text) == nullptr) return Result::refuse(std::nullopt);
    request.host = text;
  } else if (atyp == socks::kAtypDomain) {
    if (bytes.size() < 5) return Result::need_more();
    const std::size_t length = byte_at(bytes, 4);
    address_end = 5 + length;
    if (bytes.size() < address_end + 2) return Result::need_more();
    // As sent, even when empty or full of odd bytes: the decision (SPEC §5 step 1) refuses what is
    // not a host, and the log quotes it.
    request.host.assign(bytes.substr(5, length));
  } else {
    return Result::refuse(Reason::socks_address_type);
  }
  request.port = static_cast<std::uint16_t>((byte_at(bytes, address_end) << 8) | byte_at(bytes, address_end + 1));
  return Result::done(std::move(request), address_end + 2);
}

Reason socks5_command_refusal(std::uint8_t command) noexcept {
  switch (command) {
    case 2:
      return Reason::socks_bind;
    case 3:
      return Reason::socks_udp_associate;
    default:
      return Reason::socks_command;
  }
}

}  // namespace boxproxy
