// SPDX-License-Identifier: Apache-2.0
// The session socket's lifecycle (SPEC §3), in a private temporary directory.
#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "socketd/socket_path.h"

namespace {

using boxproxy::SessionSocket;
using boxproxy::StartupError;
using boxproxy::as_status;

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/boxproxy-sock-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    REQUIRE(made != nullptr);
    path = made;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  // The names in the directory, so a test can see that no temporary name was left behind.
  [[nodiscard]] int entries() const {
    int count = 0;
    DIR* dir = ::opendir(path.c_str());
    REQUIRE(dir != nullptr);
    while (const dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) ++count;
    }
    ::closedir(dir);
    return count;
  }
};

// A plain socket bound at `path`, listening when `listen` (a live proxy) or not (a stale one
// whose owner died: closing the descriptor leaves the file, which refuses connects).
int bind_socket(const std::string& path, bool listen) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd != -1);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != -1);
  if (listen) REQUIRE(::listen(fd, 4) != -1);
  return fd;
}

bool connects(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd != -1);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != -1;
  ::close(fd);
  return ok;
}

StartupError create_error(const std::string& path) {
  try {
    SessionSocket socket = SessionSocket::create(path, 16);
  } catch (const StartupError& error) {
    return error;
  }
  FAIL("no error");
  return {};
}

struct UmaskScope {
  mode_t old;
  explicit UmaskScope(mode_t mask) : old(::umask(mask)) {}
  ~UmaskScope() { ::umask(old); }
};

}  // namespace

TEST_CASE("creates a listening socket of mode 0600 under umask 0, and removes it") {
  TempDir dir;
  const std::string path = dir.path + "/egress.sock";
  {
    UmaskScope umask_zero(0);
    SessionSocket socket = SessionSocket::create(path, 16);
    CHECK(socket.fd() != -1);
    CHECK(socket.path() == path);
    struct stat st{};
    REQUIRE(::lstat(path.c_str(), &st) != -1);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_nlink == 1);      // the temporary name is gone
    CHECK(dir.entries() == 1);
    CHECK(connects(path));
  }
  struct stat st{};
  CHECK(::lstat(path.c_str(), &st) == -1);
  CHECK(dir.entries() == 0);
}

TEST_CASE("a relative path in the current directory") {
  TempDir dir;
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(::chdir(dir.path.c_str()) != -1);
  {
    SessionSocket socket = SessionSocket::create("rel.sock", 4);
    CHECK(connects(dir.path + "/rel.sock"));
  }
  CHECK(dir.entries() == 0);
  REQUIRE(::chdir(cwd) != -1);
}

TEST_CASE("a regular file at the path: exit 3, left intact") {
  TempDir dir;
  const std::string path = dir.path + "/egress.sock";
  std::ofstream(path) << "precious";
  const StartupError error = create_error(path);
  CHECK(as_status(error.exit_code) == 3);
  CHECK(error.message.find("exists and is not a socket") != std::string::npos);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "precious");
  CHECK(dir.entries() == 1);
}

TEST_CASE("a symlink at the path, even to a stale socket: exit 3, left") {
  TempDir dir;
  const std::string target = dir.path + "/target.sock";
  const int stale = bind_socket(target, false);
  ::close(stale);
  const std::string path = dir.path + "/egress.sock";
  REQUIRE(::symlink(target.c_str(), path.c_str()) != -1);
  CHECK(as_status(create_error(path).exit_code) == 3);
  struct stat st{};
  CHECK(::lstat(path.c_str(), &st) != -1);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(::lstat(target.c_str(), &st) != -1);
}

TEST_CASE("a live socket at the path: exit 3 in use, and it still answers") {
  TempDir dir;
  const std::string path = dir.path + "/egress.sock";
  const int live = bind_socket(path, true);
  const StartupError error = create_error(path);
  CHECK(as_status(error.exit_code) == 3);
  CHECK(error.message.find("in use") != std::string::npos);
  CHECK(connects(path));
  CHECK(dir.entries() == 1);
  ::close(live);
}

TEST_CASE("a stale socket at the path is replaced") {
  TempDir dir;
  const std::string path = dir.path + "/egress.sock";
  ::close(bind_socket(path, false));
  CHECK_FALSE(connects(path));
  SessionSocket socket = SessionSocket::create(path, 16);
  CHECK(connects(path));
  CHECK(dir.entries() == 1);
}

TEST_CASE("a missing directory: exit 1") {
  TempDir dir;
  const StartupError error = create_error(dir.path + "/no-such-dir/egress.sock");
  CHECK(as_status(error.exit_code) == 1);
  CHECK(error.message.find("no-such-dir") != std::string::npos);
}

TEST_CASE("the directory is a file: exit 1") {
  TempDir dir;
  std::ofstream(dir.path + "/file") << "x";
  CHECK(as_status(create_error(dir.path + "/file/egress.sock").exit_code) == 1);
}

TEST_CASE("too long for sun_path: exit 1 with a clear message") {
  TempDir dir;
  const std::string path = dir.path + "/" + std::string(120, 'a');
  const StartupError error = create_error(path);
  CHECK(as_status(error.exit_code) == 1);
  CHECK(error.message.find("longer than") != std::string::npos);
  CHECK(dir.entries() == 0);
}

TEST_CASE("a path that fits whose long temporary name would not still works") {
  TempDir dir;
  // 107 bytes in all: the largest sun_path holds. ".<base>.<pid>.<random>.tmp" cannot fit.
  const std::string path = dir.path + "/" + std::string(107 - dir.path.size() - 1, 's');
  REQUIRE(path.size() == 107);
  // The short form ".<random>.tmp" is 21 bytes after the slash; it fits only if the base is
  // at least that long, which it is here.
  SessionSocket socket = SessionSocket::create(path, 4);
  CHECK(connects(path));
}

TEST_CASE("replaced by another socket while running: the newcomer survives") {
  TempDir dir;
  const std::string path = dir.path + "/egress.sock";
  int newcomer = -1;
  {
    SessionSocket socket = SessionSocket::create(path, 16);
    REQUIRE(::unlink(path.c_str()) != -1);
    newcomer = bind_socket(path, true);
  }
  CHECK(connects(path));
  struct stat st{};
  CHECK(::lstat(path.c_str(), &st) != -1);
  ::close(newcomer);
}

TEST_CASE("remove_path is idempotent; release_fd gives up the descriptor; a move keeps one owner") {
  TempDir dir;
  const std::string path = dir.path + "/egress.sock";
  std::optional<SessionSocket> moved;
  {
    SessionSocket socket = SessionSocket::create(path, 16);
    moved.emplace(std::move(socket));
  }
  // The moved-from object's destruction did not remove the path.
  CHECK(connects(path));
  const int fd = moved->release_fd();
  CHECK(fd != -1);
  CHECK(moved->fd() == -1);
  moved->remove_path();
  struct stat st{};
  CHECK(::lstat(path.c_str(), &st) == -1);
  // Someone else's socket at the path now: a second remove_path (and the destructor) leave it.
  const int other = bind_socket(path, true);
  moved->remove_path();
  moved.reset();
  CHECK(connects(path));
  ::close(other);
  ::close(fd);
}

TEST_CASE("the listener is non-blocking and close-on-exec") {
  TempDir dir;
  SessionSocket socket = SessionSocket::create(dir.path + "/egress.sock", 16);
  CHECK((::fcntl(socket.fd(), F_GETFL) & O_NONBLOCK) != 0);
  CHECK((::fcntl(socket.fd(), F_GETFD) & FD_CLOEXEC) != 0);
}
