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

}  // namespace boxproxy
