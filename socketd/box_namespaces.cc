// The namespaces of a `boxproxy run` box: see box_namespaces.h for the layout and what it stops.
#include "socketd/box_namespaces.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "proxy/event_owners.h"

namespace boxproxy {
namespace {

// Writes `text` to the file `name` under the directory `dir` in one write (a map file takes
// its whole contents in one write(2) or not at all). An errno value, or 0.
int write_at(int dir, const char* name, std::string_view text) {
  UniqueFd fd(::openat(dir, name, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n == -1) return errno;
  return n == static_cast<ssize_t>(text.size()) ? 0 : EIO;
}

// Maps `outer_uid`/`outer_gid` of the parent user namespace to root in the one this process has
// just made, and nothing else: COMMAND acts on the host's files as the caller, never as another
// user. setgroups is denied first (the kernel requires it before an unprivileged gid_map, and it
// keeps COMMAND from dropping a supplementary group that a file's permissions exclude).
std::optional<std::string> map_to_root(int self_dir, uid_t outer_uid, gid_t outer_gid) {
  int error = write_at(self_dir, "setgroups", "deny");
  if (error == 0) error = write_at(self_dir, "uid_map", fmt::format("0 {} 1\n", outer_uid));
  if (error == 0) error = write_at(self_dir, "gid_map", fmt::format("0 {} 1\n", outer_gid));
  if (error == 0) return std::nullopt;
  return fmt::format("boxproxy run: cannot map user {} to root in the box's user namespace: {}", outer_uid,
                     std::strerror(error));
}

}  // namespace

std::optional<std::string> enter_box_namespaces() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  // A user namespace also for root: without one COMMAND would keep every capability in the
  // host's user namespace, and setns(2) into the host's network (nsenter --net=/proc/1/ns/net)
  // would be one call away.
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1) {
    const int error = errno;
    std::string message = fmt::format(
        "boxproxy run: cannot make the box's user and network namespaces: unshare(CLONE_NEWUSER|CLONE_NEWNET): {}",
        std::strerror(error));
    if (error == EPERM || error == EINVAL || error == ENOSPC || error == EUSERS || error == ENOSYS) {
      message +=
          "\n  The box needs a user namespace of its own, also when run is root, and this system does not let"
          "\n  this process make one. Allow user namespaces: sysctl -w user.max_user_namespaces=15000 (when it is"
          "\n  0), sysctl -w kernel.unprivileged_userns_clone=1 (Debian and older Ubuntu kernels), and on Ubuntu"
          "\n  23.10 or later sysctl -w kernel.apparmor_restrict_unprivileged_userns=0. In a container, the runtime"
          "\n  must allow unshare (its seccomp profile), or run boxproxy serve outside and bind-mount the socket in"
          "\n  (man boxproxy, EXAMPLES). run does not start a weaker box instead.";
    }
    return message;
  }
  UniqueFd self(::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!self.valid()) return fmt::format("boxproxy run: cannot open /proc/self: {}", std::strerror(errno));
  return map_to_root(self.get(), uid, gid);
}

std::optional<std::string> bring_loopback_up() {
  // SIOCSIFFLAGS on any socket of the namespace, as `ip link set lo up` does.
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fmt::format("boxproxy run: cannot bring lo up: socket: {}", std::strerror(errno));
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFFLAGS, &request) == -1) {
    return fmt::format("boxproxy run: cannot bring lo up: SIOCGIFFLAGS: {}", std::strerror(errno));
  }
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(fd.get(), SIOCSIFFLAGS, &request) == -1) {
    return fmt::format("boxproxy run: cannot bring lo up: SIOCSIFFLAGS: {}", std::strerror(errno));
  }
  return std::nullopt;
}

void allow_low_ports() noexcept {
  // /proc/sys/net is the network namespace of the process that opens it: this one's, the box's.
  UniqueFd dir(::open("/proc/sys/net/ipv4", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid()) (void)write_at(dir.get(), "ip_unprivileged_port_start", "0\n");
}

std::optional<std::string> mount_box_proc(std::string* note) {
  if (::unshare(CLONE_NEWNS) == -1) {
    return fmt::format("boxproxy run: cannot make the box's mount namespace: {}", std::strerror(errno));
  }
  // Nothing mounted here reaches the host, and nothing the host mounts later reaches the box.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == -1) {
    return fmt::format("boxproxy run: cannot make the box's mounts private: {}", std::strerror(errno));
  }
  constexpr unsigned long kProcFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (::mount("proc", "/proc", "proc", kProcFlags, nullptr) == 0) return std::nullopt;
  const int error = errno;
  // The host's /proc must not stay visible: through it COMMAND would see the proxy and could
  // open its /proc/PID/mem (same user). An empty /proc is safe, if less useful.
  if (::mount("tmpfs", "/proc", "tmpfs", kProcFlags | MS_RDONLY, "size=4k,mode=0555") == -1) {
    return fmt::format("boxproxy run: cannot mount a /proc for the box ({}), nor an empty one over the host's: {}",
                       std::strerror(error), std::strerror(errno));
  }
  *note = fmt::format(
      "boxproxy run: cannot mount a /proc for the box's processes ({}; the host's /proc has paths masked?): "
      "COMMAND gets an empty /proc",
      std::strerror(error));
  return std::nullopt;
}

std::optional<std::string> enter_inner_user_namespace(int self_dir) {
  // IPC and UTS too: System V IPC objects and POSIX message queues of the caller's user are not
  // COMMAND's to read or change, and a hostname COMMAND sets stays its own.
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) == -1) {
    return fmt::format("boxproxy run: cannot make the box's inner user namespace: {}", std::strerror(errno));
  }
  // Root of the outer namespace (this process) becomes root of the inner one.
  return map_to_root(self_dir, 0, 0);
}

}  // namespace boxproxy
