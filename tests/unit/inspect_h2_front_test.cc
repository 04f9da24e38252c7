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

struct EvBufferFree {
  void operator()(evbuffer* b) const noexcept { evbuffer_free(b); }
};

}  // namespace

TEST_CASE("the heads waiting stay within kHeldHeadFactor x --max-head-bytes, translated heads included") {
  // A translated head replaces its list in the count, and is checked again (found by
  // fuzz_h2_front: before a field counted kH2FieldOverhead, "ab" with an empty value was two bytes
  // of list and "ab: \r\n" in the head). Here each list counts 1,051 bytes (91 of names and
  // values, 30 fields of 32) and its head 183: the twentieth waiting stream passes the bound while
  // its list is read (19 x 183 + 1,051 > 4 x 1,100).
  constexpr std::size_t kMaxHead = 1100;
  std::unique_ptr<H2Front> front = H2Front::open(kMaxHead, {nullptr, [](void*, const H2Front::Refused&) {}});
  REQUIRE(front != nullptr);
  nghttp2_hd_deflater* raw = nullptr;
  REQUIRE(nghttp2_hd_deflate_new(&raw, 4096) == 0);
  std::unique_ptr<nghttp2_hd_deflater, decltype(&nghttp2_hd_deflate_del)> deflater(raw, &nghttp2_hd_deflate_del);

  std::string box(kPreface);
  box += frame(NGHTTP2_SETTINGS, 0, 0, "");
  // Stream 1's body never ends: it is served, and every later stream waits with its head held.
  box += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
               block(deflater.get(), {{":method", "POST"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/"}}));
  std::unique_ptr<evbuffer, EvBufferFree> from(evbuffer_new()), to(evbuffer_new());
  REQUIRE(evbuffer_add(from.get(), box.data(), box.size()) == 0);
  REQUIRE(front->pump(from.get(), to.get(), 64 * 1024).alive);
  REQUIRE(evbuffer_get_length(front->requests()) > 0);  // stream 1 went on: it holds no head now
  box.clear();
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
  nghttp2_hd_deflater* raw = nullptr;
  REQUIRE(nghttp2_hd_deflate_new(&raw, 4096) == 0);
  std::unique_ptr<nghttp2_hd_deflater, decltype(&nghttp2_hd_deflate_del)> deflater(raw, &nghttp2_hd_deflate_del);
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
  REQUIRE(refused.size() == 1);
  CHECK(refused[0] == Reason::head_too_large);
  CHECK(front->held().head_bytes == 0);  // nothing of it is kept
}
