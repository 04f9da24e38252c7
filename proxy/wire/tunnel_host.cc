// SPDX-License-Identifier: Apache-2.0
#include "proxy/wire/tunnel_host.h"

#include <optional>
#include <variant>

#include "table/ascii.h"
#include "table/target.h"

namespace boxproxy {
namespace {

constexpr std::uint16_t kHttpPort = 80;
constexpr std::uint16_t kHttpsPort = 443;
constexpr std::string_view kVersionPrefix = "http/";  // compared after lower-casing

// What a lenient server takes for the space between the words of a request line: RFC 9112 §3 lets
// it treat "SP, HTAB, VT, FF, or bare CR" as one. Read as blanks here, so that `GET\v/\vHTTP/1.1`
// is HTTP to this reader too (and then refused by the strict parser) rather than passed unread.
constexpr bool is_blank(unsigned char c) noexcept {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}
// What may come before the method: the empty lines RFC 9112 §2.2 lets a server skip, and the
// white space some skip too.
constexpr bool is_leading(unsigned char c) noexcept { return is_blank(c) || c == '\n'; }
// A byte of a word of a request line as the most lenient server reads one: anything visible,
// obs-text included. (The strict parser later takes visible ASCII only.)
constexpr bool is_word_char(unsigned char c) noexcept { return c > 0x20 && c != 0x7f; }

// Whether `text` parses (trailing dot dropped, port `default_port` when absent) as exactly the
// name `host` and port `port`. An address never names a name, even the one it resolved to.
bool authority_names(std::string_view text, std::uint16_t default_port, std::string_view host,
                     std::uint16_t port) {
  // Userinfo is read as another host by some parsers ("good@evil"): never judged as either.
  if (text.find('@') != std::string_view::npos) return false;
  const TargetResult parsed = parse_authority_default_port(text, default_port);
  const Target* target = std::get_if<Target>(&parsed);
  return target != nullptr && target->is_name() && target->port == port && iequals(target->host, host);
}

// The port an absolute-form target's scheme implies, or none for a scheme this check does not
// read (refused: a server might route by its authority all the same).
std::optional<std::uint16_t> scheme_port(std::string_view scheme) noexcept {
  if (iequals(scheme, "http")) return kHttpPort;
  if (iequals(scheme, "https")) return kHttpsPort;
  return std::nullopt;
}

// What the request target names. Sets `default_port` to the port a Host without one means.
// Returns false when the target names another host, or cannot be judged; `named` says whether
// it named the host at all (origin form and `*` name nothing).
bool judge_target(const RequestHead& head, std::string_view host, std::uint16_t port, bool& named,
                  std::uint16_t& default_port) {
  const std::string_view target = head.target;
  named = false;
  default_port = kHttpPort;
  if (iequals(head.method, "CONNECT")) {
    // Authority form, the port required (a server that proxies would open a tunnel there).
    named = true;
    const TargetResult parsed = parse_authority(target);
    const Target* t = std::get_if<Target>(&parsed);
    return t != nullptr && t->is_name() && t->port == port && iequals(t->host, host);
  }
  if (target == "*" || target.front() == '/') return true;  // origin form, asterisk form
  // Absolute form. Each of these is read as another host by some URL parser ("http://evil\@good/",
  // "http://good#@evil/"): refused, never judged as either (as for plain HTTP, SPEC §8).
  if (target.find('\\') != std::string_view::npos || target.find('#') != std::string_view::npos) return false;
  const std::size_t colon = target.find("://");
  if (colon == std::string_view::npos) return false;
  const std::optional<std::uint16_t> scheme_default = scheme_port(target.substr(0, colon));
  if (!scheme_default) return false;
  std::string_view rest = target.substr(colon + 3);
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  default_port = *scheme_default;
  named = true;
  return authority_names(authority, default_port, host, port);
}

}  // namespace

bool request_names_host(const RequestHead& head, std::string_view host, std::uint16_t port) {
  const HeaderField* host_header = nullptr;
  for (const HeaderField& field : head.headers) {
    if (!iequals(field.name, "Host")) continue;
    // Two Host headers: which one counts is anyone's guess, so one could name another site.
    if (host_header != nullptr) return false;
    host_header = &field;
  }
  bool named = false;
  std::uint16_t default_port = kHttpPort;
  if (!judge_target(head, host, port, named, default_port)) return false;
  if (host_header != nullptr) return authority_names(host_header->value, default_port, host, port);
  // No Host and a target that names nothing: the server picks a site by its own rules.
  return named;
}

TunnelHostReader::Verdict TunnelHostReader::feed(std::string_view held) {
  if (verdict_ != Verdict::need_more) return verdict_;
  // The h2c preface starts like a request line ("PRI * HTTP/2.0") that the strict parser refuses;
  // while the bytes can still be it, wait for all 24, then let it through (see the header).
  const std::size_t preface_seen = std::min(held.size(), kHttp2Preface.size());
  if (held.substr(0, preface_seen) == kHttp2Preface.substr(0, preface_seen)) {
    if (preface_seen == kHttp2Preface.size()) return answer(Verdict::not_http);
    return verdict_;
  }
  // Nothing past the bound is looked at, so the answer never depends on how the bytes came.
  const std::size_t limit = std::min(held.size(), max_head_bytes_);
  while (scanned_ < limit) {
    const auto c = static_cast<unsigned char>(held[scanned_++]);
    if (state_ != State::head) {
      if (!step_line(c)) return answer(Verdict::not_http);
      note_forwardable(c);
    } else if (step_head(c) && parse(held) != Verdict::need_more) {
      return verdict_;
    }
  }
  // Still no answer at the bound: a line or head that long is refused, never passed unread.
  if (held.size() >= max_head_bytes_) {
    if (state_ == State::head && parse(held) != Verdict::need_more) return verdict_;
    return answer(Verdict::other_host);
  }
  return verdict_;
}

TunnelHostReader::Verdict TunnelHostReader::finish(std::string_view held) {
  if (feed(held) != Verdict::need_more) return verdict_;
  // Before an `HTTP/` word no server has a request line with headers: nothing to act on.
  if (state_ != State::head) return answer(Verdict::not_http);
  return answer(Verdict::other_host);  // an unfinished head: fail closed
}

// After step 1 took `c` (the byte at scanned_ - 1): the first line so far may go upstream until a
// CR or LF past the leading empty lines (a line end to some server: RFC 9112 lets a bare CR be
// one) or the version word, whatever the strict parser later makes of the line.
void TunnelHostReader::note_forwardable(unsigned char c) noexcept {
  if (line_broken_) return;
  if (state_ == State::head || (state_ != State::leading && (c == '\r' || c == '\n'))) {
    line_broken_ = true;
    return;
  }
  forwardable_ = scanned_;
}

std::string_view TunnelHostReader::take_forwardable(std::string_view held) noexcept {
  if (verdict_ != Verdict::need_more || forwardable_ <= forwarded_ || forwardable_ > held.size()) return {};
  const std::size_t from = forwarded_;
  forwarded_ = forwardable_;
  return held.substr(from, forwarded_ - from);
}

// Step 1, one byte of the first line. Broad on purpose: whatever a lenient server could take for a
// request line with headers must be read by the strict parser (and refused if it is not strict).
bool TunnelHostReader::step_line(unsigned char c) noexcept {
  switch (state_) {
    case State::leading:
      if (is_leading(c)) return true;
      if (!is_token_char(c)) return false;
      state_ = State::method;
      return true;
    case State::method:
      if (is_token_char(c)) return true;
      if (!is_blank(c)) return false;
      state_ = State::after_method;
      return true;
    case State::after_method:
      if (is_blank(c)) return true;
      if (!is_word_char(c)) return false;
      state_ = State::word;  // the target: never the version, even if it reads "HTTP/"
      return true;
    case State::word:
      if (is_word_char(c)) return true;
      if (!is_blank(c)) return false;  // a LF or a control character: HTTP/0.9 at most
      state_ = State::between_words;
      return true;
    case State::between_words:
      if (is_blank(c)) return true;
      if (!is_word_char(c)) return false;
      state_ = State::version;
      version_have_ = 0;
      [[fallthrough]];
    case State::version:
      if (is_blank(c)) {
        state_ = State::between_words;
        return true;
      }
      if (!is_word_char(c)) return false;
      if (ascii_lower(static_cast<char>(c)) != kVersionPrefix[version_have_]) {
        state_ = State::word;
        return true;
      }
      if (++version_have_ == kVersionPrefix.size()) {
        state_ = State::head;
        line_length_ = 1;  // inside the request line
      }
      return true;
    case State::head:
      return true;
  }
  return false;
}

// Step 2, one byte of the head: true when the strict parser has something to decide, i.e. the
// head has ended (CR LF CR LF) or shows what the parser refuses (a bare CR or LF, a control
// character). Otherwise the parser would only say "need more", and is not run.
bool TunnelHostReader::step_head(unsigned char c) noexcept {
  if (after_cr_) {
    after_cr_ = false;
    if (c != '\n') return true;  // a bare CR
    const bool blank_line = line_length_ == 0;
    line_length_ = 0;
    return blank_line;
  }
  if (c == '\r') {
    after_cr_ = true;
    return false;
  }
  ++line_length_;
  if (c == '\n') return true;                 // a bare LF
  return c != '\t' && (c < 0x20 || c == 0x7f);  // a control character or NUL
}

TunnelHostReader::Verdict TunnelHostReader::parse(std::string_view held) {
  const ParseResult<RequestHead> result = parse_request_head(held, max_head_bytes_);
  switch (result.status) {
    case ParseResult<RequestHead>::Status::need_more:
      return verdict_;
    case ParseResult<RequestHead>::Status::refused:
      return answer(Verdict::other_host);  // fail closed: a lenient server might read a Host here
    case ParseResult<RequestHead>::Status::complete:
      return answer(request_names_host(*result.value, host_, port_) ? Verdict::names_host : Verdict::other_host);
  }
  return answer(Verdict::other_host);
}

}  // namespace boxproxy
