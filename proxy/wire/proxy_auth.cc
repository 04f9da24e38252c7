// SPDX-License-Identifier: Apache-2.0
// The session token (SPEC §11).
#include "proxy/wire/proxy_auth.h"

#include "table/base64.h"

#include <cstdint>

namespace boxproxy {

bool token_matches(std::string_view token, std::string_view offered) noexcept {
  // Every byte of `offered` is compared, against the token's byte at the same place (or, past its
  // end, a byte that still costs the same), and the differences are OR-ed together: no early exit
  // on the first differing byte, nor on a length difference, so the time depends only on how long
  // the offer is, which the client knows anyway.
  std::size_t diff = token.size() ^ offered.size();
  const std::size_t n = token.size();
  for (std::size_t i = 0; i < offered.size(); ++i) {
    const auto t = n == 0 ? std::uint8_t{0} : static_cast<std::uint8_t>(token[i % n]);
    diff |= static_cast<std::uint8_t>(t ^ static_cast<std::uint8_t>(offered[i]));
  }
  // Read through a volatile so the compiler cannot turn the loop back into an early-exit compare.
  volatile std::size_t result = diff;
  return result == 0;
}


bool http_proxy_authorized(const RequestHead& head, std::string_view token) {
  const HeaderField* found = nullptr;
  for (const auto& field : head.headers) {
    if (!iequals(field.name, "Proxy-Authorization")) continue;
    if (found != nullptr) return false;  // two credentials: which one counts is anyone's guess
    found = &field;
  }
  if (found == nullptr) return false;
  const std::string_view value = found->value;
  const auto space = value.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view scheme = value.substr(0, space);
  std::string_view credentials = value.substr(space + 1);
  while (!credentials.empty() && credentials.front() == ' ') credentials.remove_prefix(1);
  if (iequals(scheme, "Bearer")) return token_matches(token, credentials);
  if (iequals(scheme, "Basic")) {
    const auto decoded = base64_decode_standard(credentials);  // RFC 7617: standard alphabet, padded
    if (!decoded) return false;
    // RFC 7617: the user id cannot hold ':', so the password is everything after the first one.
    const auto colon = decoded->find(':');
    if (colon == std::string::npos) return false;
    return token_matches(token, std::string_view(*decoded).substr(colon + 1));
  }
  return false;
}

}  // namespace boxproxy
