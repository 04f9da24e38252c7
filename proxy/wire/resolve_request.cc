// SPDX-License-Identifier: Apache-2.0
// A SOCKS5 RESOLVE's own choices (proxy/wire/resolve_request.h).
#include "proxy/wire/resolve_request.h"

namespace boxproxy {

std::uint16_t resolve_judged_port(const std::optional<HostList>& list, const Target& target) {
  if (!list || !target.is_name()) return target.port;
  if (list->match(target.host, target.port) != HostList::Match::port_not_open) return target.port;
  if (list->match(target.host, 80) == HostList::Match::listed) return 80;
  for (const HostEntry& entry : list->entries()) {
    if (entry.port && list->match(target.host, *entry.port) == HostList::Match::listed) return *entry.port;
  }
  return target.port;
}

const IpAddress* resolve_answer(std::span<const IpAddress> answers) noexcept {
  for (const IpAddress& answer : answers) {
    if (answer.is_v4()) return &answer;
  }
  return answers.empty() ? nullptr : &answers.front();
}

}  // namespace boxproxy
