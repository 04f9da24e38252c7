// SPDX-License-Identifier: Apache-2.0
// The origin-facing HTTP/2 side of an inspected connection (SPEC §19, HTTP/2 "in any pairing";
// issue 25 item 4, stage 2): the mirror of H2Front (h2_front.h). When the origin picks "h2" by
// ALPN, an nghttp2 client session over the plaintext of the origin's TLS stream stands between it
// and the connection's origin-facing reads and writes. The heads cross as fields, never as text
// (issue 34 item 2, HAProxy's HTX): the connection gives each request's head (judged, injected,
// rewritten, exactly as for an HTTP/1.1 origin) to send_head(), which makes the stream's header
// list from it (proxy/wire/h2_upstream.h), and writes its body as framed to requests() (sent as
// DATA, a chunked one decoded); it takes each response head (interim ones first) from head() as a
// ResponseMessage made from the HEADERS, and reads the body from responses(), framed by the
// origin's content-length, else chunked with the trailers in its trailer section. One request at
// a time: the connection serves one exchange at a time. The HTTP/2 connection is kept across
// requests until the origin sends GOAWAY or closes, or misbehaves.
//
// What the connection sees when things go wrong:
//   - the origin broke the protocol before the response's head (a PUSH_PROMISE, which our
//     SETTINGS_ENABLE_PUSH 0 forbids; a header list past kMaxResponseHeadBytes; an invalid field;
//     a stream reset; a flood): a 502 given here, so the box's connection goes on; the session is
//     not used again (reusable() false: the next request dials again);
//   - the stream refused unprocessed (REFUSED_STREAM, or a GOAWAY whose last-stream-id is below
//     it): ended() and not_processed(), nothing given, so the connection sends it again on a new
//     origin connection (need_upstream) when its body allows;
//   - the origin closed, or broke the protocol after the head: ended(), as an HTTP/1.1 origin
//     closing early (a body cut short ends the box's connection uncleanly).
//
// Bounds (each a constant here or the connection's), so that a hostile origin neither grows
// memory without end nor holds the loop:
//   response body held   kH2BackWindow (SETTINGS_INITIAL_WINDOW_SIZE, and the connection's window
//                        likewise): the window is opened only as the connection takes the bytes
//                        out of responses() (to at most half of it), so responses() holds at most
//                        kH2BackWindow of DATA plus its chunk framing;
//   response heads       kMaxResponseHeadBytes (inspected_connection.h) per header list, counted as
//                        SETTINGS_MAX_HEADER_LIST_SIZE counts it (which says so): names, values
//                        and kH2FieldOverhead (32, h2_session_bounds.h) a field, so that a list of
//                        empty fields holds at most about twice its count (the list's memory is
//                        given back after each); past it the stream is reset and answered 502, as
//                        is a head whose HTTP/1.1 text would pass the bound; trailers past
//                        kMaxTrailerSection (http_body.h) as an HTTP/1.1 section are dropped
//                        whole, never written for ChunkedScanner to refuse; at most kMaxInterim
//                        interim (1xx) heads a response (past them: reset, 502), each kept
//                        only while the heads not yet taken hold less than kH2BackWindow (names,
//                        values and sizeof(MessageField) a field: a head of empty fields counts
//                        its entries), else dropped; and the connection stops reading the origin
//                        while responses() holds kMaxQueued; so responses() holds at most
//                        kH2BackWindow of DATA (plus its chunk framing, at most 6 bytes a frame),
//                        and the heads not taken at most kH2BackWindow and two heads (the final
//                        one or a 502), each at most twice the list's bound in memory (a field
//                        counted 32 in the list is an entry of 64, moved from the list, not copied);
//   request body held    kH2BackBodyHeld of decoded DATA waiting for the origin's window, besides
//                        requests() (bounded by the connection at kMaxQueued); when the stream
//                        ends before its body's END_STREAM went (an early answer to an upload, a
//                        reset), the stream is cancelled, the rest of the body dropped, and the
//                        session not reused: never sent as the next request's body;
//   control frames       nghttp2's limits, named as H2Front's: acknowledgements queued for an
//                        origin that does not read (kH2MaxOutboundAcks: h2_session_bounds.h), entries per SETTINGS,
//                        CONTINUATION frames per header block; past them the session ends (502 for
//                        a request whose head has not come); no pushed stream is ever reserved.
#pragma once

#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/inspect/h2_front.h"
#include "proxy/wire/h2_request.h"
#include "proxy/wire/h2_upstream.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_message.h"

namespace boxproxy {

inline constexpr std::int32_t kH2BackWindow = 64 * 1024;
inline constexpr std::size_t kH2BackBodyHeld = 64 * 1024;
inline constexpr unsigned kMaxInterim = 16;  // interim (1xx) heads one response may send

class H2Back {
 public:
  using EvBufferPtr = H2Front::EvBufferPtr;

  // A client session that has queued its preface and SETTINGS; null when nghttp2 or libevent
  // cannot allocate. `max_response_head`: kMaxResponseHeadBytes (a parameter for the fuzz target).
  [[nodiscard]] static std::unique_ptr<H2Back> open(std::size_t max_response_head) noexcept;
  ~H2Back();
  H2Back(const H2Back&) = delete;
  H2Back& operator=(const H2Back&) = delete;

  // The connection's side. The next request's head, sent as a new stream once the current one
  // has ended (its header list is made now; a head that cannot be carried is not processed); its
  // body follows in requests() as framed. The response heads, in order (interim ones, then the
  // final one or our 502): head() is the first not yet taken (null: none), take_head() drops it;
  // the final head's body follows in responses().
  void send_head(const RequestHead& head);
  [[nodiscard]] const ResponseMessage* head() const noexcept { return heads_.empty() ? nullptr : &heads_.front(); }
  void take_head() noexcept;
  [[nodiscard]] evbuffer* requests() const noexcept { return requests_.get(); }
  [[nodiscard]] evbuffer* responses() const noexcept { return responses_.get(); }

  // Takes everything in `from` (the origin's plaintext), moves the requests and the responses,
  // and writes frames to `to` while it holds less than `to_bound` bytes. True when anything moved.
  [[nodiscard]] bool pump(evbuffer* from, evbuffer* to, std::size_t to_bound);
  // The origin's TLS stream ended (or failed): nothing more will come.
  void origin_closed() noexcept;
  // Another request may be written: the session is alive, the origin has not said GOAWAY, and
  // nothing on it has failed.
  [[nodiscard]] bool reusable() const noexcept;
  // No more of the current response will come (head or body), and it is not whole.
  [[nodiscard]] bool ended() const noexcept {
    return response_.state == ResponseState::cut || response_.state == ResponseState::not_processed;
  }
  // ... and the origin did not process the request (it may be sent again).
  [[nodiscard]] bool not_processed() const noexcept { return response_.state == ResponseState::not_processed; }
  // Whether the origin's bytes are wanted.
  [[nodiscard]] bool wants_read() const noexcept;

  // What it holds, counted from its buffers (tests/fuzz holds it to the bounds above).
  struct Held {
    std::size_t head_bytes = 0;  // the response header list being read, kH2FieldOverhead a field
    std::size_t body = 0;        // request DATA waiting
    std::size_t responses = 0;   // responses() bytes
    std::size_t heads = 0;       // the heads not yet taken: names, values, and an entry a field
  };
  [[nodiscard]] Held held() const noexcept;

 private:
  explicit H2Back(std::size_t max_response_head) noexcept : max_response_head_(max_response_head) {}
  [[nodiscard]] bool init() noexcept;

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*) noexcept;
  static int on_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t, const std::uint8_t*,
                       std::size_t, std::uint8_t, void*) noexcept;
  static int on_invalid_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t,
                               const std::uint8_t*, std::size_t, std::uint8_t, void*) noexcept;
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*) noexcept;
  static int on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame*, int, void*) noexcept;
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*) noexcept;
  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t*, std::size_t,
                           void*) noexcept;
  static int on_stream_close(nghttp2_session*, std::int32_t, std::uint32_t, void*) noexcept;
  static ssize_t read_request_body(nghttp2_session*, std::int32_t, std::uint8_t*, std::size_t, std::uint32_t*,
                                   nghttp2_data_source*, void*) noexcept;

  [[nodiscard]] bool start_request();
  [[nodiscard]] bool feed_body();
  void head_ended(bool end_stream);
  void response_ended();
  void stream_failed(std::uint32_t error_code);
  void settle_current();
  void abandon_request(bool stream_open) noexcept;
  void write_bad_gateway();
  void give_head(ResponseMessage head);
  void drop_pending() noexcept;
  void add(std::string_view bytes);

  // What the session can still do; it only ever gets worse (close_session).
  enum class SessionState : std::uint8_t {
    open,     // another request may be sent on it
    closing,  // no new stream: the origin said GOAWAY, or something on the session failed
    over,     // nothing more is read or sent
  };
  // The current request's body, on its way from requests() to the origin.
  enum class BodyState : std::uint8_t {
    sent,      // its END_STREAM went (or it had no body): nothing of it is held
    taking,    // more of it is still to come from requests()
    taken,     // every byte of it is in body_, waiting for the origin's window
    // It could not be sent, or its stream ended before its body did: its bytes are dropped as the
    // connection writes them, and no other request is sent on this session.
    orphaned,
  };
  // The current request's response.
  enum class ResponseState : std::uint8_t {
    awaiting_head,  // its final head not given yet (interim heads aside)
    head_written,   // its head (or our 502) is given; its body follows in responses()
    cut,            // no more of it will come, and it is not whole
    not_processed,  // cut, and the origin did nothing with the request (it may be sent again)
  };
  struct OutgoingRequest {
    std::string method;
    BodyFraming framing;
    std::uint64_t left = 0;  // a content-length body's bytes still to come from requests()
    ChunkedDecoder chunks;
    BodyState body = BodyState::sent;
  };
  struct IncomingResponse {
    std::vector<H2Field> fields;  // the header list being read (a head, or trailers)
    std::size_t field_bytes = 0;  // its names and values, and kH2FieldOverhead a field
    unsigned interim = 0;         // interim heads received for it
    BodyFraming framing;
    std::uint64_t left = 0;
    ResponseState state = ResponseState::awaiting_head;
  };
  void close_session(SessionState to) noexcept {
    if (to > session_state_) session_state_ = to;
  }
  void forget_fields() noexcept;

  std::size_t max_response_head_;
  std::unique_ptr<nghttp2_session, H2SessionDeleter> session_;
  EvBufferPtr requests_;
  EvBufferPtr responses_;
  EvBufferPtr body_;  // the current request's DATA, decoded, waiting for the origin's window
  // The next request's header list (send_head), until its stream opens; `head_waiting_` with none:
  // a head that could not be carried. It may hold an injected credential: scrubbed when dropped.
  std::optional<H2UpstreamRequest> pending_;
  bool head_waiting_ = false;
  std::deque<ResponseMessage> heads_;  // the response heads not yet taken

  std::int32_t current_ = 0;  // the current request's stream (0: none)
  OutgoingRequest request_;
  IncomingResponse response_;
  std::size_t unconsumed_ = 0;  // DATA bytes written to responses() whose window is not opened yet

  SessionState session_state_ = SessionState::open;
  // The origin broke the protocol (our GOAWAY, a stream we reset, a bad frame): the session is
  // not used again, and a request whose response has no head yet is answered 502.
  bool origin_broke_ = false;
};

}  // namespace boxproxy
