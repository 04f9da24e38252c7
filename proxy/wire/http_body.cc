// SPDX-License-Identifier: Apache-2.0
// Body framing for plain HTTP (SPEC §8, RFC 9112 §6).
//
// Request smuggling lives in the gap between how two parsers delimit the same body. So framing is
// accepted only when there is exactly one reading of it: one Content-Length value (repeated only
// identically), or one Transfer-Encoding line saying exactly "chunked", never both; and a chunked
// body is followed byte by byte with a grammar that leaves no room for a second reading.
#include "proxy/wire/http_body.h"

#include <algorithm>
#include <vector>

#include "table/ascii.h"

namespace boxproxy {
namespace {

// A Content-Length is one to eighteen plain digits: 10^18 - 1 fits an int64 with room to spare,
// so no parser anywhere overflows on it, and no sign, space, comma or hex form is let through.
constexpr std::size_t kMaxContentLengthDigits = 18;

// Chunk extensions are legal but nobody needs many: 1 KiB per size line is generous, and a bound
// keeps a client from streaming an endless size line.
constexpr std::size_t kMaxChunkExtensionBytes = 1024;
// A chunk size of more than sixteen hex digits cannot fit 64 bits (leading zeros count too: a
// size line is not a place for padding).
constexpr unsigned kMaxChunkSizeDigits = 16;

std::optional<std::uint64_t> parse_content_length(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxContentLengthDigits) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

// What the Content-Length and Transfer-Encoding headers of one message say, shared by requests
// and responses.
std::variant<BodyFraming, Reason> framing_from_headers(const std::vector<HeaderField>& headers,
                                                       std::string_view version, bool is_request) {
  const HeaderField* transfer_encoding = nullptr;
  const HeaderField* content_length = nullptr;
  for (const auto& field : headers) {
    if (iequals(field.name, "Transfer-Encoding")) {
      // Two lines are a list to one parser and "the last one wins" to another.
      if (transfer_encoding != nullptr) return Reason::bad_framing;
      transfer_encoding = &field;
    } else if (iequals(field.name, "Content-Length")) {
      // A repeat is tolerated only when it is the same text: "5" and "05" are the same number to
      // us, but nothing is gained by finding out whether they are to the origin.
      if (content_length != nullptr && content_length->value != field.value) return Reason::bad_framing;
      content_length = &field;
    }
  }
  if (transfer_encoding != nullptr) {
    // Both: the classic CL.TE / TE.CL smuggling shape. RFC 9112 lets TE win; we refuse instead.
    if (content_length != nullptr) return Reason::bad_framing;
    // HTTP/1.0 has no chunked coding; RFC 9112 §6.1 calls this framing faulty.
    if (version != "HTTP/1.1") return Reason::bad_framing;
    // Exactly "chunked": "chunked," / "gzip, chunked" / "chunked, identity" each have readers
    // that disagree about where the body ends.
    if (!iequals(trim_ows(transfer_encoding->value), "chunked")) return Reason::bad_framing;
    return BodyFraming{BodyFraming::Kind::chunked, 0};
  }
  if (content_length != nullptr) {
    // A comma list ("5, 5") is refused here too: it is not plain digits.
    const auto length = parse_content_length(content_length->value);
    if (!length) return Reason::bad_framing;
    return BodyFraming{BodyFraming::Kind::length, *length};
  }
  if (is_request) return BodyFraming{BodyFraming::Kind::none, 0};
  return BodyFraming{BodyFraming::Kind::until_close, 0};
}

}  // namespace

std::variant<BodyFraming, Reason> request_framing(const RequestHead& head) {
  return framing_from_headers(head.headers, head.version, true);
}

std::variant<BodyFraming, Reason> response_framing(std::string_view request_method, const ResponseHead& head) {
  // RFC 9112 §6.3 rule 1: these never have a body, whatever their headers say (a HEAD response's
  // Content-Length describes the GET it stands for), so their framing headers are not judged.
  if (request_method == "HEAD" || (head.status >= 100 && head.status < 200) || head.status == 204 ||
      head.status == 304) {
    return BodyFraming{BodyFraming::Kind::none, 0};
  }
  return framing_from_headers(head.headers, head.version, false);
}

bool trailer_field_passes(std::string_view name) noexcept {
  static constexpr std::string_view kRefused[] = {
      "connection",    "keep-alive",          "proxy-connection",   "transfer-encoding", "upgrade",
      "te",            "trailer",             "content-length",     "host",              "authorization",
      "proxy-authorization", "proxy-authenticate", "www-authenticate", "cookie",         "set-cookie",
      "content-encoding", "content-type",     "content-range",      "location",          "cache-control",
      "x-egress-refused"};
  if (name.empty()) return false;
  for (const std::string_view refused : kRefused) {
    if (iequals(name, refused)) return false;
  }
  return true;
}

bool ChunkedScanner::in_trailer_section() const noexcept {
  switch (state_) {
    case State::trailer_start:
    case State::trailer_line:
    case State::trailer_lf:
    case State::final_lf:
    case State::done:
      return true;
    default:
      return false;
  }
}

ChunkedScanner::Step ChunkedScanner::feed(std::string_view data) noexcept {
  Step step;
  std::size_t i = 0;
  // Where the trailer section starts within `data`: nothing of it is passed on.
  std::size_t trailers_from = in_trailer_section() ? 0 : std::string_view::npos;
  const bool ended_before = state_ == State::done;
  while (i < data.size() && state_ != State::done && state_ != State::malformed) {
    if (state_ == State::data) {
      // The bulk of the body: skip it without looking.
      const std::size_t take =
          static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(data.size() - i)));
      i += take;
      remaining_ -= take;
      if (remaining_ == 0) state_ = State::data_cr;
      continue;
    }
    if (!take_line_byte(static_cast<unsigned char>(data[i]))) {
      state_ = State::malformed;
      break;
    }
    ++i;
    if (state_ == State::trailer_start && trailers_from == std::string_view::npos) trailers_from = i;
  }
  step.consumed = i;
  if (state_ == State::malformed) {
    step.malformed = true;
    return step;
  }
  step.passed = std::min(i, trailers_from);
  step.finished = state_ == State::done;
  if (keep_trailers_ && !ended_before) {
    try {
      if (trailers_from < i) trailers_.append(data.substr(trailers_from, i - trailers_from));
      if (step.finished) {
        // The section (bounded by kMaxTrailerSection as it was read) with only the fields allowed.
        std::string passed;
        std::string_view section = trailers_;
        while (!section.empty()) {
          const std::size_t end = section.find("\r\n");
          const std::string_view line = section.substr(0, end);
          section.remove_prefix(end == std::string_view::npos ? section.size() : end + 2);
          if (!line.empty() && trailer_field_passes(line.substr(0, line.find(':')))) passed.append(line).append("\r\n");
        }
        passed += "\r\n";
        trailers_ = std::move(passed);
        step.ending = trailers_;
      }
    } catch (...) {  // std::bad_alloc: the body cannot be passed whole
      state_ = State::malformed;
      step = Step{};
      step.malformed = true;
    }
    return step;
  }
  // The closing CRLF once, in the feed that ends the body (the section's own end is dropped with it).
  if (step.finished && !ended_before) step.ending = "\r\n";
  return step;
}

bool ChunkedScanner::take_line_byte(unsigned char c) noexcept {
  switch (state_) {
    case State::size:
      return take_size_byte(c);
    case State::extension:
      return take_extension_byte(c);
    case State::size_lf:
      if (c != '\n') return false;
      size_digits_ = 0;
      line_length_ = 0;
      // The last chunk (size 0): what follows is the trailer section.
      state_ = remaining_ == 0 ? State::trailer_start : State::data;
      return true;
    case State::data_cr:
      state_ = State::data_lf;
      return c == '\r';
    case State::data_lf:
      state_ = State::size;
      return c == '\n';
    case State::trailer_start:
    case State::trailer_line:
      // Every byte of the section counts, its line ends too (as ChunkedDecoder counts them).
      if (++trailer_bytes_ > kMaxTrailerSection) return false;
      return take_trailer_byte(c);
    case State::trailer_lf:
      if (++trailer_bytes_ > kMaxTrailerSection) return false;
      state_ = State::trailer_start;
      return c == '\n';
    case State::final_lf:
      if (++trailer_bytes_ > kMaxTrailerSection) return false;
      state_ = State::done;
      return c == '\n';
    case State::data:
    case State::done:
    case State::malformed:
      break;  // never here: feed handles them
  }
  return false;
}

bool ChunkedScanner::take_size_byte(unsigned char c) noexcept {
  const int digit = hex_value(static_cast<char>(c));
  if (digit >= 0) {
    if (size_digits_ == kMaxChunkSizeDigits) return false;
    ++size_digits_;
    remaining_ = (remaining_ << 4) | static_cast<std::uint64_t>(digit);
    return true;
  }
  if (size_digits_ == 0) return false;  // no digits: "", "-1", " 5", "0x5" all end here
  if (c == ';') {
    // No white space before ';' (BWS): "5 ;x" is read differently by different parsers.
    state_ = State::extension;
    line_length_ = 1;
    previous_ = ';';
    in_value_ = false;
    return true;
  }
  if (c != '\r') return false;
  state_ = State::size_lf;
  return true;
}

// A strict subset of RFC 9112's chunk-ext: (";" token ["=" token])*, no white space and no quoted
// strings, so that no CR, LF or quote can hide in it.
bool ChunkedScanner::take_extension_byte(unsigned char c) noexcept {
  if (++line_length_ > kMaxChunkExtensionBytes) return false;
  if (previous_ == ';' || previous_ == '=') {
    if (!is_token_char(c)) return false;
  } else if (c == ';') {
    in_value_ = false;
  } else if (c == '=') {
    if (in_value_) return false;
    in_value_ = true;
  } else if (c == '\r') {
    state_ = State::size_lf;
  } else if (!is_token_char(c)) {
    return false;
  }
  previous_ = static_cast<char>(c);
  return true;
}

// A trailer line: a token name directly followed by ':', then a value of visible characters and
// tabs, then CRLF; an empty line ends the section.
bool ChunkedScanner::take_trailer_byte(unsigned char c) noexcept {
  if (state_ == State::trailer_start) {
    if (c == '\r') {
      state_ = State::final_lf;
      return true;
    }
    // A leading SP or HTAB (a fold) or ':' (no name) fails here.
    if (!is_token_char(c)) return false;
    in_value_ = false;
    state_ = State::trailer_line;
    return true;
  }
  if (!in_value_) {
    if (c == ':') in_value_ = true;
    return c == ':' || is_token_char(c);  // white space before ':', a control char, no ':'
  }
  if (c == '\r') {
    state_ = State::trailer_lf;
    return true;
  }
  return c == '\t' || (c >= 0x20 && c != 0x7f);  // bare LF, NUL, other controls fail
}

}  // namespace boxproxy
