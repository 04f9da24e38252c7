// SPDX-License-Identifier: Apache-2.0
// `--secret NAME=FILE` (socketd/secret_files.h).
#include "socketd/secret_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "socketd/option_table.h"
#include "table/inspect_endpoint.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "serve";

// One line end more than a value may hold, and one byte past that: a longer file shows as too
// long without being read whole.
constexpr std::size_t kMostRead = kMaxSecretValueBytes + 3;

}  // namespace

SecretOrError read_secret_file(const SecretFile& file) {
  SecretOrError out;
  // From the start, by the descriptor opened at start (lseek and read: serve's confinement allows
  // both on a descriptor it holds, and no open).
  if (::lseek(file.fd.get(), 0, SEEK_SET) == -1) {
    out.error = fmt::format("cannot be read: {}", std::strerror(errno));
    return out;
  }
  std::string contents;
  contents.reserve(kMostRead);  // never grown: no copy of the value is freed unscrubbed
  contents.resize(kMostRead);
  std::size_t got = 0;
  while (got < kMostRead) {
    const ssize_t n = ::read(file.fd.get(), contents.data() + got, kMostRead - got);
    if (n == 0) break;
    if (n == -1 && errno == EINTR) continue;
    if (n == -1) {
      out.error = fmt::format("cannot be read: {}", std::strerror(errno));
      scrub(contents);
      return out;
    }
    got += static_cast<std::size_t>(n);
  }
  contents.resize(got);
  if (got == kMostRead) {
    scrub(contents);
    out.error = fmt::format("is longer than {} bytes (one line end aside)", kMaxSecretValueBytes);
    return out;
  }
  return secret_from_file_contents(contents);
}

SecretFile open_secret_file(std::string_view label, const std::string& given, const std::vector<SecretFile>& taken) {
  const std::size_t equals = given.find('=');
  if (equals == std::string::npos) fail_value(kCommand, label, given, "is not NAME=FILE");
  SecretFile file{given.substr(0, equals), given.substr(equals + 1), UniqueFd()};
  if (auto error = check_secret_name(file.name)) fail_value(kCommand, label, given, fmt::format("NAME {}", *error));
  for (const SecretFile& earlier : taken) {
    if (earlier.name == file.name) fail_value(kCommand, label, given, "names a secret given already (each once)");
  }
  if (taken.size() >= kMaxSecrets) {
    fail_value(kCommand, label, given, fmt::format("is one secret more than the {} a session holds", kMaxSecrets));
  }
  if (file.path.empty() || file.path.find('\0') != std::string::npos) {
    fail_value(kCommand, label, given, "does not name a FILE");
  }
  // O_NONBLOCK: a FIFO would hold the start until someone writes it; it is refused below anyway.
  file.fd = UniqueFd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!file.fd.valid()) fail_value(kCommand, label, given, fmt::format("cannot be opened: {}", std::strerror(errno)));
  struct stat st{};
  // A regular file only: SIGHUP reads it again from its start, which a pipe or a device cannot do.
  if (::fstat(file.fd.get(), &st) == -1 || !S_ISREG(st.st_mode)) {
    fail_value(kCommand, label, given, "is not a regular file");
  }
  SecretOrError read = read_secret_file(file);
  if (!read.value) fail_value(kCommand, label, given, fmt::format("FILE {}", read.error));
  return file;  // the value itself goes (scrubbed) with `read`: start_inspection reads it again
}

}  // namespace boxproxy
