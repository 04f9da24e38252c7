// SPDX-License-Identifier: Apache-2.0
#include "proxy/control/control_channel.h"

#include <string.h>  // explicit_bzero

#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "proxy/control/control_hub.h"
#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// One read takes at most this much: a request is a short line, and one read's worth of lines is
// answered before the next read, so a burst of requests cannot grow the queue past its bound by
// more than the replies to 16 KiB of requests.
constexpr std::size_t kControlReadChunk = 16 * 1024;

}  // namespace

ControlChannel::ControlChannel(ControlHub& hub, UniqueFd fd, Origin origin)
    : hub_(hub), fd_(std::move(fd)), origin_(origin) {}

ControlChannel::~ControlChannel() {
  // Events first, then the descriptor they watch (members die in reverse order: be explicit).
  read_event_.reset();
  write_event_.reset();
}

bool ControlChannel::start() noexcept {
  read_event_ = make_event(hub_.base(), fd_.get(), EV_READ | EV_PERSIST, &on_ready<&ControlChannel::readable>, this);
  write_event_ = make_event(hub_.base(), fd_.get(), EV_WRITE | EV_PERSIST, &on_ready<&ControlChannel::writable>, this);
  if (!read_event_ || !write_event_) return false;
  update_events();
  return true;
}

// ---------------------------------------------------------------------------------------------
// The trampoline: the only place a channel ends.

template <ControlChannel::Next (ControlChannel::*step)()>
void ControlChannel::on_ready(evutil_socket_t, short, void* self) noexcept {
  auto* channel = static_cast<ControlChannel*>(self);
  Next next = Next::close;
  try {
    next = (channel->*step)();
  } catch (...) {
    // No exception through libevent: a channel that cannot allocate is closed.
  }
  if (next == Next::close) channel->hub_.channel_ended(channel);  // deletes it
}

// ---------------------------------------------------------------------------------------------
// Reading: lines in.

ControlChannel::Next ControlChannel::readable() {
  if (write_failed_) return Next::close;  // set while writing from elsewhere (a broadcast)
  char buffer[kControlReadChunk];
  const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, MSG_DONTWAIT);
  if (n == -1) {
    return transient_error(errno) ? Next::keep : Next::close;
  }
  if (n == 0) {
    // The supervisor's end of --control-fd is gone: the hub shuts the proxy down. A socket client
    // that only shut down its writing still gets what it asked for.
    if (origin_ == Origin::control_fd || queued_bytes() == 0) return Next::close;
    read_eof_ = true;
    update_events();
    return Next::keep;
  }
  in_.append(buffer, static_cast<std::size_t>(n));
  ::explicit_bzero(buffer, static_cast<std::size_t>(n));  // a "secret" line's value (SPEC §19)
  take_lines();
  if (write_failed_) return Next::close;
  update_events();
  return Next::keep;
}

void ControlChannel::take_lines() {
  std::size_t start = 0;
  while (start < in_.size() && !over_bound() && !write_failed_) {
    const std::size_t newline = in_.find('\n', start);
    if (discarding_) {
      if (newline == std::string::npos) {
        start = in_.size();  // still inside the long line: drop what came of it
        break;
      }
      discarding_ = false;
      start = newline + 1;
      continue;
    }
    const std::size_t end = newline == std::string::npos ? in_.size() : newline;
    if (end - start > kMaxControlLineBytes) {
      // Over the bound: answered once, and the rest of it dropped as it comes, so the buffer
      // never holds more than one line's bound and one read.
      hub_.line_too_long(*this);
      if (newline == std::string::npos) {
        discarding_ = true;
        start = in_.size();
        break;
      }
      start = newline + 1;
      continue;
    }
    if (newline == std::string::npos) break;  // a line not yet whole
    std::string_view line(in_.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = newline + 1;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // a blank line asks nothing
    hub_.handle_line(*this, line);
    // Each line overwritten once answered: a "secret" request carries a value (SPEC §19), and
    // in_ is compacted and reused. Not covered: a buffer in_ outgrew (freed as it was) and the
    // kernel's socket buffers; serve is non-dumpable when it may hold secrets (serve_command.cc).
    ::explicit_bzero(in_.data() + (line.data() - in_.data()), line.size());
  }
  in_.erase(0, start);
  // After a burst, give the memory back.
  if (in_.empty() && in_.capacity() > kControlReadChunk) std::string().swap(in_);
}

// ---------------------------------------------------------------------------------------------
// Writing: replies and events out.

void ControlChannel::reply(std::string_view line) { append(line); }

void ControlChannel::event(std::string_view line) {
  announce_dropped();
  if (dropped_ > 0 || queued_bytes() + line.size() + 1 > kControlQueueBytes) {
    // A supervisor that does not read: the event is lost and counted, never the proxy stalled.
    // Once one is lost, later ones wait behind the count, so the stream stays in order.
    ++dropped_;
    return;
  }
  append(line);
}

void ControlChannel::announce_dropped() {
  // The announcement is short (a 20-digit count at most): it needs this much room.
  constexpr std::size_t kDroppedLineBytes = 64;
  if (dropped_ == 0 || queued_bytes() + kDroppedLineBytes > kControlQueueBytes) return;
  out_.append(fmt::format("{{\"event\":\"dropped\",\"n\":{}}}\n", dropped_));
  dropped_ = 0;
}

void ControlChannel::append(std::string_view line) {
  if (write_failed_) return;
  out_.append(line);
  out_.push_back('\n');
  if (!write_some()) {
    // The peer is gone. Closing is the channel's own callback's business (it may be another
    // channel's request or a decision that wrote here): it runs in this loop iteration.
    write_failed_ = true;
    event_active(read_event_.get(), EV_READ, 0);
    return;
  }
  update_events();
}

bool ControlChannel::write_some() noexcept {
  for (int round = 0; round < 2; ++round) {
    // The peer is behind when not all is written: the write event says when it takes more.
    if (out_.write_to(fd_.get(), MSG_DONTWAIT).failed) return false;
    out_.compact_past(kControlReadChunk);  // what is written is not kept
    // Writing works again: say how many events were lost, once, in order with the rest.
    if (dropped_ == 0) break;
    try {
      announce_dropped();
    } catch (...) {
      break;  // out of memory: said at the next write
    }
  }
  return true;
}

ControlChannel::Next ControlChannel::writable() {
  if (write_failed_ || !write_some()) return Next::close;
  if (read_eof_ && queued_bytes() == 0) return Next::close;
  // Room again: requests read before the pause may be waiting.
  if (!over_bound() && !in_.empty()) take_lines();
  if (write_failed_) return Next::close;
  update_events();
  return Next::keep;
}

void ControlChannel::flush_now() noexcept {
  if (!write_failed_) (void)write_some();
}

void ControlChannel::update_events() noexcept {
  if (!read_event_) return;
  // Requests are read only while their replies have room: a client that asks without reading
  // holds no more than the queue's bound.
  if (!read_eof_ && !over_bound()) {
    event_add(read_event_.get(), nullptr);
  } else {
    event_del(read_event_.get());
  }
  if (queued_bytes() > 0 || dropped_ > 0) {
    event_add(write_event_.get(), nullptr);
  } else {
    event_del(write_event_.get());
  }
}

}  // namespace boxproxy
