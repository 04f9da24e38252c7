// SPDX-License-Identifier: Apache-2.0
// The session socket's lifecycle (SPEC §3).
//
// What this file guarantees, and the step that guarantees it:
//   - the socket is never reachable at PATH with a mode wider than 0600: it is bound at a private
//     temporary name, made 0600, and only then given PATH by link(2);
//   - it never replaces a socket that another start put at PATH: link(2) fails with EEXIST where
//     rename(2) would silently replace;
//   - something that is not a socket at PATH (a file, a symlink, a directory) is never touched;
//   - a live proxy's socket is never taken over: it answers the connect probe;
//   - on shutdown PATH is removed only while it still names this socket (same device and inode).
#include "socketd/socket_path.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "proxy/unique_fd.h"

namespace boxproxy {
namespace {

constexpr ExitCode kRuntimeFailure = ExitCode::failure;
constexpr ExitCode kPathTaken = ExitCode::path_taken;

[[noreturn]] void fail(ExitCode exit_code, const std::string& message) { throw StartupError{exit_code, message}; }

std::string errno_text(int error) { return std::strerror(error); }

// The largest path a sockaddr_un holds with its terminating NUL.
constexpr std::size_t kMaxSocketPath = sizeof(sockaddr_un{}.sun_path) - 1;

sockaddr_un make_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());  // size checked by the caller
  return address;
}

// Eight random bytes in hex: the temporary name must not be guessable, so nobody can place
// something there first or race us to it.
std::string random_suffix() {
  unsigned char bytes[8];
  std::size_t have = 0;
  while (have < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + have, sizeof bytes - have, 0);
    if (n == -1) {
      if (errno == EINTR) continue;
      // Without randomness the name is merely predictable; link()'s EEXIST and the checks
      // below still keep us from using anything we did not create. Fill from time and pid.
      const auto fallback = static_cast<unsigned long long>(::getpid()) * 0x9E3779B97F4A7C15ULL ^
                            static_cast<unsigned long long>(::time(nullptr));
      std::memcpy(bytes, &fallback, sizeof bytes);
      break;
    }
    have += static_cast<std::size_t>(n);
  }
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

// Removes the temporary name on scope exit unless dismissed, so a failed start leaves nothing.
struct TempNameGuard {
  std::string path;
  bool armed = false;
  ~TempNameGuard() {
    if (armed) ::unlink(path.c_str());
  }
};

// Something is at `path` (lstat said so in `st`). Returns normally only when it was a stale socket
// that has now been removed; otherwise throws.
void clear_existing(const std::string& path, const struct stat& st) {
  // Not a socket (a regular file, a symlink, a directory, ...): it is someone's data, or a
  // symlink planted to make us unlink or connect elsewhere. Never touched.
  if (!S_ISSOCK(st.st_mode)) fail(kPathTaken, fmt::format("{}: exists and is not a socket", path));

  // A socket: probe it. A live proxy answers, and we must not take its path from it.
  // Non-blocking, so a listener with a full backlog cannot make the probe hang.
  const UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!probe.valid()) fail(kRuntimeFailure, fmt::format("{}: cannot make a socket to probe it: {}", path, errno_text(errno)));
  const sockaddr_un address = make_address(path);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != -1) {
    fail(kPathTaken, fmt::format("{}: in use (a live proxy answers there)", path));
  }
  const int error = errno;
  // EAGAIN on a Unix stream socket means a listener whose backlog is full: alive, so in use.
  if (error == EAGAIN) fail(kPathTaken, fmt::format("{}: in use (a listener with a full backlog is there)", path));
  if (error != ECONNREFUSED) {
    fail(kRuntimeFailure, fmt::format("{}: cannot probe the socket already there: {}; left in place", path, errno_text(error)));
  }

  // ECONNREFUSED: nobody listens, a stale socket from a start that died. Before unlinking, make
  // sure the path still names the very socket we probed: another start may have replaced it in
  // the meantime, and its socket must survive.
  struct stat again{};
  if (::lstat(path.c_str(), &again) == -1) {
    if (errno == ENOENT) return;  // someone else removed it: nothing to do
    fail(kRuntimeFailure, fmt::format("{}: cannot look at the path again: {}", path, errno_text(errno)));
  }
  if (again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
    fail(kPathTaken, fmt::format("{}: in use (another socket appeared there while starting)", path));
  }
  if (::unlink(path.c_str()) == -1 && errno != ENOENT) {
    fail(kRuntimeFailure, fmt::format("{}: cannot remove the stale socket: {}", path, errno_text(errno)));
  }
}

// What PATH itself must be, before anything is looked at.
void check_path_text(const std::string& path) {
  if (path.empty()) fail(kRuntimeFailure, "the socket path is empty");
  if (path.find('\0') != std::string::npos) fail(kRuntimeFailure, "the socket path holds a NUL");
  if (path.back() == '/') fail(kRuntimeFailure, fmt::format("{}: names a directory, not a socket", path));
  // sun_path is fixed-size: a longer path would be cut (and bind somewhere else), so refuse it.
  if (path.size() > kMaxSocketPath) {
    fail(kRuntimeFailure, fmt::format("{}: the path is {} bytes, longer than the {} a Unix socket's address holds",
                                      path, path.size(), kMaxSocketPath));
  }
}

// The directory holding PATH must exist: it is the session's runtime directory, made by the
// supervisor. Creating it here could put the socket on some other disk or in a shared place.
void check_directory(const std::string& path, const std::string& directory) {
  struct stat dir_st{};
  if (::stat(directory.c_str(), &dir_st) == -1) {
    fail(kRuntimeFailure, fmt::format("{}: the directory {} cannot be used: {}", path, directory, errno_text(errno)));
  }
  if (!S_ISDIR(dir_st.st_mode)) fail(kRuntimeFailure, fmt::format("{}: {} is not a directory", path, directory));
}

// The temporary name: in the same directory (link(2) cannot cross filesystems), hidden, with our
// pid and a random part. If ".<base>.<pid>.<random>.tmp" would not fit in sun_path, a shorter
// form without the base name is used.
std::string temporary_name(const std::string& path, const std::string& prefix, const std::string& base) {
  const std::string pid = std::to_string(::getpid());
  const std::string random = random_suffix();
  std::string temporary = fmt::format("{}.{}.{}.{}.tmp", prefix, base, pid, random);
  if (temporary.size() > kMaxSocketPath) temporary = fmt::format("{}.{}.tmp", prefix, random);
  if (temporary.size() > kMaxSocketPath) {
    fail(kRuntimeFailure, fmt::format("{}: the temporary name {} would be {} bytes, longer than the {} a Unix "
                                      "socket's address holds; use a shorter directory",
                                      path, temporary, temporary.size(), kMaxSocketPath));
  }
  return temporary;
}

// Binds `listener` at `temporary`, mode 0600 from the instant the name exists.
void bind_private(int listener, const std::string& path, const std::string& temporary) {
  // bind() creates the file with 0777 & ~umask, so the umask of 0177 around it makes the
  // temporary name exactly 0600 from the instant it exists (start-up is single-threaded, so
  // changing the process's umask briefly is safe). The mode is set at creation and never by name
  // afterwards: a chmod by path would follow a symlink swapped in at the temporary name between
  // bind and chmod, and change the mode of whatever file it points at (SPEC §3).
  const sockaddr_un temporary_address = make_address(temporary);
  const mode_t old_umask = ::umask(0177);
  const int bound = ::bind(listener, reinterpret_cast<const sockaddr*>(&temporary_address), sizeof temporary_address);
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound == -1) {
    fail(kRuntimeFailure, fmt::format("{}: cannot bind the temporary name {}: {}", path, temporary, errno_text(bind_errno)));
  }
}

}  // namespace

SessionSocket SessionSocket::create(const std::string& path, int backlog) {
  check_path_text(path);
  const auto slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string prefix = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  check_directory(path, directory);

  // Something already at the path: decide per §3 before creating anything.
  struct stat existing{};
  if (::lstat(path.c_str(), &existing) != -1) {
    clear_existing(path, existing);
  } else if (errno != ENOENT) {
    fail(kRuntimeFailure, fmt::format("{}: cannot look at the path: {}", path, errno_text(errno)));
  }
  const std::string temporary = temporary_name(path, prefix, base);

  // Non-blocking for the event loop; close-on-exec so no child ever inherits the listener.
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.valid()) fail(kRuntimeFailure, fmt::format("{}: cannot make a socket: {}", path, errno_text(errno)));
  bind_private(listener.get(), path, temporary);
  TempNameGuard temporary_guard{temporary, true};

  // Remember which file we made, to check that link() gave PATH exactly this one. lstat never
  // follows a link: anything but our 0600 socket at the temporary name stops the start.
  struct stat made{};
  if (::lstat(temporary.c_str(), &made) == -1) {
    fail(kRuntimeFailure, fmt::format("{}: cannot look at the temporary name {}: {}", path, temporary, errno_text(errno)));
  }
  if (!S_ISSOCK(made.st_mode) || (made.st_mode & 07777) != 0600 || made.st_uid != ::geteuid()) {
    fail(kRuntimeFailure, fmt::format("{}: the temporary name {} is not the 0600 socket we made", path, temporary));
  }

  // Listen before linking: the moment the socket has its path, clients (and another start's
  // probe) find a live listener, never a refused connect that would look stale.
  if (::listen(listener.get(), backlog) == -1) {
    fail(kRuntimeFailure, fmt::format("{}: cannot listen: {}", path, errno_text(errno)));
  }

  // link(), never rename(): link fails with EEXIST when something is at PATH, so a socket that
  // another start put there since our probe is never replaced.
  if (::link(temporary.c_str(), path.c_str()) == -1) {
    const int error = errno;
    if (error == EEXIST) fail(kPathTaken, fmt::format("{}: in use (another socket was put there while starting)", path));
    fail(kRuntimeFailure, fmt::format("{}: cannot link the socket to its path: {}", path, errno_text(error)));
  }

  // The temporary name has done its job; the socket now lives at PATH only. Failing to remove it
  // leaves a harmless, unconnectable-by-others 0600 name behind; it is not worth failing over.
  temporary_guard.armed = false;
  ::unlink(temporary.c_str());

  // Check that PATH is the socket we made (same device and inode) and remember it: shutdown
  // removes PATH only while it still names this socket.
  struct stat linked{};
  if (::lstat(path.c_str(), &linked) == -1 || linked.st_dev != made.st_dev || linked.st_ino != made.st_ino) {
    fail(kRuntimeFailure, fmt::format("{}: the path no longer names our socket right after linking it", path));
  }
  SessionSocket socket(listener.release(), path, linked.st_dev, linked.st_ino);
  return socket;
}

SessionSocket::SessionSocket(int fd, std::string path, dev_t dev, ino_t ino) noexcept
    : fd_(fd), path_(std::move(path)), dev_(dev), ino_(ino), linked_(true) {}

SessionSocket::SessionSocket(SessionSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      dev_(other.dev_),
      ino_(other.ino_),
      linked_(std::exchange(other.linked_, false)) {}

SessionSocket::~SessionSocket() {
  remove_path();
  if (fd_ != -1) ::close(fd_);
}

int SessionSocket::release_fd() noexcept { return std::exchange(fd_, -1); }

void SessionSocket::remove_path() noexcept {
  if (!linked_) return;
  linked_ = false;
  // Only while PATH still names our socket: if another start replaced it (after ours was
  // removed by someone), that socket is theirs and must survive our shutdown.
  struct stat st{};
  if (::lstat(path_.c_str(), &st) == -1) return;
  if (!S_ISSOCK(st.st_mode) || st.st_dev != dev_ || st.st_ino != ino_) return;
  ::unlink(path_.c_str());
}

}  // namespace boxproxy
