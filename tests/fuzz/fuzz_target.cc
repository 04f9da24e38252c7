// SPDX-License-Identifier: Apache-2.0
// table/target: parse_authority, parse_authority_default_port, parse_check_target, parse_host.
//
// The first byte picks the parser (and for parse_host the next two are the port); the rest is the
// text. Invariants for every accepted target:
//   - the host is not empty and the port is 1..65535;
//   - a name passes is_valid_name and is not also an IP literal; an address is exactly what
//     parse_ip_literal reads from the host;
//   - the target round-trips: "host:port" ("[host]:port" for IPv6) parses back to the same host,
//     address and port;
//   - the address rule judges an accepted literal exactly as it judges its canonical form
//     (inet_ntop), whichever of the inet_aton spellings the client used;
//   - what parse_authority accepts (a port written), parse_authority_default_port reads the same.
#include <string>

#include "table/address_rule.h"
#include "table/target.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

bool same_target(const Target& a, const Target& b) {
  return a.host == b.host && a.port == b.port && a.address.has_value() == b.address.has_value() &&
         (!a.address || (*a.address == *b.address && a.address->family == b.address->family));
}

std::string authority_of(const Target& t) {
  const bool bracket = t.address && !t.address->is_v4();
  return (bracket ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
}

void check_target(const TargetResult& result) {
  const Target* target = std::get_if<Target>(&result);
  if (target == nullptr) {
    const Reason reason = std::get<Reason>(result);
    FUZZ_CHECK(reason == Reason::invalid_target || reason == Reason::invalid_host);
    return;
  }
  FUZZ_CHECK(!target->host.empty());
  FUZZ_CHECK(target->port >= 1);
  if (target->is_name()) {
    FUZZ_CHECK(is_valid_name(target->host));
    FUZZ_CHECK(!parse_ip_literal(target->host).has_value());
  } else {
    const auto again = parse_ip_literal(target->host);
    FUZZ_CHECK(again.has_value() && *again == *target->address && again->family == target->address->family);
    // The judgement of the literal as written equals that of its canonical form.
    const std::string canonical = target->address->to_string();
    const TargetResult canonical_result = parse_host(canonical, target->port);
    const Target* canonical_target = std::get_if<Target>(&canonical_result);
    FUZZ_CHECK(canonical_target != nullptr && canonical_target->address.has_value());
    FUZZ_CHECK(*canonical_target->address == *target->address);
    const AddressRule rule;
    FUZZ_CHECK(judge_address(rule, *target->address, {}) == judge_address(rule, *canonical_target->address, {}));
  }
  // Round trip through the written form.
  const TargetResult again = parse_authority(authority_of(*target));
  const Target* round = std::get_if<Target>(&again);
  FUZZ_CHECK(round != nullptr);
  FUZZ_CHECK(same_target(*round, *target));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3 || size > 600) return 0;
  const unsigned mode = data[0] % 4;
  std::uint16_t port = static_cast<std::uint16_t>((data[1] << 8) | data[2]);
  if (port == 0) port = 1;
  const std::string text(fuzz::as_text(data + 3, size - 3));

  switch (mode) {
    case 0: {
      const TargetResult result = parse_authority(text);
      check_target(result);
      // With the port written, the default never matters.
      if (const Target* t = std::get_if<Target>(&result)) {
        const TargetResult with_default = parse_authority_default_port(text, 80);
        FUZZ_CHECK(std::holds_alternative<Target>(with_default));
        FUZZ_CHECK(same_target(*t, std::get<Target>(with_default)));
      }
      break;
    }
    case 1:
      check_target(parse_authority_default_port(text, port));
      break;
    case 2:
      check_target(parse_check_target(text, port));
      break;
    default:
      check_target(parse_host(text, port));
      break;
  }
  return 0;
}
