// SPDX-License-Identifier: Apache-2.0
// An inspected connection's link to its origin (proxy/inspect/inspected_connection.h): where it was
// decided to go (host and port, checked on every origin connection), the proxy's own TLS connection
// to the checked address (verified, the decided host's name checked, a session offered to resume),
// the H2Back that stands on it when the origin chose "h2", where that connection stands, how it
// ended, and why its handshake failed. One origin connection at a time: when it cannot be reused
// the connection asks serve for another (need_upstream) and opens it here again. It also keeps the
// quiet-origin timer (SPEC §19a: what the response's stages hold goes to the box when the origin
// has been quiet a while) and counts the bytes sent to origins.
//
// It never decides what is sent: the connection writes each request to out() and reads the
// response from in() (the TLS stream's plaintext, or over HTTP/2 the back's HTTP/1.1 side).
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "proxy/inspect/h2_back.h"
#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/origin_sessions.h"
#include "proxy/inspect/tls_stream.h"
#include "proxy/stages/request_context.h"
#include "proxy/timer.h"
#include "proxy/unique_fd.h"
#include "table/tls_failure.h"

namespace boxproxy {

class LoopPassCloser;  // proxy/loop_pass_closer.h

class InspectedOriginLink {
 public:
  // Where the origin-facing side stands.
  enum class State : std::uint8_t {
    handshaking,  // its TLS handshake is under way
    ready,        // open: idle, or carrying the current exchange
    gone,         // none (closed, or not reusable): the next allowed request asks for one
    asked,        // need_upstream is (to be) called; waiting for give_upstream or upstream_failed
    dial_failed,  // upstream_failed came: the waiting request gets 502 dial failed
    tls_failed,   // its handshake or certificate failed: 502 upstream tls, and the connection ends
  };
  // What the current origin connection's socket said of its end (one value: a failure ends it too).
  enum class End : std::uint8_t {
    open,    // nothing yet
    closed,  // it closed its side
    failed,  // it failed: what it sent last may have been cut short, and no close_notify goes to it
  };
  // Where an origin connection is opened with: the origin-facing context, the sessions to resume
  // (null: none kept), the closer (proxy/loop_pass_closer.h; null: its socket closes at once), and
  // the connection's callbacks for its stream. All must outlive the link.
  struct Opening {
    event_base* base;
    SSL_CTX* ctx;
    OriginSessions* sessions;
    LoopPassCloser* closer;
    TlsStream::Callbacks callbacks;
  };

  // `on_quiet` with `arg`: the origin has been quiet while the stages hold bytes (watch_quiet).
  InspectedOriginLink(event_base* base, Timer::Callback on_quiet, void* arg) noexcept : quiet_(base, on_quiet, arg) {}
  InspectedOriginLink(const InspectedOriginLink&) = delete;  // each SSL holds session_slot_'s address
  InspectedOriginLink& operator=(const InspectedOriginLink&) = delete;

  [[nodiscard]] bool valid() const noexcept { return quiet_.valid(); }
  // The decided host and port; false when the host does not parse.
  [[nodiscard]] bool decide(std::string_view host, std::uint16_t port);
  [[nodiscard]] const DecidedOrigin& decided() const noexcept { return decided_; }

  // Drops the current origin connection and starts the handshake of one on `fd`; false (and none
  // open) when it cannot start.
  [[nodiscard]] bool open(UniqueFd fd, const Opening& opening);
  // Its stream's event (BEV_EVENT_*): the handshake's end (verified, and "h2" chosen or not), or
  // its failure, or the connection's end.
  void event(short what);
  // Closes the current origin connection (close_notify first unless it failed); the state stays.
  void drop() noexcept;
  // drop(), and the link stands at `next`.
  void drop_as(State next) noexcept {
    drop();
    state_ = next;
  }
  // Its handshake failed (or took too long): dropped, tls_failed, and why.
  void fail_tls(TlsFailure why) noexcept {
    tls_failure_ = why;
    drop_as(State::tls_failed);
  }

  [[nodiscard]] State state() const noexcept { return state_; }
  void set_state(State state) noexcept { state_ = state; }
  [[nodiscard]] End end() const noexcept { return end_; }
  [[nodiscard]] std::optional<TlsFailure> tls_failure() const noexcept { return tls_failure_; }
  // The current origin connection carries a request: whether it carried one before.
  [[nodiscard]] bool mark_used() noexcept {
    carrying_ = true;
    return std::exchange(used_, true);
  }
  // Its response was read whole and the connection may carry the next request: idle again.
  void exchange_done() noexcept { carrying_ = false; }
  // The current origin connection, taken out (the link then has none: gone) when it may carry
  // another box connection's requests (origin_pool.h): ready, carrying no request (none under way,
  // no WebSocket), HTTP/1.1, reusable() and TlsStream::quiet. Null otherwise (the link unchanged).
  [[nodiscard]] std::unique_ptr<TlsStream> release_idle() noexcept;
  // Takes `stream`, an idle origin connection from the pool (verified for this decided host and
  // port, made to the checked address), as the current one: ready, and used (a request it carries
  // meets the keep-alive race as on a connection kept between requests: mark_used says it was).
  void adopt(std::unique_ptr<TlsStream> stream, const Opening& opening);

  [[nodiscard]] TlsStream* stream() const noexcept { return stream_.get(); }
  [[nodiscard]] H2Back* h2() const noexcept { return h2_.get(); }
  [[nodiscard]] bool is(const bufferevent* bev) const noexcept { return stream_ && stream_->is(bev); }
  // The origin-facing plaintext: the TLS stream's, or over HTTP/2 the back's HTTP/1.1 side.
  [[nodiscard]] evbuffer* in() const noexcept { return h2_ ? h2_->responses() : stream_->input(); }
  [[nodiscard]] evbuffer* out() const noexcept { return h2_ ? h2_->requests() : stream_->output(); }
  // Nothing more of the current response will come: the origin closed (or over HTTP/2, its stream
  // ended short).
  [[nodiscard]] bool over() const noexcept { return end_ != End::open || (h2_ && h2_->ended()); }

  // ---- what the connection asks of it ----
  // Over HTTP/2: the origin's frames in, the request out as a stream; false when nothing moved.
  [[nodiscard]] bool pump();
  void hold_writes() noexcept;
  void release_writes() noexcept;
  // What it may read now (SPEC §18's bounds), before what the box side can take is asked.
  [[nodiscard]] bool may_read() const noexcept;
  void set_reading(bool on) noexcept;
  // Requests may be queued to it: open, and its outputs under kMaxQueued.
  [[nodiscard]] bool has_room() const noexcept;
  // An idle origin connection that must not carry the next request: it closed, it spoke out of
  // turn (what it sends unasked must never be taken for the next answer), or its HTTP/2 session
  // takes no new stream.
  [[nodiscard]] bool stale() const noexcept;
  // After a response: it may carry the next request (open, nothing past the response, its HTTP/2
  // session takes another stream).
  [[nodiscard]] bool reusable() const noexcept;
  // Its close came with close_notify over HTTP/1.1: a body read to the close is whole.
  [[nodiscard]] bool closed_cleanly() const noexcept;
  // Bytes of it wait to be read.
  [[nodiscard]] bool has_unread() const noexcept { return stream_ && evbuffer_get_length(in()) > 0; }
  // Nothing of it waits to go out, or it takes nothing more.
  [[nodiscard]] bool flushed() const noexcept;

  // After bytes went through the response's stages: while they hold some (`holding`), what they
  // hold goes out once the origin has been quiet a while (the timer armed again from now); else
  // the timer is off.
  void watch_quiet(bool holding) noexcept;

  void count_sent(std::uint64_t bytes) noexcept { sent_ += bytes; }
  [[nodiscard]] std::uint64_t sent() const noexcept { return sent_; }  // every byte sent to origins

 private:
  void handshake_done();  // the CONNECTED event

  DecidedOrigin decided_;
  OriginSessionSlot session_slot_;  // what each origin SSL of this connection carries; outlives them
  Timer quiet_;  // the origin sent nothing for a while: the stages' hold goes out (SPEC §19a)
  std::unique_ptr<TlsStream> stream_;
  std::unique_ptr<H2Back> h2_;  // set while the origin connection speaks "h2"
  State state_ = State::handshaking;
  End end_ = End::open;
  bool used_ = false;  // the current origin connection carried a request already
  bool carrying_ = false;  // a request is on it, its response not yet read whole (or it relays)
  std::optional<TlsFailure> tls_failure_;  // why its handshake failed (InspectorEnded::tls for upstream tls)
  std::uint64_t sent_ = 0;
};

}  // namespace boxproxy
