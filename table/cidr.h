// SPDX-License-Identifier: Apache-2.0
// An address range, as --permit and --deny and the address table name them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "table/address.h"

namespace boxproxy {

struct Cidr {
  IpAddress network;       // host bits are zero
  std::uint8_t prefix = 0; // 0..32 for IPv4, 0..128 for IPv6

  // True when `address` is of the same family and its first `prefix` bits equal the network's.
  // An IPv4 range never matches an IPv6 address (mapped forms are judged through the table).
  [[nodiscard]] bool contains(const IpAddress& address) const noexcept;
  [[nodiscard]] std::string to_string() const;  // "10.0.0.0/8", "fc00::/7"
  friend bool operator==(const Cidr& a, const Cidr& b) noexcept {
    return a.network == b.network && a.prefix == b.prefix;
  }
};

// "ADDR/LEN" or a bare "ADDR" (a single address: /32 or /128). The address is strict
// (inet_pton forms: dotted quad or IPv6, no zone): an operator's range is never a guess.
// Host bits set past the prefix is an error that says which network was probably meant.
// On error, the string says what is wrong, naming the text.
[[nodiscard]] std::variant<Cidr, std::string> parse_cidr(std::string_view text);

}  // namespace boxproxy
