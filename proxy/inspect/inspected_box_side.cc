// SPDX-License-Identifier: Apache-2.0
// An inspected connection's box side (proxy/inspect/inspected_box_side.h): the first byte, peeked,
// the box's TLS with the decided host's leaf, the HTTP/2 front when the box chose "h2", and the
// side's close.
#include "proxy/inspect/inspected_box_side.h"

#include <openssl/err.h>
#include <sys/socket.h>

#include <cerrno>
#include <string_view>

#include "proxy/inspect/inspected_connection.h"
#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// The first byte of a TLS record that carries a handshake message (a ClientHello first).
constexpr unsigned char kTlsHandshakeRecord = 0x16;

}  // namespace

bool InspectedBoxSide::watch(event_base* base, event_callback_fn on_sniff, void* arg) {
  sniff_event_ = make_event(base, fd_.get(), EV_READ | EV_PERSIST, on_sniff, arg);
  return sniff_event_ && event_add(sniff_event_.get(), nullptr) != -1;
}

InspectedBoxSide::Sniffed InspectedBoxSide::sniff() noexcept {
  unsigned char first = 0;
  const ssize_t n = ::recv(fd_.get(), &first, 1, MSG_PEEK);
  if (n == -1) return transient_error(errno) ? Sniffed::waiting : Sniffed::failed;
  event_del(sniff_event_.get());
  if (n == 0) return Sniffed::closed;
  // Anything but a TLS handshake record is `not tls` (SPEC §18), closed without a word: what it
  // stops is plaintext to an inspected endpoint going anywhere uninspected, and OpenSSL being fed
  // what is not TLS at all.
  return first == kTlsHandshakeRecord ? Sniffed::tls : Sniffed::not_tls;
}

bool InspectedBoxSide::open_tls(const Accepting& accepting) {
  SslPtr ssl(SSL_new(accepting.ctx));
  if (!ssl || SSL_use_certificate(ssl.get(), accepting.certificate) != 1 ||
      SSL_use_PrivateKey(ssl.get(), accepting.key) != 1 || !attach_server_name_check(ssl.get(), &sni_check_) ||
      !bind_sessions_to_origin(ssl.get(), sni_check_.host, accepting.port)) {
    ERR_clear_error();
    return false;
  }
  stream_ = TlsStream::open(accepting.base, std::move(fd_), std::move(ssl), TlsStream::Role::accept, kMaxQueued / 2,
                            accepting.callbacks, accepting.closer);
  return stream_ != nullptr;
}

bool InspectedBoxSide::start_h2_if_chosen(std::size_t max_head_bytes, H2Front::Hooks hooks) {
  const unsigned char* chosen = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(stream_->ssl(), &chosen, &length);
  if (chosen == nullptr || std::string_view(reinterpret_cast<const char*>(chosen), length) != kAlpnH2) return true;
  h2_ = H2Front::open(max_head_bytes, hooks);
  return h2_ != nullptr;
}

void InspectedBoxSide::close(bool clean, LoopPassCloser* closer) noexcept {
  if (sniff_event_) event_del(sniff_event_.get());
  if (stream_) {
    if (!aborted_ && clean) stream_->send_close_notify();
    stream_.reset();
  }
  if (closer != nullptr) closer->close_after_loop_pass(std::move(fd_));  // its sniff event's delete lands first
  fd_.reset();
}

}  // namespace boxproxy
