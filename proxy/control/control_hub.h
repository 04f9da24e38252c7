// SPDX-License-Identifier: Apache-2.0
// The supervisor's channel (SPEC §15): every control client at once, the --control-fd one and
// those of --control-socket, and what goes to all of them (asks) or to those that subscribed
// (decision events).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string_view>

#include "proxy/acceptor.h"
#include "proxy/control/control_channel.h"
#include "proxy/event_owners.h"
#include "proxy/session_control.h"

namespace boxproxy {

class DecisionLog;

// Clients of --control-socket open at once; one more is told so and closed. A supervisor needs
// one or two (itself, an operator's look); each may hold up to kControlQueueBytes of events, so
// this bounds the channel's memory to about 8 MiB.
inline constexpr std::size_t kMaxControlClients = 8;

class ControlHub {
 public:
  // --control-fd reached EOF: exit as on SIGTERM.
  using ShutDown = std::function<void()>;

  // Requests act on `session` (owned here from now on); every decision and done line of `log`
  // goes to the subscribers, while there are any.
  ControlHub(event_base* base, std::unique_ptr<SessionControl> session, DecisionLog& log, ShutDown shut_down);
  ~ControlHub();
  ControlHub(const ControlHub&) = delete;
  ControlHub& operator=(const ControlHub&) = delete;

  // --control-fd: serves `fd` (taken over). Throws std::runtime_error at start-up on failure.
  void adopt(int fd);
  // --control-socket: accepts on `listen_fd` (listening, non-blocking; taken over). Throws
  // std::runtime_error at start-up on failure.
  void listen(int listen_fd);
  // Writes what each client is owed without waiting (at shutdown, so a drain's reply goes out).
  void flush_all() noexcept;

  // A decision or done line in its JSON form (an object, "{...}"), as a decision event to every
  // client that subscribed.
  void publish_decision(std::string_view json_line);
  // `event_line` to every open client; how many there are.
  std::size_t publish_to_all(std::string_view event_line);

  // --- for channels ---
  [[nodiscard]] event_base* base() const noexcept { return base_; }
  void handle_line(ControlChannel& channel, std::string_view line);
  void line_too_long(ControlChannel& channel);
  // The channel's peer has gone (or it failed): it is deleted here.
  void channel_ended(ControlChannel* channel) noexcept;

 private:
  static void on_client(void* self, int fd) noexcept;
  static void on_accept_paused(void* self, int error) noexcept;
  // Serves `fd` (closed here on failure); null when the channel cannot be made.
  ControlChannel* add_channel(int fd, ControlChannel::Origin origin);
  // The log's observer is set while at least one client subscribes.
  void watch_decisions();
  void stop_watching_decisions_if_unwanted() noexcept;

  event_base* base_;
  std::unique_ptr<SessionControl> session_;
  DecisionLog& log_;
  ShutDown shut_down_;
  std::size_t socket_clients_ = 0;
  bool watching_decisions_ = false;  // the log's observer is ours
  std::list<std::unique_ptr<ControlChannel>> channels_;
  std::unique_ptr<Acceptor> acceptor_;  // after the channels: closed first
};

}  // namespace boxproxy
