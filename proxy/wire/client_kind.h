// SPDX-License-Identifier: Apache-2.0
// What a client speaks and what it asked for, named once: the handshake sets them, the connection
// answers in the protocol (proxy/wire/replies.h), and the log writes the kind (SPEC §12 <kind>).
#pragma once

#include <cstdint>
#include <string_view>

namespace boxproxy {

// The protocol the first byte picked (SPEC §7 to §10): unknown until it has come.
enum class ClientProtocol : std::uint8_t { unknown, http, socks5, socks4 };

// What the client asked for, as the log names it: connect (an HTTP CONNECT), http (a plain HTTP
// request), socks (a SOCKS5 CONNECT), socks4, and resolve (a SOCKS5 RESOLVE, SPEC §16: a
// decision answered with an address, never dialled).
enum class ClientKind : std::uint8_t { connect, http, socks, socks4, resolve };

// The word for the log line: connect, http, socks, socks4, resolve.
[[nodiscard]] std::string_view kind_name(ClientKind kind) noexcept;

}  // namespace boxproxy
