// SPDX-License-Identifier: Apache-2.0
// The relay pump: moves a tunnel's bytes from one end to the other, with back-pressure,
// half-close by the book, and splice(2) through a pipe as the fast path (buffers where the kernel
// refuses it). An Endpoint is one end of a relayed connection. Shared by the proxy's tunnels and
// plain-HTTP exchanges and by the in-box bridge, which relay the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/event_owners.h"
#include "proxy/out_queue.h"

namespace boxproxy {

// One read takes at most this much. What the other end does not take at once is queued, and
// reading from this end pauses until the queue is written, so a direction never holds more than
// one read in memory whatever the peers do.
inline constexpr std::size_t kReadChunk = 16 * 1024;

// A direction that carries bulk data (a read filled kReadChunk) and is not spliced reads this much
// at a time. On loopback each send into TCP costs a transmit, a delivery and a wake-up of the
// reader whatever its size, so the size of a send is what sets the CPU per byte: measured upward
// against the reference relay's 256 KiB reads (bench/README.md), smaller reads moved less, and
// 256 KiB came nearest.
// It is also the most such a direction ever holds queued: a fraction of what the kernel itself may
// hold in the TCP socket's send buffer (tcp_wmem's largest, 4 MiB by default) for the same tunnel.
inline constexpr std::size_t kBulkReadChunk = 256 * 1024;

// A direction with bulk data that is read into the buffer (not spliced) reads again in the same
// wake-up while each read fills kBulkReadChunk and the other end takes all of it, up to this much.
// Measured upward with four tunnels (bench/README.md), one read a wake-up moved less than the
// reference relay, which reads until EAGAIN; reading on closed the gap as the bound grew, at less
// CPU a byte, because the loop went back to epoll_wait far less often. The bound keeps one tunnel
// from holding the loop for long: it is a byte bound, the same on every machine, where a time
// bound would not be (the manual's RESOURCE BOUNDS says what it costs other connections); memory
// is unchanged (one read is ever queued).
inline constexpr std::size_t kBulkBytesPerWake = 8 * 1024 * 1024;

// The most one splice moves into a pipe: a default pipe's capacity (16 pages).
inline constexpr std::size_t kSpliceChunk = 64 * 1024;

// Reasons an end's reads are paused; reading resumes only when all are clear (STYLE 6).
enum PauseBit : unsigned {
  pause_peer_full = 1u << 0,       // the other end has unwritten bytes from this one
  pause_no_more_wanted = 1u << 1,  // this end's input is not wanted now (decision, exchange done)
};

// One end of a relayed connection: its socket, its two events, what is queued for it, why its
// reads are paused, and its half-close state. Its state is its own and the relay pump's (the
// functions below): an owner opens it, pauses and resumes its reading, watches it for writing,
// and reads what it needs to know.
class Endpoint {
 public:
  Endpoint() noexcept = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Takes `fd` (non-blocking; closed by reset() or the Endpoint's end).
  void adopt(int fd) noexcept { fd_.reset(fd); }
  // Makes the socket's events: EV_READ | EV_PERSIST (added only while reading) and EV_WRITE |
  // EV_PERSIST (added only while something is queued, or a connect is watched), calling
  // on_read and on_write with `arg`. False when libevent cannot allocate.
  [[nodiscard]] bool watch(event_base* base, event_callback_fn on_read, event_callback_fn on_write, void* arg) noexcept;
  // adopt, then watch.
  [[nodiscard]] bool open(event_base* base, int fd, event_callback_fn on_read, event_callback_fn on_write,
                          void* arg) noexcept {
    adopt(fd);
    return watch(base, on_read, on_write, arg);
  }
  [[nodiscard]] int fd() const noexcept { return fd_.get(); }
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }

  // Reading is on exactly when the end has a socket and events, no pause bit, and has not sent
  // FIN; these keep the read event so.
  void pause(unsigned bit) noexcept;
  void resume(unsigned bit) noexcept;
  void update_reading() noexcept;
  [[nodiscard]] unsigned paused() const noexcept { return pause_; }
  // This end sent FIN (or its reading is over): it is read no more.
  void set_read_eof() noexcept;
  [[nodiscard]] bool read_eof() const noexcept { return read_eof_; }
  // Once everything queued for this end is written, send it FIN (half-close by the book).
  void shut_after_queue() noexcept { shut_after_out_ = true; }

  // The write event: watched while a connect is in flight (or bytes wait), then not.
  void watch_writable() noexcept { event_add(write_event_.get(), nullptr); }
  void unwatch_writable() noexcept { event_del(write_event_.get()); }
  // Queues `bytes` to be written when the write event fires, without writing now.
  void queue_for_later(std::string_view bytes);

  [[nodiscard]] bool has_queued() const noexcept { return !out_.empty() || pipe_bytes_ > 0; }
  [[nodiscard]] std::size_t queued_bytes() const noexcept { return out_.size() + pipe_bytes_; }
  [[nodiscard]] std::size_t pipe_bytes() const noexcept { return pipe_bytes_; }
  [[nodiscard]] bool uses_pipe() const noexcept { return pipe_write_.valid(); }
  [[nodiscard]] bool reads_in_bulk() const noexcept { return bulk_reads_; }
  [[nodiscard]] const event* write_event() const noexcept { return write_event_.get(); }
  [[nodiscard]] const event* read_event() const noexcept { return read_event_.get(); }
  // Bytes written to this end's socket (by send or splice) in all, kept through reset(): what the
  // done line counts is what the peer was given, never what was read or queued and then lost.
  [[nodiscard]] std::uint64_t written() const noexcept { return written_; }

  // Closes the socket, its pipe and its events (events first), and forgets every state bit
  // (but not written()).
  void reset() noexcept;
  // As reset(), but the socket is handed to the caller instead of closed (its events are freed).
  [[nodiscard]] UniqueFd release_socket() noexcept {
    UniqueFd socket = std::move(fd_);
    reset();
    return socket;
  }

 private:
  friend struct RelayPump;  // the pump's steps (relay.cc)

  UniqueFd fd_;
  EventPtr read_event_;
  EventPtr write_event_;
  OutQueue out_;                 // bytes queued for this end, not yet written
  unsigned pause_ = 0;           // PauseBit mask
  bool reading_ = false;         // read_event_ is added
  bool read_eof_ = false;        // this end sent FIN (or its reading is over)
  bool shut_after_out_ = false;  // send FIN to this end once everything queued is written
  bool write_shut_ = false;      // FIN sent to this end
  // The splice(2) fast path for bytes going to this end: a pipe the other end's bytes are spliced
  // into and then out of to this end, never copied to user space. Made only once a direction
  // carries bulk data (a read filled the whole read buffer), so short exchanges spend no
  // descriptors on it; counted in the descriptor budget; and only when the other end is a TCP
  // socket (see relay.cc: splicing out of a Unix socket costs more than reading it).
  UniqueFd pipe_read_;
  UniqueFd pipe_write_;
  std::size_t pipe_bytes_ = 0;  // bytes in the pipe not yet written to this end
  bool splice_failed_ = false;  // the kernel refused splice here: buffers from now on
  bool bulk_reads_ = false;     // bytes from the other end come kBulkReadChunk at a time (no pipe)
  std::uint64_t written_ = 0;
};

// The pump's steps as free functions, for the tunnel, the exchange and the bridge.
inline void pause_reading(Endpoint& end, unsigned bit) noexcept { end.pause(bit); }
inline void resume_reading(Endpoint& end, unsigned bit) noexcept { end.resume(bit); }
inline void update_reading(Endpoint& end) noexcept { end.update_reading(); }

// Writes `bytes` to `end` now as far as the socket takes them and queues the rest (in order,
// behind anything already queued). False on a write error: the connection must end.
[[nodiscard]] bool send_or_queue(Endpoint& end, std::string_view bytes);

// Writes what is queued for `end`: the buffer first, then the pipe (which only ever holds later
// bytes). Once all is written, sends FIN if asked (half-close by the book: FIN only after
// everything from the other end). False on a write error.
[[nodiscard]] bool flush_queued(Endpoint& end);

struct RelayStep {
  bool failed = false;      // an error on either end: the connection must end
  std::size_t moved = 0;    // bytes taken from `from`
  bool eof = false;         // `from` sent FIN (now passed on to `to`, after its queue)
};

// One readable event on `from`: reads (or splices) once and writes through to `to`; a direction
// that reads bulk data into the buffer reads on, up to kBulkBytesPerWake. Pauses `from` while
// `to` has anything queued; switches the direction to a pipe once it carries bulk data; falls back
// to buffers at run time where the kernel refuses splice.
[[nodiscard]] RelayStep relay_once(Endpoint& from, Endpoint& to);

// Both ends sent FIN and both were sent FIN: the relay is over.
[[nodiscard]] bool relay_finished(const Endpoint& a, const Endpoint& b) noexcept;

}  // namespace boxproxy
