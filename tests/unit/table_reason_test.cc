// SPDX-License-Identifier: Apache-2.0
// table/reason: the §6 table, row for row.
#include <string>
#include <set>

#include <doctest/doctest.h>

#include "table/reason.h"

using namespace boxproxy;

TEST_CASE("every §6 row: log class, HTTP status, SOCKS5 reply") {
  struct Row {
    Reason reason;
    const char* log_class;
    int http;
    int socks5;
  };
  const Row rows[] = {
      {Reason::invalid_target, "invalid target", 400, 1},
      {Reason::invalid_host, "invalid host", 400, 4},
      {Reason::not_listed, "not-listed", 403, 2},
      {Reason::unspecified, "unspecified", 403, 2},
      {Reason::loopback, "loopback", 403, 2},
      {Reason::private_range, "private", 403, 2},
      {Reason::metadata, "metadata", 403, 2},
      {Reason::cgnat, "cgnat", 403, 2},
      {Reason::link_local, "link-local", 403, 2},
      {Reason::benchmarking, "benchmarking", 403, 2},
      {Reason::reserved, "reserved", 403, 2},
      {Reason::multicast, "multicast", 403, 2},
      {Reason::broadcast, "broadcast", 403, 2},
      {Reason::this_host, "this-host", 403, 2},
      {Reason::denied, "denied", 403, 2},
      {Reason::name_not_resolved, "name not resolved", 502, 4},
      {Reason::lookup_budget, "lookup budget", 429, 2},
      {Reason::tunnel_cap, "tunnel cap", 429, 2},
      {Reason::connection_budget, "connection budget", 429, 2},
      {Reason::dial_failed, "dial failed", 502, 5},
      {Reason::dial_timed_out, "dial timed out", 504, 4},
      {Reason::auth_required, "auth required", 407, 0},
      {Reason::not_absolute_uri, "not an absolute URI", 400, 0},
      {Reason::not_http_uri, "not an http URI", 400, 0},
      {Reason::host_mismatch, "host mismatch", 400, 0},
      {Reason::upgrade_not_supported, "upgrade not supported", 400, 0},
      {Reason::bad_request, "bad request", 400, 0},
      {Reason::bad_framing, "bad framing", 400, 0},
      {Reason::head_too_large, "head too large", 431, 0},
      {Reason::socks_bind, "socks bind", 0, 7},
      {Reason::socks_udp_associate, "socks udp associate", 0, 7},
      {Reason::socks_command, "socks command", 0, 7},
      {Reason::socks_address_type, "socks address type", 0, 8},
      {Reason::sni_mismatch, "sni mismatch", 0, 0},
      {Reason::not_tls, "not tls", 0, 0},
      {Reason::request_denied, "request denied", 403, 0},
      {Reason::bad_path, "bad path", 400, 0},
      {Reason::upstream_tls, "upstream tls", 502, 0},
      {Reason::secret_missing, "secret missing", 403, 0},
      {Reason::secret_misdirected, "secret misdirected", 403, 2},
      {Reason::body_too_large, "body too large", 413, 0},
  };
  REQUIRE(reason_table().size() == std::size(rows));
  std::set<std::string_view> classes;
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    const Row& row = rows[i];
    CAPTURE(row.log_class);
    const ReasonInfo& got = info(row.reason);
    CHECK(&got == &reason_table()[i]);
    CHECK(got.reason == row.reason);
    CHECK(got.log_class == row.log_class);
    CHECK(log_class(row.reason) == row.log_class);
    CHECK(got.http_status == row.http);
    CHECK(got.socks5_reply == row.socks5);
    CHECK(reason_from_log_class(row.log_class) == row.reason);
    classes.insert(got.log_class);
    // Only printable ASCII, since a class goes into headers and logs.
    for (const char c : got.log_class) CHECK((c >= 0x20 && c <= 0x7e));
  }
  CHECK(classes.size() == std::size(rows));  // no two reasons share a class
  CHECK_FALSE(reason_from_log_class("ok").has_value());
  CHECK_FALSE(reason_from_log_class("").has_value());
  CHECK_FALSE(reason_from_log_class("Loopback").has_value());
}
