// SPDX-License-Identifier: Apache-2.0
// Transparent capture in a `run --transparent` box (SPEC §16): what makes every TCP connection
// COMMAND opens, to any address but the box's loopback, end at the bridge, whatever the program
// knows of proxies.
//
// In the box's network namespace (which holds only its loopback), run by the process that made
// it (it has CAP_NET_ADMIN there; COMMAND never has):
//   - routes: a default route for IPv4 and for IPv6 through the loopback. Without a route, a
//     connect(2) to a public address fails (ENETUNREACH) before any rule could see the packet.
//   - nftables rules (table inet boxproxy_capture), programmed through libnftables:
//       nat output: TCP to a non-loopback address is redirected to the bridge's transparent port
//       (which reads the original destination back with SO_ORIGINAL_DST); DNS to any address
//       (UDP and TCP port 53) to the bridge's DNS port.
//       filter output: anything else that leaves for a non-loopback address (other UDP, ICMP,
//       raw IP) is rejected at once, so a program learns it cannot get out instead of waiting.
//
// libnftables has no static archive in Debian: the lean (static) binary loads libnftables.so.1
// with dlopen(3) when, and only when, a box asks for capture; serve and bridge never load it.
// A system without it gets a message naming the package, and run does not start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

// The nftables rule set for the box, as text for libnftables (exposed for the unit test).
[[nodiscard]] std::string capture_rules(std::uint16_t transparent_port, std::uint16_t dns_port);

// Checks, before anything starts, that capture can work here: libnftables can be loaded. A
// complete error message for standard error, or nullopt.
[[nodiscard]] std::optional<std::string> capture_available();

// In the box's network namespace, after its loopback is up: the routes and the rules above. A
// complete error message for standard error, or nullopt.
[[nodiscard]] std::optional<std::string> capture_box_traffic(std::uint16_t transparent_port,
                                                             std::uint16_t dns_port);

// In pid 1 of the box, in its own mount namespace (after confine_box_mounts, before the inner
// user namespace locks the mounts): /etc/resolv.conf shows `contents` instead, read-only, from a
// small tmpfs of the box's own that no directory of the host holds (the new mount API: fsopen,
// fsmount, open_tree, move_mount). The host's file is not touched. A complete error message, or
// nullopt.
[[nodiscard]] std::optional<std::string> mount_box_resolv_conf(std::string_view contents);

}  // namespace boxproxy
