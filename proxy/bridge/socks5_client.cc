// SPDX-License-Identifier: Apache-2.0
#include "proxy/bridge/socks5_client.h"

#include "proxy/wire/socks_wire.h"

namespace boxproxy {
namespace {

// The greeting offering "no authentication" and the start of the request that follows it in the
// same write (the proxy takes a pipelined handshake): VER NMETHODS METHOD, VER CMD RSV.
std::string greeting_and_command(std::uint8_t command) {
  return std::string{char(socks::kVersion5), 1, char(socks::kMethodNoAuth), char(socks::kVersion5), char(command), 0};
}

void append_port(std::string& out, std::uint16_t port) {
  out.push_back(static_cast<char>(port >> 8));
  out.push_back(static_cast<char>(port & 0xff));
}

std::string name_request(std::uint8_t command, std::string_view name, std::uint16_t port) {
  std::string out = greeting_and_command(command);
  out.push_back(char(socks::kAtypDomain));
  out.push_back(static_cast<char>(name.size()));
  out.append(name);
  append_port(out, port);
  return out;
}

}  // namespace

std::string socks5_connect_request(const IpAddress& address, std::uint16_t port) {
  std::string out = greeting_and_command(socks::kCommandConnect);
  out.push_back(char(address.is_v4() ? socks::kAtypIpv4 : socks::kAtypIpv6));
  out.append(reinterpret_cast<const char*>(address.bytes.data()), address.size());
  append_port(out, port);
  return out;
}

std::string socks5_connect_request(std::string_view name, std::uint16_t port) {
  return name_request(socks::kCommandConnect, name, port);
}

std::string socks5_resolve_request(std::string_view name) { return name_request(socks::kCommandResolve, name, 0); }

std::size_t Socks5ReplyReader::wanted() const noexcept {
  return state_ == State::need_more ? total_ - seen_.size() : 0;
}

Socks5ReplyReader::State Socks5ReplyReader::feed(std::string_view bytes) {
  if (state_ != State::need_more) return state_;
  seen_.append(bytes.substr(0, wanted()));
  return state_ = judge();
}

Socks5ReplyReader::State Socks5ReplyReader::judge() {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(seen_[i]); };
  // The method choice: version 5 and "no authentication". A proxy that wants a token answers
  // with method 2 (or 0xff): the bridge has none to give, so the connection is refused.
  if (seen_.size() >= 1 && byte(0) != socks::kVersion5) return State::malformed;
  if (seen_.size() >= 2 && byte(1) != socks::kMethodNoAuth) return State::refused;
  if (seen_.size() >= 3 && byte(2) != socks::kVersion5) return State::malformed;
  if (seen_.size() >= 4) {
    reply_code_ = byte(3);
    // A refusal is final: its address is not waited for (the proxy closes after it anyway).
    if (reply_code_ != 0) return State::refused;
  }
  if (seen_.size() >= 6) {
    switch (byte(5)) {
      case 1: total_ = 2 + 4 + 4 + 2; break;
      case 4: total_ = 2 + 4 + 16 + 2; break;
      case 3:
        if (seen_.size() < 7) return State::need_more;
        total_ = 2 + 4 + 1 + byte(6) + 2;
        break;
      default: return State::malformed;
    }
  }
  return seen_.size() >= total_ ? State::granted : State::need_more;
}

}  // namespace boxproxy
