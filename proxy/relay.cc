// SPDX-License-Identifier: Apache-2.0
#include "proxy/relay.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// Where EINTR means "try again now" and EAGAIN "wait for the event", they are told apart.
bool would_block(int error) noexcept { return error == EAGAIN || error == EWOULDBLOCK; }

// Whether bytes read from `from` are worth splicing: only out of a TCP socket. As measured on
// Linux 6.x (bench/README.md has the figures): splicing TCP into a pipe hands the received pages
// over without a copy, and from the pipe into a Unix or TCP socket the pages are passed on again,
// so the proxy copies nothing and spends less CPU than reading and writing. Splicing out of a Unix
// stream socket costs more CPU than reading it and moves less; so a Unix socket's bytes (a box's,
// upward; the proxy's, in the bridge) are read and written.
bool splice_pays(const Endpoint& from) noexcept {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(from.fd(), reinterpret_cast<sockaddr*>(&address), &length) == -1) return false;
  return address.ss_family == AF_INET || address.ss_family == AF_INET6;
}

#if defined(BOXPROXY_TEST_HOOKS)
// Test builds only (never a release: BOXPROXY_TEST_HOOKS is off by default): with
// BOXPROXY_TEST_NO_SPLICE=1 in the environment, read once, every splice into a pipe fails as on a
// kernel or socket that cannot splice (EINVAL), so the fallback to buffers runs under test.
bool splice_refused_for_test() noexcept {
  static const bool refused = [] {
    const char* value = std::getenv("BOXPROXY_TEST_NO_SPLICE");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return refused;
}
#endif

// The buffer every read goes through before it is written on: one per thread (a process relays
// on one), allocated at the first read, so a session that never relays holds none, and only the
// pages reads have touched are resident. Not on the stack: kBulkReadChunk is 256 KiB. Null if
// the allocation failed (then reads take kReadChunk into a buffer on the stack).
char* shared_read_buffer() noexcept {
  struct FreeDeleter {
    void operator()(char* p) const noexcept { std::free(p); }
  };
  thread_local std::unique_ptr<char, FreeDeleter> buffer;
  if (!buffer) buffer.reset(static_cast<char*>(std::malloc(kBulkReadChunk)));
  return buffer.get();
}

}  // namespace

// The relay pump's steps: the only code besides Endpoint's own that reads and writes its state.
struct RelayPump {
  // A direction from `from` to `to` has begun to carry bulk data: it moves through a pipe if that
  // pays, else in bigger reads. Out of descriptors is no error: the direction just stays on buffers.
  static void go_bulk(const Endpoint& from, Endpoint& to) noexcept {
    if (to.bulk_reads_ || to.splice_failed_ || to.uses_pipe()) return;
    if (!splice_pays(from)) {
      to.bulk_reads_ = true;
      return;
    }
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == -1) return;
    to.pipe_read_.reset(fds[0]);
    to.pipe_write_.reset(fds[1]);
  }

  // Writes what the pipe holds to `end`. False on a write error.
  static bool drain_pipe(Endpoint& end) {
    while (end.pipe_bytes_ > 0) {
      const ssize_t n = ::splice(end.pipe_read_.get(), nullptr, end.fd_.get(), nullptr, end.pipe_bytes_,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n == -1) {
        if (errno == EINTR) continue;
        if (would_block(errno)) {
          event_add(end.write_event_.get(), nullptr);
          return true;
        }
        return false;
      }
      end.pipe_bytes_ -= static_cast<std::size_t>(n);
      end.written_ += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Splices what `from` has into the pipe of `to`, as splice(2) does.
  static ssize_t splice_into_pipe(Endpoint& from, Endpoint& to) noexcept {
#if defined(BOXPROXY_TEST_HOOKS)
    if (splice_refused_for_test()) {
      errno = EINVAL;
      return -1;
    }
#endif
    return ::splice(from.fd_.get(), nullptr, to.pipe_write_.get(), nullptr, kSpliceChunk,
                    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  }

  static RelayStep pass_eof(Endpoint& from, Endpoint& to) {
    // A FIN is passed on as a FIN, after everything before it: the relay lives on half-open.
    from.read_eof_ = true;
    update_reading(from);
    to.shut_after_out_ = true;
    RelayStep step;
    step.eof = true;
    step.failed = !flush_queued(to);
    return step;
  }

  static RelayStep buffered_once(Endpoint& from, Endpoint& to) {
    char fallback[kReadChunk];
    char* buffer = shared_read_buffer();
    std::size_t chunk = to.bulk_reads_ ? kBulkReadChunk : kReadChunk;
    if (buffer == nullptr) {
      buffer = fallback;
      chunk = kReadChunk;
    }
    const ssize_t n = ::recv(from.fd_.get(), buffer, chunk, 0);
    if (n == -1) return RelayStep{!transient_error(errno), 0, false};
    if (n == 0) return pass_eof(from, to);
    RelayStep step;
    step.moved = static_cast<std::size_t>(n);
    if (!send_or_queue(to, {buffer, step.moved})) {
      step.failed = true;
    } else if (to.has_queued()) {
      pause_reading(from, pause_peer_full);
    } else if (step.moved == chunk) {
      go_bulk(from, to);  // bulk data: the next reads go through a pipe, or are bigger (nothing is queued now)
    }
    return step;
  }

  static RelayStep splice_once(Endpoint& from, Endpoint& to) {
    const ssize_t n = splice_into_pipe(from, to);
    if (n == -1) {
      if (errno == EINTR) return {};
      if (would_block(errno)) {
        // Readable but nothing moved: with bytes in the pipe, the pipe is full (as HAProxy reads it).
        if (to.pipe_bytes_ > 0) pause_reading(from, pause_peer_full);
        return {};
      }
      if ((errno == EINVAL || errno == ENOSYS) && to.pipe_bytes_ == 0) {
        // This kernel or socket type cannot splice: fall back to buffers, for good.
        to.splice_failed_ = true;
        to.pipe_read_.reset();
        to.pipe_write_.reset();
        return buffered_once(from, to);
      }
      return RelayStep{true, 0, false};
    }
    if (n == 0) return pass_eof(from, to);
    RelayStep step;
    step.moved = static_cast<std::size_t>(n);
    to.pipe_bytes_ += step.moved;
    if (!drain_pipe(to)) {
      step.failed = true;
    } else if (to.has_queued()) {
      pause_reading(from, pause_peer_full);
    }
    return step;
  }

  static bool send_or_queue(Endpoint& end, std::string_view bytes) {
    if (bytes.empty()) return true;
    if (!end.has_queued()) {
      // Nothing queued: write through, and keep only what the socket did not take.
      ssize_t n = ::send(end.fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n == -1) {
        if (!transient_error(errno)) return false;
        n = 0;
      }
      end.written_ += static_cast<std::size_t>(n);
      bytes.remove_prefix(static_cast<std::size_t>(n));
      if (bytes.empty()) return true;
    }
    end.out_.append(bytes);
    event_add(end.write_event_.get(), nullptr);
    return true;
  }

  static bool flush_queued(Endpoint& end) {
    const OutQueue::Written written = end.out_.write_to(end.fd_.get());
    end.written_ += written.bytes;  // what reached the peer counts, even before an error
    if (written.failed) return false;  // an error on either end ends both
    if (!end.out_.empty()) {
      event_add(end.write_event_.get(), nullptr);  // the peer is behind: the write event says when
      return true;
    }
    // What went into the pipe came after what was in `out`: it is written second.
    if (end.pipe_bytes_ > 0) {
      if (!drain_pipe(end)) return false;
      if (end.pipe_bytes_ > 0) return true;
    }
    if (end.write_event_) event_del(end.write_event_.get());
    if (end.shut_after_out_ && !end.write_shut_ && end.fd_.valid()) {
      // Half-close by the book: FIN only after everything from the other end has been written.
      ::shutdown(end.fd_.get(), SHUT_WR);
      end.write_shut_ = true;
    }
    return true;
  }

  static RelayStep relay_once(Endpoint& from, Endpoint& to) {
    if (to.uses_pipe()) return splice_once(from, to);
    RelayStep step = buffered_once(from, to);
    // Bulk data into the buffer: read on while each read fills it and `to` takes it all (nothing
    // is queued, so `from` is not paused), up to the budget of one wake-up.
    std::size_t last = step.moved;
    while (to.bulk_reads_ && last == kBulkReadChunk && step.moved < kBulkBytesPerWake && !step.failed && !step.eof &&
           !to.has_queued()) {
      const RelayStep more = buffered_once(from, to);
      step.moved += more.moved;
      step.failed = more.failed;
      step.eof = more.eof;
      last = more.moved;
    }
    return step;
  }

  static bool relay_finished(const Endpoint& a, const Endpoint& b) noexcept {
    return a.read_eof_ && b.read_eof_ && a.write_shut_ && b.write_shut_;
  }
};

void Endpoint::reset() noexcept {
  read_event_.reset();
  write_event_.reset();
  pipe_read_.reset();
  pipe_write_.reset();
  fd_.reset();
  out_.clear();
  pause_ = 0;
  reading_ = read_eof_ = shut_after_out_ = write_shut_ = false;
  pipe_bytes_ = 0;
  splice_failed_ = false;
  bulk_reads_ = false;
}

bool Endpoint::watch(event_base* base, event_callback_fn on_read, event_callback_fn on_write, void* arg) noexcept {
  read_event_ = make_event(base, fd_.get(), EV_READ | EV_PERSIST, on_read, arg);
  write_event_ = make_event(base, fd_.get(), EV_WRITE | EV_PERSIST, on_write, arg);
  return read_event_ && write_event_;
}

void Endpoint::update_reading() noexcept {
  const bool want = fd_.valid() && read_event_ && pause_ == 0 && !read_eof_;
  if (want && !reading_) {
    event_add(read_event_.get(), nullptr);
    reading_ = true;
  } else if (!want && reading_) {
    event_del(read_event_.get());
    reading_ = false;
  }
}

void Endpoint::pause(unsigned bit) noexcept {
  pause_ |= bit;
  update_reading();
}

void Endpoint::resume(unsigned bit) noexcept {
  pause_ &= ~bit;
  update_reading();
}

void Endpoint::set_read_eof() noexcept {
  read_eof_ = true;
  update_reading();
}

void Endpoint::queue_for_later(std::string_view bytes) {
  out_.append(bytes);
  watch_writable();
}

bool send_or_queue(Endpoint& end, std::string_view bytes) { return RelayPump::send_or_queue(end, bytes); }
bool flush_queued(Endpoint& end) { return RelayPump::flush_queued(end); }
RelayStep relay_once(Endpoint& from, Endpoint& to) { return RelayPump::relay_once(from, to); }
bool relay_finished(const Endpoint& a, const Endpoint& b) noexcept { return RelayPump::relay_finished(a, b); }

}  // namespace boxproxy
