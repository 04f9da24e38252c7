// SPDX-License-Identifier: Apache-2.0
// The namespaces of a `boxproxy run` box: see box_namespaces.h for the layout and what it stops.
#include "socketd/box_namespaces.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "proxy/unique_fd.h"

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

// The host's device nodes the box's /dev holds: those every program expects, none that reaches
// hardware. (/dev/tty is the opener's own controlling terminal.)
constexpr const char* kBoxDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

// Knobs under /proc that uid 0 may write with no capability at all, kept read-only: when run is
// root, COMMAND is uid 0 to the kernel, and kernel.core_pattern names a program the host's root
// runs, sysrq-trigger reboots the machine.
constexpr const char* kReadOnlyProc[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};

std::string mount_failure(std::string_view what, std::string_view path) {
  return fmt::format("boxproxy run: cannot {} {} for the box: {}", what, path, std::strerror(errno));
}

// Makes `path` (a directory or a file) a read-only bind of itself; nothing when it is absent.
std::optional<std::string> bind_read_only(const char* path) {
  if (::mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) == -1) {
    if (errno == ENOENT) return std::nullopt;
    return mount_failure("bind", path);
  }
  if (::mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) ==
      -1) {
    return mount_failure("make read-only", path);
  }
  return std::nullopt;
}

// The host's sysfs (and what is mounted under it: cgroups, debugfs) read-only: uid 0 may write
// much of it with no capability (/sys/kernel/uevent_helper names a program the host's root runs).
std::optional<std::string> make_sys_read_only() {
  struct statfs fs {};
  if (::statfs("/sys", &fs) == -1 || fs.f_type != SYSFS_MAGIC) return std::nullopt;  // no sysfs there
  mount_attr attributes{};
  attributes.attr_set = MOUNT_ATTR_RDONLY;
  if (::mount_setattr(AT_FDCWD, "/sys", AT_RECURSIVE, &attributes, sizeof attributes) == -1) {
    return mount_failure("make read-only", "/sys");
  }
  return std::nullopt;
}

// A /dev of the box's own (as bubblewrap's --dev): a tmpfs holding binds of the kBoxDevices, a
// devpts instance of its own, a /dev/shm of its own, and the usual links. The host's /dev would
// give a COMMAND that is uid 0 (run as root) its disks and the host's terminals, and any
// COMMAND the host's POSIX shared memory of its user.
std::optional<std::string> mount_box_dev() {
  std::vector<std::pair<std::string, UniqueFd>> devices;
  for (const char* name : kBoxDevices) {
    std::string path = fmt::format("/dev/{}", name);
    UniqueFd device(::open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!device.valid()) {
      if (errno == ENOENT) continue;
      return mount_failure("take", path);
    }
    devices.emplace_back(std::move(path), std::move(device));
  }
  constexpr unsigned long kDevFlags = MS_NOSUID | MS_NOEXEC;
  if (::mount("tmpfs", "/dev", "tmpfs", kDevFlags, "mode=0755,size=64k") == -1) return mount_failure("mount", "/dev");
  for (const auto& [path, device] : devices) {
    UniqueFd target(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!target.valid()) return mount_failure("make", path);
    if (::move_mount(device.get(), "", AT_FDCWD, path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) == -1) {
      return mount_failure("bind", path);
    }
  }
  if (::mkdir("/dev/pts", 0755) == -1 || ::mkdir("/dev/shm", 01777) == -1) return mount_failure("make", "/dev/pts");
  // Ptys of the box's own; without devpts (an old kernel) the box has none, and still runs.
  if (::mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") == 0) {
    // Without the link (it cannot fail on a fresh tmpfs) programs opening /dev/ptmx fail, as in
    // a box without devpts; the box still runs, so the result is not acted on.
    [[maybe_unused]] const int linked = ::symlink("pts/ptmx", "/dev/ptmx");
  }
  if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == -1) {
    return mount_failure("mount", "/dev/shm");
  }
  for (const auto& [link, target] : {std::pair{"/dev/fd", "/proc/self/fd"}, std::pair{"/dev/stdin", "/proc/self/fd/0"},
                                     std::pair{"/dev/stdout", "/proc/self/fd/1"},
                                     std::pair{"/dev/stderr", "/proc/self/fd/2"}}) {
    if (::symlink(target, link) == -1) return mount_failure("make", link);
  }
  // Nothing new is made in /dev itself (/dev/shm stays writable: a mount of its own).
  if (::mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_RDONLY | kDevFlags, "mode=0755,size=64k") == -1) {
    return mount_failure("make read-only", "/dev");
  }
  return std::nullopt;
}

// Makes the mount now at `path` read-only (not those below it: they hold other directories),
// setting that and `more` only: the flags the outer user namespace locked (atime, nosuid, ...)
// stay as they are, where a remount would have to repeat each.
std::optional<std::string> set_read_only(const std::string& path, std::uint64_t more = 0) {
  mount_attr attributes{};
  attributes.attr_set = MOUNT_ATTR_RDONLY | more;
  if (::mount_setattr(AT_FDCWD, path.c_str(), 0, &attributes, sizeof attributes) == -1) {
    return mount_failure("make read-only", path);
  }
  return std::nullopt;
}

// `path` without a symbolic link, "." or "..", from the root: a relative name is looked up from the
// working directory, which stays on the mount beneath a bind made over it (so "." would never
// reach the bind). As given when it cannot be resolved (it does not exist: nothing to protect).
std::string resolved(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : path;
}

// The box's /dev and /proc are its own: a proxy's file there (--audit /dev/full, --log-file
// /dev/stderr) is not the one COMMAND would reach, and a bind over it could land on a pipe.
bool in_the_boxs_own_tree(const std::string& path) {
  return path.starts_with("/dev/") || path.starts_with("/proc/") || path == "/dev" || path == "/proc";
}

// Every directory above `path` (resolved), "/" excepted, into `out`.
void add_ancestors(const std::string& path, std::set<std::string>& out) {
  for (auto slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    out.insert(path.substr(0, slash));
  }
}

// Each directory above what is protected, a bind of itself (what is mounted below it kept, as it
// is): a mount point cannot be renamed (EBUSY), so COMMAND cannot move the socket's name by
// renaming a directory above it and making another of the same name. Read-write, as it was.
// Shallow first, so that each deeper bind is made on the mounts just made.
std::optional<std::string> pin_ancestors(const std::set<std::string>& ancestors) {
  std::vector<std::string> ordered(ancestors.begin(), ancestors.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') < std::count(b.begin(), b.end(), '/');
  });
  for (const std::string& directory : ordered) {
    if (::mount(directory.c_str(), directory.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == -1) {
      return mount_failure("bind", directory);
    }
  }
  return std::nullopt;
}

// The directory of the proxy's socket, read-only in the box: COMMAND can neither rename nor
// unlink the socket, nor put a link or a socket of its own at its name for anyone who connects
// by name later (another box given the same --socket, a supervisor); and the directory itself,
// a mount point now, cannot be renamed (EBUSY).
std::optional<std::string> protect_socket_directory(const std::string& directory) {
  if (::mount(directory.c_str(), directory.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == -1) {
    return mount_failure("bind", directory);
  }
  return set_read_only(directory);
}

// A file COMMAND may not read (a --secret's, SPEC §19): /dev/null over it, on a nodev mount, so
// opening it fails (EACCES). A path that is not there holds nothing to hide.
std::optional<std::string> cover_with_dev_null(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == -1) {
    if (errno == ENOENT) return std::nullopt;
    return mount_failure("look at", path);
  }
  if (S_ISDIR(st.st_mode)) return std::nullopt;
  if (::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) == -1) return mount_failure("bind over", path);
  return set_read_only(path, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
}

// One of the proxy's own files: a regular file (a log, the audit, a config, an allow file, a
// token) becomes a read-only bind of itself, which COMMAND may read but not write, truncate,
// rename or unlink (EROFS, EBUSY): no forged decision lines, no wider host list for the next
// SIGHUP. Anything else (a FIFO, a socket such as --control-socket, a device) is covered by
// /dev/null on a nodev mount: a read-only mount would still let COMMAND write into a FIFO (an
// audit's reader) or connect to a socket (the supervisor's channel, where "allow" widens the
// box's own list); covered, open fails EACCES and connect ECONNREFUSED. A file that is not there
// is nothing to protect.
std::optional<std::string> protect_proxy_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == -1) {
    if (errno == ENOENT) return std::nullopt;
    return mount_failure("look at", path);
  }
  if (S_ISDIR(st.st_mode)) return std::nullopt;  // not a file serve could have opened as one
  const char* source = S_ISREG(st.st_mode) ? path.c_str() : "/dev/null";
  if (::mount(source, path.c_str(), nullptr, MS_BIND, nullptr) == -1) return mount_failure("bind over", path);
  return set_read_only(path, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
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

std::optional<std::string> confine_box_mounts() {
  for (const char* path : kReadOnlyProc) {
    if (auto error = bind_read_only(path)) return error;
  }
  if (auto error = make_sys_read_only()) return error;
  return mount_box_dev();
}

std::optional<std::string> protect_proxy_paths(const ProxyPaths& paths) {
  // The working directory COMMAND inherits was entered before these mounts: through it a
  // relative rename("egress.sock", ...) would reach the directory under the read-only bind.
  // Entered again by its name once they are made, it is the one COMMAND sees.
  std::string cwd(PATH_MAX, '\0');
  const bool have_cwd = ::getcwd(cwd.data(), cwd.size()) != nullptr;
  std::string directory = paths.socket_directory.empty() ? "" : resolved(paths.socket_directory);
  if (in_the_boxs_own_tree(directory)) directory.clear();
  const auto outside_the_box = [](const std::vector<std::string>& given) {
    std::vector<std::string> out;
    for (const std::string& file : given) {
      std::string path = resolved(file);
      if (!in_the_boxs_own_tree(file) && !in_the_boxs_own_tree(path)) out.push_back(std::move(path));
    }
    return out;
  };
  const std::vector<std::string> files = outside_the_box(paths.files);
  const std::vector<std::string> hidden = outside_the_box(paths.hidden);
  std::set<std::string> ancestors;
  if (!directory.empty()) add_ancestors(directory, ancestors);
  for (const std::string& file : files) add_ancestors(file, ancestors);
  for (const std::string& file : hidden) add_ancestors(file, ancestors);
  if (auto error = pin_ancestors(ancestors)) return error;
  if (!directory.empty()) {
    if (auto error = protect_socket_directory(directory)) return error;
  }
  for (const std::string& file : files) {
    if (auto error = protect_proxy_file(file)) return error;
  }
  // What the box is kept from reading (a secret's value), after the binds above (a secret's file
  // may also be one of them).
  for (const std::string& file : hidden) {
    if (auto error = cover_with_dev_null(file)) return error;
  }
  if (have_cwd && ::chdir(cwd.c_str()) == -1) return mount_failure("enter again", cwd.c_str());
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
