// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/h2_front: the box-facing HTTP/2 session's bounds, driven with a box's plaintext in
// evbuffers (no socket, no TLS), as tests/fuzz/fuzz_h2_front drives it.
#include <doctest/doctest.h>

#include "h2_frames.h"
#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/inspect/h2_front.h"
#include "proxy/wire/http_message.h"

using namespace boxproxy;

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

using h2_test::frame;

// One header block, HPACK-encoded by nghttp2's own deflater (one encoder for the connection).
std::string block(nghttp2_hd_deflater* deflater, const std::vector<std::pair<std::string, std::string>>& fields) {
  std::vector<nghttp2_nv> nva;
  for (const auto& [name, value] : fields) {
    nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                   reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                   NGHTTP2_NV_FLAG_NONE});
  }
  std::string out(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
  const ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<std::uint8_t*>(out.data()), out.size(),
                                          nva.data(), nva.size());
  REQUIRE(n >= 0);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// The RST_STREAM frames in what the front wrote: stream and error code.
std::vector<std::pair<std::uint32_t, std::uint32_t>> resets(std::string_view out) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> found;
  const auto u8 = [&](std::size_t i) { return std::uint32_t{static_cast<unsigned char>(out[i])}; };
  while (out.size() >= 9) {
    const std::uint32_t length = (u8(0) << 16) | (u8(1) << 8) | u8(2);
    if (out.size() < 9 + length) break;
    if (out[3] == 3 && length == 4) {
      found.emplace_back(((u8(5) & 0x7f) << 24) | (u8(6) << 16) | (u8(7) << 8) | u8(8),
                         (u8(9) << 24) | (u8(10) << 16) | (u8(11) << 8) | u8(12));
    }
    out.remove_prefix(9 + length);
  }
  return found;
}

// Every frame of `type` on `stream` in what the front wrote: its payload (a HEADERS frame's with
// END_HEADERS: the front writes no CONTINUATION for a small list).
std::vector<std::string> payloads(std::string_view out, std::uint8_t type, std::uint32_t stream) {
  std::vector<std::string> found;
  const auto u8 = [&](std::size_t i) { return std::uint32_t{static_cast<unsigned char>(out[i])}; };
  while (out.size() >= 9) {
    const std::uint32_t length = (u8(0) << 16) | (u8(1) << 8) | u8(2);
    if (out.size() < 9 + length) break;
    const std::uint32_t id = ((u8(5) & 0x7f) << 24) | (u8(6) << 16) | (u8(7) << 8) | u8(8);
    if (static_cast<std::uint8_t>(out[3]) == type && id == stream) found.emplace_back(out.substr(9, length));
    out.remove_prefix(9 + length);
  }
  return found;
}

// A header block decoded (one decoder: the front's first block, with an empty dynamic table).
std::vector<std::pair<std::string, std::string>> decoded(const std::string& block) {
  nghttp2_hd_inflater* raw = nullptr;
  REQUIRE(nghttp2_hd_inflate_new(&raw) == 0);
  std::unique_ptr<nghttp2_hd_inflater, decltype(&nghttp2_hd_inflate_del)> inflater(raw, &nghttp2_hd_inflate_del);
  std::vector<std::pair<std::string, std::string>> fields;
  auto* in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(block.data()));
  std::size_t left = block.size();
  for (int i = 0; i < 100; ++i) {
    nghttp2_nv nv{};
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater.get(), &nv, &flags, in, left, 1);
    REQUIRE(n >= 0);
    in += n;
    left -= static_cast<std::size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      fields.emplace_back(std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                          std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) break;
  }
  return fields;
}

using DeflaterPtr = std::unique_ptr<nghttp2_hd_deflater, decltype(&nghttp2_hd_deflate_del)>;

DeflaterPtr new_deflater() {
  nghttp2_hd_deflater* raw = nullptr;
  REQUIRE(nghttp2_hd_deflate_new(&raw, 4096) == 0);
  return DeflaterPtr(raw, &nghttp2_hd_deflate_del);
}

struct EvBufferFree {
  void operator()(evbuffer* b) const noexcept { evbuffer_free(b); }
};

// A front whose stream 1 (a POST whose body never ends) is served and judged, as the connection
// does: every later stream waits with its head held.
struct BusyFront {
  std::unique_ptr<H2Front> front;
  DeflaterPtr deflater = new_deflater();
  std::unique_ptr<evbuffer, EvBufferFree> from{evbuffer_new()}, to{evbuffer_new()};

  explicit BusyFront(std::size_t max_head)
      : front(H2Front::open(max_head, {nullptr, [](void*, const H2Front::Refused&) {}})) {
    REQUIRE(front != nullptr);
    std::string box(kPreface);
    box += frame(NGHTTP2_SETTINGS, 0, 0, "");
    box += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                 block(deflater.get(), {{":method", "POST"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/"}}));
    REQUIRE(evbuffer_add(from.get(), box.data(), box.size()) == 0);
    REQUIRE(front->pump(from.get(), to.get(), 64 * 1024).alive);
    REQUIRE(front->request() != nullptr);  // stream 1 is served: its head counts no more
    front->take_request();                 // and judged
  }
};

}  // namespace

TEST_CASE("the heads waiting stay within kHeldHeadFactor x --max-head-bytes, translated heads included") {
  // A translated head replaces its list in the count, and is checked again (found by
  // fuzz_h2_front: before a field counted kH2FieldOverhead, "ab" with an empty value was two bytes
  // of list and "ab: \r\n" in the head). Here each list counts 1,051 bytes (91 of names and
  // values, 30 fields of 32) and its head 183: the twentieth waiting stream passes the bound while
  // its list is read (19 x 183 + 1,051 > 4 x 1,100).
  constexpr std::size_t kMaxHead = 1100;
  BusyFront busy(kMaxHead);
  auto& [front, deflater, from, to] = busy;
  std::string box;
  for (std::uint32_t stream = 3; stream <= 41; stream += 2) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/"}};
    for (char c = 'a'; c <= 'z'; ++c) fields.emplace_back(std::string{c, 'x'}, "");
    box += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream,
                 block(deflater.get(), fields));
  }
  REQUIRE(evbuffer_add(from.get(), box.data(), box.size()) == 0);
  const H2Front::Pumped pumped = front->pump(from.get(), to.get(), 64 * 1024);
  CHECK(pumped.alive);
  CHECK(front->held().head_bytes <= kH2HeldHeadFactor * kMaxHead);

  // The stream that would pass the bound is refused, for the box to send again later.
  std::string out(evbuffer_get_length(to.get()), '\0');
  evbuffer_copyout(to.get(), out.data(), out.size());
  const auto reset = resets(out);
  REQUIRE_FALSE(reset.empty());
  CHECK(reset.back().first == 41);
  CHECK(reset.back().second == NGHTTP2_REFUSED_STREAM);
}

TEST_CASE("heads of many empty fields waiting are counted as what they hold, not as their text") {
  // Each waiting head has 400 empty fields: 2 KB as text, 25 KB as fields. Counted as text (as it
  // was), 4 x 32 KiB let about 50 of them wait, 1.3 MB held; counted as held, about 5.
  constexpr std::size_t kMaxHead = 32 * 1024;
  constexpr std::size_t kFields = 400;
  BusyFront busy(kMaxHead);
  auto& [front, deflater, from, to] = busy;
  std::string box;
  constexpr std::uint32_t kLast = 3 + 2 * 59;
  for (std::uint32_t stream = 3; stream <= kLast; stream += 2) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/"}};
    for (std::size_t i = 0; i < kFields; ++i) fields.emplace_back("a", "");
    box = frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream,
                block(deflater.get(), fields));
    REQUIRE(evbuffer_add(from.get(), box.data(), box.size()) == 0);
    REQUIRE(front->pump(from.get(), to.get(), 64 * 1024).alive);
  }
  std::string out(evbuffer_get_length(to.get()), '\0');
  evbuffer_copyout(to.get(), out.data(), out.size());
  const std::size_t refused = resets(out).size();
  const std::size_t waiting = 60 - refused;
  CHECK(refused > 0);
  CHECK(waiting * kFields * sizeof(MessageField) <= kH2HeldHeadFactor * kMaxHead);
  CHECK(front->held().head_bytes <= kH2HeldHeadFactor * kMaxHead);
}

TEST_CASE("a header list of many empty fields counts kH2FieldOverhead a field: 431, not served") {
  // 2,000 fields "a" with an empty value: 2,000 bytes of names and values, one HPACK byte each,
  // but 2,000 vector entries held. Counted as SETTINGS_MAX_HEADER_LIST_SIZE counts them (32 a
  // field), the list passes --max-head-bytes 32 KiB and is answered 431 without being kept.
  constexpr std::size_t kMaxHead = 32 * 1024;
  std::vector<Reason> refused;
  std::unique_ptr<H2Front> front =
      H2Front::open(kMaxHead, {&refused, [](void* owner, const H2Front::Refused& r) {
                                 static_cast<std::vector<Reason>*>(owner)->push_back(r.refusal);
                               }});
  REQUIRE(front != nullptr);
  const DeflaterPtr deflater = new_deflater();
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/"}};
  for (int i = 0; i < 2000; ++i) fields.emplace_back("a", "");
  std::string box(kPreface);
  box += frame(NGHTTP2_SETTINGS, 0, 0, "");
  const std::string list = block(deflater.get(), fields);
  REQUIRE(list.size() < 16384);
  box += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, list);
  std::unique_ptr<evbuffer, EvBufferFree> from(evbuffer_new()), to(evbuffer_new());
  REQUIRE(evbuffer_add(from.get(), box.data(), box.size()) == 0);
  CHECK(front->pump(from.get(), to.get(), 64 * 1024).alive);
  CHECK(evbuffer_get_length(front->requests()) == 0);  // not served
  CHECK(front->request() == nullptr);
  REQUIRE(refused.size() == 1);
  CHECK(refused[0] == Reason::head_too_large);
  CHECK(front->held().head_bytes == 0);  // nothing of it is kept
}

TEST_CASE("a stream's head goes to the connection as a message and its answer's head comes back as one") {
  // Issue 34 item 2: no HTTP/1.1 text between the front and the exchange. The request's head is
  // request() (requests() holds only its body, none here), and the answer's head is answer_head:
  // bytes written to answers() are the body, never read as a head. Either round trip through text
  // coming back fails here: a head in requests(), or "HTTP/1.1 ..." taken for a status line.
  std::unique_ptr<H2Front> front = H2Front::open(32 * 1024, {nullptr, [](void*, const H2Front::Refused&) {}});
  REQUIRE(front != nullptr);
  const DeflaterPtr deflater = new_deflater();
  std::string box(kPreface);
  box += frame(NGHTTP2_SETTINGS, 0, 0, "");
  box += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
               block(deflater.get(), {{":method", "GET"},
                                      {":scheme", "https"},
                                      {":authority", "api.example"},
                                      {":path", "/x?q=1"},
                                      {"accept", "a:b, \"c\""},
                                      {"cookie", "a=1"},
                                      {"cookie", "b=2"}}));
  std::unique_ptr<evbuffer, EvBufferFree> from(evbuffer_new()), to(evbuffer_new());
  REQUIRE(evbuffer_add(from.get(), box.data(), box.size()) == 0);
  REQUIRE(front->pump(from.get(), to.get(), 64 * 1024).alive);
  CHECK(evbuffer_get_length(front->requests()) == 0);  // no head text: a GET has no body either
  const RequestMessage* request = front->request();
  REQUIRE(request != nullptr);
  const RequestHead head = request->view();
  CHECK(head.method == "GET");
  CHECK(head.target == "/x?q=1");
  REQUIRE(head.headers.size() == 3);
  CHECK(head.headers[0].name == "host");
  CHECK(head.headers[0].value == "api.example");
  CHECK(head.headers[1].value == "a:b, \"c\"");
  CHECK(head.headers[2].value == "a=1; b=2");
  front->take_request();
  CHECK(front->request() == nullptr);

  const std::string body = "HTTP/1.1 500 Not a head\r\n\r\n";  // the body, as it is
  const std::string length = std::to_string(body.size());
  const ResponseMessage answer{
      200, "OK", "HTTP/1.1", {{"Content-Type", "text/plain"}, {"Content-Length", length}, {"Connection", "keep-alive"}}};
  front->answer_head(answer);
  REQUIRE(evbuffer_add(front->answers(), body.data(), body.size()) == 0);
  evbuffer_drain(to.get(), evbuffer_get_length(to.get()));
  REQUIRE(front->pump(from.get(), to.get(), 64 * 1024).alive);
  std::string out(evbuffer_get_length(to.get()), '\0');
  evbuffer_copyout(to.get(), out.data(), out.size());
  const auto heads = payloads(out, NGHTTP2_HEADERS, 1);
  REQUIRE(heads.size() == 1);
  const auto fields = decoded(heads[0]);
  REQUIRE(fields.size() == 3);  // Connection is not carried over HTTP/2
  CHECK(fields[0] == std::pair<std::string, std::string>{":status", "200"});
  CHECK(fields[1] == std::pair<std::string, std::string>{"content-type", "text/plain"});
  CHECK(fields[2] == std::pair<std::string, std::string>{"content-length", length});
  std::string data;
  for (const std::string& piece : payloads(out, NGHTTP2_DATA, 1)) data += piece;
  CHECK(data == body);
}
