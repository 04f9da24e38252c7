// SPDX-License-Identifier: Apache-2.0
#include "proxy/wire/handshake.h"

#include <algorithm>

#include "proxy/wire/http_forward.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/proxy_auth.h"
#include "proxy/wire/replies.h"
#include "proxy/wire/socks_wire.h"
#include "proxy/wire/socks4.h"
#include "proxy/wire/socks5.h"

namespace boxproxy {
namespace {

// A RESOLVE carries no meaningful port: it is judged at this one (SPEC §16).
constexpr std::uint16_t kResolvePort = 443;

// The host and port an absolute-form request target ("scheme://authority/path") names as sent,
// for the log line of a refused request: port 80 when absent from an http:// URI, 0 when absent
// from another. An empty host when there is none, and when the target has a backslash or a '#',
// or its authority an '@' (SPEC §8): which host such a target names depends on who reads it, so
// none is logged.
AuthorityText uri_host_text(std::string_view target) noexcept {
  if (target.find_first_of("\\#") != std::string_view::npos) return {};
  const std::size_t slashes = target.find("://");
  if (slashes == std::string_view::npos || slashes == 0) return {};
  const std::string_view scheme = target.substr(0, slashes);
  if (scheme.find_first_of("/?") != std::string_view::npos) return {};
  const std::string_view rest = target.substr(slashes + 3);
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  if (authority.find('@') != std::string_view::npos) return {};
  return split_authority_text(authority, iequals(scheme, "http") ? std::optional<std::uint16_t>(80) : std::nullopt);
}

// True when the first line of `head` is exactly "CONNECT <target> HTTP/1.0|1.1" and CRLF, with
// single spaces and a target of visible ASCII; false when it is not (or not there yet).
bool is_connect_line(std::string_view head) noexcept {
  const std::size_t end = head.find("\r\n");
  if (end == std::string_view::npos) return false;
  std::string_view line = head.substr(0, end);
  if (!line.starts_with("CONNECT ")) return false;
  line.remove_prefix(8);
  const std::size_t space = line.find(' ');
  if (space == 0 || space == std::string_view::npos) return false;
  for (char c : line.substr(0, space)) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  const std::string_view version = line.substr(space + 1);
  return version == "HTTP/1.1" || version == "HTTP/1.0";
}

}  // namespace

void append_bounded(std::string& to, std::string_view bytes, std::size_t limit) {
  const std::size_t need = to.size() + bytes.size();
  if (need > to.capacity()) to.reserve(std::max(need, std::min(2 * to.capacity(), limit)));
  to.append(bytes);
}

Handshake::Outcome Handshake::feed(std::string_view bytes) {
  const bool reading_head = protocol_ == Protocol::http;
  append_bounded(buffer_, bytes, buffer_.size() + want());
  if (reading_head && buffer_.size() <= rules_.max_head_bytes && bytes.find('\n') == std::string_view::npos) {
    // The head parser reads the whole head again on each call; a client trickling a head a byte
    // at a time would make that quadratic. Without a new line ending, no answer can change but
    // an early refusal, which then comes with the next line instead (the parser's answer does not
    // depend on how the bytes were split).
    return Outcome::need_more;
  }
  return advance();
}

Handshake::Outcome Handshake::next_http_request(std::string_view pipelined) {
  protocol_ = Protocol::http;
  kind_ = ClientKind::http;
  buffer_.assign(pipelined);
  to_send_.clear();
  reason_.reset();
  log_host_.clear();
  log_port_ = 0;
  target_ = Target{};
  plain_.reset();
  return advance_http_head();
}

std::size_t Handshake::want() const noexcept {
  const std::size_t limit = protocol_ == Protocol::http || protocol_ == Protocol::unknown
                                ? rules_.max_head_bytes
                                : socks5_max_handshake_bytes - std::min(socks_consumed_, socks5_max_handshake_bytes);
  return limit + 1 > buffer_.size() ? limit + 1 - buffer_.size() : 1;
}

std::string Handshake::take_rest() {
  std::string rest(buffer_);  // at its size: the head's buffer (up to --max-head-bytes) goes back
  std::string().swap(buffer_);
  return rest;
}

Handshake::Outcome Handshake::advance() {
  if (protocol_ == Protocol::unknown) {
    if (buffer_.empty()) return Outcome::need_more;
    const auto first = static_cast<std::uint8_t>(buffer_[0]);
    protocol_ = first == socks::kVersion5 ? Protocol::socks5 : first == socks::kVersion4 ? Protocol::socks4 : Protocol::http;
    kind_ = protocol_ == Protocol::socks5 ? ClientKind::socks : protocol_ == Protocol::socks4 ? ClientKind::socks4 : ClientKind::connect;
  }
  switch (protocol_) {
    case Protocol::socks5: return advance_socks5();
    case Protocol::socks4: return advance_socks4();
    default: return advance_http_head();
  }
}

Handshake::Outcome Handshake::refuse(Reason reason, std::string_view host, std::uint16_t port) {
  reason_ = reason;
  log_host_.assign(host);
  log_port_ = port;
  return Outcome::refuse;
}

// A target that does not parse is refused, and logged with the host and port as sent.
Handshake::Outcome Handshake::decide(TargetResult parsed, std::string_view host, std::uint16_t port) {
  if (auto* reason = std::get_if<Reason>(&parsed)) return refuse(*reason, host, port);
  target_ = std::move(std::get<Target>(parsed));
  logged_port_ = target_.port;
  return Outcome::decided;
}

Handshake::Outcome Handshake::advance_http_head() {
  const std::size_t max_head = rules_.max_head_bytes;
  auto parsed = parse_request_head(buffer_, max_head);
  kind_ = buffer_.starts_with("CONNECT ") ? ClientKind::connect : ClientKind::http;
  if (parsed.status == ParseResult<RequestHead>::Status::need_more) {
    if (buffer_.size() > max_head) return refuse(Reason::head_too_large);
    return Outcome::need_more;
  }
  if (parsed.status == ParseResult<RequestHead>::Status::refused) {
    Reason reason = parsed.refusal.value_or(Reason::bad_request);
    // SPEC §7: anything but "CONNECT <authority> HTTP/1.x" in a CONNECT line is invalid target.
    if (kind_ == ClientKind::connect && reason == Reason::bad_request && !is_connect_line(buffer_)) {
      reason = Reason::invalid_target;
    }
    return refuse(reason);
  }
  const RequestHead& head = *parsed.value;
  // The token is checked before anything in the request is judged or logged (SPEC §11): an
  // unauthenticated peer never puts a host name into the log.
  if (rules_.auth_token && !http_proxy_authorized(head, *rules_.auth_token)) return refuse(Reason::auth_required);
  if (head.method == "CONNECT") {
    kind_ = ClientKind::connect;
    // For the log line when the target is refused: the host and port as sent, as far as they
    // split (the client has proved its token by now, SPEC §11).
    const AuthorityText sent = split_authority_text(head.target, std::nullopt);
    const Outcome outcome = decide(parse_authority(head.target), sent.host, sent.port);
    consume(parsed.consumed);  // what is left is early data, to go upstream first
    return outcome;
  }
  kind_ = ClientKind::http;
  auto forward = prepare_forward_request(head);
  if (auto* reason = std::get_if<Reason>(&forward)) {
    // The log line names the host as sent when the target has one (SPEC §12), also when the host
    // itself is what is refused ("http://256.1.1.1/"). The token was checked above (SPEC §11).
    const AuthorityText sent = uri_host_text(head.target);
    return refuse(*reason, sent.host, sent.host.empty() ? 0 : sent.port);
  }
  auto& request = std::get<ForwardRequest>(forward);
  plain_.emplace(PlainRequest{std::string(head.method), request.framing, client_wants_keep_alive(head),
                              head.version == "HTTP/1.0", std::move(request.upstream_head)});
  consume(parsed.consumed);  // what is left is body (and perhaps the next request)
  if (request.framing.kind == BodyFraming::Kind::chunked) {
    // Chunk bytes that came with the head are checked now, so a malformed body that is already
    // here is refused before any upstream socket opens.
    ChunkedScanner lookahead;
    if (lookahead.feed(buffer_).malformed) {
      plain_.reset();
      return refuse(Reason::bad_framing, request.target.host, request.target.port);
    }
  }
  target_ = std::move(request.target);
  logged_port_ = target_.port;
  return Outcome::decided;
}

// More than 1024 bytes of handshake without a complete message: the connection closes (SPEC §9).
// Only bytes of the handshake count: data pipelined after a complete request is early data.
Handshake::Outcome Handshake::socks5_wait_for_more() const noexcept {
  return socks_consumed_ + buffer_.size() >= socks5_max_handshake_bytes ? Outcome::close : Outcome::need_more;
}

Handshake::Outcome Handshake::advance_socks5() {
  const auto& token = rules_.auth_token;
  for (;;) {
    switch (socks5_step_) {
      case Socks5Step::greeting: {
        auto r = parse_socks5_greeting(buffer_);
        if (r.status == ParseResult<Socks5Greeting>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Greeting>::Status::refused) return Outcome::close;
        socks_consumed_ += r.consumed;
        consume(r.consumed);
        const bool offered = token ? r.value->offers_user_pass : r.value->offers_no_auth;
        if (!offered) {
          // 05 FF: no acceptable method. With a token this is a client that did not prove it.
          if (token) reason_ = Reason::auth_required;
          to_send_ += {char(socks::kVersion5), char(socks::kNoAcceptableMethod)};
          return Outcome::answer_and_close;
        }
        to_send_ += {char(socks::kVersion5), char(token ? socks::kMethodUserPass : socks::kMethodNoAuth)};
        socks5_step_ = token ? Socks5Step::credentials : Socks5Step::request;
        break;
      }
      case Socks5Step::credentials: {
        auto r = parse_socks5_credentials(buffer_);
        if (r.status == ParseResult<Socks5Credentials>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Credentials>::Status::refused) return Outcome::close;
        socks_consumed_ += r.consumed;
        consume(r.consumed);
        if (!token_matches(*token, r.value->password)) {
          reason_ = Reason::auth_required;
          to_send_ += {char(socks::kAuthVersion), char(socks::kAuthFailed)};
          return Outcome::answer_and_close;
        }
        to_send_ += {char(socks::kAuthVersion), char(socks::kAuthOk)};
        socks5_step_ = Socks5Step::request;
        break;
      }
      case Socks5Step::request: {
        auto r = parse_socks5_request(buffer_);
        if (r.status == ParseResult<Socks5Request>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Request>::Status::refused) {
          return r.refusal ? refuse(*r.refusal) : Outcome::close;
        }
        consume(r.consumed);  // what is left is early data
        const Socks5Request& request = *r.value;
        if (request.command == socks::kCommandResolve) {
          // Tor's RESOLVE: its port is meaningless (Tor sends 0); the name is judged at 443, the
          // port a bare target is judged at (SPEC §13), and the connection widens that to any port
          // the host list opens for the name (ClientConnection::decide_parsed).
          kind_ = ClientKind::resolve;
          const Outcome outcome = decide(parse_host(request.host, kResolvePort), request.host, request.port);
          logged_port_ = request.port;
          return outcome;
        }
        if (request.command != 1) return refuse(socks5_command_refusal(request.command), request.host, request.port);
        return decide(parse_host(request.host, request.port), request.host, request.port);
      }
    }
  }
}

Handshake::Outcome Handshake::advance_socks4() {
  auto r = parse_socks4_request(buffer_);
  if (r.status == ParseResult<Socks4Request>::Status::need_more) {
    return buffer_.size() >= socks4_max_request_bytes ? Outcome::close : Outcome::need_more;
  }
  if (r.status == ParseResult<Socks4Request>::Status::refused) return Outcome::close;
  consume(r.consumed);
  // SOCKS4 cannot carry a token: with one configured, every SOCKS4 client is unauthenticated.
  if (rules_.auth_token) return refuse(Reason::auth_required);
  const Socks4Request& request = *r.value;
  if (request.command != 1) {
    return refuse(request.command == 2 ? Reason::socks_bind : Reason::socks_command, request.host, request.port);
  }
  return decide(parse_host(request.host, request.port), request.host, request.port);
}

}  // namespace boxproxy
