// SPDX-License-Identifier: Apache-2.0
// Why a tunnel ended (SPEC §12, the done line's `end=`), and its words. Apart from proxy/tunnel.h
// so that what carries an end without relaying anything (the inspector's "ended" message,
// proxy/inspector_records.h) names it without the relay.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace boxproxy {

enum class TunnelEnd : std::uint8_t {
  client_closed,    // both sides closed, the client first (or the client only, before any data)
  upstream_closed,  // both sides closed, the upstream first
  idle_timeout,     // nothing moved for --idle-timeout
  error,            // a read or write failed on either side
  shutdown,         // the process was told to stop (SIGTERM)
};

// The words, in the order of the enum.
inline constexpr std::array<std::string_view, 5> kTunnelEndNames = {"client-closed", "upstream-closed",
                                                                    "idle-timeout", "error", "shutdown"};
static_assert(kTunnelEndNames.size() == static_cast<std::size_t>(TunnelEnd::shutdown) + 1);

// The word for the log line: client-closed, upstream-closed, idle-timeout, error, shutdown.
[[nodiscard]] constexpr std::string_view tunnel_end_name(TunnelEnd end) noexcept {
  const auto at = static_cast<std::size_t>(end);
  return at < kTunnelEndNames.size() ? kTunnelEndNames[at] : "error";
}

// The end named by one of the words above; nullopt for any other text.
[[nodiscard]] constexpr std::optional<TunnelEnd> tunnel_end_from_name(std::string_view text) noexcept {
  for (std::size_t at = 0; at < kTunnelEndNames.size(); ++at) {
    if (kTunnelEndNames[at] == text) return static_cast<TunnelEnd>(at);
  }
  return std::nullopt;
}

}  // namespace boxproxy
