// ClientConnection, part 2: the handshakes. The first byte picks the protocol; the bytes already
// read go to its parser (proxy/http_head, proxy/socks5, proxy/socks4), and a complete request goes
// on to the decision.
#include "proxy/client_connection.h"

#include "proxy/http_forward.h"
#include "proxy/http_head.h"
#include "proxy/proxy_auth.h"
#include "proxy/proxy_server.h"
#include "proxy/socks4.h"
#include "proxy/socks5.h"

namespace boxproxy {
namespace {

constexpr std::uint8_t kSocks5Version = 5;
constexpr std::uint8_t kMethodNoAuth = 0;
constexpr std::uint8_t kMethodUserPass = 2;

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

}  // namespace

ClientConnection::Next ClientConnection::advance_handshake() {
  if (protocol_ == Protocol::unknown) {
    if (inbox_.empty()) return Next::keep;
    const auto first = static_cast<std::uint8_t>(inbox_[0]);
    protocol_ = first == 0x05 ? Protocol::socks5 : first == 0x04 ? Protocol::socks4 : Protocol::http;
    kind_ = protocol_ == Protocol::socks5 ? ClientKind::socks
            : protocol_ == Protocol::socks4 ? ClientKind::socks4
                                             : ClientKind::connect;
    phase_ = Phase::handshake;
  }
  switch (protocol_) {
    case Protocol::socks5: return advance_socks5();
    case Protocol::socks4: return advance_socks4();
    default: return advance_http_head();
  }
}

// True when the first line of `head` is exactly "CONNECT <target> HTTP/1.0|1.1" and CRLF, with
// single spaces and a target of visible ASCII; false when it is not (or not there yet).
bool ClientConnection::is_connect_line(std::string_view head) noexcept {
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

bool ClientConnection::authorized_http(const RequestHead& head) const {
  const auto& token = server_.config().auth_token;
  return !token || http_proxy_authorized(head, *token);
}

ClientConnection::Next ClientConnection::advance_http_head() {
  const std::size_t max_head = server_.config().max_head_bytes;
  auto parsed = parse_request_head(inbox_, max_head);
  kind_ = inbox_.starts_with("CONNECT ") ? ClientKind::connect : ClientKind::http;
  if (parsed.status == ParseResult<RequestHead>::Status::need_more) {
    if (inbox_.size() > max_head) return refuse(Reason::head_too_large);
    return Next::keep;
  }
  if (parsed.status == ParseResult<RequestHead>::Status::refused) {
    Reason reason = parsed.refusal.value_or(Reason::bad_request);
    // SPEC §7: anything but "CONNECT <authority> HTTP/1.x" in a CONNECT line is invalid target.
    if (kind_ == ClientKind::connect && reason == Reason::bad_request && !is_connect_line(inbox_)) {
      reason = Reason::invalid_target;
    }
    return refuse(reason);
  }
  const RequestHead& head = *parsed.value;
  // The token is checked before anything in the request is judged or logged (SPEC §11).
  if (!authorized_http(head)) return refuse_unauthenticated();
  if (head.method == "CONNECT") {
    kind_ = ClientKind::connect;
    TargetResult target = parse_authority(head.target);
    // For the log line when the target is refused: the host and port as sent, as far as they
    // split (the client has proved its token by now, SPEC §11).
    const AuthorityText sent = split_authority_text(head.target, std::nullopt);
    target_.host.assign(sent.host);
    target_.port = sent.port;
    inbox_.erase(0, parsed.consumed);  // what is left is early data, to go upstream first
    return decide(std::move(target));
  }
  kind_ = ClientKind::http;
  auto forward = prepare_forward_request(head);
  if (auto* reason = std::get_if<Reason>(&forward)) {
    // The log line names the host as sent when the target has one (SPEC §12), also when the host
    // itself is what is refused ("http://256.1.1.1/"). The token was checked above (SPEC §11).
    const AuthorityText sent = uri_host_text(head.target);
    target_.host.assign(sent.host);
    target_.port = sent.host.empty() ? 0 : sent.port;
    return refuse(*reason);
  }
  auto& request = std::get<ForwardRequest>(forward);
  exchange_.emplace();
  exchange_->method.assign(head.method);
  exchange_->request_body = request.framing;
  exchange_->client_keep_alive = client_wants_keep_alive(head);
  exchange_->client_http10 = head.version == "HTTP/1.0";
  upstream_prefix_ = std::move(request.upstream_head);
  inbox_.erase(0, parsed.consumed);  // what is left is body (and perhaps the next request)
  if (request.framing.kind == BodyFraming::Kind::chunked) {
    // Chunk bytes that came with the head are checked now, so a malformed body that is already
    // here is refused before any upstream socket opens.
    ChunkedScanner lookahead;
    if (lookahead.feed(inbox_).malformed) {
      target_.host = request.target.host;
      target_.port = request.target.port;
      return refuse(Reason::bad_framing);
    }
  }
  return decide(std::move(request.target));
}

// More than 1024 bytes of handshake without a complete message: the connection closes (SPEC §9).
// Only bytes of the handshake count: data pipelined after a complete request is early data.
ClientConnection::Next ClientConnection::socks5_wait_for_more() const {
  return handshake_consumed_ + inbox_.size() >= socks5_max_handshake_bytes ? Next::close : Next::keep;
}

ClientConnection::Next ClientConnection::advance_socks5() {
  const auto& token = server_.config().auth_token;
  for (;;) {
    switch (socks5_step_) {
      case Socks5Step::greeting: {
        auto r = parse_socks5_greeting(inbox_);
        if (r.status == ParseResult<Socks5Greeting>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Greeting>::Status::refused) return Next::close;
        handshake_consumed_ += r.consumed;
        inbox_.erase(0, r.consumed);
        const std::uint8_t method = token ? kMethodUserPass : kMethodNoAuth;
        const bool offered = token ? r.value->offers_user_pass : r.value->offers_no_auth;
        if (!offered) {
          // 05 FF: no acceptable method. With a token this is a client that did not prove it.
          if (token) {
            server_.count_refusal(Reason::auth_required);
            server_.log().decision({kind_, std::nullopt, 0, "-", Reason::auth_required});
          }
          phase_ = Phase::replying;
          undecided_.release();
          const char reply[2] = {static_cast<char>(kSocks5Version), static_cast<char>(0xFF)};
          if (queue(client_, {reply, 2}) == Next::close) return Next::close;
          return client_.out.empty() ? Next::close : Next::keep;
        }
        const char reply[2] = {static_cast<char>(kSocks5Version), static_cast<char>(method)};
        if (queue(client_, {reply, 2}) == Next::close) return Next::close;
        socks5_step_ = token ? Socks5Step::credentials : Socks5Step::request;
        break;
      }
      case Socks5Step::credentials: {
        auto r = parse_socks5_credentials(inbox_);
        if (r.status == ParseResult<Socks5Credentials>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Credentials>::Status::refused) return Next::close;
        handshake_consumed_ += r.consumed;
        inbox_.erase(0, r.consumed);
        if (!token_matches(*token, r.value->password)) {
          server_.count_refusal(Reason::auth_required);
          server_.log().decision({kind_, std::nullopt, 0, "-", Reason::auth_required});
          phase_ = Phase::replying;
          undecided_.release();
          const char reply[2] = {1, 1};
          if (queue(client_, {reply, 2}) == Next::close) return Next::close;
          return client_.out.empty() ? Next::close : Next::keep;
        }
        const char reply[2] = {1, 0};
        if (queue(client_, {reply, 2}) == Next::close) return Next::close;
        socks5_step_ = Socks5Step::request;
        break;
      }
      case Socks5Step::request: {
        auto r = parse_socks5_request(inbox_);
        if (r.status == ParseResult<Socks5Request>::Status::need_more) return socks5_wait_for_more();
        if (r.status == ParseResult<Socks5Request>::Status::refused) {
          return r.refusal ? refuse(*r.refusal) : Next::close;
        }
        inbox_.erase(0, r.consumed);  // what is left is early data
        target_.host = r.value->host;
        target_.port = r.value->port;
        if (r.value->command != 1) return refuse(socks5_command_refusal(r.value->command));
        return decide(parse_host(r.value->host, r.value->port));
      }
    }
  }
}

ClientConnection::Next ClientConnection::advance_socks4() {
  auto r = parse_socks4_request(inbox_);
  if (r.status == ParseResult<Socks4Request>::Status::need_more) {
    return inbox_.size() >= socks4_max_request_bytes ? Next::close : Next::keep;
  }
  if (r.status == ParseResult<Socks4Request>::Status::refused) return Next::close;
  inbox_.erase(0, r.consumed);
  // SOCKS4 cannot carry a token: with one configured, every SOCKS4 client is unauthenticated.
  if (server_.config().auth_token) return refuse_unauthenticated();
  target_.host = r.value->host;
  target_.port = r.value->port;
  if (r.value->command != 1) {
    return refuse(r.value->command == 2 ? Reason::socks_bind : Reason::socks_command);
  }
  return decide(parse_host(r.value->host, r.value->port));
}

}  // namespace boxproxy
