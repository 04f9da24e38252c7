// SPDX-License-Identifier: Apache-2.0
// Bytes queued for a non-blocking socket and written in order, never blocking the loop: the one
// out-queue of the relay's Endpoints, the control channel and the DNS responder's TCP clients.
// What is written is not kept: once all is out, the buffer's memory goes back (an idle tunnel or
// channel holds none).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>

#include "proxy/transient_error.h"

namespace boxproxy {

class OutQueue {
 public:
  [[nodiscard]] bool empty() const noexcept { return offset_ == bytes_.size(); }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size() - offset_; }

  // Queues `bytes` behind what is queued.
  void append(std::string_view bytes) {
    if (empty()) clear_kept();
    bytes_.append(bytes);
  }
  void push_back(char c) {
    if (empty()) clear_kept();
    bytes_.push_back(c);
  }

  struct Written {
    std::size_t bytes = 0;  // written by this call (maybe 0: the socket is full), failed or not
    bool failed = false;    // an error that ends the connection
  };
  // Writes what is queued to `fd` as far as it takes it now (send(2) with MSG_NOSIGNAL and
  // `flags`; EINTR is retried).
  [[nodiscard]] Written write_to(int fd, int flags = 0) noexcept {
    Written written;
    while (!empty()) {
      const ssize_t n = ::send(fd, bytes_.data() + offset_, size(), MSG_NOSIGNAL | flags);
      if (n == -1) {
        if (errno == EINTR) continue;
        written.failed = !transient_error(errno);
        break;
      }
      offset_ += static_cast<std::size_t>(n);
      written.bytes += static_cast<std::size_t>(n);
    }
    if (empty()) clear();
    return written;
  }

  // Drops what is already written from the front once it is at least `bytes` (a queue that is
  // appended to while its peer reads slowly would otherwise keep it all).
  void compact_past(std::size_t bytes) noexcept {
    if (offset_ < bytes) return;
    bytes_.erase(0, offset_);
    offset_ = 0;
  }

  // Forgets everything queued, and gives the memory back.
  void clear() noexcept {
    std::string().swap(bytes_);
    offset_ = 0;
  }

 private:
  // Empties the buffer but keeps its memory for the bytes about to be appended.
  void clear_kept() noexcept {
    bytes_.clear();
    offset_ = 0;
  }

  std::string bytes_;
  std::size_t offset_ = 0;
};

}  // namespace boxproxy
