// SPDX-License-Identifier: Apache-2.0
// proxy/socks5: the greeting, RFC 1929 credentials and the request, each delivered in pieces,
// and a whole handshake (greeting then request) as one stream.
//
// Input: a byte choosing the message, the Split framing (fuzz_support.h), then the bytes.
// Invariants:
//   - the answer is the same however the bytes are split as for all of them at once (status,
//     consumed, refusal, value);
//   - consumed <= size; a refusal carries no value; the only reason given is socks_address_type;
//   - an IPv4 or IPv6 request's host is canonical text that parse_host reads back as a literal with
//     exactly the bytes sent; a domain request's host is exactly the bytes sent, and parse_host's
//     judgement of it is a name, a literal or invalid_host, never anything else, and never a
//     name holding a byte outside [A-Za-z0-9._-];
//   - the handshake as one stream: the request parsed from the bytes after the greeting equals
//     the request parsed on its own.
#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "proxy/wire/socks5.h"
#include "table/target.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

template <typename T, typename Same>
void check_split(const fuzz::Split& split, ParseResult<T> (*parse)(std::string_view), Same same) {
  const auto whole = parse(split.payload);
  const auto pieces = fuzz::parse_in_pieces(split, parse);
  FUZZ_CHECK(whole.consumed <= split.payload.size());
  FUZZ_CHECK(whole.status == pieces.status && whole.consumed == pieces.consumed && whole.refusal == pieces.refusal);
  FUZZ_CHECK(whole.value.has_value() == pieces.value.has_value());
  if (whole.value) FUZZ_CHECK(same(*whole.value, *pieces.value));
  if (whole.status != ParseResult<T>::Status::complete) FUZZ_CHECK(!whole.value && whole.consumed == 0);
  if (whole.refusal) FUZZ_CHECK(*whole.refusal == Reason::socks_address_type);
}

bool same_request(const Socks5Request& a, const Socks5Request& b) {
  return a.command == b.command && a.host == b.host && a.port == b.port;
}

void check_request(const ParseResult<Socks5Request>& result, std::string_view bytes) {
  if (!result.value) return;
  const Socks5Request& r = *result.value;
  const auto atyp = static_cast<unsigned char>(bytes[3]);
  const TargetResult judged = parse_host(r.host, r.port == 0 ? 1 : r.port);
  if (atyp == 1 || atyp == 4) {
    const std::size_t n = atyp == 1 ? 4 : 16;
    FUZZ_CHECK(result.consumed == 4 + n + 2);
    const Target* t = std::get_if<Target>(&judged);
    FUZZ_CHECK(t != nullptr && t->address.has_value());
    FUZZ_CHECK(t->address->size() == n);
    FUZZ_CHECK(std::memcmp(t->address->bytes.data(), bytes.data() + 4, n) == 0);
  } else {
    FUZZ_CHECK(atyp == 3);
    const std::size_t length = static_cast<unsigned char>(bytes[4]);
    FUZZ_CHECK(result.consumed == 5 + length + 2);
    FUZZ_CHECK(r.host == bytes.substr(5, length));
    if (const Target* t = std::get_if<Target>(&judged)) {
      FUZZ_CHECK(!t->host.empty());
      if (t->is_name()) FUZZ_CHECK(is_valid_name(t->host));
    } else {
      FUZZ_CHECK(std::get<Reason>(judged) == Reason::invalid_host);
    }
  }
  const auto port_at = result.consumed - 2;
  FUZZ_CHECK(r.port == ((static_cast<unsigned char>(bytes[port_at]) << 8) | static_cast<unsigned char>(bytes[port_at + 1])));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 4096) return 0;
  const unsigned mode = data[0] % 4;
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  const std::string_view bytes = split.payload;

  switch (mode) {
    case 0:
      check_split(split, parse_socks5_greeting, [](const Socks5Greeting& a, const Socks5Greeting& b) {
        return a.offers_no_auth == b.offers_no_auth && a.offers_user_pass == b.offers_user_pass;
      });
      break;
    case 1: {
      check_split(split, parse_socks5_credentials, [](const Socks5Credentials& a, const Socks5Credentials& b) {
        return a.user == b.user && a.password == b.password;
      });
      const auto whole = parse_socks5_credentials(bytes);
      if (whole.value) {
        FUZZ_CHECK(whole.consumed == 3 + whole.value->user.size() + whole.value->password.size());
        FUZZ_CHECK(bytes.substr(2, whole.value->user.size()) == whole.value->user);
      }
      break;
    }
    case 2: {
      check_split(split, parse_socks5_request, same_request);
      check_request(parse_socks5_request(bytes), bytes);
      break;
    }
    default: {
      // One stream: the greeting, then the request in the bytes after it.
      const auto greeting = parse_socks5_greeting(bytes);
      if (!greeting.value) break;
      const std::string_view rest = bytes.substr(greeting.consumed);
      const auto request = parse_socks5_request(rest);
      const std::string copy(rest);  // the request on its own, in a buffer of its own
      const auto alone = parse_socks5_request(copy);
      FUZZ_CHECK(request.status == alone.status && request.consumed == alone.consumed && request.refusal == alone.refusal);
      if (request.value) FUZZ_CHECK(same_request(*request.value, *alone.value));
      check_request(request, rest);
      break;
    }
  }
  return 0;
}
