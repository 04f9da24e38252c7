// SPDX-License-Identifier: Apache-2.0
// The origin-facing HTTP/2 session (proxy/inspect/h2_back.h): set-up and bounds, nghttp2's
// callbacks, the requests sent and the responses given back as HTTP/1.1 heads (fields) and bodies.
#include "proxy/inspect/h2_back.h"

#include <algorithm>
#include <array>
#include <new>

#include "proxy/inspect/h2_session_bounds.h"
#include "proxy/inspect/packed_move.h"

#include "proxy/wire/h2_upstream.h"
#include "proxy/wire/http_head.h"
#include "table/secret_value.h"

namespace boxproxy {
namespace {

constexpr std::string_view kBadGatewayBody = "egress: the origin broke HTTP/2\n";
constexpr std::size_t kH2BackFieldsReserved = 16;  // a response list's first allocation, in fields

nghttp2_nv field(const H2Field& f) noexcept {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.value.data())), f.name.size(), f.value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// A header list may hold an injected credential or a swapped secret (SPEC §19): overwritten
// before its memory goes back.
void scrub_list(H2UpstreamRequest& request) noexcept {
  for (H2Field& f : request.fields) {
    scrub(f.name);
    scrub(f.value);
  }
}

}  // namespace

std::unique_ptr<H2Back> H2Back::open(std::size_t max_response_head) noexcept {
  std::unique_ptr<H2Back> back(new (std::nothrow) H2Back(max_response_head));
  if (!back || !back->init()) return nullptr;
  return back;
}

H2Back::~H2Back() = default;

bool H2Back::init() noexcept {
  requests_.reset(evbuffer_new());
  responses_.reset(evbuffer_new());
  body_.reset(evbuffer_new());
  if (!requests_ || !responses_ || !body_) return false;
  // The window opens only as the connection takes the response out: a fast origin is held to it
  // (bounded_h2_option).
  const H2OptionPtr option = bounded_h2_option();
  const H2CallbacksPtr callbacks = new_h2_callbacks({&on_begin_headers, &on_header, &on_invalid_header, &on_frame_recv,
                                                     &on_data_chunk, &on_stream_close});
  if (!option || !callbacks) return false;
  nghttp2_option_set_max_reserved_remote_streams(option.get(), 0);  // no pushed stream is kept
  // No dynamic table for what we send: HPACK would keep an injected credential's or a swapped
  // secret's field there for the connection's life, beyond the scrubbing of our own copies (found
  // in review). Requests to an origin cost a little more header bytes.
  nghttp2_option_set_max_deflate_dynamic_table_size(option.get(), 0);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks.get(), &on_invalid_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks.get(), &on_frame_send);
  nghttp2_session* raw = nullptr;
  if (nghttp2_session_client_new3(&raw, callbacks.get(), this, option.get(), zeroing_h2_mem()) != 0) return false;
  session_.reset(raw);
  const std::array<nghttp2_settings_entry, 4> settings{{
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 0},  // the streams the origin may open: none
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kH2BackWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(max_response_head_)},
  }};
  // The connection's window is the default 64 KiB - 1: below the stream's, so one stream's DATA is
  // bounded by it as well.
  return nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, settings.data(), settings.size()) == 0;
}

// Empties the header list being read and gives its memory back: a list of many small fields
// leaves a large capacity behind, which clear() would keep for the rest of the connection.
void H2Back::forget_fields() noexcept {
  std::vector<H2Field>().swap(response_.fields);
  response_.field_bytes = 0;
}

void H2Back::send_head(const RequestHead& head) {
  drop_pending();  // cannot happen: the connection sends one head an exchange
  pending_ = h2_upstream_request(head);
  head_waiting_ = true;
}

void H2Back::drop_pending() noexcept {
  if (pending_) scrub_list(*pending_);
  pending_.reset();
  head_waiting_ = false;
}

void H2Back::take_head() noexcept {
  if (!heads_.empty()) heads_.pop_front();
}

void H2Back::give_head(ResponseMessage head) { heads_.push_back(std::move(head)); }

void H2Back::add(std::string_view bytes) {
  if (!bytes.empty() && evbuffer_add(responses_.get(), bytes.data(), bytes.size()) == -1) throw std::bad_alloc();
}

// ---------------------------------------------------------------------------------------------
// nghttp2's callbacks, from inside nghttp2_session_mem_recv (pump).

int H2Back::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  if (frame->hd.stream_id == b->current_) {
    b->forget_fields();
  }
  return 0;
}

int H2Back::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t name_length,
                      const std::uint8_t* value, std::size_t value_length, std::uint8_t, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  if (frame->hd.stream_id != b->current_ || b->current_ == 0) return 0;
  // Each field counts kH2FieldOverhead besides its name and value (its std::vector entry): else
  // 65,000 empty fields, one HPACK byte each, would count 64 KiB and hold 4 MiB.
  b->response_.field_bytes += name_length + value_length + kH2FieldOverhead;
  // Past the bound the stream is reset (nghttp2: RST_STREAM INTERNAL_ERROR) and answered 502.
  if (b->response_.field_bytes > b->max_response_head_) {
    b->origin_broke_ = true;
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  try {
    // Room for a usual response's fields at once (a list grown 1, 2, 4, 8 cost four allocations and
    // seven moves a response: callgrind, bench/README.md). Memory: kH2BackFieldsReserved entries
    // (1 KiB) for the one list being read, given back after each (forget_fields).
    if (b->response_.fields.capacity() == 0) b->response_.fields.reserve(kH2BackFieldsReserved);
    b->response_.fields.push_back({std::string(reinterpret_cast<const char*>(name), name_length),
                          std::string(reinterpret_cast<const char*>(value), value_length)});
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

// A field nghttp2 found invalid: the stream is reset rather than the field dropped (the response
// would not be the origin's), and answered 502.
int H2Back::on_invalid_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t*, std::size_t,
                              const std::uint8_t*, std::size_t, std::uint8_t, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  if (frame->hd.stream_id != b->current_ || b->current_ == 0) return 0;
  b->origin_broke_ = true;
  return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int H2Back::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  try {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      // No new stream from now on; one above its last-stream-id nghttp2 closes as REFUSED_STREAM.
      b->close_session(SessionState::closing);
      return 0;
    }
    if (frame->hd.stream_id != b->current_ || b->current_ == 0) return 0;
    const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS) {
      b->head_ended(end);
    } else if (frame->hd.type == NGHTTP2_DATA && end) {
      b->response_ended();
    }
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int H2Back::on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame*, int, void* self) noexcept {
  static_cast<H2Back*>(self)->origin_broke_ = true;
  return 0;
}

int H2Back::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  // We never say GOAWAY but when nghttp2 ends the session for the origin's fault (a PUSH_PROMISE,
  // a flood, a bad frame).
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    b->origin_broke_ = true;
    b->close_session(SessionState::closing);
  }
  return 0;
}

int H2Back::on_data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                          std::size_t length, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  if (id != b->current_ || b->current_ == 0 || b->response_.state != ResponseState::head_written) {
    nghttp2_session_consume(session, id, length);  // nothing of it is kept
    return 0;
  }
  b->unconsumed_ += length;
  try {
    const std::string_view bytes(reinterpret_cast<const char*>(data), length);
    switch (b->response_.framing.kind) {
      case BodyFraming::Kind::chunked:
        if (length > 0) {
          b->add(h2_chunk_prefix(length));
          b->add(bytes);
          b->add(kH2ChunkSuffix);
        }
        break;
      case BodyFraming::Kind::length: {
        // Never a byte past the length (nghttp2 resets such a stream too): what follows in
        // responses() would be taken for the next answer.
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(length, b->response_.left));
        b->add(bytes.substr(0, n));
        b->response_.left -= n;
        break;
      }
      default:
        break;  // no body (HEAD, 204, 304): DATA is dropped
    }
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int H2Back::on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  if (id != b->current_ || b->current_ == 0) return 0;
  try {
    b->stream_failed(error_code);
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

ssize_t H2Back::read_request_body(nghttp2_session*, std::int32_t, std::uint8_t* buffer, std::size_t length,
                                  std::uint32_t* flags, nghttp2_data_source*, void* self) noexcept {
  auto* b = static_cast<H2Back*>(self);
  const int n = evbuffer_remove(b->body_.get(), buffer, length);
  if (n < 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  const BodyState body = b->request_.body;
  if (evbuffer_get_length(b->body_.get()) == 0 && (body == BodyState::taken || body == BodyState::orphaned)) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (body == BodyState::taken) b->request_.body = BodyState::sent;
    return n;
  }
  if (n == 0) return NGHTTP2_ERR_DEFERRED;  // resumed as more of the body comes (feed_body)
  return n;
}

// ---------------------------------------------------------------------------------------------
// The current request and its response.

bool H2Back::start_request() {
  if (current_ != 0 || request_.body == BodyState::orphaned || !head_waiting_) return false;
  std::optional<H2UpstreamRequest> request = std::move(pending_);
  drop_pending();
  // Our own head that cannot be sent (cannot happen), or no stream may be opened: the request is
  // dropped unsent, and the connection sends it again elsewhere when it can (not_processed). So is
  // one that would follow bytes of an earlier body (cannot happen: abandon_request empties body_
  // and makes the session not reusable): they would be sent as this request's body.
  if (!request || session_state_ != SessionState::open || request_.body != BodyState::sent ||
      evbuffer_get_length(body_.get()) != 0) {
    if (request) scrub_list(*request);
    evbuffer_drain(requests_.get(), evbuffer_get_length(requests_.get()));
    request_.body = BodyState::orphaned;
    response_.state = ResponseState::not_processed;
    close_session(SessionState::closing);
    return true;
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(request->fields.size());
  for (const H2Field& f : request->fields) nva.push_back(field(f));
  request_.method = request->method;
  request_.framing = request->framing;
  request_.left = request_.framing.kind == BodyFraming::Kind::length ? request_.framing.length : 0;
  request_.chunks = ChunkedDecoder{};
  const bool no_body = request_.framing.kind == BodyFraming::Kind::none ||
                       (request_.framing.kind == BodyFraming::Kind::length && request_.left == 0);
  request_.body = no_body ? BodyState::sent : BodyState::taking;  // no body: END_STREAM goes with the HEADERS
  nghttp2_data_provider provider{};
  provider.read_callback = &read_request_body;
  // nghttp2 copies the list: ours is scrubbed now.
  const std::int32_t id = nghttp2_submit_request(session_.get(), nullptr, nva.data(), nva.size(),
                                                 no_body ? nullptr : &provider, nullptr);
  scrub_list(*request);
  response_ = IncomingResponse{};  // the last one's header list's memory is given back with it
  if (id <= 0) {  // no stream id left, or nghttp2 out of memory: never sent
    request_.body = BodyState::orphaned;  // nothing of it is held: its bytes are dropped as they come
    response_.state = ResponseState::not_processed;
    close_session(SessionState::closing);
    return true;
  }
  current_ = id;
  return true;
}

bool H2Back::feed_body() {
  if (request_.body != BodyState::taking) return false;
  evbuffer* in = requests_.get();
  bool moved = false;
  while (request_.body == BodyState::taking && evbuffer_get_length(in) > 0 && evbuffer_get_length(body_.get()) < kH2BackBodyHeld) {
    const std::size_t room = kH2BackBodyHeld - evbuffer_get_length(body_.get());
    if (request_.framing.kind == BodyFraming::Kind::length) {
      const auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>({evbuffer_get_length(in), request_.left, static_cast<std::uint64_t>(room)}));
      move_packed(in, body_.get(), n);
      request_.left -= n;
      if (request_.left == 0) request_.body = BodyState::taken;
    } else {
      const std::size_t n = std::min(evbuffer_get_length(in), room);
      const unsigned char* data = evbuffer_pullup(in, static_cast<ev_ssize_t>(n));
      if (data == nullptr) throw std::bad_alloc();
      std::string decoded;
      const std::size_t taken = request_.chunks.feed({reinterpret_cast<const char*>(data), n}, decoded);
      evbuffer_drain(in, taken);
      if (request_.chunks.malformed()) {  // the connection checked it: cannot happen
        close_session(SessionState::closing);
        nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, current_, NGHTTP2_INTERNAL_ERROR);
        return true;
      }
      if (!decoded.empty() && evbuffer_add(body_.get(), decoded.data(), decoded.size()) == -1) throw std::bad_alloc();
      if (request_.chunks.done()) request_.body = BodyState::taken;  // request trailers are dropped (h2_back.h)
      if (taken == 0) break;
    }
    moved = true;
  }
  if (moved) nghttp2_session_resume_data(session_.get(), current_);
  return moved;
}

void H2Back::head_ended(bool end_stream) {
  if (response_.state == ResponseState::head_written) {  // trailers: the response ends with them
    response_ended();
    return;
  }
  auto translated = h1_response_head(std::move(response_.fields), request_.method, end_stream);
  forget_fields();
  // No head longer than kMaxResponseHeadBytes as HTTP/1.1 text reaches the box (an HTTP/1.1
  // origin's would not parse): refused here, as a list past the bound is.
  if (translated && translated->head.text_size() > max_response_head_) translated.reset();
  if (!translated) {
    origin_broke_ = true;
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, current_, NGHTTP2_PROTOCOL_ERROR);
    write_bad_gateway();
    return;
  }
  if (translated->interim) {
    // HEADERS have no flow control, and HPACK makes a few bytes a long head: interim heads are
    // bounded in number (past kMaxInterim the stream is reset and answered 502) and kept only
    // while the connection has taken what came before (else dropped: RFC 9110 §15.2 lets a proxy
    // drop them, and the final answer follows anyway).
    if (++response_.interim > kMaxInterim) {
      origin_broke_ = true;
      nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, current_, NGHTTP2_PROTOCOL_ERROR);
      write_bad_gateway();
      return;
    }
    if (held().heads < static_cast<std::size_t>(kH2BackWindow)) give_head(std::move(translated->head));
    return;  // the final head follows
  }
  give_head(std::move(translated->head));
  response_.state = ResponseState::head_written;
  response_.framing = translated->framing;
  response_.left = response_.framing.kind == BodyFraming::Kind::length ? response_.framing.length : 0;
  if (end_stream) response_ended();
}

void H2Back::response_ended() {
  if (response_.framing.kind == BodyFraming::Kind::chunked) {
    add(h1_last_chunk_with_trailers(response_.fields));  // dropped past kMaxTrailerSection
  } else if (response_.framing.kind == BodyFraming::Kind::length && response_.left != 0) {
    response_.state = ResponseState::cut;  // shorter than its length (nghttp2 resets such a stream): never taken for whole
    close_session(SessionState::closing);
  }
  forget_fields();
  abandon_request(/*stream_open=*/true);  // an answer that came before the whole upload went
  current_ = 0;  // whatever else comes on it is dropped
}

// The current stream closed before its response ended: reset by either side, refused, or closed
// with the session.
void H2Back::stream_failed(std::uint32_t error_code) {
  close_session(SessionState::closing);
  abandon_request(/*stream_open=*/false);
  const bool head_written = response_.state == ResponseState::head_written;
  if (error_code == NGHTTP2_REFUSED_STREAM && !head_written) {
    response_.state = ResponseState::not_processed;  // RFC 9113 §8.7: the origin did nothing with it
  } else if (!head_written) {
    origin_broke_ = true;
    write_bad_gateway();
    return;
  } else {
    response_.state = ResponseState::cut;
  }
  forget_fields();
  current_ = 0;
}

// The origin broke HTTP/2 before the response's head: the box gets a 502 for this request, and its
// connection goes on (this session is not used again).
void H2Back::write_bad_gateway() {
  close_session(SessionState::closing);
  abandon_request(/*stream_open=*/false);  // every caller reset or closed the stream already
  give_head(ResponseMessage{502, "Bad Gateway", "HTTP/1.1",
                            {{"content-type", "text/plain"}, {"content-length", std::to_string(kBadGatewayBody.size())}}});
  // A HEAD's answer has no body, whatever its length says (found by fuzz_h2_back: the body would
  // have been read as the next answer).
  if (request_.method != "HEAD") add(kBadGatewayBody);
  forget_fields();
  response_.state = ResponseState::head_written;
  current_ = 0;
}

// The current stream ended (answered, reset, refused, failed) before its request's EOF went to the
// origin: the rest of that body is in body_ and requests(), or still to come from the connection.
// Left there it would be sent as the body of the next request on this session (the origin would
// read one request's upload as another's). So the stream is cancelled (when it is still open: the
// origin may still be reading it), what is held of the body is dropped, every later byte the
// connection writes is dropped (BodyState::orphaned), and the session is not used again: the next
// request dials a new origin connection.
void H2Back::abandon_request(bool stream_open) noexcept {
  if (request_.body == BodyState::sent || request_.body == BodyState::orphaned) return;
  if (stream_open && current_ != 0 && session_state_ != SessionState::over) {
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, current_, NGHTTP2_CANCEL);
  }
  evbuffer_drain(body_.get(), evbuffer_get_length(body_.get()));
  evbuffer_drain(requests_.get(), evbuffer_get_length(requests_.get()));
  drop_pending();
  request_.body = BodyState::orphaned;  // nothing of it is held any more
  close_session(SessionState::closing);
}

// When the session can say nothing more, the request in flight ends here.
void H2Back::settle_current() {
  if (current_ == 0) return;
  if (session_state_ != SessionState::over && nghttp2_session_want_read(session_.get()) != 0) return;
  if (response_.state != ResponseState::head_written && origin_broke_) {
    write_bad_gateway();
    return;
  }
  close_session(SessionState::closing);
  response_.state = ResponseState::cut;
  abandon_request(/*stream_open=*/false);  // the session is over: nothing can be sent on it
  current_ = 0;
}

// ---------------------------------------------------------------------------------------------

bool H2Back::pump(evbuffer* from, evbuffer* to, std::size_t to_bound) {
  bool progress = false;
  const std::size_t length = evbuffer_get_length(from);
  if (session_state_ == SessionState::over) {
    evbuffer_drain(from, length);
  } else if (length > 0) {
    const unsigned char* data = evbuffer_pullup(from, static_cast<ev_ssize_t>(length));
    if (data == nullptr) throw std::bad_alloc();
    const ssize_t taken = nghttp2_session_mem_recv(session_.get(), data, length);
    if (taken < 0) {
      // The origin broke the protocol, or flooded us: GOAWAY says which, if it can still be sent.
      nghttp2_session_terminate_session(session_.get(), taken == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM
                                                                                    : NGHTTP2_PROTOCOL_ERROR);
      origin_broke_ = true;
      close_session(SessionState::closing);
      close_session(SessionState::over);
      evbuffer_drain(from, length);
    } else {
      evbuffer_drain(from, static_cast<std::size_t>(taken));
    }
    progress = true;
  }
  if (request_.body == BodyState::orphaned) {
    // A request that was never sent: its bytes (the rest of its body) are dropped; the connection
    // writes no other here (reusable() is false).
    const std::size_t n = evbuffer_get_length(requests_.get());
    if (n > 0 || head_waiting_) {
      evbuffer_drain(requests_.get(), n);
      drop_pending();
      progress = true;
    }
  } else {
    // A stream that ended before its request's EOF went out (every such end calls
    // abandon_request; this catches one that did not).
    if (current_ == 0) abandon_request(/*stream_open=*/false);
    if (start_request()) progress = true;
    if (current_ != 0 && feed_body()) progress = true;
  }
  // The window opens as the connection takes the response out.
  if (unconsumed_ > 0 && evbuffer_get_length(responses_.get()) <= static_cast<std::size_t>(kH2BackWindow) / 2) {
    nghttp2_session_consume_connection(session_.get(), unconsumed_);
    if (current_ != 0) nghttp2_session_consume_stream(session_.get(), current_, unconsumed_);
    unconsumed_ = 0;
    progress = true;
  }
  // Asked first whether anything is queued (a few loads): pump runs several times a request, mostly
  // with nothing to send, and an empty nghttp2_session_mem_send still walks the session's queues
  // (about a twentieth of a request's instructions over both sessions, measured with callgrind;
  // bench/README.md, 2026-12-07 22:30). The same frames go out: mem_send sends nothing when
  // want_write is 0 (no frame in progress, none queued, or only DATA with no window to send it).
  while (evbuffer_get_length(to) < to_bound && nghttp2_session_want_write(session_.get()) != 0) {
    const std::uint8_t* frames = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_.get(), &frames);
    if (n < 0) {
      close_session(SessionState::over);
      close_session(SessionState::closing);
      break;
    }
    if (n == 0) break;
    if (evbuffer_add(to, frames, static_cast<std::size_t>(n)) == -1) throw std::bad_alloc();
    progress = true;
  }
  if (nghttp2_session_want_read(session_.get()) == 0 && nghttp2_session_want_write(session_.get()) == 0) close_session(SessionState::over);
  const std::int32_t before = current_;
  settle_current();
  return progress || before != current_;
}

void H2Back::origin_closed() noexcept {
  close_session(SessionState::over);
  close_session(SessionState::closing);
  if (current_ != 0) {
    // As an HTTP/1.1 origin closing before or during its answer: ended, never a 502 of ours.
    response_.state = ResponseState::cut;
    abandon_request(/*stream_open=*/false);
    current_ = 0;
  }
}

bool H2Back::reusable() const noexcept {
  // BodyState::sent: nothing of the last request's body is left to be taken for the next one's.
  return session_state_ == SessionState::open && !origin_broke_ && request_.body == BodyState::sent;
}

bool H2Back::wants_read() const noexcept { return session_state_ != SessionState::over && nghttp2_session_want_read(session_.get()) != 0; }

H2Back::Held H2Back::held() const noexcept {
  Held held;
  for (const H2Field& f : response_.fields) held.head_bytes += f.name.size() + f.value.size() + kH2FieldOverhead;
  held.body = evbuffer_get_length(body_.get());
  held.responses = evbuffer_get_length(responses_.get());
  // A head of many empty fields is counted by its entries, not by its few bytes of text.
  for (const ResponseMessage& head : heads_) held.heads += head.held_size();
  return held;
}

}  // namespace boxproxy
