// SPDX-License-Identifier: Apache-2.0
// Parsing a target: a host and a port, as any of the four protocols names one (SPEC §5 step 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "table/address.h"
#include "table/reason.h"

namespace boxproxy {

struct Target {
  // The host as judged: one trailing dot dropped, brackets removed, otherwise exactly as written
  // (never IDNA-mapped, percent-decoded, or lower-cased).
  std::string host;
  // Set when the host is an IP literal (in any form parse_ip_literal reads).
  std::optional<IpAddress> address;
  std::uint16_t port = 0;

  [[nodiscard]] bool is_name() const noexcept { return !address.has_value(); }
};

// A parse either gives a Target or says why not: Reason::invalid_target or Reason::invalid_host.
using TargetResult = std::variant<Target, Reason>;

// One to five ASCII digits (leading zeros allowed) with a value of 1 to 65535.
[[nodiscard]] std::optional<std::uint16_t> parse_port(std::string_view text) noexcept;

// 1 to 253 characters of [A-Za-z0-9._-], no empty label, and a last label that is not all digits
// (so "256.1.1.1" or "1.2.3.4.5", which look like addresses but are not, are not names either);
// never an IPv4 address in any inet_aton form ("0x7f", "0x7f.1"). `text` has had its trailing dot
// dropped already.
[[nodiscard]] bool is_valid_name(std::string_view text) noexcept;

// A host (bracketed IPv6, IPv4 in any inet_aton form, unbracketed IPv6, or a name) with a port
// already known, as SOCKS gives them. Drops one trailing dot unless the host is bracketed
// ("[::1]." is invalid_host). Errors: invalid_target (port 0: SOCKS carries the port as two bytes,
// and zero is not a port), invalid_host.
[[nodiscard]] TargetResult parse_host(std::string_view host, std::uint16_t port);

// "host:port" or "[v6]:port" as CONNECT names a target: the port is required. Errors:
// invalid_target (no port, bad port, nothing to split, an IPv6 host without its brackets such as
// "::1:443"), invalid_host.
[[nodiscard]] TargetResult parse_authority(std::string_view text);

// An authority whose port may be absent, as an http:// URI carries it ("example.com" means port
// `default_port`); "example.com:" and an unbracketed IPv6 host ("::1") are invalid_target.
[[nodiscard]] TargetResult parse_authority_default_port(std::string_view text, std::uint16_t default_port);

// The host and port of an authority as far as it splits, as sent: the text before the port's
// colon, brackets and all, nothing dropped or checked. For the log line of a refused target
// (SPEC §12: the host as sent). `port` is the port when it parses, `default_port` when there is
// no colon (0 without one), else 0.
struct AuthorityText {
  std::string_view host;
  std::uint16_t port = 0;
};
[[nodiscard]] AuthorityText split_authority_text(std::string_view authority,
                                                 std::optional<std::uint16_t> default_port) noexcept;

// A target as `boxproxy check` takes it (SPEC §13): "host:port" or "[v6]:port" with that port;
// a bare host, or an unbracketed IPv6 address (two colons or more), with `default_port`.
[[nodiscard]] TargetResult parse_check_target(std::string_view text, std::uint16_t default_port = 443);

}  // namespace boxproxy
