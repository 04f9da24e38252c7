// SPDX-License-Identifier: Apache-2.0
// The box-facing HTTP/2 session's streams (proxy/inspect/h2_front.h): each head translated or
// refused on its stream, then the translated ones served one at a time: the head given to the
// connection as a message, the body written to requests(); the answer's head taken as a message
// and its body read back from answers() into HEADERS and DATA.
#include "proxy/inspect/h2_front.h"

#include <algorithm>
#include <utility>
#include <array>
#include <new>

#include "proxy/inspect/packed_move.h"
#include "proxy/wire/h2_upstream.h"
#include "proxy/wire/http_head.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// What requests() may hold before more of a body is written to it: the connection reads it as
// its box-facing input, bounded the same way (four TLS records).
constexpr std::size_t kFeedBound = 64 * 1024;

// Fields an HTTP/1.1 answer may carry that HTTP/2 forbids (RFC 9113 §8.2.2): dropped. The body's
// framing is the stream's own in HTTP/2.
constexpr std::array<std::string_view, 6> kNotInH2 = {"connection", "keep-alive",   "proxy-connection",
                                                      "te",         "transfer-encoding", "upgrade"};

bool dropped_from_answer(std::string_view name, const BodyFraming& framing) noexcept {
  for (const std::string_view n : kNotInH2) {
    if (iequals(name, n)) return true;
  }
  // A chunked answer's length is the sum of its DATA: a content-length beside it is not the
  // origin's to state (HTTP/1.1 ignores it there; an HTTP/2 client would not).
  return framing.kind == BodyFraming::Kind::chunked && iequals(name, "content-length");
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

nghttp2_nv field(const std::string& name, const std::string& value) noexcept {
  // NGHTTP2_NV_FLAG_NONE: nghttp2 copies both, so the strings need not outlive the call.
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

void H2Front::release_head(Stream& stream) noexcept {
  held_head_bytes_ -= std::min(held_head_bytes_, stream.held_bytes);
  stream.held_bytes = 0;
  stream.fields.clear();
  stream.fields.shrink_to_fit();
}

// A stream past the bound on held heads: reset, REFUSED_STREAM (the box may send it again once
// others are served). It is marked, not just reset: the reset goes out later, and a list cut short
// must never be served as if whole when its HEADERS end.
void H2Front::drop_stream(std::int32_t id, Stream& stream) noexcept {
  nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
  stream.state = RequestState::refused;
  release_head(stream);
}

void H2Front::head_ended(std::int32_t id, Stream& stream) {
  if (stream.flaw == ListFlaw::too_large) {
    refuse_stream(id, stream, "", "", Reason::head_too_large);
    return;
  }
  auto translated = translate_h2_request(stream.fields, stream.box_ended(), max_head_bytes_);
  if (stream.flaw == ListFlaw::malformed) translated = Reason::bad_request;
  if (const auto* refusal = std::get_if<Reason>(&translated)) {
    std::string method, path;
    for (const H2Field& f : stream.fields) {
      if (f.name == ":method") method = f.value;
      if (f.name == ":path") path = f.value;
    }
    refuse_stream(id, stream, method, path, *refusal);
    return;
  }
  // The translated head replaces the list in the count, counted as what it holds (its text and its
  // fields' objects: RequestMessage::held_size), which may be more than the list's count (a
  // one-byte field is a five-byte line and a 64-byte object): checked again, or the waiting heads
  // could pass the bound (found by fuzz_h2_front, and in review). Refused as a list over it is.
  const std::size_t translated_bytes = std::get<H2Request>(translated).message.held_size();
  if (held_head_bytes_ - std::min(held_head_bytes_, stream.held_bytes) + translated_bytes >
      kH2HeldHeadFactor * max_head_bytes_) {
    drop_stream(id, stream);
    return;
  }
  stream.state = RequestState::waiting;
  stream.request = std::get<H2Request>(std::move(translated));
  stream.head = std::move(stream.request->message);
  stream.method = stream.request->method;
  stream.body_left = stream.request->length;
  release_head(stream);  // the translated head stands for it now (counted again below)
  stream.held_bytes = translated_bytes;
  held_head_bytes_ += stream.held_bytes;
  waiting_.push_back(id);
}

// A stream the translation refused: its answer, on the stream, and its request line. What it
// stops: a header list the HTTP/1.1 side cannot carry exactly never reaches the judge or the
// origin; the other streams go on.
void H2Front::refuse_stream(std::int32_t id, Stream& stream, const std::string& method, const std::string& path,
                            Reason refusal) {
  stream.state = RequestState::refused;
  release_head(stream);
  const ReasonInfo& row = info(refusal);
  const std::string words = "egress refused: " + std::string(row.log_class) + "\n";
  if (evbuffer_add(stream.out.get(), words.data(), words.size()) == -1) throw std::bad_alloc();
  const std::string refused_name = "x-egress-refused", type_name = "content-type", length_name = "content-length";
  const std::string refused_value(row.log_class), type_value = "text/plain";
  const std::string length_value = std::to_string(words.size());
  submit_answer(id, stream, row.http_status,
                {field(refused_name, refused_value), field(type_name, type_value), field(length_name, length_value)},
                true);
  hooks_.refused(hooks_.owner, Refused{method, path, refusal});
}

// `whole`: every DATA byte of the answer is in the stream's `out` already.
void H2Front::submit_answer(std::int32_t id, Stream& stream, unsigned status, const std::vector<nghttp2_nv>& headers,
                            bool whole) {
  const std::string status_name = ":status", status_value = std::to_string(status);
  std::vector<nghttp2_nv> nva;
  nva.reserve(headers.size() + 1);
  nva.push_back(field(status_name, status_value));
  nva.insert(nva.end(), headers.begin(), headers.end());
  stream.answer = whole ? AnswerState::whole : AnswerState::streaming;
  last_served_ = std::max(last_served_, id);
  nghttp2_data_provider provider{};
  provider.read_callback = &read_answer;
  const bool body = !(whole && evbuffer_get_length(stream.out.get()) == 0);
  // Fails only when the stream is gone (the box reset it): its answer is then read and dropped.
  nghttp2_submit_response(session_.get(), id, nva.data(), nva.size(), body ? &provider : nullptr);
}

bool H2Front::serve() {
  bool progress = false;
  for (;;) {
    if (serving_.state == ExchangeState::abandoned) return progress;
    if (serving_.id == 0) {
      if (waiting_.empty()) return progress;
      serving_.id = waiting_.front();
      waiting_.pop_front();
      last_served_ = std::max(last_served_, serving_.id);
      serving_.state = ExchangeState::going;
      serving_.chunks = ChunkedDecoder{};
      progress = true;
    }
    Stream* stream = find(serving_.id);
    if (stream == nullptr) {  // cannot happen: the current stream is erased only by finish_current
      serving_.id = 0;
      continue;
    }
    bool moved = feed_current(*stream);
    if (serving_.state == ExchangeState::abandoned) return true;  // the connection acts first (abandon_current)
    moved = (stream->answer != AnswerState::none && read_answer_body(*stream)) || moved;
    if (broken()) return true;
    if (stream->state == RequestState::fed && stream->answer == AnswerState::whole) {
      finish_current();
      progress = true;
      continue;
    }
    return progress || moved;
  }
}

bool H2Front::feed_current(Stream& stream) {
  bool moved = false;
  if (stream.parked && evbuffer_get_length(stream.parked.get()) > 0) {
    // A stream back from waiting (park_current): what it had fed goes again, first.
    if (evbuffer_add_buffer(requests_.get(), stream.parked.get()) == -1) throw std::bad_alloc();
    moved = true;
  }
  const H2Request& request = *stream.request;
  if (stream.state == RequestState::waiting) {
    // Its head is given (request()) until the connection takes it; its body goes into requests().
    // It leaves the count of waiting heads as a head written to requests() did: the one being
    // served, and those parked (SPEC §20: at most kMaxParkedStreams), are one head each.
    release_head(stream);
    stream.state = request.body == H2BodyMode::none ? RequestState::fed : RequestState::head_fed;
    moved = true;
  }
  if (stream.state == RequestState::fed) return moved;
  const std::size_t queued = evbuffer_get_length(requests_.get());
  const std::size_t n = std::min(evbuffer_get_length(stream.body.get()), kFeedBound - std::min(queued, kFeedBound));
  if (n > 0) {
    // More DATA than its content-length: nghttp2 resets such a stream (RFC 9113 §8.1.1), and
    // nothing past the length ever reaches the origin, where it would be the next request.
    if (request.body == H2BodyMode::length && n > stream.body_left) {
      close(SessionState::broken);
      return true;
    }
    if (request.body == H2BodyMode::chunked) {
      const std::string prefix = h2_chunk_prefix(n);
      if (evbuffer_add(requests_.get(), prefix.data(), prefix.size()) == -1) throw std::bad_alloc();
    }
    move_packed(stream.body.get(), requests_.get(), n);
    if (request.body == H2BodyMode::chunked &&
        evbuffer_add(requests_.get(), kH2ChunkSuffix.data(), kH2ChunkSuffix.size()) == -1) {
      throw std::bad_alloc();
    }
    if (request.body == H2BodyMode::length) stream.body_left -= n;
    // Its window opens by what went on: the box sends more only as the origin takes it.
    if (!stream.gone()) nghttp2_session_consume_stream(session_.get(), serving_.id, n);
    moved = true;
  }
  if (evbuffer_get_length(stream.body.get()) > 0) return moved;
  if (stream.box_ended()) {
    // A body shorter than its content-length cannot be completed: what went up is half a request.
    if (request.body == H2BodyMode::length && stream.body_left != 0) {
      close(SessionState::broken);
      return true;
    }
    if (request.body == H2BodyMode::chunked &&
        evbuffer_add(requests_.get(), kH2LastChunk.data(), kH2LastChunk.size()) == -1) {
      throw std::bad_alloc();
    }
    stream.state = RequestState::fed;
    return true;
  }
  // Reset before its body ended: the origin may have half a request, which must never be
  // completed with bytes of anyone's choosing. The connection abandons the exchange and drops
  // that origin connection (Pumped::abandon); the other streams go on.
  if (stream.box == BoxSide::cut) serving_.state = ExchangeState::abandoned;
  return moved;
}

const RequestMessage* H2Front::request() const noexcept {
  if (serving_.id == 0 || serving_.state == ExchangeState::abandoned) return nullptr;
  const auto it = streams_.find(serving_.id);
  if (it == streams_.end() || it->second.state == RequestState::waiting || !it->second.head) return nullptr;
  return &*it->second.head;
}

void H2Front::take_request() noexcept {
  Stream* stream = find(serving_.id);
  if (stream != nullptr) stream->head.reset();
}

void H2Front::answer_head(const ResponseMessage& message) {
  Stream* stream = find(serving_.id);
  if (stream == nullptr) return;  // none is served (abandoned): nothing could carry it
  // A stream the box reset still takes its answer: submitting fails harmlessly, and its body is
  // read and dropped (read_answer_body) until the exchange ends.
  if (message.status < 200) return;  // an interim answer: HTTP/2 could carry it, this stage drops it
  if (stream->answer != AnswerState::none) {
    close(SessionState::broken);  // a second final head: the connection never writes one
    return;
  }
  const ResponseHead head = message.view();
  auto framing = response_framing(stream->method, head);
  if (std::holds_alternative<Reason>(framing)) {
    close(SessionState::broken);
    return;
  }
  serving_.framing = std::get<BodyFraming>(framing);
  serving_.left = serving_.framing.length;
  // One pass, and a name copied only when it has a capital to lower (an HTTP/2 origin's never has):
  // the copies and the second pass were a tenth of this function's cost (callgrind, bench/README.md).
  // nghttp2 copies every name and value it is given (NGHTTP2_NV_FLAG_NONE), so pointing at the
  // message's own names is safe; `lowered` is reserved for every field, so it never grows and its
  // strings stay where nva points.
  std::vector<std::string> lowered;
  lowered.reserve(message.fields.size());
  std::vector<nghttp2_nv> nva;
  nva.reserve(message.fields.size());
  for (const MessageField& f : message.fields) {
    if (dropped_from_answer(f.name, serving_.framing)) continue;
    if (std::none_of(f.name.begin(), f.name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      nva.push_back(field(f.name, f.value));
    } else {
      nva.push_back(field(lowered.emplace_back(lowercase(f.name)), f.value));
    }
  }
  const bool whole = serving_.framing.kind == BodyFraming::Kind::none ||
                     (serving_.framing.kind == BodyFraming::Kind::length && serving_.left == 0);
  submit_answer(serving_.id, *stream, message.status, nva, whole);
}

bool H2Front::read_answer_body(Stream& stream) {
  if (stream.answer == AnswerState::whole) return false;
  evbuffer* in = answers_.get();
  evbuffer* out = stream.out.get();
  const std::size_t held = evbuffer_get_length(out);
  if (held >= kH2MaxAnswerHeld) return false;  // the box's window: it reads as it opens
  const std::size_t n = std::min(evbuffer_get_length(in), kH2MaxAnswerHeld - held);
  std::size_t moved = 0;
  bool whole = false;
  switch (serving_.framing.kind) {
    case BodyFraming::Kind::none:
      break;
    case BodyFraming::Kind::length:
      moved = static_cast<std::size_t>(std::min<std::uint64_t>(n, serving_.left));
      serving_.left -= moved;
      whole = serving_.left == 0;
      move_packed(in, out, moved);
      break;
    case BodyFraming::Kind::until_close:
      moved = n;
      move_packed(in, out, moved);
      whole = serving_.state == ExchangeState::ended && evbuffer_get_length(in) == 0;
      break;
    case BodyFraming::Kind::chunked: {
      const unsigned char* data = n > 0 ? evbuffer_pullup(in, static_cast<ev_ssize_t>(n)) : nullptr;
      if (n > 0 && data == nullptr) throw std::bad_alloc();
      std::string decoded;
      moved = serving_.chunks.feed({reinterpret_cast<const char*>(data), n}, decoded);
      evbuffer_drain(in, moved);
      if (serving_.chunks.malformed()) close(SessionState::broken);
      if (!decoded.empty() && evbuffer_add(out, decoded.data(), decoded.size()) == -1) throw std::bad_alloc();
      whole = serving_.chunks.done();
      if (whole) stream.trailers = h2_trailers_from_section(serving_.chunks.trailer_section());
      break;
    }
  }
  if (whole) stream.answer = AnswerState::whole;
  if (stream.gone()) {
    evbuffer_drain(out, evbuffer_get_length(out));  // the box reset it: read and dropped
  } else if (moved > 0 || whole) {
    nghttp2_session_resume_data(session_.get(), serving_.id);  // fails harmlessly when not deferred
  }
  return moved > 0 || whole;
}

std::int32_t H2Front::park_current() {
  Stream* stream = find(serving_.id);
  if (stream == nullptr) return 0;
  if (!stream->parked) {
    stream->parked.reset(evbuffer_new());
    if (!stream->parked) throw std::bad_alloc();
  }
  // Bounded: its head (max_head_bytes) and at most kFeedBound of body (feed_current); what more
  // of the body comes stays within its stream window, which opens only as bytes go on.
  if (evbuffer_add_buffer(stream->parked.get(), requests_.get()) == -1) throw std::bad_alloc();
  const std::int32_t id = std::exchange(serving_.id, 0);
  return id;
}

bool H2Front::resume(std::int32_t id) {
  if (find(id) == nullptr) return false;  // reset by the box meanwhile (on_stream_close erased it)
  waiting_.push_front(id);
  return true;
}

void H2Front::finish_current() {
  Stream* stream = find(serving_.id);
  if (stream != nullptr && stream->gone()) streams_.erase(serving_.id);
  serving_.id = 0;
}

}  // namespace boxproxy
