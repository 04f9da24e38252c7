// SPDX-License-Identifier: Apache-2.0
// An HTTP/2 request's header list as an HTTP/1.1 head (proxy/wire/h2_request.h).
#include "proxy/wire/h2_request.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "proxy/wire/h2_fields.h"
#include "proxy/wire/http_head.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// Fields RFC 9113 §8.2.2 calls connection-specific: an HTTP/2 request carrying one is malformed.
// Each would mean something to the origin's HTTP/1.1 parser that the box must not decide:
// transfer-encoding a second body framing, connection and the rest which headers are hop-by-hop.
constexpr std::array<std::string_view, 5> kConnectionSpecific = {"connection", "keep-alive", "proxy-connection",
                                                                 "transfer-encoding", "upgrade"};

// A request target for the request line: visible ASCII only (a space would end it; the judge
// then decides whether it is an origin-form path at all).
bool is_target(std::string_view path) noexcept {
  if (path.empty()) return false;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// host[:port] and nothing else: userinfo ('@') or a path would give the Host line a meaning the
// judge does not check. Whether it names the decided host is the judge's (`host mismatch`).
bool is_plain_authority(std::string_view authority) noexcept {
  if (authority.empty()) return false;
  for (const char ch : authority) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return false;
    if (c == '@' || c == '/' || c == '?' || c == '#' || c == '\\') return false;
  }
  return true;
}

bool is_plain_digits(std::string_view text) noexcept {
  if (text.empty() || text.size() > 18) return false;  // as request_framing: at most 18 digits
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

struct Pseudo {
  std::optional<std::string_view> method, scheme, authority, path;
};

// The pseudo-headers, which must all come first, each once; false: malformed.
bool take_pseudo(const H2Field& field, Pseudo& pseudo) noexcept {
  std::optional<std::string_view>* slot = nullptr;
  if (field.name == ":method") slot = &pseudo.method;
  if (field.name == ":scheme") slot = &pseudo.scheme;
  if (field.name == ":authority") slot = &pseudo.authority;
  if (field.name == ":path") slot = &pseudo.path;
  // :protocol (extended CONNECT), :status and anything else: nothing HTTP/1.1 here can carry them.
  if (slot == nullptr || slot->has_value()) return false;
  *slot = field.value;
  return true;
}

bool valid_pseudo(const Pseudo& p) noexcept {
  if (!p.method || p.method->empty()) return false;
  for (const char c : *p.method) {
    if (!is_token_char(static_cast<unsigned char>(c))) return false;
  }
  // CONNECT asks for a tunnel inside the inspected one: its bytes would pass unjudged.
  if (*p.method == "CONNECT") return false;
  // Only https: the stream arrived inside the box's TLS session to the decided host.
  if (!p.scheme || *p.scheme != "https") return false;
  return p.path && is_target(*p.path);
}

struct Regular {
  std::vector<MessageField> kept;  // each field forwarded, in order
  std::string cookie;  // every cookie field joined
  std::optional<std::string_view> host;
  std::optional<std::string_view> content_length;
};

// One regular field, written or judged; false: malformed.
bool take_regular(const H2Field& field, Regular& out) {
  if (!is_lower_token(field.name) || !is_carriable_value(field.value)) return false;
  for (const std::string_view name : kConnectionSpecific) {
    if (field.name == name) return false;
  }
  if (field.name == "te") return field.value == "trailers";  // the one te allowed; hop-by-hop, dropped
  if (field.name == "expect") return true;  // no 100 Continue goes back over HTTP/2: dropped
  if (field.name == "host") {
    if (out.host) return false;  // two: which one counts is anyone's guess
    out.host = field.value;
    return true;
  }
  if (field.name == "content-length") {
    if (out.content_length || !is_plain_digits(field.value)) return false;
    out.content_length = field.value;
    return true;
  }
  if (field.name == "cookie") {
    // An empty crumb adds nothing; joined, it would end the line in "; ", white space the origin's
    // parser trims: the head would carry another value than the one built (found by fuzz_h2_request).
    if (field.value.empty()) return true;
    if (!out.cookie.empty()) out.cookie += "; ";
    out.cookie += field.value;
    return true;
  }
  out.kept.push_back({field.name, field.value});
  return true;
}

// The one Host line: :authority, or host; both present must agree (RFC 9113 §8.3.1), else which
// one the judge checks and which one the origin routes by could differ.
std::optional<std::string_view> authority_of(const Pseudo& p, const Regular& r) noexcept {
  if (p.authority && r.host && !iequals(*p.authority, *r.host)) return std::nullopt;
  const std::optional<std::string_view> authority = p.authority ? p.authority : r.host;
  if (!authority || !is_plain_authority(*authority)) return std::nullopt;
  return authority;
}

}  // namespace

std::variant<H2Request, Reason> translate_h2_request(const std::vector<H2Field>& fields, bool end_stream,
                                                            std::size_t max_head_bytes) {
  Pseudo pseudo;
  Regular regular;
  regular.kept.reserve(fields.size());  // one allocation, not one each time the list doubles
  bool regular_seen = false;
  for (const H2Field& field : fields) {
    const bool is_pseudo = !field.name.empty() && field.name.front() == ':';
    // A pseudo-header after a regular field is malformed (RFC 9113 §8.3): refused, not reordered.
    const bool ok = is_pseudo ? !regular_seen && take_pseudo(field, pseudo) : take_regular(field, regular);
    if (!ok) return Reason::bad_request;
    regular_seen = regular_seen || !is_pseudo;
  }
  if (!valid_pseudo(pseudo)) return Reason::bad_request;
  const std::optional<std::string_view> authority = authority_of(pseudo, regular);
  if (!authority) return Reason::bad_request;

  H2Request out;
  out.method.assign(*pseudo.method);
  out.path.assign(*pseudo.path);
  if (regular.content_length) {
    std::uint64_t length = 0;
    const auto& text = *regular.content_length;
    std::from_chars(text.data(), text.data() + text.size(), length);
    // A length announced with no body to follow is a mismatch the stream can never make good.
    if (end_stream && length != 0) return Reason::bad_request;
    out.body = H2BodyMode::length;
    out.length = length;
  } else if (!end_stream) {
    out.body = H2BodyMode::chunked;
  }

  // Host first, as the request line's next line would carry it; then the fields as they came.
  RequestMessage& message = out.message;
  message.method = out.method;
  message.target = out.path;
  message.fields.reserve(regular.kept.size() + 3);
  message.fields.push_back({"host", std::string(*authority)});
  for (MessageField& field : regular.kept) message.fields.push_back(std::move(field));
  if (!regular.cookie.empty()) message.fields.push_back({"cookie", std::move(regular.cookie)});
  if (out.body == H2BodyMode::length) message.fields.push_back({"content-length", std::string(*regular.content_length)});
  if (out.body == H2BodyMode::chunked) message.fields.push_back({"transfer-encoding", "chunked"});
  // Counted as the HTTP/1.1 text of the head would be (--max-head-bytes means the same for both).
  if (message.text_size() > max_head_bytes) return Reason::head_too_large;
  return out;
}

std::string h2_chunk_prefix(std::size_t length) {
  std::array<char, 24> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), length, 16).ptr;
  std::string out(digits.data(), end);
  out += "\r\n";
  return out;
}

bool ChunkedDecoder::take_digit(char c) noexcept {
  int digit = -1;
  if (c >= '0' && c <= '9') digit = c - '0';
  if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
  if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
  if (digit < 0 || ++digits_ > 15) return false;  // 15 hex digits: a size under 2^60, never an overflow
  size_ = size_ * 16 + static_cast<std::uint64_t>(digit);
  return true;
}

// One framing byte: the chunk size line, the line after its data, and the lines after the last
// chunk (the trailer section, empty here, ended by a blank line).
ChunkedDecoder::State ChunkedDecoder::after(State state, char c) noexcept {
  switch (state) {
    case State::size:
      if (c == ';') return digits_ > 0 ? State::extension : State::malformed;
      if (c == '\r') return digits_ > 0 ? State::size_lf : State::malformed;
      return take_digit(c) ? State::size : State::malformed;
    case State::extension:
      return c == '\r' ? State::size_lf : State::extension;
    case State::size_lf:
      if (c != '\n') return State::malformed;
      digits_ = 0;
      return size_ == 0 ? State::line_start : State::data;
    case State::data_cr:
      return c == '\r' ? State::data_lf : State::malformed;
    case State::data_lf:
      return c == '\n' ? State::size : State::malformed;
    case State::line_start:
      return c == '\r' ? State::line_lf : State::line;
    case State::line:
      return c == '\n' ? State::line_start : State::line;
    case State::line_lf:
      return c == '\n' ? State::done : State::malformed;
    default:
      return State::malformed;
  }
}

std::size_t ChunkedDecoder::feed(std::string_view in, std::string& out) {
  std::size_t i = 0;
  while (i < in.size() && state_ != State::done && state_ != State::malformed) {
    if (state_ == State::data) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(size_, in.size() - i));
      out.append(in.substr(i, n));
      i += n;
      size_ -= n;
      if (size_ == 0) state_ = State::data_cr;
      continue;
    }
    if (state_ == State::line_start || state_ == State::line || state_ == State::line_lf) {
      if (trailers_.size() >= kMaxTrailerSection) {
        state_ = State::malformed;
        break;
      }
      trailers_ += in[i];
    }
    state_ = after(state_, in[i]);
    ++i;
  }
  return i;
}

}  // namespace boxproxy
