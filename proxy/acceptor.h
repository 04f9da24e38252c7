// SPDX-License-Identifier: Apache-2.0
// One accept path for every listener: the proxy's session socket and the bridge's TCP ports.
//
// It hands each new client (a non-blocking descriptor) to its owner. When accept(2) fails for
// want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), every listener is disabled
// for kAcceptBackoffSeconds instead of spinning on a socket that stays readable: connections
// closing meanwhile free some (nghttpx's accept handler does the same). An owner that runs short
// itself (the bridge cannot make its socket to the proxy) backs off through the same path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proxy/event_owners.h"
#include "proxy/timer.h"

namespace boxproxy {

// How long the listeners sleep after a shortage of descriptors or memory.
inline constexpr double kAcceptBackoffSeconds = 0.1;

// True for the errors that mean "out of descriptors or memory": the ones worth a pause.
[[nodiscard]] bool is_resource_shortage(int error) noexcept;
// What a listener's owner says when accepting pauses for `error`: "<strerror>; pausing accepts
// for 100 ms".
[[nodiscard]] std::string accept_pause_words(int error);

class Acceptor {
 public:
  // A new client: the owner takes the descriptor (and closes it when it does not want it).
  using OnClient = void (*)(void* owner, int fd) noexcept;
  // Accepting pauses for `error`: the owner says so in its log.
  using OnPause = void (*)(void* owner, int error) noexcept;

  Acceptor(event_base* base, void* owner, OnClient on_client, OnPause on_pause);
  ~Acceptor() = default;
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Starts accepting on `listen_fd` (listening, non-blocking), taking ownership of it. Throws
  // std::runtime_error at start-up when libevent cannot listen (the descriptor is closed): "cannot
  // listen", and " on <what>" when `what` names the socket.
  void add(int listen_fd, std::string_view what = {});
  // Closes every listener: no client is accepted after this.
  void stop() noexcept;
  // Pauses every listener for kAcceptBackoffSeconds when `error` is a shortage (and it is not
  // paused already); anything else is ignored.
  void back_off(int error) noexcept;

 private:
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self) noexcept;
  static void on_accept_error(evconnlistener*, void* self) noexcept;
  static void on_resume(void* self) noexcept;

  event_base* base_;
  void* owner_;
  OnClient on_client_;
  OnPause on_pause_;
  Timer resume_timer_;
  std::vector<ListenerPtr> listeners_;  // declared after the timer: closed first
};

}  // namespace boxproxy
