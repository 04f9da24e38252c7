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
//     finish at exactly the same place.
#include <string>

#include "proxy/http_body.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

struct Total {
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
    total.consumed += step.consumed;
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
  FUZZ_CHECK(whole.consumed <= body.size());
  FUZZ_CHECK(!(whole.finished && whole.malformed));
  if (!whole.finished && !whole.malformed) FUZZ_CHECK(whole.consumed == body.size());

  ChunkedScanner piece_scanner;
  const Total pieces = feed_all(piece_scanner, body, fuzz::prefix_ends(split));
  FUZZ_CHECK(pieces.consumed == whole.consumed);
  FUZZ_CHECK(pieces.finished == whole.finished);
  FUZZ_CHECK(pieces.malformed == whole.malformed);

  // After the end nothing more is body; after malformed, still malformed.
  const auto after = whole_scanner.feed("0\r\n\r\n");
  if (whole.finished) FUZZ_CHECK(after.consumed == 0 && after.finished && !after.malformed);
  if (whole.malformed) FUZZ_CHECK(after.consumed == 0 && after.malformed && !after.finished);

  if (whole.finished) {
    ChunkedScanner fresh;
    const auto again = fresh.feed(body.substr(0, whole.consumed));
    FUZZ_CHECK(again.finished && again.consumed == whole.consumed);
  }
  return 0;
}
