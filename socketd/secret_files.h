// SPDX-License-Identifier: Apache-2.0
// `--secret NAME=FILE` (SPEC §19): each file opened and read at start, before serve confines
// itself, and its descriptor kept, so that SIGHUP reads it again through the same descriptor.
//
// Why the descriptor and not the path: after start the path may name another file (anyone who
// may write the directory can rename a file of theirs over it), and serve must not be led to take
// a value from a file the operator never named. Rewriting the file in place (its inode) is how a
// value is changed; a new file renamed over the path is not followed (the manual says so).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proxy/unique_fd.h"
#include "table/secret_value.h"

namespace boxproxy {

struct SecretFile {
  std::string name;  // a checked secret name
  std::string path;  // as given, for messages
  UniqueFd fd;       // open for reading, close-on-exec
};

// Opens and reads `--secret NAME=FILE` (`given`, under `label`), checking the name (not one of
// `taken`), the file (a regular file) and its value (check_secret_value); the value read is
// scrubbed, not kept. Throws UsageError naming the option and the value given, never the
// file's contents.
[[nodiscard]] SecretFile open_secret_file(std::string_view label, const std::string& given,
                                          const std::vector<SecretFile>& taken);

// The value of `file` read again from its start (SIGHUP, and the start's own sending): the value,
// or why not (never quoting the contents).
[[nodiscard]] SecretOrError read_secret_file(const SecretFile& file);

}  // namespace boxproxy
