// SPDX-License-Identifier: Apache-2.0
// The endpoints named for request inspection (SPEC §18), and which one a connection's decided
// host and port reach.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "table/inspect_endpoint.h"

namespace boxproxy {

class InspectTable {
 public:
  // Adds `endpoint` (its host's port set, as parse_inspect_host sets it). False, and nothing
  // added, when an endpoint for the same host entry is there already: two rule sets for one host
  // would leave which one decides to the order they came in (SPEC §18: a usage error).
  [[nodiscard]] bool add(InspectEndpoint endpoint);

  // The endpoint whose host entry is `entry` (name, wildcard and port alike), or nullptr.
  [[nodiscard]] const InspectEndpoint* same_host(const HostEntry& entry) const noexcept;

  // The endpoint a connection to `name` (a parsed name, never an IP literal; any case, a
  // trailing dot or not) on `port` reaches, or nullptr: an exact entry first, else the wildcard
  // with the longest name below which `name` lies ("*.api.example.com" before "*.example.com"),
  // so the most particular rules an operator wrote are the ones that apply.
  [[nodiscard]] const InspectEndpoint* find(std::string_view name, std::uint16_t port) const;

  [[nodiscard]] const std::vector<InspectEndpoint>& endpoints() const noexcept { return endpoints_; }
  [[nodiscard]] bool empty() const noexcept { return endpoints_.empty(); }

 private:
  std::vector<InspectEndpoint> endpoints_;
};

}  // namespace boxproxy
