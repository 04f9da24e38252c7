// SPDX-License-Identifier: Apache-2.0
// A SOCKS5 RESOLVE (SPEC §16), Tor's 0xF0: a name in, one checked address out, never dialled. The
// name goes through the same decision as a CONNECT (SPEC §5 steps 1 to 4); these are the two
// choices that are RESOLVE's own. Pure: no I/O. The answer's bytes are in proxy/wire/replies.h.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "table/address.h"
#include "table/host_list.h"
#include "table/target.h"

namespace boxproxy {

// The port a RESOLVE of `target` is judged at. It carries no meaningful port: the handshake judges
// it at 443. A name the host list opens only on other ports (`api.example:8443`) is resolved too,
// at 80 if open there, else at the first such port, since the box's next connection may well be
// to it; the address rule does not depend on the port.
[[nodiscard]] std::uint16_t resolve_judged_port(const std::optional<HostList>& list, const Target& target);

// The address an allowed RESOLVE answers with: the first IPv4 answer, else the first (an
// IPv6-only name); RESOLVE returns one address, and a box's clients ask for IPv4 first. Null when
// there is none.
[[nodiscard]] const IpAddress* resolve_answer(std::span<const IpAddress> answers) noexcept;

}  // namespace boxproxy
