// SPDX-License-Identifier: Apache-2.0
// The session token (SPEC §11): checking what a client offers against it, in constant time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proxy/wire/http_head.h"

namespace boxproxy {

// True when `offered` equals `token`. Takes the same time whatever the contents, so a client
// cannot learn the token a byte at a time by timing refusals.
[[nodiscard]] bool token_matches(std::string_view token, std::string_view offered) noexcept;

// True when the head carries Proxy-Authorization "Bearer <token>" or "Basic <base64 of
// any-user:token>" (scheme compared without regard to case) with the right token.
[[nodiscard]] bool http_proxy_authorized(const RequestHead& head, std::string_view token);


}  // namespace boxproxy
