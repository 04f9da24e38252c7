// The bytes of every refusal and of every success reply (SPEC §6, §7, §9, §10).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "table/reason.h"

namespace boxproxy {

// "egress refused: <reason>" — the words of every refusal but not-listed, whose words the caller
// builds (not_listed_words in table/policy.h).
[[nodiscard]] std::string refusal_words(Reason reason);

// The whole HTTP refusal: status line with `words` (only printable ASCII: any other byte becomes
// '?'), x-egress-refused, content-type, content-length, connection: close, the blank line and
// `words` + "\n" as body. auth_required also carries Proxy-Authenticate: Basic realm="boxproxy".
[[nodiscard]] std::string http_refusal(Reason reason, std::string_view words);

// "HTTP/1.1 200 Connection Established\r\n\r\n"
[[nodiscard]] std::string_view http_connect_established() noexcept;

// SOCKS5 reply: 05 <code> 00 01 00 00 00 00 00 00. code 0 is success.
[[nodiscard]] std::array<std::uint8_t, 10> socks5_reply(std::uint8_t code) noexcept;
// SOCKS4 reply: 00 5A (granted) or 00 5B (refused), and six zero bytes.
[[nodiscard]] std::array<std::uint8_t, 8> socks4_reply(bool granted) noexcept;

}  // namespace boxproxy
