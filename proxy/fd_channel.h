// SPDX-License-Identifier: Apache-2.0
// One end of a channel between two of boxproxy's own processes (serve and its inspector, see
// proxy/inspect/DESIGN.md): a SOCK_SEQPACKET socketpair carrying whole messages, each with up to
// kMaxChannelFds descriptors (SCM_RIGHTS). A message is bytes the two sides agree on (the caller's
// format); this file knows only their bounds and the descriptors that ride with them.
//
// Both ends are ours, but the far one may be compromised (the inspector parses hostile TLS), so
// every bound is checked on receipt: a message over kMaxChannelMessageBytes, more descriptors than
// kMaxChannelFds, or a truncated control part ends the channel; every descriptor received is owned
// (UniqueFd) at once, so none leaks whatever the message turns out to be.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/event_owners.h"
#include "proxy/unique_fd.h"

namespace boxproxy {

// A message: 64 KiB, as the control channel's lines (SPEC §15); two descriptors (a connection's
// client and upstream sockets), and two more of slack.
inline constexpr std::size_t kMaxChannelMessageBytes = 64 * 1024;
inline constexpr std::size_t kMaxChannelFds = 4;
// Messages waiting for the peer to read (its socket buffer full): past this the channel fails
// rather than hold without bound what a stalled peer does not take.
inline constexpr std::size_t kMaxChannelQueued = 1024;

struct ChannelMessage {
  std::string bytes;
  std::vector<UniqueFd> fds;
};

// A socketpair for a channel (SOCK_SEQPACKET, non-blocking, close-on-exec); false with errno set.
[[nodiscard]] bool make_channel_pair(UniqueFd& one, UniqueFd& other) noexcept;

// One message, outside the loop (a process's start: serve's "start" and the inspector's "ready"
// are exchanged before either runs its loop). Each waits at most `timeout_ms`; an error says why.
[[nodiscard]] bool send_channel_message(int socket, std::string_view bytes, std::span<const int> fds, int timeout_ms,
                                        std::string& error);
[[nodiscard]] std::optional<ChannelMessage> receive_channel_message(int socket, int timeout_ms, std::string& error);

class FdChannel {
 public:
  // on_message: each message received, in order. on_closed: the peer closed, or the channel
  // failed (a bound broken, an error); nothing is delivered after it, and the owner may delete
  // the channel from inside either callback (its last act).
  using OnMessage = void (*)(void* owner, ChannelMessage message);
  using OnClosed = void (*)(void* owner);

  FdChannel(event_base* base, UniqueFd socket, OnMessage on_message, OnClosed on_closed, void* owner);
  ~FdChannel();
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;

  // False when libevent could not allocate (the channel is then unusable).
  [[nodiscard]] bool valid() const noexcept { return read_event_ && write_event_; }

  // Queues `bytes` with duplicates of `fds` (the caller keeps its own); sent in order as the peer
  // reads. False, sending nothing, when the message breaks a bound or the queue is full.
  bool send(std::string_view bytes, std::span<const int> fds = {});

  [[nodiscard]] std::size_t queued() const noexcept { return out_.size(); }

  // Ends the channel both ways: the peer reads its end (and this side's on_closed follows).
  void shut_down() noexcept;

 private:
  static void on_readable(evutil_socket_t, short, void* self) noexcept;
  static void on_writable(evutil_socket_t, short, void* self) noexcept;
  void read_messages() noexcept;
  bool flush() noexcept;  // false: the channel failed
  void fail() noexcept;   // stops both events and tells the owner; the owner may delete this

  UniqueFd socket_;
  EventPtr read_event_;
  EventPtr write_event_;
  std::deque<ChannelMessage> out_;
  OnMessage on_message_;
  OnClosed on_closed_;
  void* owner_;
  bool failed_ = false;
  bool* alive_ = nullptr;  // while a callback runs: set false if the owner deletes this in it
};

}  // namespace boxproxy
