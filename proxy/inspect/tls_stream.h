// SPDX-License-Identifier: Apache-2.0
// One side of an inspected connection: a TLS session over a socket, on a libevent
// bufferevent_openssl (the box-facing side as the TLS server, the origin-facing side as the
// client). Its input holds the plaintext read, its output the plaintext to write.
//
// It owns the socket, the SSL object and the bufferevent, in that order, so the bufferevent goes
// first and the socket last: libevent is never asked to own either (without BEV_OPT_CLOSE_ON_FREE
// a failed bufferevent_openssl_socket_new frees neither, so nothing is freed or closed twice).
// Callbacks are deferred (BEV_OPT_DEFER_CALLBACKS): they run from the loop, never from inside a
// call of the owner's that added to an output, so the owner is never entered twice.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "proxy/inspect/openssl_owners.h"
#include "proxy/loop_pass_closer.h"
#include "proxy/unique_fd.h"
#include "table/tls_failure.h"

namespace boxproxy {

struct BufferEventDeleter {
  void operator()(bufferevent* bev) const noexcept { bufferevent_free(bev); }
};
using BufferEventPtr = std::unique_ptr<bufferevent, BufferEventDeleter>;

class TlsStream {
 public:
  enum class Role : std::uint8_t {
    accept,   // the box-facing side: the proxy is the TLS server
    connect,  // the origin-facing side: the proxy is the TLS client
  };
  // The owner's callbacks, all given `arg`.
  struct Callbacks {
    bufferevent_data_cb read;
    bufferevent_data_cb write;
    bufferevent_event_cb event;
    void* arg;
  };
  // Starts the handshake on `fd` (connected, non-blocking) with `ssl`, which it takes with the
  // socket. `write` fires as the output drains to `write_low` bytes or fewer. Null when libevent
  // cannot allocate (both are then released by their owners here).
  //
  // Reading is bounded by the owner, not by a read watermark: libevent 2.1 calls the read
  // callback again and again while the input is over its high-water mark and reading is on (a
  // busy loop when the owner cannot take the bytes), and its TLS bufferevent, suspended by the
  // mark in the middle of a record, leaves the rest in OpenSSL unseen until the socket is
  // readable again (a stall). Without a mark, each wake-up reads one TLS record (and what
  // OpenSSL holds of it) and hands all of it over; the owner turns reading off (set_reading)
  // once the input is at its bound, and on again as it drains.
  //
  // `closer` (may be null: the socket then closes with the stream) closes the socket one loop pass
  // after the stream goes, for a loop that batches its epoll changes (proxy/loop_pass_closer.h);
  // it must outlive the stream.
  [[nodiscard]] static std::unique_ptr<TlsStream> open(event_base* base, UniqueFd fd, SslPtr ssl, Role role,
                                                       std::size_t write_low, Callbacks callbacks,
                                                       LoopPassCloser* closer = nullptr) noexcept;
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  [[nodiscard]] evbuffer* input() const noexcept { return bufferevent_get_input(bev_.get()); }
  [[nodiscard]] evbuffer* output() const noexcept { return bufferevent_get_output(bev_.get()); }
  [[nodiscard]] std::size_t input_length() const noexcept { return evbuffer_get_length(input()); }
  [[nodiscard]] std::size_t output_length() const noexcept { return evbuffer_get_length(output()); }
  [[nodiscard]] SSL* ssl() const noexcept { return ssl_.get(); }
  [[nodiscard]] bool is(const bufferevent* bev) const noexcept { return bev == bev_.get(); }

  // Whether the peer ended its side with a close_notify (an end that cannot have been cut short by
  // a third party) rather than just closing its socket.
  [[nodiscard]] bool received_close_notify() const noexcept;
  // Why the handshake failed (after an error event): the verify result of the peer's certificate
  // when it failed, else the first of the errors libevent kept (it takes them off OpenSSL's queue
  // as it meets them; each is read once, and all are read here). nullopt when nothing says.
  [[nodiscard]] std::optional<TlsFailure> handshake_failure() noexcept;
  // Reads (or stops reading: what the peer sends is left in the socket). Only once the handshake
  // is done does this take effect; the handshake reads what it needs.
  void set_reading(bool on) noexcept;
  // The session failed (an error event): no close_notify is ever sent on it (OpenSSL must not
  // be asked to shut down a session after a fatal error).
  void note_failed() noexcept { failed_ = true; }
  // Sends close_notify, once, if the session is open and has not failed: best effort (a socket
  // that cannot take it now never gets it; the close follows anyway).
  void send_close_notify() noexcept;
  // Ends the TCP connection now, both ways (after what was written to the socket, close_notify
  // included), though the descriptor itself closes a loop pass later (the closer): a kept origin
  // connection closed for serve is over before the word that frees its slot (SPEC §5).
  void end_connection_now() noexcept;

  // Its callbacks from here (an origin connection moving between its connection and the pool of idle
  // ones, proxy/inspect/origin_pool.h); a deferred one already queued runs the new one.
  void set_callbacks(Callbacks callbacks) noexcept;
  // Nothing of it waits anywhere and its peer has not ended it: its input and output are empty,
  // OpenSSL holds no record, and the socket has neither a byte nor an end to read (peeked). What
  // an idle origin connection must be to be kept or handed out (origin_pool.h).
  [[nodiscard]] bool quiet() const noexcept;

  // Holds what is added to the output until release_writes(), which writes it at once, as one TLS
  // record and one write(2) when it is small: the pieces one turn of the owner adds (a response
  // head, then its body) would otherwise go as a record each, and only after a pass through
  // epoll_wait (libevent's TLS bufferevent writes from its write event). Held only once the
  // handshake is done and nothing is under way; send_close_notify() releases first, so
  // close_notify never overtakes what is held.
  void hold_writes() noexcept;
  void release_writes() noexcept;

 private:
  TlsStream(UniqueFd fd, SslPtr ssl) noexcept : fd_(std::move(fd)), ssl_(std::move(ssl)) {}
  [[nodiscard]] bool write_now() noexcept;

  UniqueFd fd_;
  LoopPassCloser* closer_ = nullptr;
  SslPtr ssl_;
  BufferEventPtr bev_;  // declared last: freed first
  bool close_notify_sent_ = false;
  bool failed_ = false;
  bool reading_ = true;
  bool holding_ = false;
};

}  // namespace boxproxy
