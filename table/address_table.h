// SPDX-License-Identifier: Apache-2.0
// The address table of SPEC §5 step 4: which ranges are never reached, and why.
//
// One data table, in the spec's order; the first row that matches decides. Rows for IPv6 forms
// that carry an IPv4 address inside (mapped, NAT64, 6to4) say where the IPv4 sits, and the
// caller judges that IPv4 in its place.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "table/cidr.h"
#include "table/reason.h"

namespace boxproxy {

struct TableRow {
  enum class Action : std::uint8_t {
    refuse,        // refuse with `refusal`
    embedded_v4,   // judge the IPv4 address at byte `v4_offset` instead
  };
  Cidr range;
  Action action = Action::refuse;
  Reason refusal = Reason::reserved;  // for Action::refuse
  std::uint8_t v4_offset = 0;          // for Action::embedded_v4: 12 (mapped, NAT64) or 2 (6to4)
};

// The rows, in order. Pinned by a test so that no row drifts unnoticed.
[[nodiscard]] std::span<const TableRow> address_table();

// The first row matching `address`, or nullptr when none does.
[[nodiscard]] const TableRow* match_table(const IpAddress& address) noexcept;

}  // namespace boxproxy
