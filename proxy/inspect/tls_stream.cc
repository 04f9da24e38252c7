// SPDX-License-Identifier: Apache-2.0
// One TLS side of an inspected connection (proxy/inspect/tls_stream.h).
#include "proxy/inspect/tls_stream.h"

#include <event2/bufferevent_ssl.h>
#include <event2/bufferevent_struct.h>
#include <openssl/err.h>

#include <new>

namespace boxproxy {

std::unique_ptr<TlsStream> TlsStream::open(event_base* base, UniqueFd fd, SslPtr ssl, Role role,
                                           std::size_t write_low, Callbacks callbacks) noexcept {
  std::unique_ptr<TlsStream> stream(new (std::nothrow) TlsStream(std::move(fd), std::move(ssl)));
  if (!stream) return nullptr;
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
    event_del(&bev_->ev_read);
    event_del(&bev_->ev_write);
  }
  bev_.reset();  // before the SSL it uses and the socket it watches (as the declaration order does)
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

void TlsStream::send_close_notify() noexcept {
  if (close_notify_sent_ || failed_ || SSL_is_init_finished(ssl_.get()) != 1) return;
  close_notify_sent_ = true;
  // 0: sent, the peer's not yet read; 1: both done; below 0: it could not be written now. Each
  // is fine: nothing more is read from this session.
  (void)SSL_shutdown(ssl_.get());
  ERR_clear_error();  // a failure here must not explain some later, unrelated one
}

}  // namespace boxproxy
