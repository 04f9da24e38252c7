// SPDX-License-Identifier: Apache-2.0
// proxy/proxy_auth: base64_decode, token_matches and http_proxy_authorized.
//
// Input: a byte splitting the rest into two strings A and B.
// Invariants:
//   - base64_decode_standard(encode(A)) == A, with an encoder written here (RFC 4648, padded);
//   - whatever base64_decode accepts is canonical: encode(decode(B)) == B (so no two texts decode
//     to the same credentials);
//   - token_matches(A, B) == (A == B), and token_matches(A, A);
//   - a head carrying "Bearer A" or "Basic base64(user:A)" is authorized for token A (when A could
//     travel in a header: printable, no leading or trailing white space), and one carrying B is
//     authorized for A only when B == A.
#include <string>

#include "proxy/wire/proxy_auth.h"
#include "table/base64.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

std::string encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (bytes.size() - i == 1) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (bytes.size() - i == 2) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// A token that can arrive intact in a header value: printable ASCII, not starting or ending with
// white space (the head parser trims those), not empty.
bool travels_in_header(std::string_view token) {
  if (token.empty() || token.front() == ' ' || token.back() == ' ') return false;
  for (const char c : token) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool authorized_with(std::string value, std::string_view token) {
  RequestHead head;
  head.method = "GET";
  head.target = "http://example.com/";
  head.version = "HTTP/1.1";
  head.headers.push_back({"Proxy-Authorization", value});
  return http_proxy_authorized(head, token);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 4096) return 0;
  const std::string_view rest = fuzz::as_text(data + 1, size - 1);
  const std::size_t cut = rest.empty() ? 0 : data[0] % (rest.size() + 1);
  const std::string a(rest.substr(0, cut));
  const std::string b(rest.substr(cut));

  const std::string encoded = encode(a);
  const auto decoded = base64_decode_standard(encoded);
  FUZZ_CHECK(decoded.has_value() && *decoded == a);

  if (const auto from_b = base64_decode_standard(b)) FUZZ_CHECK(encode(*from_b) == b);

  FUZZ_CHECK(token_matches(a, b) == (a == b));
  FUZZ_CHECK(token_matches(b, a) == (a == b));
  FUZZ_CHECK(token_matches(a, a));

  if (travels_in_header(a)) {
    FUZZ_CHECK(authorized_with("Bearer " + a, a));
    FUZZ_CHECK(authorized_with("bAsIc " + encode("user:" + a), a));
    FUZZ_CHECK(authorized_with("Basic " + encode(":" + a), a));
    if (travels_in_header(b)) {
      FUZZ_CHECK(authorized_with("Bearer " + b, a) == (a == b));
      FUZZ_CHECK(authorized_with("Basic " + encode("u:" + b), a) == (a == b));
    }
  }
  // Whatever the header says, no token is never authorized by a different one.
  if (!b.empty() && authorized_with(b, a)) {
    FUZZ_CHECK(!a.empty());
  }
  return 0;
}
