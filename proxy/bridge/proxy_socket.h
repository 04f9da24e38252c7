// SPDX-License-Identifier: Apache-2.0
// How the bridge and its DNS responder reach the proxy (SPEC §14): through the socket they were
// given at start, held as a descriptor, never through a name that can change.
//
// What it stops: a box's COMMAND runs as the caller, and the socket's directory is (often) the
// caller's; a bridge that connected by path for every client and every DNS question would follow
// whatever COMMAND puts at that name after a rename (a symbolic link, or a socket of its own) to
// any pathname socket the caller can open: an ssh agent, a container runtime, another session's
// proxy, or this proxy's own --control-socket. The bridge is outside the box's seccomp filter,
// so that would be a way round it.
//
// How: open(PATH, O_PATH) at start holds the socket's inode; connect(2) to "/proc/self/fd/N"
// reaches that inode, because the kernel resolves the magic link to the file the descriptor
// holds, not by a name (systemd's connect_unix_path() does the same for long paths). A proxy that
// is restarted at the same path is a new inode, which the bridge does not follow by itself: a
// SIGHUP re-pins what is at the path then (on purpose, by whoever may signal the bridge).
//
// Why not a descriptor handed over by `run`, or a directory descriptor: the bridge is also started
// by others (bubblewrap, unshare, a container's entry point) who give it only a path; and a name
// inside a held directory can still be replaced. /proc/self is there wherever the bridge runs
// (under `run` it stays in the host's mount namespace and sees the host's /proc); where it is not,
// pinning fails at start, saying so, rather than falling back to the name.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>

#include "proxy/event_owners.h"

namespace boxproxy {

class ProxySocket {
 public:
  ProxySocket() = default;
  ProxySocket(const ProxySocket&) = delete;
  ProxySocket& operator=(const ProxySocket&) = delete;

  // Pins the socket at `path` now (symbolic links followed once, here). Returns "" on success;
  // otherwise why not, for the caller to put after the path ("exists and is not a socket", "No
  // such file or directory", ...), and the socket pinned before, if any, stays pinned.
  [[nodiscard]] std::string pin(const std::string& path);
  // pin(path()) again: what is at the path now (SIGHUP).
  [[nodiscard]] std::string repin() { return pin(path_); }

  // Starts connecting `fd` (a new AF_UNIX stream socket, blocking or not) to the pinned socket.
  // Returns 0 when connected, else the errno value (EINPROGRESS, EAGAIN for a full backlog,
  // ECONNREFUSED for a proxy that is gone, ...). EINTR is retried here.
  [[nodiscard]] int connect(int fd) const noexcept;

  // The path given at start (for messages: the pinned inode may no longer have it as a name).
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] bool pinned() const noexcept { return pinned_.valid(); }

 private:
  std::string path_;
  UniqueFd pinned_;                // O_PATH: reads and writes nothing, holds the inode
  sockaddr_un address_{};          // "/proc/self/fd/N" for pinned_
  socklen_t address_length_ = 0;
};

}  // namespace boxproxy
