// SPDX-License-Identifier: Apache-2.0
#include "table/reason.h"

#include <array>

namespace boxproxy {
namespace {

// SPEC §6, one row a reason, in the order of the enum (checked by a static_assert below and a test).
// SOCKS5 replies: 1 general failure, 2 not allowed by ruleset, 4 host unreachable,
// 5 connection refused, 7 command not supported, 8 address type not supported; 0 = not carried.
constexpr std::array kReasons{
    ReasonInfo{Reason::invalid_target, "invalid target", 400, 1},
    ReasonInfo{Reason::invalid_host, "invalid host", 400, 4},
    ReasonInfo{Reason::not_listed, "not-listed", 403, 2},
    ReasonInfo{Reason::unspecified, "unspecified", 403, 2},
    ReasonInfo{Reason::loopback, "loopback", 403, 2},
    ReasonInfo{Reason::private_range, "private", 403, 2},
    ReasonInfo{Reason::metadata, "metadata", 403, 2},
    ReasonInfo{Reason::cgnat, "cgnat", 403, 2},
    ReasonInfo{Reason::link_local, "link-local", 403, 2},
    ReasonInfo{Reason::benchmarking, "benchmarking", 403, 2},
    ReasonInfo{Reason::reserved, "reserved", 403, 2},
    ReasonInfo{Reason::multicast, "multicast", 403, 2},
    ReasonInfo{Reason::broadcast, "broadcast", 403, 2},
    ReasonInfo{Reason::this_host, "this-host", 403, 2},
    ReasonInfo{Reason::denied, "denied", 403, 2},
    ReasonInfo{Reason::name_not_resolved, "name not resolved", 502, 4},
    // A budget, like the connection budget: the box is told to slow down, not that the name is bad.
    ReasonInfo{Reason::lookup_budget, "lookup budget", 429, 2},
    ReasonInfo{Reason::tunnel_cap, "tunnel cap", 429, 2},
    ReasonInfo{Reason::connection_budget, "connection budget", 429, 2},
    ReasonInfo{Reason::dial_failed, "dial failed", 502, 5},
    ReasonInfo{Reason::dial_timed_out, "dial timed out", 504, 4},
    // SOCKS5 answers auth failures in the method/auth exchange (05 FF, or status 01 01), not here.
    ReasonInfo{Reason::auth_required, "auth required", 407, 0},
    ReasonInfo{Reason::not_absolute_uri, "not an absolute URI", 400, 0},
    ReasonInfo{Reason::not_http_uri, "not an http URI", 400, 0},
    ReasonInfo{Reason::host_mismatch, "host mismatch", 400, 0},
    ReasonInfo{Reason::upgrade_not_supported, "upgrade not supported", 400, 0},
    ReasonInfo{Reason::bad_request, "bad request", 400, 0},
    ReasonInfo{Reason::bad_framing, "bad framing", 400, 0},
    ReasonInfo{Reason::head_too_large, "head too large", 431, 0},
    ReasonInfo{Reason::socks_bind, "socks bind", 0, 7},
    ReasonInfo{Reason::socks_udp_associate, "socks udp associate", 0, 7},
    ReasonInfo{Reason::socks_command, "socks command", 0, 7},
    ReasonInfo{Reason::socks_address_type, "socks address type", 0, 8},
    // The tunnel was allowed and answered already: the check closes it, no reply is sent.
    ReasonInfo{Reason::sni_mismatch, "sni mismatch", 0, 0},
    // Request inspection's: answered inside the TLS session (or to a plain request), never by SOCKS.
    ReasonInfo{Reason::not_tls, "not tls", 0, 0},
    ReasonInfo{Reason::request_denied, "request denied", 403, 0},
    ReasonInfo{Reason::bad_path, "bad path", 400, 0},
    ReasonInfo{Reason::upstream_tls, "upstream tls", 502, 0},
    // Credentials (§19): the request is refused rather than sent with no credential or a partial one.
    ReasonInfo{Reason::secret_missing, "secret missing", 403, 0},
    // A placeholder where its secret may not go: the request is not sent (a tripwire, SPEC §19).
    // Also in a SOCKS target's name, refused before its lookup: SOCKS5 2 as for a name off the list.
    ReasonInfo{Reason::secret_misdirected, "secret misdirected", 403, 2},
    // A body held to be hashed for a signature (§20) is bounded: past --max-held-body, refused.
    ReasonInfo{Reason::body_too_large, "body too large", 413, 0},
};

constexpr bool rows_follow_enum() {
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    if (static_cast<std::size_t>(kReasons[i].reason) != i) return false;
  }
  return true;
}
static_assert(rows_follow_enum(), "kReasons must list every Reason in enum order");
static_assert(kReasons.size() == static_cast<std::size_t>(Reason::body_too_large) + 1);

}  // namespace

std::span<const ReasonInfo> reason_table() noexcept { return kReasons; }

const ReasonInfo& info(Reason reason) noexcept { return kReasons[static_cast<std::size_t>(reason)]; }

std::optional<Reason> reason_from_log_class(std::string_view text) noexcept {
  for (const auto& row : kReasons) {
    if (row.log_class == text) return row.reason;
  }
  return std::nullopt;
}

}  // namespace boxproxy
