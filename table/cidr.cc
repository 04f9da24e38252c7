// SPDX-License-Identifier: Apache-2.0
#include "table/cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include <fmt/format.h>

namespace boxproxy {
namespace {

// `address` with every bit past the first `prefix` cleared.
IpAddress mask(const IpAddress& address, unsigned prefix) noexcept {
  IpAddress masked;
  masked.family = address.family;
  for (std::size_t i = 0; i < address.size(); ++i) {
    const unsigned bit = static_cast<unsigned>(i) * 8;
    if (prefix >= bit + 8) {
      masked.bytes[i] = address.bytes[i];
    } else if (prefix > bit) {
      const unsigned keep = prefix - bit;  // 1..7
      masked.bytes[i] = static_cast<std::uint8_t>(address.bytes[i] & (0xffU << (8 - keep)));
    }
  }
  return masked;
}

}  // namespace

bool Cidr::contains(const IpAddress& address) const noexcept {
  if (address.family != network.family) return false;
  return mask(address, prefix) == network;
}

std::string Cidr::to_string() const { return fmt::format("{}/{}", network.to_string(), prefix); }

std::variant<Cidr, std::string> parse_cidr(std::string_view text) {
  const std::size_t slash = text.find('/');
  const std::string_view address_text = text.substr(0, slash);
  const auto address = parse_strict_address(address_text);
  if (!address) {
    if (address_text.find('%') != std::string_view::npos) {
      return fmt::format("{}: a range takes no IPv6 zone", text);
    }
    return fmt::format("{}: {} is not an IP address (a dotted quad such as 10.0.0.0, or IPv6)", text,
                       address_text);
  }
  const unsigned max_prefix = address->is_v4() ? 32 : 128;
  unsigned prefix = max_prefix;
  if (slash != std::string_view::npos) {
    const std::string_view length = text.substr(slash + 1);
    bool digits = !length.empty() && length.size() <= 3;
    unsigned value = 0;
    for (const char c : length) {
      if (c < '0' || c > '9') {
        digits = false;
        break;
      }
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (!digits || value > max_prefix) {
      return fmt::format("{}: the prefix length must be a number from 0 to {}", text, max_prefix);
    }
    prefix = value;
  }
  Cidr cidr;
  cidr.prefix = static_cast<std::uint8_t>(prefix);
  cidr.network = mask(*address, prefix);
  if (!(cidr.network == *address)) {
    // 10.1.2.3/8 is probably a typo for 10.0.0.0/8, or for 10.1.2.3/32: never guess which.
    return fmt::format("{}: host bits are set past the prefix; did you mean {}?", text, cidr.to_string());
  }
  return cidr;
}

}  // namespace boxproxy
