// SPDX-License-Identifier: Apache-2.0
// The config file's "inspect" array (SPEC §18) read into endpoints, and endpoints written back as
// that array for --check-config. Every key and value is checked here or by table/inspect_endpoint.h;
// an error names the file, the array item, the key and the value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "table/inspect_endpoint.h"

namespace boxproxy {

// `value` is the "inspect" key's: a JSON array of endpoint objects
//   {"host": ENTRY, "name": N, "access": "read-only"|"read-write", "rules": [RULE...],
//    "deny": [RULE...], "mode": "enforce"|"report", "inject": {HEADER: TEMPLATE}, "secrets": [NAME]}
// with RULE {"method": M, "path": GLOB, "name": N}; "host" and each rule's "method" and "path" are
// required, every other key optional, and no other key is taken. `label` names the key
// ("--config \"c.json\": key \"inspect\""). Throws UsageError under `command`'s name.
[[nodiscard]] std::vector<InspectEndpoint> read_inspect_array(std::string_view command, const std::string& label,
                                                              const nlohmann::json& value);

// An endpoint as read_inspect_array reads it back to the same endpoint: the keys in the order
// above, each given only when set ("mode" always), the host entry canonical with its port, methods
// upper-case, globs as given.
[[nodiscard]] nlohmann::ordered_json inspect_object(const InspectEndpoint& endpoint);

}  // namespace boxproxy
