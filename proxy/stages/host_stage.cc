// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/host_stage.h"

#include <variant>

#include "table/ascii.h"

namespace boxproxy {
namespace {

bool same_host(const Target& a, const Target& b) {
  if (a.address && b.address) return *a.address == *b.address;
  if (a.address || b.address) return false;
  return iequals(a.host, b.host);  // names compare without regard to case (RFC 9110 §4.2.3)
}

bool host_names_origin(std::string_view value, const DecidedOrigin& origin) {
  if (value.find('@') != std::string_view::npos) return false;  // userinfo: read otherwise elsewhere
  TargetResult named = parse_authority_default_port(value, origin.default_port);
  const Target* target = std::get_if<Target>(&named);
  return target != nullptr && same_host(*target, origin.target) && target->port == origin.target.port;
}

}  // namespace

StageVerdict HostStage::on_request(RequestContext& context) const {
  // The framing stage refused two Host headers: the first is the only one.
  for (const auto& field : context.head.headers) {
    if (!iequals(field.name, "Host")) continue;
    if (host_names_origin(field.value, context.origin)) return StageVerdict::proceed();
    break;
  }
  return StageVerdict::refuse(Reason::host_mismatch);
}

}  // namespace boxproxy
