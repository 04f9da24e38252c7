// SPDX-License-Identifier: Apache-2.0
// table/cidr: parse_cidr and Cidr::contains.
//
// Input: one byte choosing the probe's family, 16 probe address bytes, then the CIDR text.
// Invariants:
//   - the address part is accepted exactly when inet_pton (AF_INET or AF_INET6) accepts it;
//   - an accepted range has a prefix within its family's width, no host bits set, contains its
//     own network, and normalises idempotently: parse_cidr(to_string(x)) == x;
//   - contains(probe) equals a bit-by-bit comparison of the first `prefix` bits (and is false
//     across families);
//   - an error is a message that names the text.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "table/cidr.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

bool bit(const IpAddress& a, unsigned i) { return ((a.bytes[i / 8] >> (7 - i % 8)) & 1) != 0; }

bool contains_by_bits(const Cidr& c, const IpAddress& a) {
  if (a.family != c.network.family) return false;
  for (unsigned i = 0; i < c.prefix; ++i) {
    if (bit(a, i) != bit(c.network, i)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 17 || size > 17 + 200) return 0;
  IpAddress probe;
  probe.family = (data[0] & 1) != 0 ? IpAddress::Family::v6 : IpAddress::Family::v4;
  for (std::size_t i = 0; i < probe.size(); ++i) probe.bytes[i] = data[1 + i];
  const std::string text(fuzz::as_text(data + 17, size - 17));

  const auto parsed = parse_cidr(text);
  const std::string address_part = text.substr(0, text.find('/'));
  bool oracle = false;
  if (address_part.find('\0') == std::string::npos) {
    unsigned char buffer[16];
    oracle = inet_pton(AF_INET, address_part.c_str(), buffer) == 1 || inet_pton(AF_INET6, address_part.c_str(), buffer) == 1;
  }
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    FUZZ_CHECK(!error->empty());
    return 0;
  }
  const Cidr& cidr = std::get<Cidr>(parsed);
  FUZZ_CHECK(oracle);
  const unsigned width = cidr.network.is_v4() ? 32 : 128;
  FUZZ_CHECK(cidr.prefix <= width);
  if (text.find('/') == std::string::npos) FUZZ_CHECK(cidr.prefix == width);
  for (unsigned i = cidr.prefix; i < width; ++i) FUZZ_CHECK(!bit(cidr.network, i));
  for (unsigned i = width; i < 128; ++i) FUZZ_CHECK(!bit(cidr.network, i));
  FUZZ_CHECK(cidr.contains(cidr.network));

  const auto again = parse_cidr(cidr.to_string());
  FUZZ_CHECK(std::holds_alternative<Cidr>(again));
  FUZZ_CHECK(std::get<Cidr>(again) == cidr);
  FUZZ_CHECK(std::get<Cidr>(again).to_string() == cidr.to_string());

  FUZZ_CHECK(cidr.contains(probe) == contains_by_bits(cidr, probe));
  return 0;
}
