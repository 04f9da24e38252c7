// SPDX-License-Identifier: Apache-2.0
// The inspector's origin-facing HTTP/2 back (proxy/inspect/h2_back.h, SPEC §19) as a hostile origin
// drives it after a request went out: the bytes are the origin's plaintext (its SETTINGS, then any
// frames with HPACK header blocks), handed to H2Back::pump in pieces as the TLS stream hands them
// over. No socket and no TLS: this target plays the InspectedConnection above it, which gives one
// request's head as fields (send_head) and writes its body to requests(), takes the response heads
// as fields (head(), take_head()) and reads the body from responses() by the head's framing, reading
// the origin only while responses() holds less than kMaxQueued, as the connection does.
//
// The first byte is the shape:
//   bits 0-1  the request: GET, HEAD, POST with a content-length body, POST chunked;
//   bit 2     the connection never takes the response out of responses();
//   bit 3     the TLS output's bound is 1 KiB (else 64 KiB, kMaxQueued);
//   bit 4     an empty SETTINGS frame is put before the origin's bytes (else they carry their own);
//   bits 5-6  the response head bound: 64 KiB, 1 KiB, 4 KiB, 16 KiB.
// Then the split framing (fuzz_support.h): the pieces the origin's bytes arrive in.
//
// Invariants (each a FUZZ_CHECK):
//   - what the back gives is what the connection can read: heads within the head bound as HTTP/1.1
//     text, whose text parse_response_head accepts (interim heads, then one final head), no body
//     byte before the final head, and a body its framing delimits (ChunkedScanner never finds it
//     malformed), with nothing (head or byte) after the response;
//   - no head carries a connection-specific field, x-egress-refused, or two framings;
//   - what it holds stays within h2_back.h's bounds: the header list being read within the head
//     bound (held() counts kH2FieldOverhead a field, as the bound does, so this bounds the number
//     of fields held too), the request body waiting within kH2BackBodyHeld, responses() within
//     the window's worth of DATA and its framing, the heads not taken within kH2BackWindow and two
//     heads;
//   - once ended() no more heads or bytes come; reusable() is false after any failure;
//   - once the response is whole, the session is reusable() only with nothing of the request's
//     body left in it (held().body and requests() empty): a tail left there would go out as the
//     next request's body.
#include <event2/buffer.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "proxy/inspect/h2_back.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/http_message.h"
#include "table/ascii.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;
using namespace boxproxy::fuzz;

namespace {

constexpr std::size_t kMaxQueued = 64 * 1024;  // inspected_connection.h
constexpr std::array<std::size_t, 4> kHeadBounds = {64 * 1024, 1024, 4096, 16384};
constexpr std::string_view kEmptySettings{"\0\0\0\x04\0\0\0\0\0", 9};
constexpr int kMaxRounds = 16;

struct Reader {
  std::string method;
  bool final_head = false;
  bool done = false;
  BodyFraming framing;
  ChunkedScanner chunks{ChunkedScanner::Trailers::filtered};
  std::size_t heads = 0;
};

// Checks a head as the connection would read it: its text within the bound and parsing back as
// the same head, no connection-specific field, at most one framing.
void check_head(const ResponseMessage& given, std::size_t head_bound) {
  FUZZ_CHECK(given.text_size() <= head_bound);
  const std::string text = given.text();
  FUZZ_CHECK(text.size() == given.text_size());
  const auto parsed = parse_response_head(text, 128 * 1024);
  FUZZ_CHECK(parsed.status == ParseResult<ResponseHead>::Status::complete);
  FUZZ_CHECK(parsed.consumed == text.size() && parsed.value->headers.size() == given.fields.size());
  int framings = 0;
  for (const MessageField& f : given.fields) {
    for (const char* name : {"connection", "keep-alive", "proxy-connection", "upgrade", "te", "x-egress-refused",
                             "http2-settings"}) {
      FUZZ_CHECK(!iequals(f.name, name));
    }
    if (iequals(f.name, "transfer-encoding") || iequals(f.name, "content-length")) ++framings;
  }
  FUZZ_CHECK(given.status >= 200 ? framings <= 1 : framings == 0);
}

// Takes the heads the back gives and what responses() holds, as the connection would; false when
// nothing moved.
bool read_response(H2Back& back, Reader& reader, std::size_t head_bound) {
  bool moved = false;
  evbuffer* in = back.responses();
  while (!reader.final_head && back.head() != nullptr) {
    check_head(*back.head(), head_bound);
    const ResponseHead head = back.head()->view();
    ++reader.heads;
    moved = true;
    if (head.status < 200) {
      back.take_head();
      continue;
    }
    const auto framing = response_framing(reader.method, head);
    FUZZ_CHECK(std::holds_alternative<BodyFraming>(framing));
    FUZZ_CHECK(std::get<BodyFraming>(framing).kind != BodyFraming::Kind::until_close);
    reader.framing = std::get<BodyFraming>(framing);
    reader.final_head = true;
    back.take_head();
    if (reader.framing.kind == BodyFraming::Kind::none ||
        (reader.framing.kind == BodyFraming::Kind::length && reader.framing.length == 0)) {
      reader.done = true;
    }
  }
  if (reader.final_head) FUZZ_CHECK(back.head() == nullptr);  // nothing after the response
  if (!reader.final_head) FUZZ_CHECK(evbuffer_get_length(in) == 0);  // no body byte before its head
  while (evbuffer_get_length(in) > 0) {
    const std::size_t length = evbuffer_get_length(in);
    if (reader.done && std::getenv("FUZZ_H2_TRACE") != nullptr) {
      const auto* d = evbuffer_pullup(in, -1);
      std::fprintf(stderr, "after the response: %.*s\n", static_cast<int>(length), reinterpret_cast<const char*>(d));
    }
    FUZZ_CHECK(!reader.done);  // nothing after the response
    evbuffer_iovec piece{};
    if (evbuffer_peek(in, -1, nullptr, &piece, 1) < 1) break;
    const std::string_view bytes(static_cast<const char*>(piece.iov_base), piece.iov_len);
    std::size_t taken = 0;
    if (reader.framing.kind == BodyFraming::Kind::length) {
      taken = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), reader.framing.length));
      reader.framing.length -= taken;
      if (reader.framing.length == 0) reader.done = true;
    } else {
      const auto step = reader.chunks.feed(bytes);
      FUZZ_CHECK(!step.malformed);
      taken = step.consumed;
      if (step.finished) reader.done = true;
    }
    evbuffer_drain(in, taken);
    moved = moved || taken > 0;
    if (taken == 0) break;
  }
  return moved;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned shape = data[0];
  const unsigned kind = shape & 3;
  const bool reads = (shape & 4) == 0;
  const std::size_t to_bound = (shape & 8) != 0 ? 1024 : kMaxQueued;
  const std::size_t head_bound = kHeadBounds[(shape >> 5) & 3];
  Split split = take_split(as_text(data + 1, size - 1));
  if (split.chunks.empty()) split.chunks.push_back(1);  // no bytes of the origin's at all
  std::string bytes((shape & 16) != 0 ? std::string(kEmptySettings) : std::string());
  bytes.append(split.payload);
  split.payload = bytes;

  auto back = H2Back::open(head_bound);
  if (!back) return 0;
  evbuffer* to_origin = evbuffer_new();
  evbuffer* from_origin = evbuffer_new();
  Reader reader;
  static const std::array<std::string_view, 4> kRequests = {
      "GET /x HTTP/1.1\r\nHost: origin.test\r\nAccept: */*\r\n\r\n",
      "HEAD /x HTTP/1.1\r\nHost: origin.test\r\n\r\n",
      "POST /x HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 5\r\n\r\nhello",
      "POST /x HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
  };
  reader.method = kind == 1 ? "HEAD" : kind == 0 ? "GET" : "POST";
  {
    // The head as the connection gives it (fields; parsed here only to build them), the body as framed.
    const std::string request(kRequests[kind]);
    const auto parsed = parse_request_head(request, request.size());
    FUZZ_CHECK(parsed.status == ParseResult<RequestHead>::Status::complete);
    const RequestMessage head = RequestMessage::from(*parsed.value);
    back->send_head(head.view());
    evbuffer_add(back->requests(), request.data() + parsed.consumed, request.size() - parsed.consumed);
  }

  std::size_t at = 0;
  std::size_t i = 0;
  bool ended_seen = false;
  while (true) {
    // The connection reads the origin only while responses() has room (update_reading).
    const bool may_read = evbuffer_get_length(back->responses()) < kMaxQueued && back->wants_read();
    if (may_read && at < split.payload.size()) {
      const std::size_t n = std::min(split.chunks[i++ % split.chunks.size()], split.payload.size() - at);
      evbuffer_add(from_origin, split.payload.data() + at, n);
      at += n;
    }
    bool moved = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      const std::size_t before = evbuffer_get_length(back->responses());
      const std::size_t heads_before = back->held().heads;
      bool step = false;
      try {
        step = back->pump(from_origin, to_origin, to_bound);
      } catch (...) {
        FUZZ_CHECK(false);
      }
      if (ended_seen) FUZZ_CHECK(evbuffer_get_length(back->responses()) == before && back->held().heads <= heads_before);
      if (back->ended()) {
        ended_seen = true;
        FUZZ_CHECK(!back->reusable());
      }
      // The origin reads what we send (else the bound on frames to it would stop everything).
      evbuffer_drain(to_origin, evbuffer_get_length(to_origin));
      if (reads) step = read_response(*back, reader, head_bound) || step;
      const H2Back::Held held = back->held();
      FUZZ_CHECK(held.head_bytes <= head_bound);
      if (reader.done && back->reusable()) {
        FUZZ_CHECK(held.body == 0 && evbuffer_get_length(back->requests()) == 0);
      }
      FUZZ_CHECK(held.body <= kH2BackBodyHeld);
      // DATA within the window, each frame's chunk framing (a frame carries at least a byte), one
      // interim head below the window, the final head (fields, ": ", CRLF) and the 502's.
      FUZZ_CHECK(held.responses <= 8 * static_cast<std::size_t>(kH2BackWindow) + 1024 + kMaxQueued);
      // Interim heads kept below the window, one past it and the final head (or the 502), each at
      // most twice the list's bound in memory (an entry of 64 bytes a field the list counts 32).
      FUZZ_CHECK(held.heads <= static_cast<std::size_t>(kH2BackWindow) + 2 * (2 * head_bound + 256));
      if (!step) break;
      moved = true;
    }
    if (!moved && (at >= split.payload.size() || !(evbuffer_get_length(back->responses()) < kMaxQueued &&
                                                  back->wants_read()))) {
      break;
    }
  }
  back->origin_closed();
  FUZZ_CHECK(!back->reusable());
  evbuffer_free(to_origin);
  evbuffer_free(from_origin);
  return 0;
}
