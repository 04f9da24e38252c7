// SPDX-License-Identifier: Apache-2.0
// The "inspect" array (SPEC §18) read into endpoints, and endpoints written back as that array:
// the config file's key, --check-config's output, the start and endpoints messages serve sends
// its inspector, and the control channel's {"op":"inspect"} (its "set" and "add", and its reply).
// One reader for all of them, so that what the config takes, the control channel takes. Every key
// and value is checked here or by table/inspect_endpoint.h; an error names the array item, the key
// and the value.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "table/inspect_endpoint.h"

namespace boxproxy {

// `value` is a JSON array of endpoint objects
//   {"host": ENTRY, "name": N, "access": "read-only"|"read-write", "rules": [RULE...],
//    "deny": [RULE...], "mode": "enforce"|"report", "inject": {HEADER: TEMPLATE}, "secrets": [NAME],
//    "case": "sensitive"|"insensitive", "get-bodies": BOOL, "hint": BOOL}
// with RULE {"method": M | [M, ...], "path": GLOB, "name": N}; "host" and each rule's "method" and "path" are
// required, every other key optional, and no other key is taken. A host named twice is not
// checked here (the caller's table refuses it, naming both places).
//
// The endpoints, or the first error as "LABEL[0].rules[1].path: "VALUE" WHY" (`label` names the
// array: `--config "c.json": key "inspect"`, or `set`), every value in it quoted
// (table/message_text.h). No exception leaves it but std::bad_alloc: the control channel calls it
// from the event loop.
[[nodiscard]] std::variant<std::vector<InspectEndpoint>, std::string> read_inspect_array(std::string_view label,
                                                                                         const nlohmann::json& value);

// An endpoint as read_inspect_array reads it back to the same endpoint: the keys in the order
// above, each given only when set ("mode" always; "case" when insensitive, "get-bodies" and "hint"
// when true), the host entry canonical with its port, methods upper-case (one as a string, more as a
// list), globs as given.
[[nodiscard]] nlohmann::ordered_json inspect_object(const InspectEndpoint& endpoint);

// Every endpoint of `endpoints` as inspect_object writes it, in order: the array itself.
[[nodiscard]] nlohmann::ordered_json inspect_array(const std::vector<InspectEndpoint>& endpoints);

}  // namespace boxproxy
