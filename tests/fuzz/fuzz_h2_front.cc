// SPDX-License-Identifier: Apache-2.0
// The inspector's box-facing HTTP/2 front (proxy/inspect/h2_front.h, SPEC §19) as a hostile box
// drives it once its TLS handshake is done: the bytes are the box's plaintext (the client
// connection preface, then frames with HPACK header blocks), handed to H2Front::pump in pieces as
// the TLS stream hands them over. No socket and no TLS: the front reads and writes evbuffers, and
// this target plays the InspectedConnection above it (proxy/inspect/inspected_connection.cc): it
// takes each request's head as a message (request(), take_request()), reads its body from
// requests() by its framing, gives an origin's answer (its head to answer_head, its body to
// answers()) and says when the exchange ended; it abandons the
// exchange when the front says so, and stops feeding once the session is over.
//
// The first byte is the shape:
//   bits 0-1  --max-head-bytes: 4096, 256, 1024 or 16384;
//   bits 2-3  the origin's answer: a content-length, chunked, 204, or read to the origin's close;
//   bit 4     the box never reads: nothing the front writes is taken away;
//   bit 5     the TLS output's bound is 1 KiB (else 64 KiB, the connection's kMaxQueued);
//   bit 6     the connection closes halfway (go_away) and serves what was taken;
//   bit 7     the bytes carry their own preface (else the preface is put before them).
// Then the split framing (fuzz_support.h): the pieces the box's bytes arrive in.
//
// Invariants (each a FUZZ_CHECK: an abort keeps the input):
//   - every request handed on is a head whose HTTP/1.1 text parse_request_head accepts whole within
//     --max-head-bytes: exactly one Host, no CR, LF or NUL inside a field, no hop-by-hop field, no
//     Transfer-Encoding but the front's own "chunked" (and then no Content-Length), a framing
//     request_framing accepts;
//   - it is exactly the translation (translate_h2_request) of a header list the box sent, as an
//     independent reader decodes the frames (its own frame splitter, its own HPACK inflater), and
//     the requests come in the order their lists did, each list at most once: so the Host names
//     the :authority (or host) of the stream it came from, and no field is made up or changed;
//   - the body that follows is exactly what its framing says, and nothing comes after it until
//     the exchange is answered (no second request smuggled behind a Content-Length);
//   - a refusal the front answers itself is bad_request or head_too_large;
//   - what the front holds stays within the bounds h2_front.h states: streams, header bytes held,
//     one stream's DATA held, one stream's answer held, the HTTP/1.1 request buffer;
//   - what it writes to the box stays under the TLS output's bound plus one frame, and over the
//     whole run within a small multiple of what the box sent plus the answers.
// FUZZ_H2_TRACE=1 in the environment prints, for each input, how many lists the reader found and
// how many requests went on (to check that the seeds reach the HTTP/1.1 side).
#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proxy/inspect/h2_front.h"
#include "proxy/wire/h2_request.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "table/ascii.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::array<std::size_t, 4> kMaxHeads = {4096, 256, 1024, 16384};
constexpr std::size_t kLargeBound = 64 * 1024;  // the connection's kMaxQueued
constexpr std::size_t kSmallBound = 1024;
// One frame more than the bound: pump stops writing once the output reaches it, and nghttp2 hands
// over one frame (at most 16 KiB of DATA, or a small HEADERS here) at a time.
constexpr std::size_t kFrameSlack = 16384 + 9 + 1024;
// The front's request buffer: a head (within --max-head-bytes) or kFeedBound (64 KiB) of body,
// plus one chunk's framing (h2_front_serve.cc).
constexpr std::size_t kFeedBound = 64 * 1024;
constexpr int kMaxRounds = 64;  // pump and serve steps per piece of input, a bound for the target

struct Shape {
  std::size_t max_head;
  unsigned answer;
  bool box_reads;
  std::size_t to_bound;
  bool go_away_halfway;
  bool raw;
};

Shape shape_of(unsigned char byte) {
  return Shape{kMaxHeads[byte & 3], (byte >> 2) & 3u, (byte & 16) == 0, (byte & 32) != 0 ? kSmallBound : kLargeBound,
               (byte & 64) != 0, (byte & 128) != 0};
}

// ---------------------------------------------------------------------------------------------
// The independent reader: the header lists the box sent, translated, in order.

std::uint32_t read24(std::string_view s) {
  return (std::uint32_t{static_cast<unsigned char>(s[0])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(s[1])} << 8) | static_cast<unsigned char>(s[2]);
}
std::uint32_t read31(std::string_view s) {
  return ((std::uint32_t{static_cast<unsigned char>(s[0])} & 0x7f) << 24) |
         (std::uint32_t{static_cast<unsigned char>(s[1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(s[2])} << 8) | static_cast<unsigned char>(s[3]);
}

struct InflaterDeleter {
  void operator()(nghttp2_hd_inflater* i) const noexcept { nghttp2_hd_inflate_del(i); }
};

// Decodes one whole header block; false: HPACK refused it (the session ends there too).
bool inflate(nghttp2_hd_inflater* inflater, std::string_view block, std::vector<H2Field>& fields) {
  auto* in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(block.data()));
  std::size_t left = block.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
    if (n < 0) return false;
    in += n;
    left -= static_cast<std::size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      fields.push_back({std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                        std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen)});
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(inflater);
      return true;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return false;
  }
}

// Every header list in `frames` (the bytes after the preface), translated as the front would;
// the ones the translation refuses are left out. Stops where the framing breaks.
std::vector<std::string> expected_heads(std::string_view frames, std::size_t max_head) {
  std::vector<std::string> heads;
  nghttp2_hd_inflater* raw = nullptr;
  if (nghttp2_hd_inflate_new(&raw) != 0) return heads;
  std::unique_ptr<nghttp2_hd_inflater, InflaterDeleter> inflater(raw);
  std::string block;
  std::uint32_t block_stream = 0;
  bool in_block = false, block_end_stream = false;
  while (frames.size() >= 9) {
    const std::uint32_t length = read24(frames);
    const auto type = static_cast<unsigned char>(frames[3]);
    const auto flags = static_cast<unsigned char>(frames[4]);
    const std::uint32_t stream = read31(frames.substr(5));
    if (frames.size() < 9 + std::size_t{length}) break;
    std::string_view payload = frames.substr(9, length);
    frames.remove_prefix(9 + std::size_t{length});
    if (in_block && (type != NGHTTP2_CONTINUATION || stream != block_stream)) break;  // a protocol error
    if (type == NGHTTP2_HEADERS) {
      if ((flags & NGHTTP2_FLAG_PADDED) != 0) {
        if (payload.empty()) break;
        const std::size_t pad = static_cast<unsigned char>(payload[0]);
        payload.remove_prefix(1);
        if (pad > payload.size()) break;
        payload.remove_suffix(pad);
      }
      if ((flags & NGHTTP2_FLAG_PRIORITY) != 0) {
        if (payload.size() < 5) break;
        payload.remove_prefix(5);
      }
      block.assign(payload);
      block_stream = stream;
      block_end_stream = (flags & NGHTTP2_FLAG_END_STREAM) != 0;
      in_block = true;
    } else if (type == NGHTTP2_CONTINUATION) {
      if (!in_block) break;
      block.append(payload);
    } else {
      continue;
    }
    if ((flags & NGHTTP2_FLAG_END_HEADERS) == 0) continue;
    in_block = false;
    std::vector<H2Field> fields;
    if (!inflate(inflater.get(), block, fields)) break;
    auto translated = translate_h2_request(fields, block_end_stream, max_head);
    if (auto* request = std::get_if<H2Request>(&translated)) heads.push_back(request->message.text());
  }
  return heads;
}

// ---------------------------------------------------------------------------------------------
// The HTTP/1.1 side: what InspectedConnection does with the front's buffers.

std::size_t count(const RequestHead& head, std::string_view name) {
  std::size_t n = 0;
  for (const HeaderField& field : head.headers) n += iequals(field.name, name) ? 1 : 0;
  return n;
}

bool clean(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

struct Connection {
  enum class State { head, body, answer };
  H2Front& front;
  const Shape& shape;
  const std::vector<std::string>& expected;
  std::size_t next_expected = 0;
  State state = State::head;
  BodyFraming framing;
  std::uint64_t body_left = 0;
  ChunkedScanner chunks;
  std::string method;
  std::size_t answer_bytes = 0;  // every byte written to answers()
  std::size_t requests = 0;      // heads read

  Connection(H2Front& f, const Shape& s, const std::vector<std::string>& e) : front(f), shape(s), expected(e) {}

  std::string_view front_of(evbuffer* in) {
    const std::size_t length = evbuffer_get_length(in);
    const unsigned char* data = evbuffer_pullup(in, static_cast<ev_ssize_t>(length));
    FUZZ_CHECK(length == 0 || data != nullptr);
    return {reinterpret_cast<const char*>(data), length};
  }

  void read_head() {
    // The message's text, read back by the strict parser: whatever it holds, an HTTP/1.1 origin
    // could be sent it exactly (the translation refuses what text cannot carry).
    const std::string bytes = front.request()->text();
    const auto parsed = parse_request_head(bytes, shape.max_head);
    FUZZ_CHECK(parsed.status == ParseResult<RequestHead>::Status::complete && parsed.consumed == bytes.size());
    const RequestHead& head = *parsed.value;
    const std::string_view text = bytes;
    FUZZ_CHECK(head.version == "HTTP/1.1");
    FUZZ_CHECK(head.method != "CONNECT" && !head.target.empty());
    FUZZ_CHECK(count(head, "Host") == 1);
    for (const HeaderField& field : head.headers) {
      FUZZ_CHECK(clean(field.name) && clean(field.value));
      FUZZ_CHECK(!iequals(field.name, "Connection") && !iequals(field.name, "Upgrade") &&
                 !iequals(field.name, "Keep-Alive") && !iequals(field.name, "Proxy-Connection") &&
                 !iequals(field.name, "TE") && !iequals(field.name, "Expect"));
    }
    // Transfer-Encoding only as the front's own framing of a body without a length.
    const std::size_t te = count(head, "Transfer-Encoding");
    const std::size_t cl = count(head, "Content-Length");
    FUZZ_CHECK(te <= 1 && cl <= 1 && te + cl <= 1);
    const auto judged = request_framing(head);
    FUZZ_CHECK(std::holds_alternative<BodyFraming>(judged));
    framing = std::get<BodyFraming>(judged);
    FUZZ_CHECK(framing.kind != BodyFraming::Kind::until_close);
    FUZZ_CHECK((te == 1) == (framing.kind == BodyFraming::Kind::chunked));
    FUZZ_CHECK((cl == 1) == (framing.kind == BodyFraming::Kind::length));
    // Exactly one list the box sent, translated, in the order they came.
    while (next_expected < expected.size() && expected[next_expected] != text) ++next_expected;
    FUZZ_CHECK(next_expected < expected.size());
    ++next_expected;
    ++requests;
    method.assign(head.method);
    front.take_request();  // `bytes` is a copy: `head` stays readable, and is not read after
    body_left = framing.kind == BodyFraming::Kind::length ? framing.length : 0;
    chunks = ChunkedScanner{};
    state = framing.kind == BodyFraming::Kind::none || (framing.kind == BodyFraming::Kind::length && body_left == 0)
                ? State::answer
                : State::body;
  }

  bool read_body() {
    evbuffer* in = front.requests();
    const std::size_t length = evbuffer_get_length(in);
    if (length == 0) return false;
    if (framing.kind == BodyFraming::Kind::length) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(length, body_left));
      evbuffer_drain(in, n);
      body_left -= n;
      if (body_left == 0) state = State::answer;
      return true;
    }
    const ChunkedScanner::Step step = chunks.feed(front_of(in));
    FUZZ_CHECK(!step.malformed);  // the front's own chunks
    // And never trailers: everything but the closing CRLF, which is the ending.
    FUZZ_CHECK(step.passed + (step.finished ? step.ending.size() : 0) == step.consumed);
    evbuffer_drain(in, step.consumed);
    if (step.finished) state = State::answer;
    return true;
  }

  void answer() {
    static constexpr std::array<std::string_view, 4> kHeads = {
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
        "HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\n"};
    static constexpr std::array<std::string_view, 4> kBodies = {"hello", "5\r\nhello\r\n0\r\n\r\n", "", "hello"};
    const auto head = parse_response_head(kHeads[shape.answer], kHeads[shape.answer].size());
    FUZZ_CHECK(head.status == ParseResult<ResponseHead>::Status::complete);
    front.answer_head(ResponseMessage::from(*head.value));
    const std::string_view body = method != "HEAD" ? kBodies[shape.answer] : std::string_view();
    FUZZ_CHECK(evbuffer_add(front.answers(), body.data(), body.size()) == 0);
    answer_bytes += kHeads[shape.answer].size() + body.size();
    front.exchange_ended();  // the origin's answer is whole (or the origin closed after it)
    state = State::head;
  }

  // One step of the HTTP/1.1 side; true when it did something.
  bool step() {
    switch (state) {
      case State::head:
        if (front.request() == nullptr) return false;
        read_head();
        return true;
      case State::body:
        return read_body();
      case State::answer:
        // The whole request went on: nothing may follow it before its answer.
        FUZZ_CHECK(evbuffer_get_length(front.requests()) == 0);
        answer();
        return true;
    }
    return false;
  }

  void abandon() {
    front.abandon_current();
    state = State::head;
  }
};

struct EvBufferDeleter {
  void operator()(evbuffer* b) const noexcept { evbuffer_free(b); }
};

void check_refused(void*, const H2Front::Refused& refused) {
  FUZZ_CHECK(refused.refusal == Reason::bad_request || refused.refusal == Reason::head_too_large);
}

void check_held(const H2Front& front, const Shape& shape) {
  const H2Front::Held held = front.held();
  FUZZ_CHECK(held.streams <= kH2MaxStreams);
  FUZZ_CHECK(held.head_bytes <= kH2HeldHeadFactor * shape.max_head);
  FUZZ_CHECK(held.max_body <= static_cast<std::size_t>(kH2StreamWindow));
  FUZZ_CHECK(held.max_answer <= kH2MaxAnswerHeld + 256);  // + one refusal's words
  FUZZ_CHECK(evbuffer_get_length(front.requests()) <= std::max(shape.max_head, kFeedBound + 32));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Shape shape = shape_of(data[0]);
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  std::string bytes = shape.raw ? std::string() : std::string(kPreface);
  bytes += split.payload;
  std::string_view frames = bytes;
  if (frames.substr(0, kPreface.size()) == kPreface) frames.remove_prefix(kPreface.size());
  const std::vector<std::string> expected = expected_heads(frames, shape.max_head);

  std::unique_ptr<H2Front> front = H2Front::open(shape.max_head, {nullptr, &check_refused});
  FUZZ_CHECK(front != nullptr);
  std::unique_ptr<evbuffer, EvBufferDeleter> from(evbuffer_new()), to(evbuffer_new());
  FUZZ_CHECK(from && to);
  Connection connection(*front, shape, expected);
  std::size_t written = 0;  // every byte the front wrote for the box

  // The pieces the box's bytes arrive in: the split's, the preface (when put here) in the first.
  std::vector<std::size_t> ends;
  const std::size_t lead = bytes.size() - split.payload.size();
  ends.push_back(lead);
  for (const std::size_t end : fuzz::prefix_ends(split)) ends.push_back(lead + end);
  bool alive = true, went_away = false;
  std::size_t at = 0;
  for (std::size_t i = 0; i <= ends.size() && alive; ++i) {
    const std::size_t end = i < ends.size() ? ends[i] : bytes.size();  // the last: settle
    if (end > at) FUZZ_CHECK(evbuffer_add(from.get(), bytes.data() + at, end - at) == 0);
    at = end;
    if (shape.go_away_halfway && !went_away && at * 2 >= bytes.size()) {
      front->go_away();
      went_away = true;
    }
    for (int round = 0; round < kMaxRounds; ++round) {
      const H2Front::Pumped pumped = front->pump(from.get(), to.get(), shape.to_bound);
      FUZZ_CHECK(evbuffer_get_length(from.get()) == 0);  // the front takes every byte it is given
      FUZZ_CHECK(evbuffer_get_length(to.get()) <= shape.to_bound + kFrameSlack);
      check_held(*front, shape);
      if (!pumped.alive) {
        alive = false;  // the connection flushes what is queued and ends
        break;
      }
      bool moved = pumped.progress;
      if (pumped.abandon) {
        connection.abandon();
        moved = true;
      }
      while (connection.step()) moved = true;
      check_held(*front, shape);
      if (shape.box_reads) {
        const std::size_t out = evbuffer_get_length(to.get());
        written += out;
        evbuffer_drain(to.get(), out);
      }
      if (!moved) break;
    }
  }
  written += evbuffer_get_length(to.get());
  // Answers to what the box sent (acknowledgements, resets, refusals, window updates) and the
  // origin's answers: never more than a small multiple of them.
  FUZZ_CHECK(written <= 1024 + 16 * bytes.size() + 2 * connection.answer_bytes);
  if (std::getenv("FUZZ_H2_TRACE") != nullptr)  // for checking the seeds reach the HTTP/1.1 side
    std::fprintf(stderr, "expected %zu, requests %zu, answered %zu bytes, wrote %zu\n", expected.size(),
                 connection.requests, connection.answer_bytes, written);
  return 0;
}
