// SPDX-License-Identifier: Apache-2.0
// The Host check's reader (SPEC §16): what a checked tunnel's first client bytes say about the
// site they ask a plain-HTTP server for. Pure: handed everything the client has sent so far, it
// answers need more, not HTTP, names the decided host, or names another (or cannot be read).
//
// Why it exists: with a host list in force, a box that may reach `good.example:80` could otherwise
// open a tunnel to that name's address (a CDN, a shared host) and send `GET / HTTP/1.1` with
// `Host: evil.example`, reaching a site the list does not hold, while the same request as plain
// HTTP through the proxy is refused `host mismatch`. This is the SNI check's twin for cleartext.
//
// How it reads, in two steps:
//  1. Is it HTTP? The first line is looked at byte by byte, broadly, as the most lenient server
//     would read it: optional CR and LF bytes, a token (the method), spaces or tabs, a word (the
//     target), then further words; a word that starts with `HTTP/` (any case) makes it an HTTP/1.x
//     request line. A line that ends, or a byte no request line holds (a control character, NUL),
//     before such a word makes it not HTTP: SSH's `SSH-2.0-...`, SMTP's `EHLO box`, RESP, binary
//     protocols, and HTTP/0.9 (`GET /`, which has no headers and so no Host) pass untouched. The
//     HTTP/2 connection preface (h2c with prior knowledge) passes too: its `:authority` is inside
//     HPACK-coded frames this reader does not decode.
//  2. The head: held until it ends, then parsed by the strict parser the plain-HTTP path uses
//     (proxy/wire/http_head.h) and judged by request_names_host(). Anything that step 1 took for HTTP
//     but the strict parser refuses (a bare LF, white space before a colon, two spaces, a version
//     other than 1.0 or 1.1, a head past max_head_bytes) is `other_host`: fail closed, because a
//     lenient server could read a Host in it that we did not.
//
// Cost: step 1 and the wait for the head's end look at each byte once; the strict parser runs
// once, when a byte shows the head has ended or cannot be strict (CR LF CR LF, a bare CR or LF, a
// control character), or at the bound. So a head dribbled one byte a read costs no more than one
// sent whole. Only the first request of a tunnel is read; later ones pass unread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proxy/wire/http_head.h"

namespace boxproxy {

// True when a strictly parsed request head names `host` (a name, its trailing dot dropped) and
// `port`, as the plain-HTTP rule of SPEC §8 reads a Host header against its URI, the decided
// target taking the URI's place:
//  - a Host header must name that host, compared without regard to ASCII case and with one
//    trailing dot dropped, and that port, 80 when it has none (the http scheme's default port,
//    whatever port the tunnel goes to: inside a tunnel to :8080 the Host is `host:8080`);
//  - an absolute-form target (`http://host[:port]/...`, or `https://`, whose port defaults to 443)
//    must name them too, and a CONNECT's authority-form target (`host:port`) likewise;
//  - a request with no Host header names nothing unless its target does (absolute or authority
//    form): an origin-form request without Host asks for whatever site the server picks, which is
//    not the decided host's by any rule of ours.
// False for two Host headers (servers differ on which counts), a Host with userinfo, a target
// with a backslash, a '#' or userinfo, an absolute-form target of another scheme, and a target
// that is none of origin form (`/...`), `*`, absolute form or CONNECT's authority form.
[[nodiscard]] bool request_names_host(const RequestHead& head, std::string_view host, std::uint16_t port);

// The HTTP/2 connection preface (RFC 9113 §3.4): an h2c client with prior knowledge sends it first.
inline constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class TunnelHostReader {
 public:
  enum class Verdict : std::uint8_t {
    need_more,   // no answer yet: hold the bytes, read more
    not_http,    // the first line is not an HTTP/1.x request line (or is the h2 preface): pass
    names_host,  // a strict head whose target and Host name the decided host and port: pass
    other_host,  // another host or port, no name at all, or HTTP that cannot be read strictly
                 // within max_head_bytes: close
  };

  // `host` (a name, trailing dot dropped) and `port` are the decided target's; the reader keeps a
  // view of `host`, which must outlive it. `max_head_bytes` bounds what it waits for (>= 1).
  TunnelHostReader(std::string_view host, std::uint16_t port, std::size_t max_head_bytes) noexcept
      : host_(host), port_(port), max_head_bytes_(max_head_bytes) {}

  // `held` is everything the client has sent so far: the previous call's bytes and any new ones
  // after them. Once the answer is not need_more it never changes, and later bytes are not looked
  // at. While it is need_more, held.size() < max_head_bytes.
  Verdict feed(std::string_view held);

  // The client half-closed: `held` is all there will be. An unfinished first line (no `HTTP/` word
  // yet) passes, since no server acts on a request line that never ended; an unfinished head is
  // other_host, since a lenient server might act on it at the end of the stream.
  Verdict finish(std::string_view held);

  [[nodiscard]] Verdict verdict() const noexcept { return verdict_; }

  // The bytes of `held` (as given to feed) that may go upstream while the answer is need_more, and
  // have not been handed out before; each call hands out only what the last feed found. They are
  // the first line up to, never including, its first CR or LF (or the `HTTP/` word's slash): no
  // server acts on a request line that has not ended, and no head can end without a line end, so
  // what they carry cannot reach a site. Handing them on is what lets a client that sends a short
  // message with no line end (`ping`, a greeting) and waits for the answer be answered.
  [[nodiscard]] std::string_view take_forwardable(std::string_view held) noexcept;
  // How many bytes take_forwardable has handed out in all: the caller sends the rest on a pass.
  [[nodiscard]] std::size_t forwarded() const noexcept { return forwarded_; }

 private:
  // Where step 1 stands (see the file's comment); `head` is step 2.
  enum class State : std::uint8_t {
    leading,        // CR and LF bytes before the method (servers skip empty lines there)
    method,         // in the method token
    after_method,   // spaces or tabs after the method
    word,           // in the target, or a later word that is not the version
    between_words,  // spaces or tabs after a word
    version,        // in a later word that so far reads as the start of `HTTP/`
    head,           // an HTTP/1.x request line: waiting for the head to end
  };

  Verdict answer(Verdict verdict) noexcept { return verdict_ = verdict; }
  Verdict parse(std::string_view held);
  bool step_line(unsigned char c) noexcept;  // false: not HTTP
  bool step_head(unsigned char c) noexcept;  // true: time to parse
  void note_forwardable(unsigned char c) noexcept;

  std::string_view host_;
  std::uint16_t port_;
  std::size_t max_head_bytes_;
  Verdict verdict_ = Verdict::need_more;
  State state_ = State::leading;
  std::size_t scanned_ = 0;       // bytes of `held` already looked at
  std::size_t version_have_ = 0;  // bytes of `HTTP/` matched in the current word
  std::size_t line_length_ = 0;   // bytes in the head's current line (0 just after a CR LF)
  bool after_cr_ = false;         // the last byte looked at was a CR
  std::size_t forwardable_ = 0;   // leading bytes of `held` that cannot end a line (see take_forwardable)
  bool line_broken_ = false;      // a CR or LF (or the version) was met: forwardable_ is final
  std::size_t forwarded_ = 0;     // bytes take_forwardable handed out
};

}  // namespace boxproxy
