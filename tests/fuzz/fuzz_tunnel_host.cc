// SPDX-License-Identifier: Apache-2.0
// proxy/tunnel_host: the Host check's reader, fed a checked tunnel's first client bytes in pieces,
// as the connection feeds it (everything held so far, each time), taking what may go upstream
// while it waits.
//
// Input: a byte choosing the port (80, or 8080) and the head bound, the Split framing
// (fuzz_support.h), then the bytes.
// Invariants:
//   - the answer is the same however the bytes are split as for all of them at once;
//   - need_more only while fewer bytes than the bound were fed;
//   - what take_forwardable handed out, in order, is exactly the first forwarded() bytes fed, and
//     past its leading empty lines and white space it holds no CR and no LF: no line, and so no
//     head, ever went upstream before the answer;
//   - nothing more is handed out once there is an answer;
//   - names_host only for a head whose strict parse names good.test (checked through
//     request_names_host on the parser's own result).
#include <string>

#include "proxy/wire/http_head.h"
#include "proxy/wire/tunnel_host.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;
using Verdict = TunnelHostReader::Verdict;

namespace {

constexpr std::string_view kHost = "good.test";

// The forwarded bytes after the leading CR, LF, SP, HTAB, VT and FF a server skips before a method.
bool holds_a_line_end(std::string_view forwarded) {
  const std::size_t start = forwarded.find_first_not_of("\r\n \t\v\f");
  if (start == std::string_view::npos) return false;
  return forwarded.find_first_of("\r\n", start) != std::string_view::npos;
}

void check(const fuzz::Split& split, std::uint16_t port, std::size_t max_head) {
  const std::string_view bytes = split.payload;
  TunnelHostReader whole(kHost, port, max_head);
  const Verdict verdict = whole.feed(bytes);

  TunnelHostReader pieces(kHost, port, max_head);
  Verdict in_pieces = Verdict::need_more;
  std::string forwarded;
  for (const std::size_t end : fuzz::prefix_ends(split)) {
    const std::string_view held = bytes.substr(0, end);
    in_pieces = pieces.feed(held);
    const std::string_view taken = pieces.take_forwardable(held);
    if (in_pieces != Verdict::need_more) FUZZ_CHECK(taken.empty());
    forwarded += taken;
    if (in_pieces != Verdict::need_more) break;
  }
  FUZZ_CHECK(in_pieces == verdict);
  FUZZ_CHECK(forwarded.size() == pieces.forwarded());
  FUZZ_CHECK(bytes.substr(0, forwarded.size()) == forwarded);
  FUZZ_CHECK(!holds_a_line_end(forwarded));
  if (verdict == Verdict::need_more) FUZZ_CHECK(bytes.size() < max_head);
  if (verdict == Verdict::names_host) {
    const ParseResult<RequestHead> head = parse_request_head(bytes, max_head);
    FUZZ_CHECK(head.status == ParseResult<RequestHead>::Status::complete);
    FUZZ_CHECK(request_names_host(*head.value, kHost, port));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 20000) return 0;
  const std::uint16_t port = (data[0] & 1) != 0 ? 8080 : 80;
  const std::size_t max_head = (data[0] & 2) != 0 ? 64 : 4096;
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  check(split, port, max_head);
  return 0;
}
