// SPDX-License-Identifier: Apache-2.0
// The whole address rule of SPEC §5 step 4 for one answer: --deny, --permit, the table, the
// 2000::/3 rule, and this-host.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "table/address.h"
#include "table/cidr.h"
#include "table/reason.h"

namespace boxproxy {

struct AddressRule {
  std::vector<Cidr> deny;    // refused as `denied`, before anything else
  std::vector<Cidr> permit;  // let through although the table refuses them
};

// nullopt when `address` may be dialled; otherwise the class it is refused with.
// `local_addresses` are the host's own interface addresses (read fresh by the caller for each
// decision): an address equal to one of them is `this_host`.
// An IPv6 address carrying an IPv4 (mapped, NAT64, 6to4) is refused with that IPv4's class under
// this same rule (so --deny 1.1.1.0/24 also refuses ::ffff:1.1.1.1); when the IPv4 is fine, the
// IPv6 address itself is still this_host if the host holds it.
[[nodiscard]] std::optional<Reason> judge_address(const AddressRule& rule, const IpAddress& address,
                                                  std::span<const IpAddress> local_addresses);

}  // namespace boxproxy
