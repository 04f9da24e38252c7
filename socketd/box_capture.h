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

// A pod's defaults (boxproxy capture and boxproxy sidecar agree on them): the bridge's transparent
// port (run's too), and its DNS port, above 1023 so that the sidecar's unprivileged user can bind it.
inline constexpr std::uint16_t kCaptureTransparentPort = 3129;
inline constexpr std::uint16_t kCaptureDnsPort = 1053;

// What the rules send where. One builder for both users of capture: `run --transparent` (a box
// whose loopback is COMMAND's own) and `boxproxy capture` (a pod, whose containers share one
// network namespace with the proxy; issue 38).
struct CaptureSpec {
  std::uint16_t transparent_port = 0;  // TCP goes to the bridge's --transparent listener here
  std::uint16_t dns_port = 0;          // DNS (UDP and TCP 53) to the bridge's --dns here; 0: not
  // A pod: the proxy's own user. Its sockets (serve dialling origins, the bridge answering) pass
  // untouched; every other socket's traffic, loopback included (the pod's loopback is shared with
  // the proxy's listeners and with any other container), goes to the bridge or nowhere, and the
  // table replaces one a previous capture left. Unset: run's box, whose loopback is its own.
  std::optional<std::uint32_t> exempt_uid;
  // A pod: the bridge's --listen port (an agent's HTTP_PROXY), reached directly on 127.0.0.1 and
  // ::1 instead of being captured; 0: none.
  std::uint16_t listen_port = 0;
};

// The nftables rule set, as text for libnftables (exposed for the unit test and capture --check).
[[nodiscard]] std::string capture_rules(const CaptureSpec& spec);

// run's box: capture_rules with transparent_port and dns_port only.
[[nodiscard]] std::string capture_rules(std::uint16_t transparent_port, std::uint16_t dns_port);

// Checks, before anything starts, that capture can work here: libnftables can be loaded. A
// complete error message for standard error, or nullopt.
[[nodiscard]] std::optional<std::string> capture_available();

// In the box's network namespace, after its loopback is up: the routes and the rules above. A
// complete error message for standard error, or nullopt.
[[nodiscard]] std::optional<std::string> capture_box_traffic(std::uint16_t transparent_port,
                                                             std::uint16_t dns_port);

// The pod's form of the above (boxproxy capture): `who` starts each message ("boxproxy capture").
// A default route that exists already (a pod with a network) is left as it is.
[[nodiscard]] std::optional<std::string> capture_namespace_traffic(const CaptureSpec& spec, std::string_view who);

// In pid 1 of the box, in its own mount namespace (after confine_box_mounts, before the inner
// user namespace locks the mounts): /etc/resolv.conf shows `contents` instead, read-only, from a
// small tmpfs of the box's own that no directory of the host holds (the new mount API: fsopen,
// fsmount, open_tree, move_mount). The host's file is not touched. A complete error message, or
// nullopt.
[[nodiscard]] std::optional<std::string> mount_box_resolv_conf(std::string_view contents);

}  // namespace boxproxy
