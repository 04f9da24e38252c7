// SPDX-License-Identifier: Apache-2.0
#include "table/address_table.h"

#include <array>
#include <vector>

namespace boxproxy {
namespace {

// One row as written in SPEC §5 step 4, in plain constexpr data; turned into TableRow (whose
// IpAddress carries a std::string zone) once, at first use.
struct RowSpec {
  bool v6;
  std::array<std::uint8_t, 16> bytes;
  std::uint8_t prefix;
  TableRow::Action action;
  Reason refusal;
  std::uint8_t v4_offset;
};

constexpr RowSpec v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint8_t prefix,
                     Reason refusal) {
  return RowSpec{false, {a, b, c, d}, prefix, TableRow::Action::refuse, refusal, 0};
}

// An IPv6 network from its eight 16-bit groups as written; groups left out are zero.
constexpr std::array<std::uint8_t, 16> groups(std::array<std::uint16_t, 8> g) {
  std::array<std::uint8_t, 16> b{};
  for (std::size_t i = 0; i < 8; ++i) {
    b[2 * i] = static_cast<std::uint8_t>(g[i] >> 8);
    b[2 * i + 1] = static_cast<std::uint8_t>(g[i] & 0xff);
  }
  return b;
}

constexpr RowSpec v6(std::array<std::uint8_t, 16> bytes, std::uint8_t prefix, Reason refusal) {
  return RowSpec{true, bytes, prefix, TableRow::Action::refuse, refusal, 0};
}

constexpr RowSpec v6_embedded(std::array<std::uint8_t, 16> bytes, std::uint8_t prefix, std::uint8_t offset) {
  return RowSpec{true, bytes, prefix, TableRow::Action::embedded_v4, Reason::reserved, offset};
}

using R = Reason;

// SPEC §5 step 4, row for row and in its order: the first row that matches decides. Rows that sit
// inside a later, wider row come first on purpose (the metadata address inside cgnat, broadcast
// inside 240/4, the EC2 metadata range inside fc00::/7).
constexpr std::array kRows{
    v4(0, 0, 0, 0, 8, R::unspecified),           // "this network" (RFC 791)
    v4(127, 0, 0, 0, 8, R::loopback),            // RFC 1122
    v4(10, 0, 0, 0, 8, R::private_range),        // RFC 1918
    v4(172, 16, 0, 0, 12, R::private_range),     // RFC 1918
    v4(192, 168, 0, 0, 16, R::private_range),    // RFC 1918
    v4(192, 0, 0, 0, 24, R::private_range),      // IETF protocol assignments (RFC 6890)
    v4(100, 100, 100, 200, 32, R::metadata),  // Alibaba Cloud metadata, inside 100.64/10
    v4(100, 64, 0, 0, 10, R::cgnat),             // shared address space (RFC 6598)
    v4(168, 63, 129, 16, 32, R::metadata),  // Azure wire server
    v4(169, 254, 0, 0, 16, R::link_local),   // also AWS/GCP/Azure metadata 169.254.169.254
    v4(198, 18, 0, 0, 15, R::benchmarking),      // RFC 2544
    v4(192, 0, 2, 0, 24, R::reserved),           // TEST-NET-1 (RFC 5737)
    v4(198, 51, 100, 0, 24, R::reserved),        // TEST-NET-2 (RFC 5737)
    v4(203, 0, 113, 0, 24, R::reserved),         // TEST-NET-3 (RFC 5737)
    v4(192, 88, 99, 0, 24, R::reserved),         // 6to4 relay anycast (RFC 7526)
    v4(224, 0, 0, 0, 4, R::multicast),           // RFC 5771
    v4(255, 255, 255, 255, 32, R::broadcast),    // limited broadcast (RFC 919)
    v4(240, 0, 0, 0, 4, R::reserved),            // RFC 1112
    v6(groups({0, 0, 0, 0, 0, 0, 0, 1}), 128, R::loopback),  // ::1
    v6(groups({0, 0, 0, 0}), 128, R::unspecified),  // ::
    // ::ffff:0:0/96 and 64:ff9b::/96 carry an IPv4 address in their last four bytes: a client
    // must not reach 127.0.0.1 by writing ::ffff:127.0.0.1.
    v6_embedded(groups({0, 0, 0, 0, 0, 0xffff, 0, 0}), 96, 12),
    v6_embedded(groups({0x64, 0xff9b, 0, 0}), 96, 12),
    v6(groups({0x64, 0xff9b, 1, 0}), 48, R::private_range),
    // 6to4: 2002:AABB:CCDD::/48 is the gateway for AA.BB.CC.DD.
    v6_embedded(groups({0x2002, 0, 0, 0}), 16, 2),
    v6(groups({0x2001, 0, 0, 0}), 32, R::reserved),  // Teredo
    v6(groups({0x2001, 0xdb8, 0, 0}), 32, R::reserved),
    v6(groups({0xfd00, 0xec2, 0, 0}), 32, R::metadata),  // AWS metadata over IPv6, inside fc00::/7
    v6(groups({0xfc00, 0, 0, 0}), 7, R::private_range),
    v6(groups({0xfe80, 0, 0, 0}), 10, R::link_local),
    v6(groups({0xff00, 0, 0, 0}), 8, R::multicast),
    v6(groups({0x2001, 2, 0, 0}), 48, R::benchmarking),  // 2001:2:: is outside 2001::/32
    v6(groups({0x2001, 0x10, 0, 0}), 28, R::reserved),
    v6(groups({0x2001, 0x20, 0, 0}), 28, R::reserved),  // ORCHIDv2
    v6(groups({0x3fff, 0, 0, 0}), 20, R::reserved),     // documentation (RFC 9637)
    v6(groups({0x5f00, 0, 0, 0}), 16, R::reserved),     // SRv6 SIDs
};

// Every row's network must have its host bits clear, or it would match less than it says.
constexpr bool networks_are_aligned() {
  for (const RowSpec& row : kRows) {
    for (std::size_t i = 0; i < 16; ++i) {
      const unsigned bit = static_cast<unsigned>(i) * 8;
      if (row.prefix >= bit + 8) continue;
      const unsigned keep = row.prefix > bit ? row.prefix - bit : 0;
      const unsigned host_mask = keep == 0 ? 0xffU : (0xffU >> keep);
      if ((row.bytes[i] & host_mask) != 0) return false;
    }
    if (row.prefix > (row.v6 ? 128 : 32)) return false;
  }
  return true;
}
static_assert(networks_are_aligned(), "an address table row has host bits set");

std::vector<TableRow> build_rows() {
  std::vector<TableRow> rows;
  rows.reserve(kRows.size());
  for (const RowSpec& spec : kRows) {
    TableRow row;
    row.range.network.family = spec.v6 ? IpAddress::Family::v6 : IpAddress::Family::v4;
    row.range.network.bytes = spec.bytes;
    row.range.prefix = spec.prefix;
    row.action = spec.action;
    row.refusal = spec.refusal;
    row.v4_offset = spec.v4_offset;
    rows.push_back(row);
  }
  return rows;
}

const std::vector<TableRow>& rows() {
  static const std::vector<TableRow> table = build_rows();
  return table;
}

}  // namespace

std::span<const TableRow> address_table() { return rows(); }

const TableRow* match_table(const IpAddress& address) noexcept {
  for (const TableRow& row : rows()) {
    if (row.range.contains(address)) return &row;
  }
  return nullptr;
}

}  // namespace boxproxy
