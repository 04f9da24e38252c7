// SPDX-License-Identifier: Apache-2.0
// Every default and every range of boxproxy's options, in one place.
//
// The option tables (socketd/serve_options.cc, socketd/bridge_command.cc) show these in each
// command's --help, ProxyConfig starts from them, and tests/unit/socketd_defaults_test.cc checks
// that every figure the manual's OPTIONS section states is the one written here. Change a value
// here and the help follows; the test then says which sentence of the manual to change.
#pragma once

#include <cstddef>
#include <cstdint>

namespace boxproxy::defaults {

// ---- serve: limits ----------------------------------------------------------------------

// --max-tunnels: upstream connections open at once. Each tunnel holds two descriptors and at
// most two relay buffers, so 256 stays far inside a default RLIMIT_NOFILE of 1024 with room
// for the handshaking clients, while no ordinary session (a package manager, a browser) opens
// that many at once.
inline constexpr std::uint32_t kMaxTunnels = 256;
// The largest --max-tunnels: far above any descriptor limit a process gets.
inline constexpr std::uint64_t kMaxTunnelsMax = 1'000'000;

// --max-connections: upstream connections in all, for the life of the process. A budget that
// a runaway loop in the box spends in minutes, and an ordinary session never.
inline constexpr std::uint64_t kMaxConnections = 65'536;
// The largest --max-connections: 2^63, "no budget" in practice without an overflow.
inline constexpr std::uint64_t kMaxConnectionsMax = std::uint64_t{1} << 63;

// --max-lookups: names looked up in DNS in all, for the life of the process (SPEC §14). An
// answer reused within its TTL, a --resolve answer, an /etc/hosts entry and an IP literal cost
// none, so a session's own lookups are about one a connection (the bridge's DNS answer and the
// connection that follows it share one): the connection budget is the figure. A box that
// floods RESOLVE (21,000 a second were seen, 42,000 queries a second to the host's resolver)
// spends it in about three seconds, and then no query leaves for the rest of the session.
inline constexpr std::uint64_t kMaxLookups = 65'536;
// The largest --max-lookups: 2^63, "no budget" in practice, as for --max-connections.
inline constexpr std::uint64_t kMaxLookupsMax = std::uint64_t{1} << 63;

// --max-head-bytes: the largest HTTP request head. 32 KiB holds any real client's head (a
// browser's with its cookies stays under 16 KiB) and bounds a silent client's buffer.
inline constexpr std::size_t kMaxHeadBytes = 32'768;
// Its range: 1 KiB still fits a real client's request line and Host; 1 MiB bounds the memory
// of each handshaking client (1024 of them at most) to 1 GiB in the very worst case.
inline constexpr std::uint64_t kMaxHeadBytesMin = 1'024;
inline constexpr std::uint64_t kMaxHeadBytesMax = 1'048'576;

// --max-held-body: the largest request body held to be hashed for a signature (SPEC §20), as
// framed. 1 MiB holds every ordinary API call's body; a held body is one a connection (an HTTP/2
// one serves a stream at a time), so 256 connections hold at most 256 MiB with the default. Its
// range: 0 (no body is held: every signed upload must declare an unsigned payload) to 1 GiB.
inline constexpr std::size_t kMaxHeldBody = 1'048'576;
inline constexpr std::uint64_t kMaxHeldBodyMax = 1'073'741'824;

// ---- serve: times, in seconds --------------------------------------------------------------

// --head-timeout: a new client's time to finish its request head or SOCKS handshake. A real
// client sends it at once; 30 s survives a slow link and keeps a silent client's hold short.
inline constexpr double kHeadTimeoutSeconds = 30;
// --dns-timeout: a name's lookup. Two of the resolver's own retries fit in it.
inline constexpr double kDnsTimeoutSeconds = 5;
// --connect-timeout: one dial, all of a name's answers' attempts together.
inline constexpr double kConnectTimeoutSeconds = 20;
// --idle-timeout: a silent tunnel is kept (0 is never): a long download or a held-open
// connection is the box's business; the supervisor ends the session.
inline constexpr double kIdleTimeoutSeconds = 0;
// The largest value of every seconds option: one day, so a typo cannot mean "forever".
inline constexpr double kMaxSeconds = 86'400;

// --ask-timeout: how long a client waits for the supervisor's answer about a name off the list
// (SPEC §15). Long enough for a person to read the question and answer it; a client's own
// connect timeout is usually longer.
inline constexpr double kAskTimeoutSeconds = 30;

// ---- serve: --ready-fd ----------------------------------------------------------------------

// The smallest --ready-fd: 0 to 2 are the standard streams, and writing READY there (then
// closing it) would put a second line on standard output or lose the log.
inline constexpr std::uint64_t kReadyFdMin = 3;
// The largest: above any descriptor a process can hold.
inline constexpr std::uint64_t kReadyFdMax = 1'000'000'000;

// ---- files read at start -------------------------------------------------------------------

// --config and --allow-file: caps so that a FIFO or /dev/zero given by mistake cannot hang or
// exhaust memory; each is far above any sensible content.
inline constexpr std::size_t kMaxConfigBytes = 16 * 1024 * 1024;
inline constexpr std::size_t kMaxAllowFileBytes = 16 * 1024 * 1024;
// --auth-token-file: a token is a line; 64 KiB is far above any.
inline constexpr std::size_t kMaxTokenBytes = 64 * 1024;

// ---- bridge ---------------------------------------------------------------------------------

// The port the bridge listens on inside a box when no --listen is given (127.0.0.1 and [::1]):
// the port HTTP proxies have used by custom since Squid.
inline constexpr std::uint16_t kBridgePort = 3128;

}  // namespace boxproxy::defaults
