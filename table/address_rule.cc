// SPDX-License-Identifier: Apache-2.0
#include "table/address_rule.h"

#include <algorithm>

#include "table/address_table.h"

namespace boxproxy {
namespace {

bool any_contains(const std::vector<Cidr>& ranges, const IpAddress& address) noexcept {
  return std::any_of(ranges.begin(), ranges.end(), [&](const Cidr& r) { return r.contains(address); });
}

bool is_local(const IpAddress& address, std::span<const IpAddress> local_addresses) noexcept {
  return std::any_of(local_addresses.begin(), local_addresses.end(),
                     [&](const IpAddress& local) { return local == address; });
}

// Global unicast IPv6 is 2000::/3; everything else that the table did not name is not a place a
// box has any business reaching (IPv4-compatible ::a.b.c.d, unassigned space, ...).
bool in_global_unicast(const IpAddress& address) noexcept { return (address.bytes[0] & 0xe0) == 0x20; }

}  // namespace

std::optional<Reason> judge_address(const AddressRule& rule, const IpAddress& address,
                                    std::span<const IpAddress> local_addresses) {
  // The operator's deny wins over everything, their permit over the table.
  if (any_contains(rule.deny, address)) return Reason::denied;
  if (any_contains(rule.permit, address)) return std::nullopt;

  if (const TableRow* row = match_table(address)) {
    if (row->action == TableRow::Action::refuse) return row->refusal;
    // The IPv4 inside (mapped, NAT64, 6to4) is what the packets end up reaching: judge it under
    // this same rule, so --deny and --permit and this-host hold for it too.
    if (auto refusal = judge_address(rule, address.embedded_v4(row->v4_offset), local_addresses)) {
      return refusal;
    }
  } else if (!address.is_v4() && !in_global_unicast(address)) {
    return Reason::reserved;
  }

  // Last: the proxy's own host, whose services listen on addresses the table cannot know.
  if (is_local(address, local_addresses)) return Reason::this_host;
  return std::nullopt;
}

}  // namespace boxproxy
