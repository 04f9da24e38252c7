// SPDX-License-Identifier: Apache-2.0
// Closes descriptors once the event loop has passed through epoll again, for a loop that batches
// its epoll changes (EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST: serve's and the inspector's).
//
// Why: with the change list, an event deleted now leaves the epoll set only when the loop next
// goes to wait. A socket closed before that cannot be taken out (EBADF), and when another process
// still holds a copy of the same open socket (serve and its inspector pass sockets between them)
// the kernel keeps it in this process's set: the loop wakes for every byte of a connection it no
// longer owns, spins while the socket is writable, and reports those events under a descriptor
// number that a later connection may reuse. Closing one loop pass later lets the delete land
// while the descriptor is still open.
#pragma once

#include <event2/event.h>

#include <vector>

#include "proxy/event_owners.h"
#include "proxy/unique_fd.h"

namespace boxproxy {

class LoopPassCloser {
 public:
  explicit LoopPassCloser(event_base* base);
  LoopPassCloser(const LoopPassCloser&) = delete;
  LoopPassCloser& operator=(const LoopPassCloser&) = delete;

  // False when libevent could not make the timer (then descriptors close at once).
  [[nodiscard]] bool valid() const noexcept { return pass_ != nullptr; }
  // Closes `fd` after the loop's next pass (at once when the timer cannot be armed: better a
  // stray wake-up than a descriptor kept for ever). Those still waiting close with this object.
  void close_after_loop_pass(UniqueFd fd) noexcept;

 private:
  static void on_pass(evutil_socket_t, short, void* self) noexcept;

  std::vector<UniqueFd> closing_;
  EventPtr pass_;  // a zero-second timer: it fires once the loop has been through epoll
};

}  // namespace boxproxy
