// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/request_context.h"

namespace boxproxy {

std::string origin_host_field(const DecidedOrigin& origin) {
  const Target& target = origin.target;
  const bool bracket = target.address && !target.address->is_v4();
  std::string out;
  if (bracket) out += '[';
  out += target.host;
  if (bracket) out += ']';
  if (target.port != origin.default_port) {
    out += ':';
    out += std::to_string(target.port);
  }
  return out;
}

std::string_view asked_text(RequestAsked asked) noexcept {
  switch (asked) {
    case RequestAsked::once: return "once";
    case RequestAsked::always: return "always";
    case RequestAsked::deny: return "deny";
    case RequestAsked::timeout: return "timeout";
    case RequestAsked::none: return "none";
  }
  return "none";
}

std::optional<RequestAsked> parse_asked(std::string_view text) noexcept {
  for (const RequestAsked asked : {RequestAsked::once, RequestAsked::always, RequestAsked::deny, RequestAsked::timeout,
                                   RequestAsked::none}) {
    if (asked_text(asked) == text) return asked;
  }
  return std::nullopt;
}

}  // namespace boxproxy
