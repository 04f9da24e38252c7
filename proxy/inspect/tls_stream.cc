// SPDX-License-Identifier: Apache-2.0
// One TLS side of an inspected connection (proxy/inspect/tls_stream.h).
#include "proxy/inspect/tls_stream.h"

#include <event2/bufferevent_ssl.h>
#include <event2/bufferevent_struct.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <memory>
#include <new>

#include "proxy/inspect/tls_diagnosis.h"

namespace boxproxy {

std::unique_ptr<TlsStream> TlsStream::open(event_base* base, UniqueFd fd, SslPtr ssl, Role role,
                                           std::size_t write_low, Callbacks callbacks,
                                           LoopPassCloser* closer) noexcept {
  std::unique_ptr<TlsStream> stream(new (std::nothrow) TlsStream(std::move(fd), std::move(ssl)));
  if (!stream) return nullptr;
  stream->closer_ = closer;
  const auto state = role == Role::accept ? BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING;
  stream->bev_.reset(bufferevent_openssl_socket_new(base, stream->fd_.get(), stream->ssl_.get(), state,
                                                    BEV_OPT_DEFER_CALLBACKS));
  if (!stream->bev_) {
    ERR_clear_error();
    return nullptr;
  }
  // Both kinds of end read as an end (BEV_EVENT_EOF), not an error: which it was is asked of
  // received_close_notify() by the one caller that needs to know (a body read to the close).
  bufferevent_openssl_set_allow_dirty_shutdown(stream->bev_.get(), 1);
  bufferevent_setwatermark(stream->bev_.get(), EV_WRITE, write_low, 0);
  bufferevent_setcb(stream->bev_.get(), callbacks.read, callbacks.write, callbacks.event, callbacks.arg);
  if (bufferevent_enable(stream->bev_.get(), EV_READ | EV_WRITE) == -1) return nullptr;
  return stream;
}

TlsStream::~TlsStream() {
  if (bev_) {
    // bufferevent_free only drops a reference: freed from inside one of its callbacks (the owner
    // ending a connection there, or deleting it in a hook), the bufferevent lives on until that
    // callback returns, its events still in epoll, while the socket below closes at once. Its
    // number may then be reused by another connection's socket, whose registration libevent would
    // then change when it finally deletes these (seen as "Epoll MOD ... Bad file descriptor").
    // So its two events are deleted here, while the socket is still open. (struct bufferevent's
    // fields are libevent's public bufferevent_struct.h; the header comes with the library.)
    // With a loop that batches its epoll changes, the deletes land only at its next pass: the
    // socket is then closed by the closer, after it.
    event_del(&bev_->ev_read);
    event_del(&bev_->ev_write);
  }
  bev_.reset();  // before the SSL it uses and the socket it watches (as the declaration order does)
  if (closer_ != nullptr) closer_->close_after_loop_pass(std::move(fd_));
}

namespace {

// What release_writes() makes one piece (one TLS record) when it comes in several: a response or
// request head with a small body. Larger outputs go a piece at a time, as libevent would write
// them: a pulled-up piece of up to 16 KiB sits in a 32 KiB chain (libevent sizes them in powers of
// two), whose spare half a connection that queues toward a slow reader would keep.
constexpr std::size_t kCoalesceMost = 2 * 1024;
// The most pieces written in one turn, as libevent's own write takes at most 8 at once.
constexpr int kMostPiecesNow = 8;

}  // namespace

void TlsStream::hold_writes() noexcept {
  // Only a side with nothing waiting to go and no write armed is held: what is already under way
  // (a full socket, OpenSSL wanting to write while it reads) is left exactly as libevent has it.
  // A session that failed is never written to again by us (libevent reports what it meets).
  if (holding_ || failed_ || !bev_ || SSL_is_init_finished(ssl_.get()) != 1 || output_length() != 0 ||
      event_pending(&bev_->ev_write, EV_WRITE, nullptr) != 0) {
    return;
  }
  if (bufferevent_disable(bev_.get(), EV_WRITE) == 0) holding_ = true;
}

void TlsStream::release_writes() noexcept {
  if (!holding_) return;
  holding_ = false;
  (void)bufferevent_enable(bev_.get(), EV_WRITE);  // arms the write event (batched: no system call yet)
  evbuffer* out = output();
  const std::size_t held = evbuffer_get_length(out);
  if (held > 0) {
    if (held <= kCoalesceMost) (void)evbuffer_pullup(out, -1);  // NULL on failure: left in pieces
    // What the socket does not take now waits for it: libevent's write event is armed.
    if (!write_now()) return;
  }
  // All gone (or nothing came): disarmed again in the same pass, so the batched add and delete
  // cost no system call and the loop does not wake to write nothing.
  event_del(&bev_->ev_write);
  // As libevent would after writing: the owner's write callback, deferred, once the output is at
  // its low mark (the owner resumes reading, or closes a drained connection, from there).
  if (held > 0) (void)bufferevent_trigger(bev_.get(), EV_WRITE, 0);
}

// libevent's TLS bufferevent writes only from its write event (2.1: adding bytes just arms it), so
// each write would cost two epoll_ctl and a pass through epoll_wait. The output goes to SSL_write
// here instead, a piece (an evbuffer chain) at a time, as libevent's own write does. True when all
// of it went. Otherwise what is left stays in the output, the piece OpenSSL could not finish at
// its front and untouched: libevent's write retries it as OpenSSL requires (the same bytes, at
// least as many: it hands OpenSSL the output's first piece, and sets
// SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), or meets the same failure and reports it as an error event.
bool TlsStream::write_now() noexcept {
  evbuffer* out = output();
  for (int pieces = 0; pieces < kMostPiecesNow; ++pieces) {
    const std::size_t length = evbuffer_get_length(out);
    if (length == 0) return true;
    evbuffer_iovec piece{};
    if (evbuffer_peek(out, static_cast<ev_ssize_t>(length), nullptr, &piece, 1) < 1 || piece.iov_len == 0) return false;
    const int size = static_cast<int>(std::min<std::size_t>(piece.iov_len, INT_MAX));
    ERR_clear_error();
    const int written = SSL_write(ssl_.get(), piece.iov_base, size);
    if (written <= 0) {
      ERR_clear_error();  // libevent's retry sees the session's own state, not this call's queue
      return false;
    }
    evbuffer_drain(out, static_cast<std::size_t>(written));  // all of the piece: partial writes are off
  }
  return evbuffer_get_length(out) == 0;
}

std::optional<TlsFailure> TlsStream::handshake_failure() noexcept {
  std::optional<TlsFailure> found;
  // bufferevent_get_openssl_error returns 0 once none is left; libevent keeps at most a few.
  while (const unsigned long code = bufferevent_get_openssl_error(bev_.get())) {
    if (!found) found = tls_failure_of_error(code, ssl_.get());
  }
  // The verify result says more than the error that carried it (which only says "verify failed").
  if (const long result = SSL_get_verify_result(ssl_.get()); result != X509_V_OK) return tls_failure_of_verify(result);
  return found;
}

bool TlsStream::received_close_notify() const noexcept {
  return (SSL_get_shutdown(ssl_.get()) & SSL_RECEIVED_SHUTDOWN) != 0;
}

void TlsStream::set_reading(bool on) noexcept {
  if (on == reading_) return;
  // Either call fails only when libevent cannot add the event; the owner's timer ends a connection
  // that then never moves.
  const int result = on ? bufferevent_enable(bev_.get(), EV_READ) : bufferevent_disable(bev_.get(), EV_READ);
  if (result == 0) reading_ = on;
}

void TlsStream::set_callbacks(Callbacks callbacks) noexcept {
  bufferevent_setcb(bev_.get(), callbacks.read, callbacks.write, callbacks.event, callbacks.arg);
}

void TlsStream::end_connection_now() noexcept {
  if (fd_.valid()) (void)::shutdown(fd_.get(), SHUT_RDWR);
}

bool TlsStream::quiet() const noexcept {
  if (failed_ || close_notify_sent_ || input_length() != 0 || output_length() != 0) return false;
  // Either end's close_notify (ours sent by OpenSSL itself, or the peer's) ends its use.
  if (SSL_has_pending(ssl_.get()) == 1 || SSL_get_shutdown(ssl_.get()) != 0) return false;
  // recv(2) is recvfrom, which the inspector's filter allows (the first byte is peeked likewise).
  char byte = 0;
  const ssize_t peeked = ::recv(fd_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return peeked == -1 && (errno == EAGAIN || errno == EWOULDBLOCK);  // 0: its end; 1: a byte; else broken
}

void TlsStream::send_close_notify() noexcept {
  release_writes();  // what is held goes first: SSL_shutdown writes past the output
  if (close_notify_sent_ || failed_ || SSL_is_init_finished(ssl_.get()) != 1) return;
  close_notify_sent_ = true;
  // 0: sent, the peer's not yet read; 1: both done; below 0: it could not be written now. Each
  // is fine: nothing more is read from this session.
  (void)SSL_shutdown(ssl_.get());
  ERR_clear_error();  // a failure here must not explain some later, unrelated one
}

}  // namespace boxproxy
