// The host's own interface addresses, for the this-host rule (SPEC §5 step 4).
#pragma once

#include <vector>

#include "table/address.h"

namespace boxproxy {

// Every address on every interface now (getifaddrs). Read fresh for each decision, as the spec
// asks: an address added after start is still this host. Empty when it cannot be read.
[[nodiscard]] std::vector<IpAddress> read_local_addresses();

}  // namespace boxproxy
