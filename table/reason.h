// SPDX-License-Identifier: Apache-2.0
// Every refusal the proxy can give, in one table (SPEC §6).
//
// Each reason maps, in reason.cc and nowhere else, to its log class, its HTTP status and its SOCKS5
// reply. SOCKS4 needs no column: it has one refusal, 0x5B, whatever the reason (refusal_reply_for
// in proxy/wire/handshake.h). Address classes (§5 step 4) are reasons too: a target refused for being
// loopback is logged "class=loopback" and answered 403 / SOCKS5 2 / SOCKS4 0x5B.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace boxproxy {

enum class Reason : std::uint8_t {
  // §5 step 1: the target could not be parsed.
  invalid_target,         // a bad port, or text that cannot be split into host and port
  invalid_host,           // the host is neither an address nor a name
  // §5 step 2: the host list.
  not_listed,             // an IP literal, a name off the list, or a port the entry does not open
  // §5 step 4: address classes, from the table and the rules around it.
  unspecified,            // 0.0.0.0/8, ::/128
  loopback,               // 127.0.0.0/8, ::1
  private_range,          // RFC 1918, 192.0.0.0/24, ULA, 64:ff9b:1::/48 (log class "private")
  metadata,               // cloud metadata endpoints
  cgnat,                  // 100.64.0.0/10
  link_local,             // 169.254.0.0/16, fe80::/10
  benchmarking,           // 198.18.0.0/15, 2001:2::/48
  reserved,               // documentation, 240/4, anything outside 2000::/3, ...
  multicast,              // 224.0.0.0/4, ff00::/8
  broadcast,              // 255.255.255.255
  this_host,              // one of the host's own interface addresses
  denied,                 // an operator's --deny range
  // §5 step 3.
  name_not_resolved,      // no answer, a failed lookup, or none in time
  lookup_budget,          // --max-lookups names have been looked up in DNS (SPEC §14)
  // §5 step 5.
  tunnel_cap,             // --max-tunnels upstream connections are open
  connection_budget,      // --max-connections have been used
  // §5 step 6.
  dial_failed,            // no checked answer accepted a connection
  dial_timed_out,         // --connect-timeout ran out
  // §11.
  auth_required,          // the session token was missing or wrong
  // §8: plain HTTP.
  not_absolute_uri,       // origin form, "GET / HTTP/1.1"
  not_http_uri,           // a scheme other than http
  host_mismatch,          // the Host header names another host or port than the URI
  upgrade_not_supported,  // a request with Upgrade
  bad_request,            // a malformed request line or header
  bad_framing,            // ambiguous or malformed body framing (smuggling shapes)
  head_too_large,         // the head passed --max-head-bytes
  // §9, §10: SOCKS.
  socks_bind,             // BIND
  socks_udp_associate,    // UDP ASSOCIATE
  socks_command,          // any other command
  socks_address_type,     // an address type other than 1, 3, 4
  // §16: the SNI check, after the tunnel was allowed (no reply carries it: the tunnel just closes).
  sni_mismatch,           // the ClientHello names another host than the one decided, or cannot be read
  // §18: request inspection, inside an inspected endpoint's connection (or a plain request to it).
  not_tls,                // a client that did not start TLS on an inspected endpoint: closed, no answer
  request_denied,         // a deny entry matched, or neither access nor rules allow the request
  bad_path,               // not origin form, %2F %5C %00, a backslash, an empty, . or .. segment
  upstream_tls,           // the origin's certificate or handshake failed the proxy's own TLS checks
  // §19: credentials.
  secret_missing,         // an endpoint's "inject" names a secret that is not set: nothing is sent
  secret_misdirected,     // a secret's placeholder in a request to a destination not listed for it
  // §20: request signing.
  body_too_large,         // a body the signer must hash passed --max-held-body
};

struct ReasonInfo {
  Reason reason;
  std::string_view log_class;  // "loopback", "not-listed", "tunnel cap", ...
  std::uint16_t http_status;   // 0 where HTTP never carries it
  std::uint8_t socks5_reply;   // 0 where SOCKS5 never carries it
};

// The whole §6 table, in the order of the enum.
[[nodiscard]] std::span<const ReasonInfo> reason_table() noexcept;
[[nodiscard]] const ReasonInfo& info(Reason reason) noexcept;
[[nodiscard]] inline std::string_view log_class(Reason reason) noexcept { return info(reason).log_class; }
// The reason whose log class is `text`, for tests and stats.
[[nodiscard]] std::optional<Reason> reason_from_log_class(std::string_view text) noexcept;

}  // namespace boxproxy
