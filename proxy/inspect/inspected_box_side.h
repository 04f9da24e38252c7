// SPDX-License-Identifier: Apache-2.0
// An inspected connection's box side (proxy/inspect/inspected_connection.h): the box's socket until
// its first byte is peeked (a TLS handshake record, or `not tls`), the TLS stream the proxy serves
// it with the decided host's leaf (an SNI naming another host fails the handshake: `sni mismatch`),
// and, when the box chose "h2" by ALPN, the H2Front that stands between that stream and the
// connection's HTTP/1.1 state machine. It also keeps what the box did to its side (closed it) and
// how the proxy will end it (cut short, without close_notify), why the box's handshake failed, and
// the bytes queued to the box.
//
// It never decides what is answered: the connection reads each request from in() and writes its
// answer to out() (the TLS stream's plaintext, or over HTTP/2 the front's HTTP/1.1 side).
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "proxy/event_owners.h"
#include "proxy/inspect/h2_front.h"
#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/tls_contexts.h"
#include "proxy/inspect/tls_stream.h"
#include "proxy/unique_fd.h"
#include "table/tls_failure.h"

namespace boxproxy {

class LoopPassCloser;  // proxy/loop_pass_closer.h

class InspectedBoxSide {
 public:
  // What the box's first byte, peeked, says.
  enum class Sniffed : std::uint8_t {
    waiting,  // nothing yet (a transient error): the watch goes on
    failed,   // the socket failed
    closed,   // the box closed before sending anything
    not_tls,  // not a TLS handshake record: SPEC §18's `not tls`
    tls,      // a TLS handshake record: the handshake may begin (open_tls)
  };
  // What the box's TLS is served with: the box-facing context, the decided port, the leaf and its
  // key, the closer (proxy/loop_pass_closer.h; null: the socket closes at once), and the
  // connection's callbacks for its stream. All but the callbacks' target must outlive the side.
  struct Accepting {
    event_base* base;
    SSL_CTX* ctx;
    std::uint16_t port;  // the decided port: a resumed session must have been made for it and the host
    X509* certificate;
    EVP_PKEY* key;
    LoopPassCloser* closer;
    TlsStream::Callbacks callbacks;
  };

  // `fd`: the box's socket (connected, non-blocking); `host`: the decided host, the one an SNI may name.
  InspectedBoxSide(UniqueFd fd, std::string host) noexcept : fd_(std::move(fd)) { sni_check_.host = std::move(host); }
  InspectedBoxSide(const InspectedBoxSide&) = delete;  // the SSL holds sni_check_'s address
  InspectedBoxSide& operator=(const InspectedBoxSide&) = delete;

  // Watches the socket for the box's first byte: `on_sniff` with `arg` when it may have come.
  [[nodiscard]] bool watch(event_base* base, event_callback_fn on_sniff, void* arg);
  // Peeks at the first byte; the watch ends once it says anything but `waiting`.
  [[nodiscard]] Sniffed sniff() noexcept;
  // The box's TLS handshake begins; false when it cannot (the socket is then still here to close).
  [[nodiscard]] bool open_tls(const Accepting& accepting);
  // After the handshake: when the box chose "h2" by ALPN, the front takes its stream; false when
  // the front cannot be made.
  [[nodiscard]] bool start_h2_if_chosen(std::size_t max_head_bytes, H2Front::Hooks hooks);

  [[nodiscard]] TlsStream* stream() const noexcept { return stream_.get(); }
  [[nodiscard]] H2Front* h2() const noexcept { return h2_.get(); }
  // The box-facing plaintext: the TLS stream's, or over HTTP/2 the front's HTTP/1.1 side.
  [[nodiscard]] evbuffer* in() const noexcept { return h2_ ? h2_->requests() : stream_->input(); }
  [[nodiscard]] evbuffer* out() const noexcept { return h2_ ? h2_->answers() : stream_->output(); }
  // A ClientHello named another host (the handshake failed in the SNI callback, tls_contexts.cc).
  [[nodiscard]] bool sni_mismatched() const noexcept { return sni_check_.mismatched; }

  // The box closed its side (what it sent before is still served).
  [[nodiscard]] bool eof() const noexcept { return eof_; }
  void note_eof() noexcept { eof_ = true; }
  // The box must see its connection's end as cut short: no close_notify when it closes.
  [[nodiscard]] bool aborted() const noexcept { return aborted_; }
  void abort() noexcept { aborted_ = true; }
  // Why the box's handshake failed (InspectorEnded::tls): the first word.
  [[nodiscard]] std::optional<TlsFailure> tls_failure() const noexcept { return tls_failure_; }
  void note_tls_failure(TlsFailure why) noexcept { tls_failure_ = why; }

  void count_queued(std::uint64_t bytes) noexcept { queued_ += bytes; }
  [[nodiscard]] std::uint64_t queued() const noexcept { return queued_; }  // every byte queued to the box

  // The end: the watch stops, close_notify goes out when the end is `clean` and the side was not
  // aborted, and the socket closes (through `closer`, one loop pass late, when there is one).
  void close(bool clean, LoopPassCloser* closer) noexcept;

 private:
  // Owners in dependency order: the event and the stream go before the socket the sniff watches.
  // The SNI callback's check outlives the stream whose SSL points at it.
  UniqueFd fd_;  // until the sniff passes it to stream_
  EventPtr sniff_event_;
  ServerNameCheck sni_check_;  // what the SNI callback checks the ClientHello against
  std::unique_ptr<TlsStream> stream_;
  std::unique_ptr<H2Front> h2_;  // set once the box chose "h2"
  bool eof_ = false;
  bool aborted_ = false;
  std::optional<TlsFailure> tls_failure_;
  std::uint64_t queued_ = 0;
};

}  // namespace boxproxy
