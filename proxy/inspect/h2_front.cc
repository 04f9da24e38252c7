// SPDX-License-Identifier: Apache-2.0
// The box-facing HTTP/2 session (proxy/inspect/h2_front.h): set-up and bounds, nghttp2's
// callbacks, and pump(). Serving the streams one at a time through the HTTP/1.1 side is in
// h2_front_serve.cc.
#include "proxy/inspect/h2_front.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>

#include "proxy/inspect/h2_session_bounds.h"

namespace boxproxy {
namespace {

// Besides the bounds both sessions share (h2_session_bounds.h), nghttp2's default for stream
// resets a box may send a second (the "rapid reset" attack: a burst of kResetBurst, then kResetRate
// a second), named so that the manual can state it.
constexpr std::uint64_t kResetBurst = 1000;
constexpr std::uint64_t kResetRate = 33;

}  // namespace

std::unique_ptr<H2Front> H2Front::open(std::size_t max_head_bytes, Hooks hooks) noexcept {
  std::unique_ptr<H2Front> front(new (std::nothrow) H2Front(max_head_bytes, hooks));
  if (!front || !front->init()) return nullptr;
  return front;
}

H2Front::~H2Front() = default;

bool H2Front::init() noexcept {
  requests_.reset(evbuffer_new());
  answers_.reset(evbuffer_new());
  if (!requests_ || !answers_) return false;
  // A stream's window opens only as its bytes go on to the origin (bounded_h2_option).
  const H2OptionPtr option = bounded_h2_option();
  const H2CallbacksPtr callbacks = new_h2_callbacks({&on_begin_headers, &on_header, &on_invalid_header, &on_frame_recv,
                                                     &on_data_chunk, &on_stream_close});
  if (!option || !callbacks) return false;
  nghttp2_option_set_stream_reset_rate_limit(option.get(), kResetBurst, kResetRate);
  nghttp2_session* raw = nullptr;
  if (nghttp2_session_server_new2(&raw, callbacks.get(), this, option.get()) != 0) return false;
  session_.reset(raw);
  const std::array<nghttp2_settings_entry, 3> settings{{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kH2MaxStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kH2StreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(max_head_bytes_)},
  }};
  if (nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, settings.data(), settings.size()) != 0) return false;
  // The connection's window covers every stream's: a stream's bytes held while it waits must never
  // hold back the one being served (its window is what bounds it).
  const std::int32_t connection_window = static_cast<std::int32_t>(kH2MaxStreams) * kH2StreamWindow;
  return nghttp2_session_set_local_window_size(session_.get(), NGHTTP2_FLAG_NONE, 0, connection_window) == 0;
}

H2Front::Stream* H2Front::find(std::int32_t id) noexcept {
  const auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : &it->second;
}

// ---------------------------------------------------------------------------------------------
// nghttp2's callbacks, called from inside nghttp2_session_mem_recv (pump).

int H2Front::on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* self) noexcept {
  auto* f = static_cast<H2Front*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  const std::int32_t id = frame->hd.stream_id;
  // More open streams than announced (a box that did not wait for our SETTINGS, or ignores them):
  // refused, and nothing is kept for it.
  if (f->streams_.size() >= kH2MaxStreams || f->state_ != SessionState::open) {
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  try {
    Stream& stream = f->streams_[id];
    stream.body.reset(evbuffer_new());
    stream.out.reset(evbuffer_new());
    if (!stream.body || !stream.out) throw std::bad_alloc();
  } catch (...) {
    f->streams_.erase(id);
    return NGHTTP2_ERR_CALLBACK_FAILURE;  // ends the session: this process is out of memory
  }
  return 0;
}

int H2Front::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length, std::uint8_t,
                       void* self) noexcept {
  auto* f = static_cast<H2Front*>(self);
  Stream* stream = f->find(frame->hd.stream_id);
  // Unknown (refused above) or trailers (after the head: dropped, as the HTTP/1.1 side drops a
  // request's, since they would arrive after the head was judged and injected).
  if (stream == nullptr || stream->state != RequestState::listing) return 0;
  // Each field counts kH2FieldOverhead besides its name and value, as SETTINGS_MAX_HEADER_LIST_SIZE
  // does (and its std::vector entry costs): else a list of empty fields, one HPACK byte each,
  // would hold ~64 bytes for each byte counted.
  const std::size_t bytes = name_length + value_length + kH2FieldOverhead;
  stream->head_bytes += bytes;
  if (stream->head_bytes > f->max_head_bytes_) stream->flag(ListFlaw::too_large);
  if (stream->flaw == ListFlaw::too_large) return 0;  // answered 431 when the head ends; nothing more is kept
  // Every stream's held head counts against one bound: past it, this one is refused (drop_stream).
  if (f->held_head_bytes_ + bytes > kH2HeldHeadFactor * f->max_head_bytes_) {
    f->drop_stream(frame->hd.stream_id, *stream);
    return 0;
  }
  try {
    stream->fields.push_back({std::string(reinterpret_cast<const char*>(name), name_length),
                              std::string(reinterpret_cast<const char*>(value), value_length)});
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  f->held_head_bytes_ += bytes;
  stream->held_bytes += bytes;
  return 0;
}

// A field nghttp2's own checks found invalid (a CR, LF or NUL in its value, white space at either
// end, a bad name). Left alone, nghttp2 would drop it silently and serve the rest; the stream is
// refused instead (bad request), as the translation refuses what it finds: a list someone bent to
// slip past a parser is not one to guess the meaning of. (Connection-specific fields and bad
// pseudo-headers nghttp2 resets itself, PROTOCOL_ERROR.)
int H2Front::on_invalid_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t*, std::size_t,
                               const std::uint8_t*, std::size_t, std::uint8_t, void* self) noexcept {
  Stream* stream = static_cast<H2Front*>(self)->find(frame->hd.stream_id);
  if (stream != nullptr && stream->state == RequestState::listing) stream->flag(ListFlaw::malformed);
  return 0;
}

int H2Front::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) noexcept {
  auto* f = static_cast<H2Front*>(self);
  Stream* stream = f->find(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  try {
    const bool headers = frame->hd.type == NGHTTP2_HEADERS;
    if (end && (headers || frame->hd.type == NGHTTP2_DATA) && stream->box == BoxSide::open) {
      stream->box = BoxSide::ended;
    }
    if (headers && stream->state == RequestState::listing) f->head_ended(frame->hd.stream_id, *stream);
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int H2Front::on_data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                           std::size_t length, void* self) noexcept {
  auto* f = static_cast<H2Front*>(self);
  Stream* stream = f->find(id);
  // The connection's window is opened at once for every byte (the stream's window bounds what is
  // held); a stream that will not be served has its own opened too, its bytes dropped.
  nghttp2_session_consume_connection(session, length);
  if (stream == nullptr || (stream->state != RequestState::waiting && stream->state != RequestState::head_fed)) {
    nghttp2_session_consume_stream(session, id, length);
    return 0;
  }
  if (evbuffer_add(stream->body.get(), data, length) == -1) return NGHTTP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int H2Front::on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t, void* self) noexcept {
  auto* f = static_cast<H2Front*>(self);
  Stream* stream = f->find(id);
  if (stream == nullptr) return 0;
  f->release_head(*stream);
  stream->box = stream->box == BoxSide::ended ? BoxSide::closed : BoxSide::cut;
  // The stream being served stays until its exchange ends (the HTTP/1.1 side still reads its
  // request); any other goes now.
  if (id != f->serving_.id) {
    std::erase(f->waiting_, id);
    f->streams_.erase(id);
  }
  return 0;
}

// The answer's DATA, as nghttp2 asks for it within the box's window.
ssize_t H2Front::read_answer(nghttp2_session* session, std::int32_t id, std::uint8_t* buffer, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source*, void* self) noexcept {
  auto* f = static_cast<H2Front*>(self);
  Stream* stream = f->find(id);
  if (stream == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  const int n = evbuffer_remove(stream->out.get(), buffer, length);
  if (n < 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (evbuffer_get_length(stream->out.get()) == 0 && stream->answer == AnswerState::whole) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!stream->trailers.empty()) {
      // The answer's trailers (gRPC's status) end the stream as trailing HEADERS instead of the
      // last DATA frame. nghttp2 copies the fields (NGHTTP2_NV_FLAG_NONE).
      std::vector<nghttp2_nv> nva;
      try {
        nva.reserve(stream->trailers.size());
      } catch (...) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
      }
      for (const H2Field& t : stream->trailers) {
        nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(t.name.data())),
                       reinterpret_cast<std::uint8_t*>(const_cast<char*>(t.value.data())), t.name.size(),
                       t.value.size(), NGHTTP2_NV_FLAG_NONE});
      }
      if (nghttp2_submit_trailer(session, id, nva.data(), nva.size()) == 0) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return n;
  }
  if (n == 0) return NGHTTP2_ERR_DEFERRED;  // resumed when more of the answer comes
  return n;
}

// ---------------------------------------------------------------------------------------------
// pump: the box's bytes in, the streams served, frames out.

H2Front::Pumped H2Front::pump(evbuffer* from, evbuffer* to, std::size_t to_bound) {
  Pumped out;
  const std::size_t length = evbuffer_get_length(from);
  if (over()) {
    evbuffer_drain(from, length);  // nothing the box sends is read once the session is over
  } else if (length > 0) {
    const unsigned char* data = evbuffer_pullup(from, static_cast<ev_ssize_t>(length));
    if (data == nullptr) throw std::bad_alloc();
    const ssize_t taken = nghttp2_session_mem_recv(session_.get(), data, length);
    if (taken < 0) {
      // The box broke the protocol, or flooded us with frames that each want an answer (SETTINGS,
      // PING: past kH2MaxOutboundAcks unread). The GOAWAY says which; it is sent below if it can be.
      nghttp2_session_terminate_session(session_.get(), taken == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM
                                                                                    : NGHTTP2_PROTOCOL_ERROR);
      evbuffer_drain(from, length);
      close(SessionState::over);
    } else {
      evbuffer_drain(from, static_cast<std::size_t>(taken));
      out.progress = true;
    }
  }
  if (!over() && serve()) out.progress = true;
  if (broken()) {
    // The HTTP/1.1 side cannot go on: the box is told the session ended by our side's fault.
    nghttp2_session_terminate_session(session_.get(), NGHTTP2_INTERNAL_ERROR);
    close(SessionState::over);
  }
  // want_write first: an idle mem_send still walks the queues (as H2Back::pump says).
  while (evbuffer_get_length(to) < to_bound && nghttp2_session_want_write(session_.get()) != 0) {
    const std::uint8_t* frames = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_.get(), &frames);
    if (n < 0) {
      out.alive = false;
      break;
    }
    if (n == 0) break;
    if (evbuffer_add(to, frames, static_cast<std::size_t>(n)) == -1) throw std::bad_alloc();
    out.progress = true;
  }
  if (nghttp2_session_want_read(session_.get()) == 0 && nghttp2_session_want_write(session_.get()) == 0) {
    close(SessionState::over);  // GOAWAY both ways, and nothing left to say
  }
  if (over()) out.alive = false;
  out.abandon = serving_.state == ExchangeState::abandoned;
  return out;
}

void H2Front::abandon_current() noexcept {
  evbuffer_drain(requests_.get(), evbuffer_get_length(requests_.get()));
  evbuffer_drain(answers_.get(), evbuffer_get_length(answers_.get()));
  streams_.erase(serving_.id);  // closed already (that is why): nghttp2 holds nothing of it
  serving_.id = 0;
  serving_.state = ExchangeState::going;
}

void H2Front::go_away() noexcept {
  if (state_ != SessionState::open) return;
  close(SessionState::going_away);
  // The last stream named is the last one answered or sent on: those still waiting were never
  // acted on, and the box may send them again on another connection (RFC 9113 §6.8).
  nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE, last_served_, NGHTTP2_NO_ERROR, nullptr, 0);
}

bool H2Front::wants_read() const noexcept { return nghttp2_session_want_read(session_.get()) != 0; }

bool H2Front::flushed() const noexcept {
  if (nghttp2_session_want_write(session_.get()) != 0) return false;
  if (over()) return true;  // no answer will be read any more
  for (const auto& [id, stream] : streams_) {
    if (stream.out && evbuffer_get_length(stream.out.get()) > 0) return false;
  }
  return evbuffer_get_length(answers_.get()) == 0;
}

H2Front::Held H2Front::held() const noexcept {
  Held held;
  held.streams = streams_.size();
  for (const auto& [id, stream] : streams_) {
    for (const H2Field& field : stream.fields) {
      held.head_bytes += field.name.size() + field.value.size() + kH2FieldOverhead;
    }
    if (stream.head && stream.state == RequestState::waiting) held.head_bytes += stream.head->text_size();
    if (stream.body) held.max_body = std::max(held.max_body, evbuffer_get_length(stream.body.get()));
    if (stream.out) held.max_answer = std::max(held.max_answer, evbuffer_get_length(stream.out.get()));
  }
  return held;
}

}  // namespace boxproxy
