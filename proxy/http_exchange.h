// SPDX-License-Identifier: Apache-2.0
// One plain-HTTP exchange (SPEC §8) between the client and the origin: the request body goes up
// exactly as framed, the response head is rewritten and the response body comes back exactly as
// framed; nothing after either end is taken for part of it. Each body is followed by one
// BodyCursor. The exchange reads and writes the two Endpoints its owner (ClientConnection) gives
// it, and answers what the owner does next; it never closes a socket or gives a slot back itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/wire/handshake.h"
#include "proxy/wire/http_body.h"
#include "proxy/clock.h"
#include "proxy/relay.h"

namespace boxproxy {

// Where a body stands as its bytes go by: how many of them belong to it, which of those to pass
// on (trailers are not, SPEC §8), and whether it has ended.
class BodyCursor {
 public:
  struct Take {
    std::size_t take = 0;     // bytes of the input that belong to the body
    std::size_t pass = 0;     // of those, how many to pass on (a prefix: all, unless trailers)
    std::string_view ending;  // what closes a chunked body in place of its trailers
    bool done = false;        // the body ended within `take` (or there is none)
    bool malformed = false;   // a chunked body broke its framing (bad_framing)
  };

  BodyCursor() noexcept = default;
  explicit BodyCursor(BodyFraming framing) noexcept : framing_(framing) {}
  // With Trailers::filtered, a chunked body's trailer section is passed on filtered as `ending`
  // (ChunkedScanner): for an inspected connection's responses only.
  BodyCursor(BodyFraming framing, ChunkedScanner::Trailers trailers) noexcept
      : framing_(framing), chunks_(trailers) {}

  // The next bytes after the head. until_close takes everything and never ends by itself.
  [[nodiscard]] Take feed(std::string_view bytes) noexcept;
  [[nodiscard]] const BodyFraming& framing() const noexcept { return framing_; }
  // Bytes still wanted when the length is known; kReadChunk (or more) otherwise.
  [[nodiscard]] std::uint64_t wanted_at_most(std::uint64_t cap) const noexcept;

 private:
  BodyFraming framing_;
  ChunkedScanner chunks_;
};

class HttpExchange {
 public:
  // What the owner does next.
  enum class Step : std::uint8_t {
    keep,
    close,               // end the client connection (an error, or a response cut short)
    refuse_bad_framing,  // the request body broke its framing before any response reached the client
    response_read,       // the response is all read: give the upstream back; then, once the
                         // client has it all, finished()
    finished,            // the response is all written to the client
  };

  // `request`: the head's part the exchange needs (its rewritten head is the owner's to send).
  HttpExchange(Endpoint& client, Endpoint& upstream, const PlainRequest& request);
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  // The head has gone upstream: `early` is what the client sent after it (body, and perhaps the
  // next request).
  [[nodiscard]] Step start(std::string_view early);
  // The client's read event fired: more request body.
  [[nodiscard]] Step client_readable();
  // The upstream's read event fired: response bytes.
  [[nodiscard]] Step upstream_readable();
  // The client's queue has just emptied.
  [[nodiscard]] Step client_drained();

  [[nodiscard]] bool request_done() const noexcept { return request_done_; }
  [[nodiscard]] bool response_done() const noexcept { return response_done_; }
  // The client connection goes on after this exchange (both sides asked for it).
  [[nodiscard]] bool keep_alive() const noexcept { return keep_alive_; }
  // Bytes the client sent past its request body: its next request, kept until this one ends.
  [[nodiscard]] std::string take_pipelined() noexcept { return std::move(pipelined_); }
  [[nodiscard]] Clock::time_point last_activity() const noexcept { return last_activity_; }
  // The final response's status once its head has come (0 before).
  [[nodiscard]] std::uint16_t response_status() const noexcept { return response_status_; }

 private:
  [[nodiscard]] Step pass_request_body(std::string_view bytes);
  [[nodiscard]] Step parse_response_heads();
  [[nodiscard]] Step pass_response(std::string_view bytes);

  Endpoint& client_;
  Endpoint& upstream_;
  std::string method_;
  BodyCursor request_body_;
  BodyCursor response_body_;
  std::string response_head_;  // bytes of the response head so far
  std::string pipelined_;
  Clock::time_point last_activity_ = Clock::now();
  bool client_keep_alive_ = false;
  bool client_http10_ = false;  // an HTTP/1.0 request: no interim (1xx) response goes back
  bool request_done_ = false;
  bool response_head_done_ = false;
  bool response_done_ = false;
  bool keep_alive_ = false;
  std::uint16_t response_status_ = 0;
};

}  // namespace boxproxy
