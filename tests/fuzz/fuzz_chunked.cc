// SPDX-License-Identifier: Apache-2.0
// proxy/http_body: ChunkedScanner, fed a body in the pieces a socket would deliver.
//
// Input: the Split framing (fuzz_support.h), then the bytes that follow a chunked head.
// Invariants:
//   - fed piece by piece (stopping once it says finished or malformed, as the connection does),
//     the total consumed, finished and malformed are the same as for one feed of everything;
//   - each feed consumes no more than it was given, and never both finishes and is malformed;
//   - after the end, it consumes nothing more (bytes past the body belong to the next message),
//     and once malformed, it stays malformed;
//   - a finished body is a prefix property: the consumed bytes alone, fed to a fresh scanner,
//     finish at exactly the same place;
//   - what is passed on (each feed's passed prefix, then its ending) is the same however the body
//     is split, never more than was consumed, and for a finished body is itself a chunked body
//     with no trailer field that a fresh scanner finishes exactly at its end (trailers dropped).
#include <string>

#include "proxy/wire/http_body.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

struct Total {
  std::string passed;  // what the connection passes on
  std::size_t consumed = 0;
  bool finished = false;
  bool malformed = false;
};

Total feed_all(ChunkedScanner& scanner, std::string_view data, const std::vector<std::size_t>& ends) {
  Total total;
  std::size_t at = 0;
  for (const std::size_t end : ends) {
    const std::string_view piece = data.substr(at, end - at);
    const auto step = scanner.feed(piece);
    FUZZ_CHECK(step.consumed <= piece.size());
    FUZZ_CHECK(!(step.finished && step.malformed));
    FUZZ_CHECK(step.passed <= step.consumed);
    FUZZ_CHECK(step.ending.empty() || step.finished);
    total.consumed += step.consumed;
    total.passed.append(piece.substr(0, step.passed));
    total.passed.append(step.ending);
    if (step.finished || step.malformed) {
      total.finished = step.finished;
      total.malformed = step.malformed;
      break;
    }
    // Not done: everything given was body.
    FUZZ_CHECK(step.consumed == piece.size());
    at = end;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data, size));
  const std::string_view body = split.payload;

  ChunkedScanner whole_scanner;
  const auto whole = whole_scanner.feed(body);
  std::string whole_passed(body.substr(0, whole.passed));
  whole_passed.append(whole.ending);
  FUZZ_CHECK(whole.consumed <= body.size());
  FUZZ_CHECK(!(whole.finished && whole.malformed));
  if (!whole.finished && !whole.malformed) FUZZ_CHECK(whole.consumed == body.size());

  ChunkedScanner piece_scanner;
  const Total pieces = feed_all(piece_scanner, body, fuzz::prefix_ends(split));
  FUZZ_CHECK(pieces.consumed == whole.consumed);
  FUZZ_CHECK(pieces.finished == whole.finished);
  FUZZ_CHECK(pieces.malformed == whole.malformed);
  if (!whole.malformed) FUZZ_CHECK(pieces.passed == whole_passed);

  // After the end nothing more is body; after malformed, still malformed.
  const auto after = whole_scanner.feed("0\r\n\r\n");
  if (whole.finished) FUZZ_CHECK(after.consumed == 0 && after.finished && !after.malformed);
  if (whole.malformed) FUZZ_CHECK(after.consumed == 0 && after.malformed && !after.finished);

  if (whole.finished) {
    ChunkedScanner fresh;
    const auto again = fresh.feed(body.substr(0, whole.consumed));
    FUZZ_CHECK(again.finished && again.consumed == whole.consumed);
    // What was passed on is a complete chunked body without trailers: it ends in an empty line.
    ChunkedScanner check;
    const auto passed = check.feed(whole_passed);
    FUZZ_CHECK(passed.finished && passed.consumed == whole_passed.size());
    FUZZ_CHECK(passed.passed == whole_passed.size() - 2 && passed.ending == "\r\n");
    FUZZ_CHECK(whole_passed.ends_with("\r\n\r\n"));
  }
  return 0;
}
