// SPDX-License-Identifier: Apache-2.0
// The session socket's lifecycle (SPEC §3): created so that it is never reachable at its path with
// a wider mode and never replaces another start's socket; removed only while it is still ours.
#pragma once

#include <sys/types.h>

#include <string>

#include "socketd/exit_code.h"

namespace boxproxy {

// A listening Unix socket linked at its path. Owns the descriptor; the destructor closes it and
// removes the path only while the path still names this socket (same device and inode), so a
// socket another start put there in the meantime survives.
class SessionSocket {
 public:
  // Creates, binds under a temporary name in the path's directory, chmod 0600, listens, links
  // to `path` (never rename), removes the temporary name. Throws StartupError
  // naming the path and what is wrong: ExitCode::path_taken when the path is taken (SPEC §4),
  // ExitCode::failure otherwise.
  static SessionSocket create(const std::string& path, int backlog);

  SessionSocket(SessionSocket&& other) noexcept;
  SessionSocket& operator=(SessionSocket&&) = delete;
  SessionSocket(const SessionSocket&) = delete;
  ~SessionSocket();

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // Gives up the descriptor to a new owner (e.g. an evconnlistener that closes it).
  [[nodiscard]] int release_fd() noexcept;
  // Removes the path if it is still this socket; later calls and the destructor do nothing.
  void remove_path() noexcept;

 private:
  SessionSocket(int fd, std::string path, dev_t dev, ino_t ino) noexcept;
  int fd_ = -1;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool linked_ = false;
};

}  // namespace boxproxy
