// SPDX-License-Identifier: Apache-2.0
#include "table/inspect_table.h"

#include "table/ascii.h"

namespace boxproxy {

bool InspectTable::add(InspectEndpoint endpoint) {
  if (same_host(endpoint.host) != nullptr) return false;
  endpoints_.push_back(std::move(endpoint));
  return true;
}

const InspectEndpoint* InspectTable::same_host(const HostEntry& entry) const noexcept {
  for (const InspectEndpoint& endpoint : endpoints_) {
    if (endpoint.host == entry) return &endpoint;
  }
  return nullptr;
}

const InspectEndpoint* InspectTable::find(std::string_view name, std::uint16_t port) const {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  const std::string wanted = ascii_lower(name);
  const InspectEndpoint* best_wildcard = nullptr;
  for (const InspectEndpoint& endpoint : endpoints_) {
    const HostEntry& host = endpoint.host;
    if (host.port != port) continue;
    if (!host.wildcard) {
      if (wanted == host.name) return &endpoint;  // an exact entry beats every wildcard
      continue;
    }
    // As the host list reads "*.example.com": names strictly below it, never example.com itself
    // and never badexample.com.
    const bool below = wanted.size() > host.name.size() + 1 && wanted.ends_with(host.name) &&
                       wanted[wanted.size() - host.name.size() - 1] == '.';
    if (below && (best_wildcard == nullptr || host.name.size() > best_wildcard->host.name.size())) {
      best_wildcard = &endpoint;
    }
  }
  return best_wildcard;
}

}  // namespace boxproxy
