// SPDX-License-Identifier: Apache-2.0
// The checks of serve's option values that are more than a range (socketd/serve_options.cc's
// rows call them): paths, the host list and its file, CIDRs, fixed answers, name servers, the
// token file, printable text. Each throws UsageError under serve's name, naming the option (or
// the config key, or the file and its line) and the value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "socketd/option_table.h"
#include "table/cidr.h"
#include "table/host_list.h"
#include "table/inspect_table.h"
#include "table/policy.h"

namespace boxproxy {

// A path option's value: neither empty nor holding a NUL.
[[nodiscard]] std::string check_path(const RawValue& raw);

// A value of printable ASCII only (0x20 to 0x7e): --allow-hint, --label.
[[nodiscard]] const std::string& printable_ascii(const RawValue& raw);

// Every entry of --allow's values (`label` names them), added to `list`.
void add_allow_items(HostList& list, const std::string& label, const std::vector<std::string>& values);

// The --allow-file at `path`, one entry a line, added to `list`; unreadable or a bad entry is an
// error naming the file (and the line and entry).
void add_allow_file(HostList& list, const std::string& label, const std::string& path);

// The host list from --allow and --allow-file (either may be null); nullopt when neither is.
[[nodiscard]] std::optional<HostList> build_host_list(const RawValue* allow, const RawValue* allow_file);

// Every CIDR of a --permit or --deny, added to `ranges`.
void add_ranges(const RawValue& raw, std::vector<Cidr>& ranges);

// Every --resolve NAME=ADDR[,ADDR]... added to `policy`'s fixed answers (names lower case, without
// a trailing dot); a name given twice gets the answers of both, each once.
void add_fixed_answers(const RawValue& raw, Policy& policy);

// Every --nameserver ADDR[:PORT] (an IPv4 address, or [IPv6]:PORT), added to `nameservers`.
void add_nameservers(const RawValue& raw, std::vector<std::string>& nameservers);

// The inspected endpoints (SPEC §18) of the config's "inspect" (`config`) and the command line's
// --inspect (`command_line`), either may be null, merged into `table`; a host named twice is an
// error naming both places.
void read_inspect(const RawValue* config, const RawValue* command_line, InspectTable& table);

// The token in the file at `path`, by --auth-token-file's rules (serve_options.h,
// read_auth_token_file); `label` names the option.
[[nodiscard]] std::string read_token(const std::string& label, const std::string& path);

}  // namespace boxproxy
