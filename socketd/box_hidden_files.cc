// SPDX-License-Identifier: Apache-2.0
// Where the files a `run` box must not read really are (socketd/box_hidden_files.h).
#include "socketd/box_hidden_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include <fmt/format.h>

#include "proxy/unique_fd.h"
#include "socketd/option_table.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "run";

// The kernel's name for an unlinked file: its last path, then this.
constexpr std::string_view kDeleted = " (deleted)";

// The kernel's name for the file behind `fd` (readlink of /proc/self/fd/FD): a path from the root,
// or "pipe:[N]", "socket:[N]", "anon_inode:..." for what has none. nullopt when unreadable.
std::optional<std::string> kernel_name(int fd) {
  const std::string link = fmt::format("/proc/self/fd/{}", fd);
  std::string name(PATH_MAX, '\0');
  const ssize_t n = ::readlink(link.c_str(), name.data(), name.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= name.size()) return std::nullopt;
  name.resize(static_cast<std::size_t>(n));
  return name;
}

}  // namespace

std::optional<std::string> path_to_hide(std::string_view option, const std::string& given) {
  // O_PATH follows every link (the /proc magic ones included) to the file the proxy will open, and
  // opens nothing for reading (a FIFO is not disturbed).
  const UniqueFd fd(::open(given.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;  // the proxy cannot open it either, and says why
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1 || S_ISDIR(st.st_mode)) return std::nullopt;
  const auto name = kernel_name(fd.get());
  if (!name) fail_value(kCommand, option, given, "cannot be looked up in /proc/self/fd, so the box cannot be kept from it");
  // No name on the file system: a pipe or a socket, or a file unlinked since. Its descriptor is the
  // only way to it, and none of run's reaches the box.
  if (!name->starts_with('/') || (st.st_nlink == 0 && name->ends_with(kDeleted))) return std::nullopt;
  // What the kernel names must be that very file here: else the mask would land on another file
  // (one of another mount namespace or root, or one renamed over the name since) and leave this one.
  struct stat there {};
  if (::stat(name->c_str(), &there) == -1 || there.st_dev != st.st_dev || there.st_ino != st.st_ino) {
    fail_value(kCommand, option, given,
               fmt::format("is the file the kernel names {}, which is not that file here: the box cannot be kept "
                           "from it",
                           *name));
  }
  // A mask covers one name: by another (a hard link) the box would read the file all the same.
  if (!S_ISREG(st.st_mode) || st.st_nlink == 1) return name;
  fail_value(kCommand, option, given,
             fmt::format("has {} names (hard links), and the box could read it by any but {}: give a file with one "
                         "name",
                         st.st_nlink, *name));
}

}  // namespace boxproxy
