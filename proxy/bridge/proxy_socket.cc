// SPDX-License-Identifier: Apache-2.0
#include "proxy/bridge/proxy_socket.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace boxproxy {

std::string ProxySocket::pin(const std::string& path) {
  // O_PATH: no read or write right is needed or taken, only the inode; Landlock does not govern
  // it (so SIGHUP can re-pin under confinement, and gains nothing connect(2) by path would not).
  UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) return std::strerror(errno);
  struct stat held {};
  if (::fstat(fd.get(), &held) == -1) return std::strerror(errno);
  if (!S_ISSOCK(held.st_mode)) return "exists and is not a socket";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string magic = fmt::format("/proc/self/fd/{}", fd.get());
  std::memcpy(address.sun_path, magic.data(), magic.size());  // under 30 bytes: always fits
  // The magic link must lead to this very inode, or the pin would be a name after all (no /proc,
  // or something else mounted there).
  struct stat reached {};
  if (::stat(address.sun_path, &reached) == -1 || reached.st_dev != held.st_dev || reached.st_ino != held.st_ino) {
    return fmt::format("cannot be held: {} does not lead to it (the bridge needs /proc mounted to reach the proxy "
                       "by its socket and never by its name)",
                       magic);
  }
  path_ = path;
  pinned_ = std::move(fd);
  address_ = address;
  address_length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + magic.size() + 1);
  return {};
}

int ProxySocket::connect(int fd) const noexcept {
  if (!pinned_.valid()) return ENOENT;
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address_), address_length_) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

}  // namespace boxproxy
