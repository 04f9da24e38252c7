// SPDX-License-Identifier: Apache-2.0
// Readiness (SPEC §4): the one listening line, READY=1 on --ready-fd and on NOTIFY_SOCKET, and
// --die-with-parent's "the parent is already gone" case.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "socketd/readiness.h"

namespace {

std::string read_all(int fd) {
  std::string out;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

TEST_CASE("announce_listening prints exactly one JSON line, the path escaped") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) != -1);
  std::fflush(stdout);
  const int saved = ::dup(1);
  REQUIRE(saved != -1);
  REQUIRE(::dup2(pipe_fds[1], 1) != -1);
  boxproxy::announce_listening("/run/a \"b\"\\c\n.sock");
  REQUIRE(::dup2(saved, 1) != -1);
  ::close(saved);
  ::close(pipe_fds[1]);
  const std::string line = read_all(pipe_fds[0]);
  ::close(pipe_fds[0]);
  CHECK(line == "{\"event\":\"listening\",\"socket\":\"/run/a \\\"b\\\"\\\\c\\n.sock\",\"pid\":" +
                    std::to_string(::getpid()) + "}\n");
}

TEST_CASE("announce_listening puts the bridge's fields before the pid") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) != -1);
  std::fflush(stdout);
  const int saved = ::dup(1);
  REQUIRE(saved != -1);
  REQUIRE(::dup2(pipe_fds[1], 1) != -1);
  boxproxy::announce_listening("/run/s.sock", ",\"listen\":[\"127.0.0.1:3128\"]");
  REQUIRE(::dup2(saved, 1) != -1);
  ::close(saved);
  ::close(pipe_fds[1]);
  const std::string line = read_all(pipe_fds[0]);
  ::close(pipe_fds[0]);
  CHECK(line == "{\"event\":\"listening\",\"socket\":\"/run/s.sock\",\"listen\":[\"127.0.0.1:3128\"],\"pid\":" +
                    std::to_string(::getpid()) + "}\n");
}

TEST_CASE("notify_ready_fd writes READY=1 and closes the descriptor") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) != -1);
  CHECK_FALSE(boxproxy::notify_ready_fd(pipe_fds[1]).has_value());
  CHECK(read_all(pipe_fds[0]) == "READY=1\n");  // EOF follows: the write end was closed
  ::close(pipe_fds[0]);
}

TEST_CASE("notify_ready_fd: a reader that left is an error, not a SIGPIPE") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) != -1);
  ::close(pipe_fds[0]);
  const auto error = boxproxy::notify_ready_fd(pipe_fds[1]);
  REQUIRE(error.has_value());
  CHECK(error->find("--ready-fd") != std::string::npos);
}

TEST_CASE("notify_systemd_ready: a path, the abstract namespace, and unset") {
  ::unsetenv("NOTIFY_SOCKET");
  CHECK_FALSE(boxproxy::notify_systemd_ready().has_value());

  char pattern[] = "/tmp/boxproxy-notify-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string path = std::string(pattern) + "/notify";
  const int receiver = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(receiver != -1);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::bind(receiver, reinterpret_cast<const sockaddr*>(&address), sizeof address) != -1);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  CHECK_FALSE(boxproxy::notify_systemd_ready().has_value());
  char buffer[64] = {};
  CHECK(::recv(receiver, buffer, sizeof buffer, MSG_DONTWAIT) == 7);
  CHECK(std::string(buffer) == "READY=1");
  ::close(receiver);
  ::unlink(path.c_str());
  ::rmdir(pattern);

  const std::string abstract_name = "boxproxy-test-" + std::to_string(::getpid());
  const int abstract_receiver = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(abstract_receiver != -1);
  sockaddr_un abstract_address{};
  abstract_address.sun_family = AF_UNIX;
  std::memcpy(abstract_address.sun_path + 1, abstract_name.data(), abstract_name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size());
  REQUIRE(::bind(abstract_receiver, reinterpret_cast<const sockaddr*>(&abstract_address), length) != -1);
  ::setenv("NOTIFY_SOCKET", ("@" + abstract_name).c_str(), 1);
  CHECK_FALSE(boxproxy::notify_systemd_ready().has_value());
  std::memset(buffer, 0, sizeof buffer);
  CHECK(::recv(abstract_receiver, buffer, sizeof buffer, MSG_DONTWAIT) == 7);
  CHECK(std::string(buffer) == "READY=1");
  ::close(abstract_receiver);

  // Nobody listening, or not a path: an error message, never a crash.
  ::setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
  CHECK(boxproxy::notify_systemd_ready().has_value());
  ::setenv("NOTIFY_SOCKET", "relative", 1);
  CHECK(boxproxy::notify_systemd_ready().has_value());
  ::unsetenv("NOTIFY_SOCKET");
}

TEST_CASE("die_with_parent raises at once when the parent is already gone") {
  const pid_t child = ::fork();
  REQUIRE(child != -1);
  if (child == 0) {
    ::signal(SIGTERM, SIG_DFL);  // doctest's crash handler would report the signal as a failure
    // Pretend we were started by some other process, which is therefore gone.
    boxproxy::die_with_parent(SIGTERM, ::getppid() + 100000);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}
