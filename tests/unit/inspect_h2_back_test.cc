// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/h2_back: the origin-facing HTTP/2 session, driven against a real nghttp2 server
// session playing the origin (no socket, no TLS): heads cross as fields both ways (no HTTP/1.1 text
// between the connection and the back), a request body never outlives its stream (an early answer
// to an upload), header lists counted per field, trailers held to the section bound the
// connection's ChunkedScanner reads them with.
#include <doctest/doctest.h>

#include "h2_frames.h"
#include <event2/buffer.h>
#include <malloc.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxy/inspect/h2_back.h"
#include "proxy/inspect/h2_session_bounds.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/http_message.h"

using namespace boxproxy;

namespace {

struct EvBufferFree {
  void operator()(evbuffer* b) const noexcept { evbuffer_free(b); }
};
using Buf = std::unique_ptr<evbuffer, EvBufferFree>;

std::string drain_all(evbuffer* b) {
  std::string out(evbuffer_get_length(b), '\0');
  evbuffer_remove(b, out.data(), out.size());
  return out;
}

nghttp2_nv nv(const std::string& name, const std::string& value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

using h2_test::frame;

// The origin: an nghttp2 server session that records each stream's DATA and answers as told.
struct Origin {
  nghttp2_session* session = nullptr;
  std::map<std::int32_t, std::string> data;  // DATA received per stream
  std::vector<std::int32_t> heads;           // streams whose request HEADERS arrived
  std::map<std::int32_t, std::vector<std::pair<std::string, std::string>>> fields;  // their header lists
  std::vector<std::pair<std::string, std::string>> interim;  // non-empty: an interim head before the answer
  int interim_count = 1;                                     // sent so many times
  std::vector<std::pair<std::string, std::string>> response = {{":status", "200"}, {"content-length", "0"}};
  std::vector<std::pair<std::string, std::string>> trailers;  // non-empty: a body "hi", then these
  bool answer_on_head = false;      // answer as the request's head comes (before its body)
  bool answer_on_end = false;       // answer when the request's END_STREAM comes
  bool reset_after_answer = false;  // then RST_STREAM NO_ERROR, the rest of the upload unread

  void answer(std::int32_t stream) {
    std::vector<nghttp2_nv> nva;
    std::vector<nghttp2_nv> early;
    for (const auto& [name, value] : interim) early.push_back(nv(name, value));
    for (int i = 0; i < interim_count && !early.empty(); ++i) {
      REQUIRE(nghttp2_submit_headers(session, NGHTTP2_FLAG_NONE, stream, nullptr, early.data(), early.size(),
                                     nullptr) == 0);
    }
    for (const auto& [name, value] : response) nva.push_back(nv(name, value));
    nghttp2_data_provider provider{};
    provider.read_callback = &read_body;
    nghttp2_data_provider* body = trailers.empty() ? nullptr : &provider;
    REQUIRE(nghttp2_submit_response(session, stream, nva.data(), nva.size(), body) == 0);
  }
  // The body: "hi", then the trailers (a stream that ends with trailing HEADERS).
  static ssize_t read_body(nghttp2_session* s, std::int32_t stream, std::uint8_t* buffer, std::size_t,
                           std::uint32_t* flags, nghttp2_data_source*, void* self) {
    auto* o = static_cast<Origin*>(self);
    std::memcpy(buffer, "hi", 2);
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    std::vector<nghttp2_nv> nva;
    for (const auto& [name, value] : o->trailers) nva.push_back(nv(name, value));
    if (nghttp2_submit_trailer(s, stream, nva.data(), nva.size()) != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 2;
  }
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
    auto* o = static_cast<Origin*>(self);
    const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      o->heads.push_back(frame->hd.stream_id);
      if (o->answer_on_head || (o->answer_on_end && end)) o->answer(frame->hd.stream_id);
    } else if (frame->hd.type == NGHTTP2_DATA && end && o->answer_on_end) {
      o->answer(frame->hd.stream_id);
    }
    return 0;
  }
  static int on_frame_send(nghttp2_session* s, const nghttp2_frame* frame, void* self) {
    auto* o = static_cast<Origin*>(self);
    if (frame->hd.type == NGHTTP2_HEADERS && o->reset_after_answer) {
      nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    }
    return 0;
  }
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t name_length,
                       const std::uint8_t* value, std::size_t value_length, std::uint8_t, void* self) {
    static_cast<Origin*>(self)->fields[frame->hd.stream_id].emplace_back(
        std::string(reinterpret_cast<const char*>(name), name_length),
        std::string(reinterpret_cast<const char*>(value), value_length));
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* d, std::size_t n,
                     void* self) {
    static_cast<Origin*>(self)->data[id].append(reinterpret_cast<const char*>(d), n);
    return 0;
  }

  // auto_window false: the origin opens no window (stream or connection) as it reads DATA.
  explicit Origin(bool auto_window) {
    nghttp2_session_callbacks* cb = nullptr;
    REQUIRE(nghttp2_session_callbacks_new(&cb) == 0);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &on_data);
    nghttp2_session_callbacks_set_on_header_callback(cb, &on_header);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, &on_frame_send);
    nghttp2_option* opt = nullptr;
    REQUIRE(nghttp2_option_new(&opt) == 0);
    if (!auto_window) nghttp2_option_set_no_auto_window_update(opt, 1);
    REQUIRE(nghttp2_session_server_new2(&session, cb, this, opt) == 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    REQUIRE(nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0) == 0);
  }
  ~Origin() { nghttp2_session_del(session); }
  Origin(const Origin&) = delete;
  Origin& operator=(const Origin&) = delete;

  // Takes what H2Back wrote, writes its own frames back.
  void exchange(evbuffer* from_back, evbuffer* to_back) {
    const std::string in = drain_all(from_back);
    if (!in.empty()) {
      REQUIRE(nghttp2_session_mem_recv(session, reinterpret_cast<const std::uint8_t*>(in.data()), in.size()) ==
              static_cast<ssize_t>(in.size()));
    }
    for (int i = 0; i < 1000; ++i) {
      const std::uint8_t* out = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session, &out);
      REQUIRE(n >= 0);
      if (n == 0) break;
      evbuffer_add(to_back, out, static_cast<std::size_t>(n));
    }
  }
};

// Both sides back and forth a bounded number of times.
void run(H2Back& back, Origin& origin, evbuffer* from_origin, evbuffer* to_origin) {
  for (int i = 0; i < 50; ++i) {
    (void)back.pump(from_origin, to_origin, 64 * 1024);
    origin.exchange(to_origin, from_origin);
  }
}

void write(evbuffer* to, const std::string& bytes) { REQUIRE(evbuffer_add(to, bytes.data(), bytes.size()) == 0); }

// What the connection does with a request: its head given as fields (send_head; the test parses its
// text only to build them), its body written to requests() as framed.
void send(H2Back& back, const std::string& request) {
  const auto parsed = parse_request_head(request, request.size());
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  const RequestMessage head = RequestMessage::from(*parsed.value);
  back.send_head(head.view());
  write(back.requests(), request.substr(parsed.consumed));
}

// A head given as fields, printed as an HTTP/1.1 origin would have sent it.
std::string text_of(const ResponseMessage& head) { return head.text(); }

// What the connection takes: every head given (as text), then what responses() holds.
std::string take_response(H2Back& back) {
  std::string out;
  for (int i = 0; i < 100 && back.head() != nullptr; ++i) {
    out += text_of(*back.head());
    back.take_head();
  }
  return out + drain_all(back.responses());
}

std::string upload(std::size_t length) {
  return "POST /upload HTTP/1.1\r\nHost: origin.test\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n" +
         std::string(length, 'A');
}

const std::string kSecond =
    "POST /other HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nBBBBB\r\n0\r\n\r\n";

}  // namespace

TEST_CASE("an upload answered early never leaves its tail for the next request: cancelled, not reused") {
  // The origin reads the first window of a 100,000-byte upload, answers (200, no body) and resets
  // the stream NO_ERROR, as servers do when they answer before reading an upload (a 413, a 401,
  // a gRPC call it ends); it never opens its window for the rest.
  Origin origin(/*auto_window=*/false);
  origin.reset_after_answer = true;
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  send(*back, upload(100000));
  run(*back, origin, from_origin.get(), to_origin.get());
  REQUIRE(origin.data[1].size() == 65535);  // the connection's window
  REQUIRE(back->held().body > 0);           // the rest waits for a window
  origin.answer(1);
  run(*back, origin, from_origin.get(), to_origin.get());

  CHECK(take_response(*back).starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK_FALSE(back->ended());            // the answer is whole
  CHECK(back->held().body == 0);         // the rest of the upload is dropped...
  CHECK(evbuffer_get_length(back->requests()) == 0);
  CHECK_FALSE(back->reusable());         // ...and the next request dials a new origin connection

  // Even were a next request written here, nothing of the first body goes out as its body: the
  // origin opens its windows, and no more DATA and no new stream come.
  nghttp2_session_consume_connection(origin.session, origin.data[1].size());
  origin.exchange(to_origin.get(), from_origin.get());
  send(*back, kSecond);
  run(*back, origin, from_origin.get(), to_origin.get());
  CHECK(origin.heads.size() == 1);
  CHECK(origin.data[1].size() == 65535);
  CHECK(origin.data.size() == 1);
}

TEST_CASE("a stream the origin resets mid-upload: 502, the rest of the body dropped, not reused") {
  Origin origin(/*auto_window=*/false);
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  send(*back, upload(100000));
  run(*back, origin, from_origin.get(), to_origin.get());
  REQUIRE(back->held().body > 0);
  REQUIRE(nghttp2_submit_rst_stream(origin.session, NGHTTP2_FLAG_NONE, 1, NGHTTP2_INTERNAL_ERROR) == 0);
  run(*back, origin, from_origin.get(), to_origin.get());
  CHECK(take_response(*back).starts_with("HTTP/1.1 502 Bad Gateway\r\n"));
  CHECK(back->held().body == 0);
  CHECK_FALSE(back->reusable());
  // The rest of the body, written by the connection after the stream ended, is dropped too.
  write(back->requests(), std::string(1000, 'A'));
  run(*back, origin, from_origin.get(), to_origin.get());
  CHECK(evbuffer_get_length(back->requests()) == 0);
  CHECK(back->held().body == 0);
  CHECK(origin.heads.size() == 1);
}

TEST_CASE("an upload whose END_STREAM went before the answer leaves the session reusable, the next body its own") {
  Origin origin(/*auto_window=*/true);
  origin.answer_on_end = true;
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  send(*back, upload(100000));
  run(*back, origin, from_origin.get(), to_origin.get());
  CHECK(take_response(*back).starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(origin.data[1].size() == 100000);
  CHECK_FALSE(back->ended());
  REQUIRE(back->reusable());
  send(*back, kSecond);
  run(*back, origin, from_origin.get(), to_origin.get());
  REQUIRE(origin.heads.size() == 2);
  CHECK(origin.data[origin.heads[1]] == "BBBBB");
  CHECK(take_response(*back).starts_with("HTTP/1.1 200 OK\r\n"));
}

TEST_CASE("a header list of empty fields counts kH2FieldOverhead a field: 502, memory near its count") {
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  send(*back, "GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n");
  (void)back->pump(from_origin.get(), to_origin.get(), 64 * 1024);
  REQUIRE(evbuffer_get_length(to_origin.get()) > 0);  // preface, SETTINGS, HEADERS of stream 1

  // A hostile origin's answer: 65,000 fields "a" with an empty value (65,000 bytes of names and
  // values: under the 64 KiB bound as they were counted), each one byte of HPACK.
  nghttp2_hd_deflater* deflater = nullptr;
  REQUIRE(nghttp2_hd_deflate_new(&deflater, 4096) == 0);
  const std::string status = ":status", ok = "200", a = "a", empty;
  std::vector<nghttp2_nv> nva = {nv(status, ok)};
  for (int i = 0; i < 65000; ++i) nva.push_back(nv(a, empty));
  std::string block(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
  const ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<std::uint8_t*>(block.data()), block.size(),
                                          nva.data(), nva.size());
  nghttp2_hd_deflate_del(deflater);
  REQUIRE(n > 0);
  block.resize(static_cast<std::size_t>(n));
  std::string wire = frame(NGHTTP2_SETTINGS, 0, 0, "");
  std::vector<std::string> frames;
  for (std::size_t at = 0; at < block.size(); at += 16384) {
    const bool first = at == 0;
    const bool last = at + 16384 >= block.size();
    frames.push_back(frame(first ? NGHTTP2_HEADERS : NGHTTP2_CONTINUATION, last ? NGHTTP2_FLAG_END_HEADERS : 0, 1,
                           block.substr(at, 16384)));
  }
  REQUIRE(frames.size() <= kH2MaxContinuations + 1);
  // All but the last frame: an origin that holds the end of its header block back.
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) wire += frames[i];
  const struct mallinfo2 before = mallinfo2();
  write(from_origin.get(), wire);
  (void)back->pump(from_origin.get(), to_origin.get(), 64 * 1024);
  const struct mallinfo2 during = mallinfo2();
  const std::size_t grown = (during.uordblks + during.hblkhd) - (before.uordblks + before.hblkhd);
  MESSAGE("heap grown while the header block is open: " << grown / 1024 << " KiB");
  CHECK(back->held().head_bytes <= 64 * 1024);
  // 64 KiB at 32 a field is at most 2,048 fields (vector entries of 64 bytes, capacity doubling):
  // far below the 4 MiB the 65,000 fields held when only names and values counted.
  CHECK(grown < 512 * 1024);
  write(from_origin.get(), frames.back());
  (void)back->pump(from_origin.get(), to_origin.get(), 64 * 1024);
  const std::string response = take_response(*back);
  CHECK(response.starts_with("HTTP/1.1 502 Bad Gateway\r\n"));  // the list passed the bound
  CHECK(response.size() < 1024);
  CHECK(back->held().head_bytes == 0);
  CHECK_FALSE(back->reusable());
}

TEST_CASE("trailers past kMaxTrailerSection are dropped whole; the body stays one ChunkedScanner takes") {
  for (const bool large : {false, true}) {
    CAPTURE(large);
    Origin origin(/*auto_window=*/true);
    origin.answer_on_end = true;
    origin.response = {{":status", "200"}};
    origin.trailers = {{"grpc-status", "0"}};
    // 40 fields of 1,000 bytes: 40 KiB of section, under the header list bound (64 KiB), over the
    // section bound.
    if (large) {
      for (int i = 0; i < 40; ++i) origin.trailers.emplace_back("x-t" + std::to_string(i), std::string(1000, 'v'));
    }
    std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
    REQUIRE(back != nullptr);
    Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
    send(*back, "GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    run(*back, origin, from_origin.get(), to_origin.get());
    const std::string response = take_response(*back);
    const std::size_t head_end = response.find("\r\n\r\n");
    REQUIRE(head_end != std::string::npos);
    CHECK(response.substr(0, head_end).find("transfer-encoding: chunked") != std::string::npos);
    const std::string body = response.substr(head_end + 4);
    ChunkedScanner scanner(ChunkedScanner::Trailers::filtered);
    const auto step = scanner.feed(body);
    CHECK_FALSE(step.malformed);
    CHECK(step.finished);
    CHECK(step.consumed == body.size());
    if (large) {
      CHECK(body == "2\r\nhi\r\n0\r\n\r\n");
    } else {
      CHECK(body == "2\r\nhi\r\n0\r\ngrpc-status: 0\r\n\r\n");
    }
    CHECK_FALSE(back->ended());
  }
}

TEST_CASE("heads cross as fields: the request's are the stream's header list, the response's given in order") {
  Origin origin(/*auto_window=*/true);
  origin.answer_on_end = true;
  origin.interim = {{":status", "103"}, {"link", "</a.css>; rel=preload"}};
  origin.response = {{":status", "204"}, {"x-answer", "yes"}};
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  // As the judgement composed it (rewritten, a credential injected): given, never printed.
  const RequestMessage head{"GET", "/x?y=1", "HTTP/1.1",
                            {{"Host", "origin.test"}, {"Accept", "*/*"}, {"Connection", "close"}, {"X-Key", "K3Y"}}};
  back->send_head(head.view());
  CHECK(evbuffer_get_length(back->requests()) == 0);  // no text between the connection and the back
  run(*back, origin, from_origin.get(), to_origin.get());
  REQUIRE(origin.heads.size() == 1);
  const std::vector<std::pair<std::string, std::string>> sent = {
      {":method", "GET"}, {":scheme", "https"}, {":authority", "origin.test"}, {":path", "/x?y=1"},
      {"accept", "*/*"},  {"x-key", "K3Y"},     {"te", "trailers"}};
  CHECK(origin.fields[1] == sent);
  // Nothing sent is indexed (HPACK's dynamic table stays empty on both ends): a credential's field
  // is never kept in the encoder's table for the connection's life.
  CHECK(nghttp2_session_get_hd_inflate_dynamic_table_size(origin.session) == 0);

  REQUIRE(back->head() != nullptr);  // the interim head first...
  CHECK(back->head()->status == 103);
  CHECK(text_of(*back->head()) == "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n");
  back->take_head();
  REQUIRE(back->head() != nullptr);  // ...then the final one, its fields as the connection reads them
  CHECK(text_of(*back->head()) == "HTTP/1.1 204 No Content\r\nx-answer: yes\r\n\r\n");
  const ResponseHead view = back->head()->view();
  CHECK(view.status == 204);
  CHECK(view.headers.size() == 1);
  back->take_head();
  CHECK(back->head() == nullptr);
  CHECK(evbuffer_get_length(back->responses()) == 0);
  CHECK_FALSE(back->ended());
  CHECK(back->reusable());
}

TEST_CASE("a head that cannot be carried (no Host) is not processed: no stream, nothing given") {
  Origin origin(/*auto_window=*/true);
  origin.answer_on_end = true;
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  const RequestMessage head{"GET", "/", "HTTP/1.1", {{"Accept", "*/*"}}};
  back->send_head(head.view());
  run(*back, origin, from_origin.get(), to_origin.get());
  CHECK(origin.heads.empty());
  CHECK(back->ended());
  CHECK(back->not_processed());  // the connection sends it again elsewhere when it can
  CHECK(back->head() == nullptr);
  CHECK_FALSE(back->reusable());
}

TEST_CASE("interim heads of many empty fields are kept by their memory, not their few bytes of text") {
  // 12 interim heads of 1,500 empty fields: 49.5 KiB each as the list bound counts (32 a field),
  // 7.5 KiB each as text, about 100 KiB each as fields (an entry of two strings a field).
  Origin origin(/*auto_window=*/true);
  origin.answer_on_end = true;
  origin.interim = {{":status", "103"}};
  for (int i = 0; i < 1500; ++i) origin.interim.emplace_back("a", "");
  origin.interim_count = 12;
  origin.response = {{":status", "204"}};
  std::unique_ptr<H2Back> back = H2Back::open(64 * 1024);
  REQUIRE(back != nullptr);
  Buf from_origin(evbuffer_new()), to_origin(evbuffer_new());
  send(*back, "GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n");
  run(*back, origin, from_origin.get(), to_origin.get());  // the connection takes nothing meanwhile
  // Kept while less than kH2BackWindow is held: the interim heads kept hold at most that and one
  // head more. Counted from what the connection takes (1,500 entries a head), not from held().
  int interim = 0;
  for (int i = 0; i < 20 && back->head() != nullptr && back->head()->status == 103; ++i) {
    ++interim;
    back->take_head();
  }
  const std::size_t entries = 1500 * sizeof(MessageField);
  CHECK(interim >= 1);
  CHECK(static_cast<std::size_t>(interim) * entries <= static_cast<std::size_t>(kH2BackWindow) + entries);
  REQUIRE(back->head() != nullptr);
  CHECK(back->head()->status == 204);  // the final answer still comes
}
