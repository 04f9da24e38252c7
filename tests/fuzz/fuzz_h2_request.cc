// SPDX-License-Identifier: Apache-2.0
// translate_h2_request (proxy/wire/h2_request.h, SPEC §19) alone, from a header list decoded from
// the bytes: what the HTTP/2 front hands it after HPACK, without the frames around it (those are
// fuzz_h2_front's), so that every byte of a name or value can be anything.
//
// The first byte: bit 0 END_STREAM came with HEADERS; bits 1-2 --max-head-bytes (4096, 64, 256,
// 32768); bit 3 a sound GET's four pseudo-headers come first (":method GET", ":scheme https",
// ":authority api.example", ":path /"), so that the regular fields are reached. Then fields, each
// a name length byte, a value length byte, the name, the value (cut short at the end).
//
// Invariants:
//   - an accepted list's head is at most --max-head-bytes and parse_request_head reads it whole:
//     :method and :path as the request line, HTTP/1.1, exactly one Host naming :authority (or
//     host when there is none), then exactly the regular fields sent, in order, but te, expect,
//     host, cookie and content-length, then the non-empty cookies joined with "; ", then the
//     framing: one content-length as sent, or "transfer-encoding: chunked" for a body without
//     one, or neither;
//   - request_framing of that head is the translation's body mode and length; with END_STREAM on
//     HEADERS no body is announced;
//   - no name or value holds CR, LF or NUL; no Connection, Keep-Alive, Proxy-Connection, Upgrade,
//     TE or Expect reaches the head, nor a Transfer-Encoding the box sent;
//   - refused (bad request) whenever the list holds what HTTP/1.1 cannot carry: an upper-case or
//     empty name, a CR, LF or NUL in a value, a connection-specific field, te other than
//     "trailers", CONNECT, a second :path; refusals are only bad_request and head_too_large.
#include <array>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proxy/wire/h2_request.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "table/ascii.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

constexpr std::array<std::size_t, 4> kMaxHeads = {4096, 64, 256, 32768};

std::vector<H2Field> decode_fields(std::string_view in) {
  std::vector<H2Field> fields;
  while (in.size() >= 2) {
    const std::size_t name_length = std::min<std::size_t>(static_cast<unsigned char>(in[0]), in.size() - 2);
    const std::size_t rest = in.size() - 2 - name_length;
    const std::size_t value_length = std::min<std::size_t>(static_cast<unsigned char>(in[1]), rest);
    fields.push_back({std::string(in.substr(2, name_length)), std::string(in.substr(2 + name_length, value_length))});
    in.remove_prefix(2 + name_length + value_length);
  }
  return fields;
}

bool has_byte(std::string_view text, std::string_view bytes) { return text.find_first_of(bytes) != text.npos; }

// What the translation must refuse, judged from the list alone.
bool must_refuse(const std::vector<H2Field>& fields) {
  static constexpr std::array<std::string_view, 5> kConnectionSpecific = {
      "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"};
  std::size_t paths = 0;
  for (const H2Field& f : fields) {
    if (f.name.empty() || has_byte(f.name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) return true;
    if (has_byte(f.value, std::string_view("\r\n\0", 3)) || has_byte(f.name, std::string_view("\r\n\0 ", 4)))
      return true;
    for (const std::string_view name : kConnectionSpecific)
      if (f.name == name) return true;
    if (f.name == "te" && f.value != "trailers") return true;
    if (f.name == ":method" && f.value == "CONNECT") return true;
    if (f.name == ":path") ++paths;
  }
  return paths != 1;
}

const H2Field* find(const std::vector<H2Field>& fields, std::string_view name) {
  for (const H2Field& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

void check_accepted(const std::vector<H2Field>& fields, bool end_stream, std::size_t max_head, const H2Request& r) {
  // The message's text: what an HTTP/1.1 origin could be sent of it (and its size, what the bound
  // counts: text_size).
  const std::string text = r.message.text();
  FUZZ_CHECK(text.size() == r.message.text_size() && text.size() <= max_head);
  const auto parsed = parse_request_head(text, max_head);
  FUZZ_CHECK(parsed.status == ParseResult<RequestHead>::Status::complete);
  FUZZ_CHECK(parsed.consumed == text.size());
  const RequestHead& head = *parsed.value;
  FUZZ_CHECK(head.version == "HTTP/1.1");
  FUZZ_CHECK(head.method == r.method && head.target == r.path);
  FUZZ_CHECK(find(fields, ":method")->value == r.method && find(fields, ":path")->value == r.path);

  // The head's fields, one by one, against the list sent.
  std::vector<std::pair<std::string, std::string>> want;
  const H2Field* authority = find(fields, ":authority");
  const H2Field* host = find(fields, "host");
  FUZZ_CHECK(authority != nullptr || host != nullptr);
  want.emplace_back("host", authority != nullptr ? authority->value : host->value);
  std::string cookie;
  const H2Field* length = nullptr;
  for (const H2Field& f : fields) {
    if (f.name.front() == ':' || f.name == "te" || f.name == "expect" || f.name == "host") continue;
    if (f.name == "content-length") {
      length = &f;
      continue;
    }
    if (f.name == "cookie") {
      if (!f.value.empty()) cookie += (cookie.empty() ? "" : "; ") + f.value;
      continue;
    }
    want.emplace_back(f.name, f.value);
  }
  if (!cookie.empty()) want.emplace_back("cookie", cookie);
  if (length != nullptr) want.emplace_back("content-length", length->value);
  if (length == nullptr && !end_stream) want.emplace_back("transfer-encoding", "chunked");
  FUZZ_CHECK(head.headers.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    FUZZ_CHECK(head.headers[i].name == want[i].first && head.headers[i].value == want[i].second);
    FUZZ_CHECK(!has_byte(head.headers[i].value, std::string_view("\r\n\0", 3)));
  }

  const auto framing = request_framing(head);
  FUZZ_CHECK(std::holds_alternative<BodyFraming>(framing));
  const BodyFraming& body = std::get<BodyFraming>(framing);
  switch (r.body) {
    case H2BodyMode::none:
      FUZZ_CHECK(end_stream && body.kind == BodyFraming::Kind::none);
      break;
    case H2BodyMode::length:
      FUZZ_CHECK(body.kind == BodyFraming::Kind::length && body.length == r.length);
      FUZZ_CHECK(!end_stream || r.length == 0);
      break;
    case H2BodyMode::chunked:
      FUZZ_CHECK(!end_stream && body.kind == BodyFraming::Kind::chunked);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned shape = data[0];
  const bool end_stream = (shape & 1) != 0;
  const std::size_t max_head = kMaxHeads[(shape >> 1) & 3];
  std::vector<H2Field> fields;
  if ((shape & 8) != 0) fields = {{":method", "GET"}, {":scheme", "https"}, {":authority", "api.example"}, {":path", "/"}};
  for (H2Field& f : decode_fields(fuzz::as_text(data + 1, size - 1))) fields.push_back(std::move(f));

  const auto result = translate_h2_request(fields, end_stream, max_head);
  if (const auto* refusal = std::get_if<Reason>(&result)) {
    FUZZ_CHECK(*refusal == Reason::bad_request || *refusal == Reason::head_too_large);
    return 0;
  }
  FUZZ_CHECK(!must_refuse(fields));
  check_accepted(fields, end_stream, max_head, std::get<H2Request>(result));
  return 0;
}
