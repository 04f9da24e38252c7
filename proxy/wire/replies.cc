// SPDX-License-Identifier: Apache-2.0
// Every reply the proxy writes to a client (proxy/wire/replies.h).
#include "proxy/wire/replies.h"

#include "proxy/wire/socks_wire.h"

namespace boxproxy {
namespace {

// Only printable ASCII goes into a status line or a header: a CR, LF or NUL in the words (a
// host name, an operator's hint) must never split or end the head early.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

}  // namespace

std::string refusal_words(Reason reason) {
  std::string words = "egress refused: ";
  words += log_class(reason);
  return words;
}

std::string http_refusal(Reason reason, std::string_view words, std::string_view detail) {
  const auto& row = info(reason);
  // Reasons HTTP never carries (SOCKS-only ones) have no status; a caller that sends one anyway
  // still sends a well-formed 400 rather than "HTTP/1.1 0".
  const unsigned status = row.http_status != 0 ? row.http_status : 400;
  const std::string clean = printable(words);
  std::string out;
  out.reserve(160 + 2 * clean.size() + detail.size());
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += clean;
  out += "\r\nx-egress-refused: ";
  out += row.log_class;
  out += "\r\n";
  if (reason == Reason::auth_required) out += "Proxy-Authenticate: Basic realm=\"boxproxy\"\r\n";
  out += "content-type: text/plain\r\ncontent-length: ";
  out += std::to_string(clean.size() + 1 + detail.size());
  out += "\r\nconnection: close\r\n\r\n";
  out += clean;
  out += '\n';
  out += detail;
  return out;
}

std::string_view http_connect_established() noexcept { return "HTTP/1.1 200 Connection Established\r\n\r\n"; }

std::array<std::uint8_t, 10> socks5_reply(std::uint8_t code) noexcept {
  return {socks::kVersion5, code, 0x00, socks::kAtypIpv4, 0, 0, 0, 0, 0, 0};
}

std::array<std::uint8_t, 8> socks4_reply(bool granted) noexcept {
  return {0x00, granted ? socks::kSocks4Granted : socks::kSocks4Refused, 0, 0, 0, 0, 0, 0};
}

std::string refusal_reply_for(ClientProtocol protocol, Reason reason, std::string_view words,
                              std::string_view detail) {
  switch (protocol) {
    case ClientProtocol::socks5: {
      const std::uint8_t own = info(reason).socks5_reply;
      const auto bytes = socks5_reply(own != 0 ? own : socks::kReplyGeneralFailure);
      return {bytes.begin(), bytes.end()};
    }
    case ClientProtocol::socks4: {
      const auto bytes = socks4_reply(false);
      return {bytes.begin(), bytes.end()};
    }
    default:
      return http_refusal(reason, words.empty() ? refusal_words(reason) : std::string(words), detail);
  }
}

std::string_view allowed_reply_for(ClientProtocol protocol) noexcept {
  static const auto kSocks5Granted = socks5_reply(socks::kReplySucceeded);
  static const auto kSocks4Granted = socks4_reply(true);
  switch (protocol) {
    case ClientProtocol::socks5: return {reinterpret_cast<const char*>(kSocks5Granted.data()), kSocks5Granted.size()};
    case ClientProtocol::socks4: return {reinterpret_cast<const char*>(kSocks4Granted.data()), kSocks4Granted.size()};
    default: return http_connect_established();
  }
}

// VER REP RSV ATYP BND.ADDR BND.PORT (0).
std::string socks5_resolved_reply(const IpAddress& address) {
  std::string reply{char(socks::kVersion5), char(socks::kReplySucceeded), '\0',
                    char(address.is_v4() ? socks::kAtypIpv4 : socks::kAtypIpv6)};
  reply.append(reinterpret_cast<const char*>(address.bytes.data()), address.size());
  reply.append(2, '\0');
  return reply;
}

// VER REP RSV ATYP=3 LEN NAME BND.PORT (0).
std::string socks5_resolved_by_name_reply(std::string_view name) {
  std::string reply{char(socks::kVersion5), char(socks::kReplySucceeded), '\0', char(socks::kAtypDomain),
                    static_cast<char>(name.size())};
  reply.append(name);
  reply.append(2, '\0');
  return reply;
}

}  // namespace boxproxy
