// SPDX-License-Identifier: Apache-2.0
// A client's handshake, from its first byte to a target (SPEC §7 to §11), pure: no socket, no
// event loop. It is fed the bytes as they arrive (in any pieces: one at a time, or several
// messages at once) and answers what should happen next. The connection (ClientConnection) reads,
// feeds, sends what it is told to, and acts on the outcome.
//
// The first byte picks the protocol: 0x05 SOCKS5, 0x04 SOCKS4/4a, anything else an HTTP head
// (CONNECT or a plain request). The bytes already read go to that protocol's parser
// (proxy/http_head, proxy/socks5, proxy/socks4).
//
// Bounds: it holds at most max_head_bytes + 1 bytes of an HTTP head, and at most
// socks5_max_handshake_bytes (socks4_max_request_bytes) + 1 of a SOCKS handshake; want() says how
// many more it will take, so a reader never reads past them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "proxy/wire/client_kind.h"
#include "proxy/wire/http_body.h"
#include "table/reason.h"
#include "table/target.h"

namespace boxproxy {

// What the handshake needs to know of the server's configuration.
struct HandshakeRules {
  std::size_t max_head_bytes = 32 * 1024;  // --max-head-bytes
  // --auth-token-file's token (SPEC §11), or none. Must outlive the handshake.
  std::optional<std::string_view> auth_token;
};

// A plain-HTTP request's part that outlives its head (SPEC §8).
struct PlainRequest {
  std::string method;
  BodyFraming framing;             // the request body as framed
  bool client_keep_alive = false;  // the client asks to keep its connection afterwards
  bool client_http10 = false;      // an HTTP/1.0 request: no interim (1xx) response goes back
  std::string upstream_head;       // the head rewritten for the origin (origin form, Host, ...)
};

class Handshake {
 public:
  using Protocol = ClientProtocol;

  enum class Outcome : std::uint8_t {
    need_more,         // feed more (after sending to_send(): a SOCKS5 method choice, an auth status)
    decided,           // a target: target(), kind(), take_rest(), and for plain HTTP plain()
    refuse,            // refused before any decision: reason(), log_host()/log_port(); the
                       // answer is refusal_reply_for(protocol(), reason) (proxy/wire/replies.h)
    answer_and_close,  // send to_send() and close once written; reason(), when set, is logged
                       // without a host (SOCKS5 with no acceptable method, or wrong credentials)
    close,             // close now: not this protocol, or more handshake bytes than the bound
  };

  explicit Handshake(HandshakeRules rules) noexcept : rules_(rules) {}

  // Feeds the next bytes the client sent. After an outcome other than need_more, feed no more.
  [[nodiscard]] Outcome feed(std::string_view bytes);
  // A keep-alive connection's next request (SPEC §8): an HTTP head again, starting with the bytes
  // the client already pipelined (maybe none). Forgets the request before.
  [[nodiscard]] Outcome next_http_request(std::string_view pipelined);

  // How many bytes the handshake takes at most from the next read: past its bound it answers
  // (head too large, or close), so one more than the bound is all it ever holds.
  [[nodiscard]] std::size_t want() const noexcept;

  // Bytes to send to the client now, before acting on the outcome (SOCKS5's method choice and
  // RFC 1929 status, and for answer_and_close the final answer). Cleared by take_to_send().
  [[nodiscard]] const std::string& to_send() const noexcept { return to_send_; }
  [[nodiscard]] std::string take_to_send() noexcept { return std::exchange(to_send_, {}); }

  [[nodiscard]] Protocol protocol() const noexcept { return protocol_; }
  [[nodiscard]] ClientKind kind() const noexcept { return kind_; }

  // After refuse: why. After answer_and_close: the refusal to count and log, when there is one
  // (with a token, SPEC §11); none for a client that offered no method we take.
  [[nodiscard]] std::optional<Reason> reason() const noexcept { return reason_; }
  // After refuse: the host and port the client named, as sent, for the log line; an empty host
  // when there is none to log (not yet known, or an unauthenticated client, SPEC §11).
  [[nodiscard]] std::string_view log_host() const noexcept { return log_host_; }
  [[nodiscard]] std::uint16_t log_port() const noexcept { return log_port_; }

  // After decided: the target, parsed (SPEC §5 step 1).
  [[nodiscard]] const Target& target() const noexcept { return target_; }
  // After decided: the port the log names. The target's, but for a RESOLVE, whose target is
  // judged at 443 while the log says the port it asked with (usually 0: none, SPEC §16).
  [[nodiscard]] std::uint16_t logged_port() const noexcept { return logged_port_; }
  // After decided: the bytes after the head or request (early data, or the start of a body), at
  // their size; the handshake's own buffer is given back.
  [[nodiscard]] std::string take_rest();
  // After decided with kind() http: the request.
  [[nodiscard]] std::optional<PlainRequest>& plain() noexcept { return plain_; }

 private:
  enum class Socks5Step : std::uint8_t { greeting, credentials, request };

  [[nodiscard]] Outcome advance();
  [[nodiscard]] Outcome advance_http_head();
  [[nodiscard]] Outcome advance_socks5();
  [[nodiscard]] Outcome advance_socks4();
  [[nodiscard]] Outcome socks5_wait_for_more() const noexcept;
  [[nodiscard]] Outcome refuse(Reason reason, std::string_view host = {}, std::uint16_t port = 0);
  [[nodiscard]] Outcome decide(TargetResult parsed, std::string_view host, std::uint16_t port);
  void consume(std::size_t n) { buffer_.erase(0, n); }

  HandshakeRules rules_;
  Protocol protocol_ = Protocol::unknown;
  ClientKind kind_ = ClientKind::connect;
  Socks5Step socks5_step_ = Socks5Step::greeting;
  std::string buffer_;                  // bytes fed and not yet consumed
  std::size_t socks_consumed_ = 0;      // SOCKS handshake bytes already parsed (bounded in all)
  std::string to_send_;
  std::optional<Reason> reason_;
  std::string log_host_;
  std::uint16_t log_port_ = 0;
  std::uint16_t logged_port_ = 0;
  Target target_;
  std::optional<PlainRequest> plain_;
};

// Appends `bytes` without letting the buffer's capacity grow past `limit` (or what it must hold):
// std::string doubles its capacity, which would let a head just over half the limit hold twice
// the memory the man page promises for a handshaking client.
void append_bounded(std::string& to, std::string_view bytes, std::size_t limit);

}  // namespace boxproxy
