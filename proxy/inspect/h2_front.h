// SPDX-License-Identifier: Apache-2.0
// The box-facing HTTP/2 side of an inspected connection (SPEC §19, HTTP/2; issue 25 item 4, stage
// 1): an nghttp2 server session over the plaintext of the box's TLS stream, chosen when the box
// offers "h2" by ALPN. It turns every stream into one request (proxy/wire/h2_request.h) and hands
// the requests, one at a time, to its InspectedConnection: the head as a RequestMessage
// (request(), take_request(); issue 34 item 2: no HTTP/1.1 text is written to be parsed again),
// its body framed as an HTTP/1.1 body would be in requests(). The connection gives each answer's
// head back as a ResponseMessage (answer_head) and writes its body to answers() instead of the TLS
// stream's plaintext, so each stream is judged, refused, forwarded and logged by the one path, over
// the one origin connection (HTTP/1.1, or HTTP/2 through an H2Back: h2_back.h). Each answer
// becomes HEADERS and DATA on its stream, and a chunked answer's trailers (filtered on the way,
// http_body.h) trailing HEADERS. A stream the translation refuses is answered
// here (400 or 431 with x-egress-refused) and reported through Hooks; the others wait their turn.
//
// Bounds (every one a constant here, or the connection's --max-head-bytes), so that neither a
// stream flood, a SETTINGS or PING flood, nor a box that never opens its window grows memory
// without end or holds the loop:
//   open streams         kMaxStreams (SETTINGS_MAX_CONCURRENT_STREAMS; more are refused with
//                        RST_STREAM REFUSED_STREAM, before and after the box acknowledges it);
//   header bytes held    kHeldHeadFactor x max_head_bytes over every stream not yet served (a
//                        stream that would pass it, by its list or by the head translated from it,
//                        is refused, REFUSED_STREAM); one stream's list over max_head_bytes is
//                        answered 431. A list counts as SETTINGS_MAX_HEADER_LIST_SIZE counts it:
//                        names, values and kH2FieldOverhead (32, h2_session_bounds.h) a field, so
//                        that a list of empty fields holds at most about twice its count;
//   request body held    kStreamWindow per stream (SETTINGS_INITIAL_WINDOW_SIZE; a stream's
//                        window is opened only as its bytes go to the origin), so at most
//                        kMaxStreams x kStreamWindow over the connection;
//   answer held          kMaxAnswerHeld for the stream being answered; answers() is bounded by
//                        the connection (kMaxQueued), which stops reading the origin when full;
//   frames to the box    written only while the TLS output holds less than kMaxQueued;
//                        nghttp2's own queue of acknowledgements is capped (kH2MaxOutboundAcks)
//                        and so are a SETTINGS frame's entries (kH2MaxSettings), CONTINUATION
//                        frames (h2_session_bounds.h) and stream resets per second (nghttp2's
//                        defaults, named there and in h2_front.cc): past them
//                        the session ends with GOAWAY.
#pragma once

#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/wire/h2_request.h"
#include "proxy/wire/http_body.h"

namespace boxproxy {

inline constexpr std::uint32_t kH2MaxStreams = 32;
inline constexpr std::int32_t kH2StreamWindow = 16 * 1024;
inline constexpr std::size_t kH2HeldHeadFactor = 4;
inline constexpr std::size_t kH2MaxAnswerHeld = 64 * 1024;

struct H2SessionDeleter {
  void operator()(nghttp2_session* s) const noexcept { nghttp2_session_del(s); }
};
struct H2EvBufferDeleter {
  void operator()(evbuffer* b) const noexcept { evbuffer_free(b); }
};

class H2Front {
 public:
  using EvBufferPtr = std::unique_ptr<evbuffer, H2EvBufferDeleter>;
  // A stream refused before it reached the HTTP/1.1 path: the connection writes its request line.
  struct Refused {
    std::string method;  // :method as sent (may be empty: the list did not name one)
    std::string path;    // :path as sent
    Reason refusal;
  };
  struct Hooks {
    void* owner;
    void (*refused)(void* owner, const Refused& refused);
  };
  // What pump() did.
  struct Pumped {
    bool progress = false;  // a byte moved anywhere
    bool alive = true;      // false: the session is over (the box's protocol error, or GOAWAY done)
    // The box reset the stream being served before its whole request went on: the connection must
    // abandon that exchange (its origin connection holds half a request), then call
    // abandon_current().
    bool abandon = false;
  };

  // A server session that has queued its SETTINGS; null when nghttp2 or libevent cannot allocate.
  [[nodiscard]] static std::unique_ptr<H2Front> open(std::size_t max_head_bytes, Hooks hooks) noexcept;
  ~H2Front();
  H2Front(const H2Front&) = delete;
  H2Front& operator=(const H2Front&) = delete;

  // The connection's side: one stream's request at a time, and where its answer's body is written.
  [[nodiscard]] evbuffer* requests() const noexcept { return requests_.get(); }
  [[nodiscard]] evbuffer* answers() const noexcept { return answers_.get(); }
  // The head of the stream being served, until the connection takes it (null: none yet). Its body,
  // framed by the head's content-length or transfer-encoding: chunked, comes in requests().
  [[nodiscard]] const RequestMessage* request() const noexcept;
  // The connection judged the head and is done with it: what request() gave is freed. (A head
  // given leaves the bound on waiting heads when it is given: the one served, and those parked
  // for an ask, are a head each.)
  void take_request() noexcept;
  // The head of the answer to the stream being served (interim ones, below 200, are dropped: this
  // stage sends none): HEADERS on the stream, framed for the body that follows in answers().
  // Without a stream being served (the box reset it) it is dropped.
  void answer_head(const ResponseMessage& head);

  // Takes everything in `from` (the box's plaintext), serves the streams, and writes frames to `to`
  // while it holds less than `to_bound` bytes.
  [[nodiscard]] Pumped pump(evbuffer* from, evbuffer* to, std::size_t to_bound);
  // The connection finished the exchange whose request it read last: an answer read to the
  // origin's close (no length, not chunked) ends here.
  void exchange_ended() noexcept { serving_.state = std::max(serving_.state, ExchangeState::ended); }
  // Forgets the stream being served (after Pumped::abandon): both HTTP/1.1 buffers are emptied and
  // the next stream waiting is served.
  void abandon_current() noexcept;
  // SPEC §20: the stream being served waits for the supervisor. What of its request is in
  // requests() (its head, and what of its body came: the connection has read none of it) goes back
  // to the stream, and the next stream waiting is served: a held stream holds no other up. Its
  // id; 0 when none is being served.
  [[nodiscard]] std::int32_t park_current();
  // Its answer came: it is served again as it was, before the streams that wait. False when the
  // box has reset it meanwhile (it is gone).
  [[nodiscard]] bool resume(std::int32_t id);
  // The stream whose request requests() carries (0: none).
  [[nodiscard]] std::int32_t current() const noexcept { return serving_.id; }
  // Whether stream `id` is still open here (not reset by the box, not finished).
  [[nodiscard]] bool holds(std::int32_t id) const noexcept { return streams_.contains(id); }
  // No more streams: GOAWAY naming the last one taken (the connection is closing).
  void go_away() noexcept;
  // Nothing more is served or answered: what the box sends from now on is read and dropped.
  void stop() noexcept { close(SessionState::over); }
  // Whether the box's bytes are wanted (nghttp2 wants them; what they would add is bounded).
  [[nodiscard]] bool wants_read() const noexcept;
  // Nothing left to write to the box: no frame queued, no answer byte held.
  [[nodiscard]] bool flushed() const noexcept;
  // What the front holds now, counted from its streams themselves (not from its running totals),
  // so that a test can hold it to the bounds above whatever the box sends (tests/fuzz).
  struct Held {
    std::size_t streams = 0;     // streams kept (waiting, being served, or their lists coming)
    std::size_t head_bytes = 0;  // their header lists' bytes and translated heads not yet fed
    std::size_t max_body = 0;    // the most DATA one stream holds that has not gone on
    std::size_t max_answer = 0;  // the most answer bytes one stream holds for the box
  };
  [[nodiscard]] Held held() const noexcept;

 private:
  // Where a stream's request is, from its first HEADERS to the HTTP/1.1 side; it only moves on.
  enum class RequestState : std::uint8_t {
    listing,   // its header list is coming (HEADERS, CONTINUATION)
    // Never served: answered here (400, 431: refuse_stream), or reset with REFUSED_STREAM because
    // the heads held would pass their bound (its list, cut short, must never pass as whole).
    refused,
    waiting,   // translated: waits its turn (in waiting_, or parked)
    head_fed,  // its head is given (request()); its body follows in requests()
    fed,       // the head is given and the whole body (last chunk too) is in requests()
  };
  // What is wrong with a list still coming; only worse (too_large wins when its HEADERS end).
  enum class ListFlaw : std::uint8_t {
    none,
    malformed,  // nghttp2 found a field invalid: 400
    too_large,  // its list passed max_head_bytes: 431, and nothing more of it is kept
  };
  // The box's half of the stream, as nghttp2 reports it; only moves on.
  enum class BoxSide : std::uint8_t {
    open,    // more may come from the box
    ended,   // its END_STREAM came: the request is whole on the wire
    closed,  // nghttp2 closed the stream, after the box's END_STREAM
    cut,     // nghttp2 closed it before the box's END_STREAM (a reset, either way)
  };
  // The answer on the stream.
  enum class AnswerState : std::uint8_t {
    none,       // no HEADERS submitted
    streaming,  // HEADERS submitted; more DATA is to come into `out`
    whole,      // HEADERS submitted, and every DATA byte is in `out`
  };
  struct Stream {
    std::vector<H2Field> fields;
    std::size_t head_bytes = 0;  // of its list (names and values)
    std::size_t held_bytes = 0;  // of those, held and counted against the connection's bound
    RequestState state = RequestState::listing;
    ListFlaw flaw = ListFlaw::none;
    BoxSide box = BoxSide::open;
    std::optional<H2Request> request;  // translated, waiting or being served (its head moved to `head`)
    std::optional<RequestMessage> head;  // translated, until the connection takes it (take_request)
    EvBufferPtr body;                  // DATA received, not yet passed on
    std::uint64_t body_left = 0;       // with a content-length: bytes still to come
    // The answer.
    EvBufferPtr out;  // DATA to send
    AnswerState answer = AnswerState::none;
    std::string method;             // for the answer's framing (HEAD)
    std::vector<H2Field> trailers;  // a chunked answer's trailers (filtered), sent as trailing HEADERS
    EvBufferPtr parked;             // SPEC §20: its request as fed, taken back while it waits for an answer

    void flag(ListFlaw worse) noexcept { flaw = std::max(flaw, worse); }
    [[nodiscard]] bool box_ended() const noexcept { return box == BoxSide::ended || box == BoxSide::closed; }
    [[nodiscard]] bool gone() const noexcept { return box >= BoxSide::closed; }
  };
  // What the session can still do; it only ever gets worse (close).
  enum class SessionState : std::uint8_t {
    open,        // new streams are taken
    going_away,  // our GOAWAY is queued: no new stream is taken; those taken are served
    // The HTTP/1.1 side cannot go on: a stream's body passed or fell short of its length (half a
    // request went up), or an answer that cannot be read. Only ever seen inside pump, which ends
    // the session (GOAWAY INTERNAL_ERROR) before it returns.
    broken,
    over,  // nothing more is served or answered: only frames already queued still go out
  };
  // The exchange being served: the connection's, one at a time.
  enum class ExchangeState : std::uint8_t {
    going,  // the connection reads its request and writes its answer
    ended,  // the connection finished it: an answer read to the origin's close (no length, not chunked) ends here
    // The box reset the stream before its whole request went on: the connection must abandon the
    // exchange (Pumped::abandon, abandon_current) before anything else is served.
    abandoned,
  };
  struct Serving {
    std::int32_t id = 0;  // the stream whose request the connection reads (0: none)
    ExchangeState state = ExchangeState::going;
    // Its answer's framing, read from its head (answer_head).
    BodyFraming framing;
    ChunkedDecoder chunks;
    std::uint64_t left = 0;
  };
  H2Front(std::size_t max_head_bytes, Hooks hooks) noexcept : max_head_bytes_(max_head_bytes), hooks_(hooks) {}
  [[nodiscard]] bool init() noexcept;

  // nghttp2's callbacks (C: each catches everything; a throw becomes a callback failure).
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*) noexcept;
  static int on_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t, const std::uint8_t*,
                       std::size_t, std::uint8_t, void*) noexcept;
  static int on_invalid_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t,
                               const std::uint8_t*, std::size_t, std::uint8_t, void*) noexcept;
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*) noexcept;
  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t*, std::size_t,
                           void*) noexcept;
  static int on_stream_close(nghttp2_session*, std::int32_t, std::uint32_t, void*) noexcept;
  static ssize_t read_answer(nghttp2_session*, std::int32_t, std::uint8_t*, std::size_t, std::uint32_t*,
                             nghttp2_data_source*, void*) noexcept;

  void head_ended(std::int32_t id, Stream& stream);
  void refuse_stream(std::int32_t id, Stream& stream, const std::string& method, const std::string& path,
                     Reason refusal);
  void drop_stream(std::int32_t id, Stream& stream) noexcept;
  void submit_answer(std::int32_t id, Stream& stream, unsigned status, const std::vector<nghttp2_nv>& headers,
                     bool whole);
  [[nodiscard]] bool serve();
  [[nodiscard]] bool feed_current(Stream& stream);
  [[nodiscard]] bool read_answer_body(Stream& stream);
  void finish_current();
  void release_head(Stream& stream) noexcept;
  [[nodiscard]] Stream* find(std::int32_t id) noexcept;
  void close(SessionState to) noexcept { state_ = std::max(state_, to); }
  [[nodiscard]] bool broken() const noexcept { return state_ == SessionState::broken; }
  [[nodiscard]] bool over() const noexcept { return state_ == SessionState::over; }

  std::size_t max_head_bytes_;
  Hooks hooks_;
  std::unique_ptr<nghttp2_session, H2SessionDeleter> session_;
  EvBufferPtr requests_;
  EvBufferPtr answers_;
  std::map<std::int32_t, Stream> streams_;
  std::deque<std::int32_t> waiting_;  // translated streams, in arrival order
  std::size_t held_head_bytes_ = 0;
  std::int32_t last_served_ = 0;  // the highest stream answered here or sent on
  SessionState state_ = SessionState::open;
  Serving serving_;
};

}  // namespace boxproxy
