// SPDX-License-Identifier: Apache-2.0
// serve's --config file (SPEC §2): a JSON object of serve's options by their long names without
// "--", read into the same raw values as the command line's (socketd/option_table.h), each
// labelled with the file and the key for its error messages. And the capped whole-file read that
// every file serve reads (--config, --allow-file, --auth-token-file) goes through.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "socketd/option_table.h"

namespace boxproxy {

// Reads the config file at `path` against `table` (serve's): every key must name a row that may
// be a config key, its JSON type fit the row's kind (a string, an array of strings, a whole
// number, any number for seconds, a boolean for a flag, an array of endpoint objects for
// "inspect", read by proxy/inspect_array.h); no key may be given twice, in any object. Throws
// UsageError under table.command()'s name naming the file, and the key or where the JSON breaks.
[[nodiscard]] RawOptions read_config_file(const std::string& path, const OptionTable& table);

// Reads a whole file (following symlinks, as any path argument would), at most `cap` bytes.
// nullopt with `error` set when it cannot be opened or read or is larger than `cap`.
[[nodiscard]] std::optional<std::string> read_file_capped(const std::string& path, std::size_t cap, std::string& error);

}  // namespace boxproxy
