// SPDX-License-Identifier: Apache-2.0
// proxy/socks4: SOCKS4 and SOCKS4a requests delivered in pieces.
//
// Input: the Split framing (fuzz_support.h), then the bytes.
// Invariants:
//   - the answer is the same however the bytes are split as for all of them at once;
//   - consumed <= size and <= socks4_max_request_bytes; nothing past that window decides anything;
//     a refusal gives no reason (close) and no value;
//   - SOCKS4: the host is the dotted quad of the four address bytes, which parse_host reads back as
//     exactly those bytes; 4a (0.0.0.x, x != 0): the host is the bytes between the user id's NUL
//     and the next, holding no NUL, and parse_host judges it a name, a literal or invalid_host.
#include <cstring>
#include <string>

#include "proxy/wire/socks4.h"
#include "table/target.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data, size));
  const std::string_view bytes = split.payload;

  const auto whole = parse_socks4_request(bytes);
  const auto pieces = fuzz::parse_in_pieces(split, parse_socks4_request);
  FUZZ_CHECK(whole.status == pieces.status && whole.consumed == pieces.consumed && whole.refusal == pieces.refusal);
  FUZZ_CHECK(whole.value.has_value() == pieces.value.has_value());
  FUZZ_CHECK(whole.consumed <= bytes.size() && whole.consumed <= socks4_max_request_bytes);
  FUZZ_CHECK(!whole.refusal.has_value());
  if (bytes.size() > socks4_max_request_bytes) {
    // Only the window decides.
    const auto window = parse_socks4_request(bytes.substr(0, socks4_max_request_bytes));
    FUZZ_CHECK(window.status == whole.status && window.consumed == whole.consumed);
  }
  if (!whole.value) {
    FUZZ_CHECK(whole.consumed == 0);
    return 0;
  }
  const Socks4Request& a = *whole.value;
  const Socks4Request& b = *pieces.value;
  FUZZ_CHECK(a.command == b.command && a.port == b.port && a.host == b.host && a.is_4a == b.is_4a);
  FUZZ_CHECK(a.command == static_cast<unsigned char>(bytes[1]));
  FUZZ_CHECK(a.port == ((static_cast<unsigned char>(bytes[2]) << 8) | static_cast<unsigned char>(bytes[3])));
  FUZZ_CHECK(bytes[whole.consumed - 1] == '\0');
  const bool four_a = bytes[4] == 0 && bytes[5] == 0 && bytes[6] == 0 && bytes[7] != 0;
  FUZZ_CHECK(a.is_4a == four_a);
  const TargetResult judged = parse_host(a.host, a.port == 0 ? 1 : a.port);
  if (!a.is_4a) {
    const Target* t = std::get_if<Target>(&judged);
    FUZZ_CHECK(t != nullptr && t->address && t->address->is_v4());
    FUZZ_CHECK(std::memcmp(t->address->bytes.data(), bytes.data() + 4, 4) == 0);
    FUZZ_CHECK(t->host == t->address->to_string());
  } else {
    FUZZ_CHECK(a.host.find('\0') == std::string::npos);
    const std::size_t user_end = bytes.find('\0', 8);
    FUZZ_CHECK(bytes.substr(user_end + 1, a.host.size()) == a.host);
    FUZZ_CHECK(user_end + 1 + a.host.size() + 1 == whole.consumed);
    if (const Target* t = std::get_if<Target>(&judged)) {
      FUZZ_CHECK(!t->host.empty());
      if (t->is_name()) FUZZ_CHECK(is_valid_name(t->host));
    } else {
      FUZZ_CHECK(std::get<Reason>(judged) == Reason::invalid_host);
    }
  }
  return 0;
}
