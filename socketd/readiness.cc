// SPDX-License-Identifier: Apache-2.0
// Telling the supervisor the proxy is ready, and dying with it (SPEC §4).
#include "socketd/readiness.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace boxproxy {
namespace {

// Writes all of `data` to `fd`, riding out EINTR, short writes and a non-blocking descriptor
// (waiting for it to drain). SIGPIPE is blocked meanwhile so a supervisor that closed its end
// turns into an EPIPE error here rather than killing the proxy; a SIGPIPE this raises is
// consumed before the mask is restored.
std::optional<std::string> write_all(int fd, std::string_view data) {
  sigset_t pipe_only;
  sigset_t old_mask;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  sigset_t pending;
  sigemptyset(&pending);
  const bool pipe_was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;

  std::optional<std::string> error;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n == -1) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd waiter{fd, POLLOUT, 0};
        ::poll(&waiter, 1, 1000);
        continue;
      }
      error = std::strerror(errno);
      if (errno == EPIPE && !pipe_was_pending) {
        const timespec zero{0, 0};
        ::sigtimedwait(&pipe_only, nullptr, &zero);
      }
      break;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return error;
}

}  // namespace

void announce_listening(const std::string& socket_path, std::string_view more_fields) {
  // The path is a JSON string: quotes, backslashes and control characters escaped; bytes that
  // are not UTF-8 become U+FFFD rather than making the line invalid JSON.
  const std::string socket = nlohmann::json(socket_path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string line =
      fmt::format("{{\"event\":\"listening\",\"socket\":{}{},\"pid\":{}}}\n", socket, more_fields, ::getpid());
  // One write(2), not stdio: stdout's buffer would be 4 KiB of heap kept by every session for
  // this one line. Unwritten is no error: the socket is listening either way.
  (void)write_all(STDOUT_FILENO, line);
}

void announce_lines(std::string_view lines) {
  if (!lines.empty()) (void)write_all(STDOUT_FILENO, lines);
}

std::optional<std::string> notify_ready_fd(int fd) {
  auto error = write_all(fd, "READY=1\n");
  // Closed either way: the supervisor reads EOF after READY=1, and no later child inherits it.
  if (::close(fd) == -1 && !error && errno != EINTR) error = std::strerror(errno);
  if (error) return fmt::format("--ready-fd {}: cannot write READY=1: {}", fd, *error);
  return std::nullopt;
}

std::optional<std::string> notify_systemd_ready() {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string name = env;

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socklen_t length = 0;
  if (name.front() == '@') {
    // The abstract namespace: a NUL first, then the name, and the length counts exactly those.
    if (name.size() > sizeof address.sun_path) return fmt::format("NOTIFY_SOCKET {:?}: the name is too long", name);
    address.sun_path[0] = '\0';
    std::memcpy(address.sun_path + 1, name.data() + 1, name.size() - 1);
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  } else if (name.front() == '/') {
    if (name.size() >= sizeof address.sun_path) return fmt::format("NOTIFY_SOCKET {:?}: the path is too long", name);
    std::memcpy(address.sun_path, name.data(), name.size());
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + 1);
  } else {
    return fmt::format("NOTIFY_SOCKET {:?}: not a path or an @abstract name", name);
  }

  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd == -1) return fmt::format("NOTIFY_SOCKET: cannot make a socket: {}", std::strerror(errno));
  static constexpr char kMessage[] = "READY=1";
  ssize_t sent = -1;
  do {
    sent = ::sendto(fd, kMessage, sizeof kMessage - 1, MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address), length);
  } while (sent == -1 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (sent == -1) return fmt::format("NOTIFY_SOCKET {:?}: cannot send READY=1: {}", name, std::strerror(error));
  return std::nullopt;
}

void die_with_parent(int signal, pid_t original_parent) {
  // The kernel sends `signal` when the parent dies. Best effort: on failure the proxy still runs
  // as the supervisor asked otherwise, and the supervisor's own cleanup remains the backstop.
  ::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(signal), 0UL, 0UL, 0UL);
  // The parent may have died before the request took effect: then nothing will ever be sent.
  if (::getppid() != original_parent) ::raise(signal);
}

}  // namespace boxproxy
