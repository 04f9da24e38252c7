// SPDX-License-Identifier: Apache-2.0
// Messages with descriptors between two of boxproxy's processes (proxy/fd_channel.h).
#include "proxy/fd_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <string.h>  // explicit_bzero
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "proxy/transient_error.h"
#include "table/secret_value.h"

namespace boxproxy {
namespace {

// Room for kMaxChannelFds descriptors in one control message.
constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * kMaxChannelFds);

// Takes every descriptor of `header`'s SCM_RIGHTS parts into `fds` (owned at once, whatever
// follows); false when a part is not SCM_RIGHTS or there are too many (all are closed then).
bool take_fds(msghdr& header, std::vector<UniqueFd>& fds) {
  bool sound = true;
  for (cmsghdr* part = CMSG_FIRSTHDR(&header); part != nullptr; part = CMSG_NXTHDR(&header, part)) {
    if (part->cmsg_level != SOL_SOCKET || part->cmsg_type != SCM_RIGHTS) {
      sound = false;  // SCM_CREDENTIALS and the like: nothing we asked for
      continue;
    }
    const std::size_t count = (part->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(part) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (fds.size() > kMaxChannelFds) sound = false;
  if (!sound) fds.clear();
  return sound;
}

// Sends one message now; -1 with errno set when it could not (EAGAIN: the peer's buffer is full).
ssize_t send_message(int socket, std::string_view bytes, std::span<const int> fds) noexcept {
  iovec part{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) unsigned char control[kControlBytes] = {};
  msghdr header{};
  header.msg_iov = &part;
  header.msg_iovlen = 1;
  if (!fds.empty()) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(socket, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
}

enum class Received : std::uint8_t { message, nothing_yet, closed, broken };

// The room every message is received into: one per process (serve and its inspector each run
// one thread), made at the first message and never filled by us. A message's own bytes are then
// copied out at their length: sizing a fresh string to the bound for each receive zero-filled
// 64 KiB a message (and again for the read that finds nothing), the largest single cost of an
// inspected request in serve. Pages of it that no message reaches are never touched.
std::span<char> receive_room() {
  static const std::unique_ptr<char[]> room(new char[kMaxChannelMessageBytes + 1]);  // NOLINT: not zeroed, on purpose
  return {room.get(), kMaxChannelMessageBytes + 1};  // one more: a longer message shows as truncated
}

// Receives one message now. Its descriptors are owned before anything else is judged, so a
// broken message leaks none. A cut control part (MSG_CTRUNC) means the kernel closed descriptors
// that did not fit.
Received receive_message(int socket, ChannelMessage& message) noexcept {
  std::span<char> room;
  try {
    room = receive_room();
  } catch (const std::bad_alloc&) {
    return Received::broken;
  }
  iovec part{room.data(), room.size()};
  alignas(cmsghdr) unsigned char control[kControlBytes] = {};
  msghdr header{};
  header.msg_iov = &part;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(socket, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n == -1 && transient_error(errno)) return Received::nothing_yet;
  if (n == 0 || (n < 0 && errno == ECONNRESET)) return Received::closed;
  if (n < 0) return Received::broken;
  const bool fds_sound = take_fds(header, message.fds);
  if (!fds_sound || (header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
      static_cast<std::size_t>(n) > kMaxChannelMessageBytes) {
    message.fds.clear();
    return Received::broken;
  }
  bool copied = true;
  try {
    message.bytes.assign(room.data(), static_cast<std::size_t>(n));
  } catch (const std::bad_alloc&) {
    copied = false;
  }
  // What passed through is not left behind (a message may carry a secret's value, SPEC §19): only
  // the caller's copy holds it now, for the caller to scrub.
  ::explicit_bzero(room.data(), static_cast<std::size_t>(n));
  if (!copied) {
    message.fds.clear();
    return Received::broken;
  }
  return Received::message;
}

bool wait_for(int socket, short what, int timeout_ms) noexcept {
  pollfd p{socket, what, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

}  // namespace

bool send_channel_message(int socket, std::string_view bytes, std::span<const int> fds, int timeout_ms,
                          std::string& error) {
  if (bytes.empty() || bytes.size() > kMaxChannelMessageBytes || fds.size() > kMaxChannelFds) {
    error = "a message past the channel's bounds";
    return false;
  }
  for (;;) {
    if (send_message(socket, bytes, fds) != -1) return true;
    if (!transient_error(errno)) {
      error = std::strerror(errno);
      return false;
    }
    if (!wait_for(socket, POLLOUT, timeout_ms)) {
      error = "timed out";
      return false;
    }
  }
}

std::optional<ChannelMessage> receive_channel_message(int socket, int timeout_ms, std::string& error) {
  for (;;) {
    ChannelMessage message;
    switch (receive_message(socket, message)) {
      case Received::message:
        return message;
      case Received::closed:
        error = "the channel closed";
        return std::nullopt;
      case Received::broken:
        error = "a message past the channel's bounds";
        return std::nullopt;
      case Received::nothing_yet:
        if (!wait_for(socket, POLLIN, timeout_ms)) {
          error = "timed out";
          return std::nullopt;
        }
    }
  }
}

bool make_channel_pair(UniqueFd& one, UniqueFd& other) noexcept {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) return false;
  one.reset(pair[0]);
  other.reset(pair[1]);
  return true;
}

FdChannel::FdChannel(event_base* base, UniqueFd socket, OnMessage on_message, OnClosed on_closed, void* owner)
    : socket_(std::move(socket)), on_message_(on_message), on_closed_(on_closed), owner_(owner) {
  read_event_ = make_event(base, socket_.get(), EV_READ | EV_PERSIST, &on_readable, this);
  write_event_ = make_event(base, socket_.get(), EV_WRITE | EV_PERSIST, &on_writable, this);
  if (read_event_) event_add(read_event_.get(), nullptr);
}

FdChannel::~FdChannel() {
  if (alive_ != nullptr) *alive_ = false;
}

bool FdChannel::send(std::string_view bytes, std::span<const int> fds) {
  if (!valid() || failed_ || bytes.empty() || bytes.size() > kMaxChannelMessageBytes || fds.size() > kMaxChannelFds) return false;
  if (out_.size() >= kMaxChannelQueued) return false;
  ChannelMessage message;
  message.bytes.assign(bytes);
  for (int fd : fds) {
    UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy.valid()) return false;
    message.fds.push_back(std::move(copy));
  }
  out_.push_back(std::move(message));
  if (out_.size() == 1 && !flush()) {
    // Failing here would call the owner from inside its own call: the next write event does.
    event_active(write_event_.get(), EV_WRITE, 0);
  }
  return true;
}

// Sends queued messages until the peer's buffer is full. A SEQPACKET message goes whole or not at
// all, so a message is dropped from the queue only once sent.
bool FdChannel::flush() noexcept {
  while (!out_.empty()) {
    ChannelMessage& message = out_.front();
    std::vector<int> fds;
    for (const UniqueFd& fd : message.fds) fds.push_back(fd.get());
    if (send_message(socket_.get(), message.bytes, fds) == -1) {
      if (!transient_error(errno)) return false;
      event_add(write_event_.get(), nullptr);  // the peer reads, then we go on
      return true;
    }
    scrub(message.bytes);  // a "secret" message's value is not left in the freed heap
    out_.pop_front();      // our duplicates close: the peer holds its own now
  }
  event_del(write_event_.get());
  return true;
}

void FdChannel::on_writable(evutil_socket_t, short, void* self) noexcept {
  auto* channel = static_cast<FdChannel*>(self);
  if (channel->failed_ || !channel->flush()) channel->fail();
}

void FdChannel::on_readable(evutil_socket_t, short, void* self) noexcept {
  static_cast<FdChannel*>(self)->read_messages();
}

// Delivers what has arrived, one message a call of the owner's, until none is left, the channel
// fails, or the owner deletes it.
void FdChannel::read_messages() noexcept {
  while (!failed_) {
    ChannelMessage message;
    const Received received = receive_message(socket_.get(), message);
    if (received == Received::nothing_yet) return;
    if (received != Received::message) return fail();  // the peer closed, or broke a bound
    bool alive = true;
    alive_ = &alive;
    on_message_(owner_, std::move(message));
    if (!alive) return;
    alive_ = nullptr;
  }
}

void FdChannel::fail() noexcept {
  if (failed_) return;
  failed_ = true;
  if (read_event_) event_del(read_event_.get());
  if (write_event_) event_del(write_event_.get());
  out_.clear();
  on_closed_(owner_);  // may delete this: nothing after
}

void FdChannel::shut_down() noexcept {
  if (socket_.valid()) (void)::shutdown(socket_.get(), SHUT_RDWR);
}

}  // namespace boxproxy
