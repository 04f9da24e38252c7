// SPDX-License-Identifier: Apache-2.0
// One client of the supervisor's channel (SPEC §15): a stream socket that carries JSON lines both
// ways. This file is the framing and the queue only; what a line asks for is control_ops.h's, and
// the set of channels is control_hub.h's.
//
// In: lines of at most kMaxControlLineBytes. A longer line gets one error reply, the rest of it is
// discarded up to its newline, and the channel goes on.
// Out: replies and events share one queue, written without ever blocking the loop. Events
// (decisions, asks) are dropped past kControlQueueBytes and counted, then announced with
// {"event":"dropped","n":N} as soon as there is room again; replies are never dropped: while the
// queue is over its bound, requests are not read, so a client that asks without reading holds
// at most the bound plus one line's reply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/event_owners.h"
#include "proxy/out_queue.h"

namespace boxproxy {

class ControlHub;

// The longest request line (without its newline), SPEC §15.
inline constexpr std::size_t kMaxControlLineBytes = 64 * 1024;

// The most a channel queues for a client that does not read (SPEC §15: at most 1 MiB). A decision
// event is about 250 bytes, so this holds some 4,000 decisions: a supervisor that pauses for a
// moment loses nothing; one that stops reading costs at most this much per channel.
inline constexpr std::size_t kControlQueueBytes = 1024 * 1024;

class ControlChannel {
 public:
  // How the channel's owner learns that its peer has gone.
  enum class Origin : std::uint8_t {
    control_fd,      // --control-fd: its end is the supervisor's end (EOF is a SIGTERM)
    control_socket,  // a client of --control-socket
  };

  // Owns `fd` (a connected stream socket) from now on.
  ControlChannel(ControlHub& hub, UniqueFd fd, Origin origin);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Registers the events; false when libevent cannot allocate them.
  [[nodiscard]] bool start() noexcept;

  // A reply: queued whatever the queue holds (the reading pause bounds it).
  void reply(std::string_view line);
  // An event: dropped and counted when the queue would pass kControlQueueBytes.
  void event(std::string_view line);
  // One last write of what is queued, without waiting (at shutdown).
  void flush_now() noexcept;

  [[nodiscard]] Origin origin() const noexcept { return origin_; }
  [[nodiscard]] bool subscribed() const noexcept { return subscribed_; }
  void subscribe() noexcept { subscribed_ = true; }
  [[nodiscard]] std::size_t queued_bytes() const noexcept { return out_.size(); }

 private:
  enum class Next { keep, close };

  // The one trampoline, for reading (`step` readable) and writing (writable): the only place a
  // channel ends.
  template <Next (ControlChannel::*step)()>
  static void on_ready(evutil_socket_t, short, void* self) noexcept;

  Next readable();
  Next writable();
  // Hands every whole line in `in_` to the hub while the queue has room.
  void take_lines();
  void append(std::string_view line);
  // Queues {"event":"dropped","n":N} when events were lost and the queue has room for it.
  void announce_dropped();
  // Writes as much as the peer takes now. False on a write error (the peer is gone).
  bool write_some() noexcept;
  void update_events() noexcept;
  [[nodiscard]] bool over_bound() const noexcept { return queued_bytes() > kControlQueueBytes; }

  ControlHub& hub_;
  UniqueFd fd_;
  Origin origin_;
  EventPtr read_event_;
  EventPtr write_event_;
  std::string in_;               // bytes read, not yet taken as lines
  bool discarding_ = false;      // inside a line that was too long: dropped up to its newline
  bool read_eof_ = false;        // the peer shut down its writing: close once the queue is out
  bool write_failed_ = false;    // the peer is gone: close at the next callback
  OutQueue out_;                 // replies and events not yet written
  std::uint64_t dropped_ = 0;    // events dropped since the last dropped event
  bool subscribed_ = false;      // "subscribe" was asked: decision events come here
};

}  // namespace boxproxy
