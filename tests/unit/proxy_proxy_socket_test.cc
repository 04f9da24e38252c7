// SPDX-License-Identifier: Apache-2.0
// The pinned proxy socket (proxy/bridge/proxy_socket.h): once pinned, a connection reaches the socket
// that was at the path then, whatever is put at the path afterwards; re-pinning is the only way
// to follow the name.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "proxy/event_owners.h"
#include "proxy/bridge/proxy_socket.h"

namespace boxproxy {
namespace {

// A fresh directory, removed with what is in it.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/boxproxy-pin-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() {
    for (const char* entry : {"/proxy.sock", "/moved.sock", "/other.sock", "/file"}) {
      (void)::unlink((path + entry).c_str());
    }
    (void)::rmdir(path.c_str());
  }
};

UniqueFd listening_at(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd.valid());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(fd.get(), 8) == 0);
  return fd;
}

// Connects through `pinned` and says which of the listeners took it: 1 `first`, 2 `second`, 0
// neither (or the connect failed).
int reached(const ProxySocket& pinned, int first, int second) {
  UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(client.valid());
  if (pinned.connect(client.get()) != 0) return 0;
  for (const auto& [listener, which] : {std::pair{first, 1}, std::pair{second, 2}}) {
    UniqueFd taken(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (taken.valid()) return which;
  }
  return 0;
}

TEST_CASE("a pinned socket is reached whatever is put at its name later") {
  TempDir dir;
  const std::string path = dir.path + "/proxy.sock";
  UniqueFd proxy = listening_at(path);
  ProxySocket pinned;
  REQUIRE(pinned.pin(path).empty());
  CHECK(pinned.path() == path);

  // Listeners are non-blocking for reached()'s accept.
  UniqueFd other = listening_at(dir.path + "/other.sock");
  REQUIRE(::fcntl(proxy.get(), F_SETFL, O_NONBLOCK) == 0);
  REQUIRE(::fcntl(other.get(), F_SETFL, O_NONBLOCK) == 0);
  CHECK(reached(pinned, proxy.get(), other.get()) == 1);

  SUBCASE("renamed, with a link to another socket at the name") {
    REQUIRE(::rename(path.c_str(), (dir.path + "/moved.sock").c_str()) == 0);
    REQUIRE(::symlink((dir.path + "/other.sock").c_str(), path.c_str()) == 0);
    CHECK(reached(pinned, proxy.get(), other.get()) == 1);
    // On purpose: re-pinning follows the name (here, the link) once.
    REQUIRE(pinned.repin().empty());
    CHECK(reached(pinned, proxy.get(), other.get()) == 2);
  }
  SUBCASE("unlinked, and another socket bound at the name") {
    REQUIRE(::unlink(path.c_str()) == 0);
    UniqueFd impostor = listening_at(path);
    REQUIRE(::fcntl(impostor.get(), F_SETFL, O_NONBLOCK) == 0);
    CHECK(reached(pinned, proxy.get(), impostor.get()) == 1);
  }
  SUBCASE("the proxy gone: refused, not followed") {
    proxy.reset();
    REQUIRE(::unlink(path.c_str()) == 0);
    UniqueFd impostor = listening_at(path);
    UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    CHECK(pinned.connect(client.get()) == ECONNREFUSED);
  }
}

TEST_CASE("what cannot be pinned says why, and the old pin stays") {
  TempDir dir;
  const std::string path = dir.path + "/proxy.sock";
  ProxySocket pinned;
  CHECK_FALSE(pinned.pin(path).empty());  // missing
  CHECK_FALSE(pinned.pinned());
  {
    UniqueFd file(::open((dir.path + "/file").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    REQUIRE(file.valid());
  }
  CHECK(pinned.pin(dir.path + "/file") == "exists and is not a socket");

  UniqueFd proxy = listening_at(path);
  REQUIRE(pinned.pin(path).empty());
  REQUIRE(::unlink(path.c_str()) == 0);
  CHECK_FALSE(pinned.repin().empty());
  CHECK(pinned.path() == path);
  UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  CHECK(pinned.connect(client.get()) == 0);  // still the socket pinned first
}

}  // namespace
}  // namespace boxproxy
