// SPDX-License-Identifier: Apache-2.0
// table/address: parse_ipv4, parse_ipv6 and parse_ip_literal against glibc as the oracle.
//
// Invariants:
//   - where inet_aton reads the whole text (no NUL, no white space, so nothing it would stop at
//     and ignore), parse_ipv4 accepts it with the same bytes; where parse_ipv4 accepts, inet_aton
//     accepts the whole text with the same bytes (the SPEC's "every inet_aton form, nothing more");
//   - without a zone, parse_ipv6 accepts exactly what inet_pton(AF_INET6) accepts, same bytes;
//     with one, the part before '%' is what inet_pton accepts, and the zone is kept as written;
//   - a strict dotted quad (inet_pton AF_INET) is read by parse_ipv4 with the same bytes;
//   - nothing is both an IP literal and a valid name (with or without one trailing dot);
//   - a parsed address round-trips: to_string() parses back to the same family and bytes, and its
//     value written as one decimal, hex or octal number reads back the same.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "table/address.h"
#include "table/target.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

// The white space glibc's inet_aton stops at (isspace in the C locale).
bool has_c_space(std::string_view text) {
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r') return true;
  }
  return false;
}

void check_round_trip(const IpAddress& address) {
  const std::string text = address.to_string();
  const auto again = parse_ip_literal(text);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->family == address.family);
  FUZZ_CHECK(*again == address);
  FUZZ_CHECK(again->to_string() == text);
  if (address.is_v4()) {
    const std::uint32_t value = address.v4_value();
    for (const std::string& form : {std::to_string(value), "0x" + [&] {
                                      char b[16];
                                      std::snprintf(b, sizeof b, "%x", value);
                                      return std::string(b);
                                    }(),
                                    "0" + [&] {
                                      char b[16];
                                      std::snprintf(b, sizeof b, "%o", value);
                                      return std::string(b);
                                    }()}) {
      const auto parsed = parse_ipv4(form);
      FUZZ_CHECK(parsed.has_value() && *parsed == address);
    }
  } else {
    const auto bracketed = parse_ip_literal("[" + text + "]");
    FUZZ_CHECK(bracketed.has_value() && *bracketed == address);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256) return 0;
  const std::string text(fuzz::as_text(data, size));
  const std::string_view view = text;
  const bool has_nul = text.find('\0') != std::string::npos;
  const bool has_space = has_c_space(view);

  // IPv4 against inet_aton.
  const auto v4 = parse_ipv4(view);
  if (v4) {
    FUZZ_CHECK(v4->is_v4());
    FUZZ_CHECK(!has_nul && !has_space);
  }
  if (!has_nul) {
    in_addr oracle{};
    const bool aton = inet_aton(text.c_str(), &oracle) != 0;
    if (!has_space) FUZZ_CHECK(aton == v4.has_value());
    if (v4) {
      FUZZ_CHECK(aton);
      FUZZ_CHECK(std::memcmp(&oracle, v4->bytes.data(), 4) == 0);
    }
    // A strict dotted quad is one of the inet_aton forms.
    in_addr strict{};
    if (inet_pton(AF_INET, text.c_str(), &strict) == 1) {
      FUZZ_CHECK(v4.has_value());
      FUZZ_CHECK(std::memcmp(&strict, v4->bytes.data(), 4) == 0);
    }
  }

  // IPv6 against inet_pton.
  const auto v6 = parse_ipv6(view);
  const std::size_t percent = view.find('%');
  const std::string address_part(view.substr(0, percent));
  if (v6) {
    FUZZ_CHECK(!v6->is_v4());
    FUZZ_CHECK(!has_nul);
  }
  if (!has_nul) {
    in6_addr oracle{};
    const bool pton = inet_pton(AF_INET6, address_part.c_str(), &oracle) == 1;
    if (percent == std::string_view::npos) {
      FUZZ_CHECK(pton == v6.has_value());
      if (v6) FUZZ_CHECK(v6->zone.empty());
    }
    if (v6) {
      FUZZ_CHECK(pton);
      FUZZ_CHECK(std::memcmp(&oracle, v6->bytes.data(), 16) == 0);
    }
  }
  if (v6 && percent != std::string_view::npos) {
    std::string_view zone = view.substr(percent + 1);
    if (zone.size() > 2 && zone.substr(0, 2) == "25") zone.remove_prefix(2);
    FUZZ_CHECK(!zone.empty());
    FUZZ_CHECK(v6->zone == zone);
  }

  // parse_ip_literal is exactly those two, brackets allowed for IPv6.
  const auto literal = parse_ip_literal(view);
  if (!view.empty() && view.front() == '[') {
    const bool closed = view.size() >= 2 && view.back() == ']';
    const auto inner = closed ? parse_ipv6(view.substr(1, view.size() - 2)) : std::nullopt;
    FUZZ_CHECK(literal.has_value() == inner.has_value());
    if (literal) FUZZ_CHECK(*literal == *inner);
  } else if (v4) {
    FUZZ_CHECK(literal.has_value() && *literal == *v4 && literal->is_v4());
  } else {
    FUZZ_CHECK(literal.has_value() == v6.has_value());
    if (literal) FUZZ_CHECK(*literal == *v6 && !literal->is_v4());
  }

  // Never both an address and a name, with or without one trailing dot.
  FUZZ_CHECK(!(literal && is_valid_name(view)));
  FUZZ_CHECK(!(v4 && is_valid_name(view)));
  FUZZ_CHECK(!(v6 && is_valid_name(view)));
  if (!view.empty() && view.back() == '.') {
    const std::string_view trimmed = view.substr(0, view.size() - 1);
    FUZZ_CHECK(!(parse_ip_literal(trimmed) && is_valid_name(trimmed)));
  }

  if (literal) check_round_trip(*literal);
  if (v4) check_round_trip(*v4);
  if (v6) check_round_trip(*v6);
  return 0;
}
