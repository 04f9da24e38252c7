// SPDX-License-Identifier: Apache-2.0
// One inspected connection (SPEC §18), in the inspecting process (proxy/inspect/DESIGN.md): the
// box's socket and a socket already connected to the checked address come in; the proxy takes
// the box's TLS handshake with the decided host's leaf, makes its own TLS connection to the
// origin (verified, the host name checked), and judges every HTTP/1.1 request alone
// (proxy/stages/inspected_request.h) before it goes on. serve decided, dialled and keeps the slot;
// this object never resolves, dials or logs: it tells its owner through Hooks.
//
// Life: start() -> the first byte is peeked (not 0x16: `not tls`) -> the box's handshake (an SNI
// naming another host: `sni mismatch`), the origin's handshake meanwhile -> requests, each
// judged: a refusal is answered inside TLS (the connection goes on when the framing is sound); an
// allowed request goes to the origin, its response comes back, both bodies exactly as framed ->
// keep-alive while both sides allow it; when the origin's connection cannot be reused the next
// allowed request asks the owner for another (need_upstream) -> a 101 to a WebSocket upgrade
// turns the connection into a relay -> `ended`, once, as the last hook call.
//
// HTTP/2 (SPEC §19): when the box chose "h2" by ALPN, an H2Front (proxy/inspect/h2_front.h) stands
// between the box's TLS stream and everything above: the state machine takes each stream's head
// from the front as a message (read_h2_head) and its body from client_in, gives each answer's head
// back as a message (send_answer_head) and its body to client_out, so a stream is judged, refused,
// forwarded and recorded exactly as an HTTP/1.1 request is, with no head printed to be parsed. The
// front adds its own bounds (h2_front.h) to those below. When the origin chose "h2" by ALPN, an
// H2Back (proxy/inspect/h2_back.h) stands likewise between the origin's TLS stream and the state
// machine's origin-facing reads and writes (InspectedOriginLink::in, out), in any pairing with the
// front.
//
// By object (proxy/inspect/DESIGN.md, "The inspected connection, by object"): the box side
// (inspected_box_side.h: the sniff, the box's TLS, the H2Front), the origin link
// (inspected_origin_link.h: the origin's TLS, the H2Back, redials, resumed sessions), the request
// in progress (inspected_exchange_state.h) and the asks' books (inspected_asks.h). The connection
// owns one of each and keeps the state machine's settle loop, its phase, the timer and the hooks.
//
// Memory, whatever either side does (every bound is a constant here or a setup value):
//   box-facing input   <= max(max_head_bytes + 1, 16 KiB), plus one read (a TLS record of 16 KiB
//                          and the 4 KiB libevent asks for first);
//   origin-facing input <= kMaxResponseHeadBytes + 1, plus one read;
//   box-facing output   <= kMaxQueued, plus one rewritten response head (< kMaxResponseHeadBytes
//                          + 64 bytes) or one refusal (< 256 bytes);
//   origin-facing output <= kMaxQueued, plus one request head (< max_head_bytes + 64 bytes);
//   OpenSSL, per side   about 34 KiB of record buffers while busy, none while idle
//                          (SSL_MODE_RELEASE_BUFFERS), and the session itself (a few KiB).
// Nothing is read from a side while its input is at its bound or what it feeds is; reading
// resumes as the other side drains. With the defaults the sum is at most about 450 KiB (worked
// out here, not measured: 52 + 84 + 128 + 96 + 68 KiB, the head terms only when a peer sends
// heads near the limits); between requests the buffers are empty and freed, leaving the two TLS
// sessions and a few small objects. Measured over 1,000 connections held at once
// (tests/e2e/test_inspect_memory.py, which holds the manual's RESOURCE BOUNDS to it): 37-43 KiB
// idle, the same with a request waiting on its origin, 75-125 KiB (over several runs) with the box-facing output at
// its bound. A box that speaks HTTP/2 adds h2_front.h's bounds: 32 streams x 16 KiB of request body,
// 4 x max_head_bytes of heads held, 64 KiB of answer held for a shut window, 64 KiB of request toward
// the origin side and nghttp2's session (under 32 KiB): at most 1250 KiB a connection with the
// defaults (worked out; the manual's figure). Measured by the same test over 200 connections, each
// with three 16 KiB bodies waiting behind its first stream and its window never opened: 163-166 KiB
// while the first waits on its origin, 311-314 KiB while it passes a response into the shut window.
//
// A request whose body the signer must hash (SPEC §20, inspected_held_body.cc) adds that body, at
// most setup.max_held_body as framed (--max-held-body, 1 MiB by default), held until it goes to the
// origin; over HTTP/2 one stream is served at a time, so one such body a connection.
//
// The process must ignore SIGPIPE (as serve does): OpenSSL writes to its sockets with write(2),
// which raises it when a peer has gone.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "proxy/clock.h"
#include "proxy/event_owners.h"
#include "proxy/http_exchange.h"
#include "proxy/inspector_records.h"
#include "proxy/inspect/h2_back.h"
#include "proxy/inspect/h2_front.h"
#include "proxy/inspect/inspected_asks.h"
#include "proxy/inspect/inspected_box_side.h"
#include "proxy/inspect/inspected_exchange_state.h"
#include "proxy/inspect/inspected_origin_link.h"
#include "proxy/inspect/leaf_cert.h"
#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect/origin_pool.h"
#include "proxy/inspect/origin_sessions.h"
#include "proxy/inspect/scrub_source.h"
#include "proxy/inspect/tls_contexts.h"
#include "proxy/inspect/tls_stream.h"
#include "proxy/timer.h"
#include "proxy/tunnel.h"
#include "proxy/unique_fd.h"
#include "proxy/stages/inspected_request.h"
#include "proxy/stages/response_chain.h"
#include "table/inspect_endpoint.h"

namespace boxproxy {

// What an output may hold before the side that feeds it stops being read: four TLS records, so a
// fast reader is never starved while a slow one holds little.
inline constexpr std::size_t kMaxQueued = 64 * 1024;
// The longest response head an origin may send (as the plain path's, proxy/http_exchange.cc).
inline constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

struct InspectedSetup {
  std::uint64_t id = 0;  // the connection's, for the owner's records
  std::string host;      // decided host: the SNI, if any, must name it; Host must name it
  std::uint16_t port = 443;  // decided port (Host may leave it out when it is 443)
  std::shared_ptr<const InspectEndpoint> endpoint;  // its rules (never null at start)
  std::shared_ptr<const Leaf> leaf;                 // what the box-facing side presents
  EVP_PKEY* leaf_key = nullptr;                     // the leaf's key (LeafCache::key()); must outlive this
  SSL_CTX* client_ctx = nullptr;  // the box-facing context (make_client_facing_context); must outlive this
  SSL_CTX* origin_ctx = nullptr;  // the origin-facing context (make_origin_context); must outlive this
  // Origins' TLS sessions, to resume (origin_sessions.h); must outlive this. Null: none kept.
  OriginSessions* origin_sessions = nullptr;
  // Idle origin connections kept across box connections (origin_pool.h); must outlive this. Null:
  // this connection's is never kept.
  OriginPool* origin_pool = nullptr;
  // The kept origin connection serve gave this one (InspectorConnection::pooled): taken at start,
  // in place of an upstream socket; when it is gone, the first request asks for a dial.
  std::optional<std::uint64_t> pooled{};
  bool log_paths = false;
  // The session's secrets, for the endpoint's "inject" (SPEC §19); must outlive this. Null: none
  // set (the unit tests' setups), so an injecting endpoint's every request is `secret missing`.
  const SecretLookup* secrets = nullptr;
  const Placeholders* placeholders = nullptr;  // the session's stand-ins; must outlive this; null: none
  // What every response is scrubbed for (SPEC §19a); must outlive this. Null: nothing is.
  ScrubSource* scrub = nullptr;
  // serve's --max-head-bytes, --head-timeout and --idle-timeout (the start message); these values
  // are only for a setup made without them (the unit tests).
  std::size_t max_head_bytes = 32 * 1024;  // each request head
  std::size_t max_held_body = 1024 * 1024;  // --max-held-body: a body held to be hashed for signing (SPEC §20)
  double head_timeout = 10;  // the box's TLS handshake, each request head, waiting for an origin
  double idle_timeout = 0;   // no byte either way: in an exchange, a relay, or between requests; 0: none
  // Closes the connection's sockets one loop pass late (proxy/loop_pass_closer.h), for the
  // inspector's loop, which batches its epoll changes; must outlive the connection. Null: at once.
  LoopPassCloser* closer = nullptr;
};

// What the connection reports (a request, an ask, its end) are the very structs the inspector
// sends serve: InspectorRequest, InspectorAsk, InspectorEnded (proxy/inspector_records.h).


class InspectedConnection {
 public:
  // Called from the loop, never from inside a call of the owner's (start, give_upstream,
  // upstream_failed, set_endpoint). The owner may delete the connection inside any of them;
  // `ended` is the last one.
  struct Hooks {
    void* owner;
    void (*request)(void* owner, const InspectorRequest& record);
    void (*need_upstream)(void* owner);  // answer with give_upstream or upstream_failed
    void (*ended)(void* owner, const InspectorEnded& record);
    // SPEC §20: a request waits for the supervisor; answer with answer_ask. Null: nobody can be
    // asked, and every such request is refused with asked=none.
    void (*ask)(void* owner, const InspectorAsk& ask) = nullptr;
  };

  // Takes both sockets (connected, non-blocking). Null when it cannot start (allocation, SSL_new,
  // a setup without its contexts, leaf or endpoint); the sockets are closed then.
  [[nodiscard]] static std::unique_ptr<InspectedConnection> start(event_base* base, UniqueFd client,
                                                                  UniqueFd upstream, InspectedSetup setup,
                                                                  Hooks hooks);
  ~InspectedConnection();
  InspectedConnection(const InspectedConnection&) = delete;
  InspectedConnection& operator=(const InspectedConnection&) = delete;

  // The answer to need_upstream: a new connection to the same checked address. One given while
  // the connection has an origin connection already is closed.
  void give_upstream(UniqueFd fd);
  // ... or none could be made: the waiting request is refused as `dial failed` (502).
  void upstream_failed();
  // A live change, effective from the next request; nullptr: the endpoint was removed, and the
  // connection closes before its next request (at once when it is between requests).
  void set_endpoint(std::shared_ptr<const InspectEndpoint> endpoint);
  // SPEC §20: the answer to ask `n` (once, always: the request goes on; else it is refused). One
  // for an ask no longer waiting (the box left, or it was answered) is dropped.
  void answer_ask(std::uint64_t n, RequestAsked asked);

 private:
  // Where the connection stands (one value at a time; SPEC §18's order of things).
  enum class Phase : std::uint8_t {
    sniffing,          // waiting for the box's first byte, peeked: a TLS handshake record or not
    handshaking,       // the box's TLS handshake, with the leaf
    reading_head,      // between requests: waiting for, and reading, a request head
    refusing,          // a refusal is queued; the refused request's body is read and dropped
    holding_body,      // the signer needs the body's hash: it is read into the exchange (SPEC §20)
    // SPEC §20: a request held for the supervisor's answer. Its head stays in the box-facing input
    // (judged again when the answer comes) and nothing more is read from the box: its body stays
    // with the box, and an Expect: 100-continue is answered (by the origin) only after a yes.
    asking,
    waiting_upstream,  // an allowed request waits for an origin connection (its handshake, or serve's dial)
    exchanging,        // the request goes up, its response comes back
    relaying,          // after a 101 to a WebSocket: bytes both ways until either side closes
    closing,           // the last bytes go out, then both sides are closed
    ended,             // everything is closed; `ended` is (or has been) reported
  };
  // What the one timer measures now.
  enum class TimerRole : std::uint8_t {
    none,
    handshake,  // the box's first byte and TLS handshake: head_timeout from the start
    // Between requests and while a head comes: head_timeout from the wait's start, however slowly
    // bytes come, or idle_timeout with no byte either way (when set), whichever ends first.
    head,
    upstream,  // waiting for an origin connection: head_timeout from the wait's start
    drain,     // a refused body being dropped, or the last bytes going out: head_timeout of quiet
    idle,      // an exchange or a relay: idle_timeout of quiet
    linger,    // HTTP/2, closing, everything sent: kH2LingerSeconds for the box to close first
  };

  InspectedConnection(event_base* base, UniqueFd client, InspectedSetup setup, Hooks hooks);

  // ---- set-up ----
  [[nodiscard]] bool init(UniqueFd upstream);
  [[nodiscard]] bool open_client_tls();  // box_.open_tls with the leaf and this connection's callbacks
  [[nodiscard]] bool open_origin_tls(UniqueFd fd);  // link_.open with this connection's callbacks
  // The origin connection to start with: setup_.pooled's from the pool, else `upstream`'s handshake,
  // else none (the link gone: the first request asks serve for a dial). False when it cannot start.
  [[nodiscard]] bool start_origin(UniqueFd upstream);
  // The link's origin connection, if idle and clean, kept in the pool under this connection's id;
  // true when kept (the ended message says "pooled").
  [[nodiscard]] bool keep_idle_origin() noexcept;

  // ---- libevent's callbacks: each acts, then advances, then delivers the hooks ----
  static void on_sniff(evutil_socket_t, short, void* self) noexcept;
  static void on_kick(evutil_socket_t, short, void* self) noexcept;
  static void on_client_io(bufferevent*, void* self) noexcept;
  static void on_client_event(bufferevent*, short what, void* self) noexcept;
  static void on_origin_io(bufferevent*, void* self) noexcept;
  static void on_origin_event(bufferevent*, short what, void* self) noexcept;
  static void on_timer(void* self) noexcept;
  static void on_quiet_origin(void* self) noexcept;
  static void on_h2_refused(void* self, const H2Front::Refused& refused);
  // advance(), then the hooks queued meanwhile; `this` may be gone after it.
  void settle() noexcept;
  // Runs `act` (a callback's work), then settle(); a throw from `act` ends the connection first.
  template <class Act>
  void act_then_settle(Act act) noexcept;
  void update_reading() noexcept;
  void deliver_hooks() noexcept;
  void kick() noexcept;

  void sniff();
  void client_event(short what);
  void timer_fired();

  // ---- the state machine: advance() runs steps until none makes progress ----
  void advance();
  [[nodiscard]] bool step();
  [[nodiscard]] bool step_phase();
  [[nodiscard]] bool pump_h2();  // the box's frames in, streams served, frames out
  void abandon_h2_exchange();    // the box reset the stream whose request was going up
  [[nodiscard]] bool read_head();
  [[nodiscard]] bool read_h2_head();  // the front's next head, a message (no text to parse)
  // `head_bytes`: its text at the front of the box's input (HTTP/1.1); 0 for the front's message.
  void begin_request(const RequestHead& head, std::size_t head_bytes);
  void take_head(std::size_t head_bytes);  // `head` (begin_request's) is done with: it goes
  void hold_for_ask(const RequestHead& head);  // the ask stage waits: the owner is asked
  [[nodiscard]] bool drop_refused_body();
  // ---- a body held to be hashed for signing (inspected_held_body.cc) ----
  static void note_trace(InspectorRequest& record, const std::vector<TraceEntry>& trace);
  void start_holding(const RequestHead& head);
  [[nodiscard]] bool hold_body();
  void sign_held();
  void send_held_body();  // after its head, once an origin connection is ready
  void refuse_held(Reason refusal, std::optional<TunnelEnd> close_with);  // with the held head's detail
  [[nodiscard]] bool wait_for_origin();
  [[nodiscard]] bool exchange();
  [[nodiscard]] bool pass_request_body();
  [[nodiscard]] bool read_response_head();
  // The origin's next response head: parsed from an HTTP/1.1 origin's text, or as the H2Back gave
  // it (fields: issue 34 item 2, no text between them); take_origin_head drops it once used.
  struct OriginHead {
    enum class Status : std::uint8_t {
      waiting,  // none yet
      ended,    // none will come: the origin closed (or its stream was cut) first
      broke,    // what came cannot be a head (malformed, past kMaxResponseHeadBytes)
      ready,    // `head` is the next
    };
    Status status = Status::waiting;
    ResponseHead head;          // views into the origin's input, or into the back's message
    std::size_t consumed = 0;   // an HTTP/1.1 head's bytes
  };
  [[nodiscard]] OriginHead next_origin_head();
  void take_origin_head(std::size_t consumed);
  [[nodiscard]] bool pass_response_body();
  [[nodiscard]] bool origin_ended_early();
  [[nodiscard]] bool origin_broke();
  void finish_exchange();
  [[nodiscard]] bool switch_to_relay(const ResponseHead& head, std::size_t head_bytes);
  [[nodiscard]] bool relay();
  [[nodiscard]] bool close_when_flushed();
  // ---- the response's stages (inspected_response_stages.cc) ----
  // Before more of the response goes through the stages: InspectedExchange::renew_response_stages,
  // what the old patterns held queued to the box.
  void renew_response_stages();
  // SPEC §19a: on an endpoint that carries a credential, a response in a coding the stages cannot
  // read (Content-Encoding, grpc-encoding other than identity) does not reach the box.
  [[nodiscard]] bool coding_unreadable(const ResponseHead& head) const;
  // What the stages hold goes to the box: when the origin has been quiet for kQuietOriginSeconds,
  // and when the response or stream ends.
  void release_held_response();
  void watch_quiet_origin();  // after bytes went through the stages: (re)arms or disarms the wait

  // ---- answers and ends ----
  // Answers the current request with `refusal`; closes after it when `close_with` says why.
  // `detail`: what the body says after its words (proxy/stages/refusal_detail.h), when the request
  // was parsed.
  void refuse(Reason refusal, std::optional<TunnelEnd> close_with, std::string_view detail = {});
  void refuse_unparsed(Reason refusal);  // a head that did not parse: answered, then closed
  void refuse_connection(Reason refusal);  // not tls, sni mismatch: closed without a word
  void record_request(std::optional<Reason> refusal, std::uint16_t status);
  void record_exchange();  // the allowed request in progress, as it stands
  void close_after_flush(TunnelEnd end);
  void end_now(TunnelEnd end);
  void arm(TimerRole role);
  [[nodiscard]] double head_wait_left() const noexcept;  // seconds, for TimerRole::head

  // Moves what `from` holds (at most what `to` has room for, kMaxQueued) through `cursor` into
  // `to`, counting it in `count`; true when any byte moved. `done`/`malformed` report the body.
  struct Moved {
    bool moved = false;
    bool done = false;
    bool malformed = false;
  };
  [[nodiscard]] Moved move_body(evbuffer* from, evbuffer* to, BodyCursor& cursor, std::uint64_t& count,
                                ResponseChain* stages = nullptr);
  // move_body from the box's input to the origin's output (counted up), or back (counted down).
  enum class Toward : std::uint8_t { origin, client };
  [[nodiscard]] Moved move_toward(Toward toward, BodyCursor& cursor);
  void queue_to_client(std::string_view bytes);
  // Every answer head the box gets (the origin's rewritten, interim ones, the proxy's refusals and
  // 100 Continue) goes through here: written as HTTP/1.1 text to an HTTP/1.1 box, given as the
  // message to the HTTP/2 front (issue 34 item 2: no text it would parse again). `staged`: through
  // the response's stages first (the origin's heads); false, and nothing sent, when scrubbing grew
  // it past kMaxResponseHeadBytes. Its body follows through queue_to_client or move_toward.
  [[nodiscard]] bool send_answer_head(ResponseMessage head, bool staged);
  // The judged request's head toward the origin (exchange_.judged.upstream), counted up: its text
  // to an HTTP/1.1 origin, its fields to an HTTP/2 origin's back (issue 34 item 2: never printed
  // to be parsed again).
  void send_request_head();

  // The box-facing plaintext the state machine reads and writes (InspectedBoxSide::in, out).
  [[nodiscard]] evbuffer* client_in() const noexcept { return box_.in(); }
  [[nodiscard]] evbuffer* client_out() const noexcept { return box_.out(); }
  // The box's HTTP/2 session, once it chose "h2"; null over HTTP/1.1.
  [[nodiscard]] H2Front* h2() const noexcept { return box_.h2(); }

  [[nodiscard]] bool exchange_open() const noexcept {
    return phase_ == Phase::holding_body || phase_ == Phase::waiting_upstream || phase_ == Phase::exchanging ||
           phase_ == Phase::relaying;
  }

  event_base* base_;
  InspectedSetup setup_;
  Hooks hooks_;

  // Owners in dependency order: the sides go before the events and the timer.
  EventPtr kick_event_;
  Timer timer_;
  InspectedBoxSide box_;  // the box: its socket, TLS, HTTP/2 session (inspected_box_side.h)
  InspectedOriginLink link_;  // the origin: its TLS connection, its HTTP/2 session, redials (inspected_origin_link.h)

  Phase phase_ = Phase::sniffing;
  TimerRole timer_role_ = TimerRole::none;
  InspectedExchange exchange_;  // the request in progress (inspected_exchange_state.h)
  std::optional<TunnelEnd> closing_end_;  // while closing: the end to report

  Clock::time_point last_activity_ = Clock::now();
  Clock::time_point head_wait_started_{};  // while TimerRole::head
  std::optional<Reason> connection_refusal_;

  InspectedAsks asks_;  // SPEC §20: the asks made and their answers (inspected_asks.h)

  // Hooks queued by the steps, delivered by settle() once the state is consistent (deliver_hooks).
  struct DueHooks {
    std::deque<InspectorRequest> records;
    std::deque<InspectorAsk> asks;
    bool need_upstream = false;
    std::optional<InspectorEnded> ended;
    bool* alive = nullptr;  // while hooks run: set false if the owner deletes this in one
  };
  DueHooks due_;
};

}  // namespace boxproxy
