// The bytes of every refusal and success reply (SPEC §6, §7, §9, §10). The status, the SOCKS
// codes and the log class of each reason come from the one table in table/reason.cc.
#include "proxy/refusal_reply.h"

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

std::string http_refusal(Reason reason, std::string_view words) {
  const auto& row = info(reason);
  // Reasons HTTP never carries (SOCKS-only ones) have no status; a caller that sends one anyway
  // still sends a well-formed 400 rather than "HTTP/1.1 0".
  const unsigned status = row.http_status != 0 ? row.http_status : 400;
  const std::string clean = printable(words);
  std::string out;
  out.reserve(160 + 2 * clean.size());
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += clean;
  out += "\r\nx-egress-refused: ";
  out += row.log_class;
  out += "\r\n";
  if (reason == Reason::auth_required) out += "Proxy-Authenticate: Basic realm=\"boxproxy\"\r\n";
  out += "content-type: text/plain\r\ncontent-length: ";
  out += std::to_string(clean.size() + 1);
  out += "\r\nconnection: close\r\n\r\n";
  out += clean;
  out += '\n';
  return out;
}

std::string_view http_connect_established() noexcept { return "HTTP/1.1 200 Connection Established\r\n\r\n"; }

std::array<std::uint8_t, 10> socks5_reply(std::uint8_t code) noexcept {
  return {0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
}

std::array<std::uint8_t, 8> socks4_reply(bool granted) noexcept {
  return {0x00, static_cast<std::uint8_t>(granted ? 0x5A : 0x5B), 0, 0, 0, 0, 0, 0};
}

}  // namespace boxproxy
