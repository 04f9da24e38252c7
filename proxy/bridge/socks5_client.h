// SPDX-License-Identifier: Apache-2.0
// The client's side of SOCKS5 (RFC 1928), as the in-box bridge speaks it for a captured
// connection (`bridge --transparent`, SPEC §16): the whole handshake at once (greeting with "no
// authentication", then CONNECT), and a reader of the proxy's two answers that takes exactly
// their bytes, so that whatever the origin sends after them stays for the relay. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "table/address.h"

namespace boxproxy {

// The greeting and a CONNECT to `address`:`port` (ATYP 1 or 4), in one buffer.
[[nodiscard]] std::string socks5_connect_request(const IpAddress& address, std::uint16_t port);
// The same to a host name (ATYP 3); `name` is 1 to 255 bytes (the caller's names come from the
// bridge's own DNS answers, which hold no longer ones).
[[nodiscard]] std::string socks5_connect_request(std::string_view name, std::uint16_t port);
// Tor's RESOLVE (SPEC §16) for `name`, port 0, after the same greeting: what the in-box DNS
// responder asks the proxy.
[[nodiscard]] std::string socks5_resolve_request(std::string_view name);

// Reads the method choice (2 bytes) and the CONNECT reply (4 bytes, the bound address, 2 bytes
// of port) as they arrive.
class Socks5ReplyReader {
 public:
  enum class State : std::uint8_t {
    need_more,  // read at most wanted() more bytes and feed() them
    granted,    // REP 0: the tunnel is open; every later byte is the origin's
    refused,    // a reply other than success (reply_code()), or a method other than "none"
    malformed,  // not a SOCKS5 answer
  };

  // How many bytes to read next: never more than the answers still hold.
  [[nodiscard]] std::size_t wanted() const noexcept;
  // Takes bytes (at most wanted()); returns the state after them.
  State feed(std::string_view bytes);
  [[nodiscard]] State state() const noexcept { return state_; }
  [[nodiscard]] std::uint8_t reply_code() const noexcept { return reply_code_; }

 private:
  State judge();

  // Method choice, reply header, and the bound address: at most 2 + 4 + 1 + 255 + 2 bytes.
  std::string seen_;
  std::size_t total_ = 2 + 4 + 1;  // known once the address type is seen
  State state_ = State::need_more;
  std::uint8_t reply_code_ = 0;
};

}  // namespace boxproxy
