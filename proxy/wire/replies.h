// SPDX-License-Identifier: Apache-2.0
// Every reply the proxy writes to a client, in the protocol it spoke (SPEC §6, §7, §9, §10, §16):
// the refusals, the answers to an allowed CONNECT or SOCKS request, and a RESOLVE's answers. The
// status, the SOCKS codes and the log class of each reason come from the one table in
// table/reason.cc; the SOCKS bytes are named in proxy/wire/socks_wire.h. Pure: no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/wire/client_kind.h"
#include "table/address.h"
#include "table/reason.h"

namespace boxproxy {

// "egress refused: <reason>" — the words of every refusal but not-listed, whose words the caller
// builds (not_listed_words in table/policy.h).
[[nodiscard]] std::string refusal_words(Reason reason);

// The whole HTTP refusal: status line with `words` (only printable ASCII: any other byte becomes
// '?'), x-egress-refused, content-type, content-length, connection: close, the blank line and
// `words` + "\n" as body, then `detail` (lines ending in "\n", already made safe: a request to an
// inspected endpoint's refusal_detail). auth_required also carries Proxy-Authenticate: Basic
// realm="boxproxy".
[[nodiscard]] std::string http_refusal(Reason reason, std::string_view words, std::string_view detail = {});

// "HTTP/1.1 200 Connection Established\r\n\r\n"
[[nodiscard]] std::string_view http_connect_established() noexcept;

// SOCKS5 reply: 05 <code> 00 01 00 00 00 00 00 00. code 0 is success.
[[nodiscard]] std::array<std::uint8_t, 10> socks5_reply(std::uint8_t code) noexcept;
// SOCKS4 reply: 00 5A (granted) or 00 5B (refused), and six zero bytes.
[[nodiscard]] std::array<std::uint8_t, 8> socks4_reply(bool granted) noexcept;

// The answer to a refusal, in the protocol the client spoke (SPEC §6): an HTTP refusal with
// `words` (the reason's own when empty), SOCKS5 reply 05 <code> (1 for a reason without a SOCKS5
// code), or SOCKS4's 00 5B. `detail` as http_refusal's.
[[nodiscard]] std::string refusal_reply_for(ClientProtocol protocol, Reason reason, std::string_view words = {},
                                            std::string_view detail = {});
// The answer to an allowed CONNECT or SOCKS request (SPEC §7, §9, §10).
[[nodiscard]] std::string_view allowed_reply_for(ClientProtocol protocol) noexcept;

// An allowed RESOLVE's answer (SPEC §16): success with `address` as BND.ADDR and port 0.
[[nodiscard]] std::string socks5_resolved_reply(const IpAddress& address);
// A RESOLVE answered "by name" (SPEC §15, §16): success with the name itself as BND.ADDR (ATYP 3)
// and port 0, so no address, real or not, is given. `name` is a parsed host (at most 253 bytes).
[[nodiscard]] std::string socks5_resolved_by_name_reply(std::string_view name);

}  // namespace boxproxy
