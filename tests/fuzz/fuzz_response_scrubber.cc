// SPDX-License-Identifier: Apache-2.0
// The response scrubber (proxy/wire/response_scrubber, SPEC §19a). Three fixed secrets (one with
// bytes every escape changes, one periodic); the first byte says where flushes fall (each chunk
// boundary whose index has that bit pattern); the rest is split into chunks (fuzz_support.h's
// take_split) and fed. Invariants:
//   - the output is exactly as long as the input (a body's framing stays right), and equals the
//     input wherever it is not '*';
//   - no spelling of any secret lies, in the output, wholly within one flush interval: every
//     occurrence the input had there is starred;
//   - the hold never exceeds the limit, and is exactly the trailing printable run (capped) of what
//     was fed since the last flush;
//   - the search's work (steps and bytes passed over) is the same as for a twin set of values of
//     the same lengths and other bytes, fed the same: it depends on the text, never on the values.
#include <string>
#include <vector>

#include "proxy/wire/response_scrubber.h"
#include "table/secret_spellings.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

const std::vector<std::string>& values() {
  static const std::vector<std::string> all = {"ghp_R3alT0kenValue01", "p@ss/w0rd+\"<&>'x", "abababababab"};
  return all;
}

// The same lengths (and so the same shortest spelling), other bytes.
const std::vector<std::string>& twin_values() {
  static const std::vector<std::string> all = {"xyz_Q9bcD4mnopQrst77", "zq/x+\"w<&>'@9v8u", "cdcdcdcdcdcd"};
  return all;
}

std::shared_ptr<const ScrubPatterns> build(const std::vector<std::string>& given) {
  std::vector<ScrubSecret> secrets;
  for (std::size_t i = 0; i < given.size(); ++i) secrets.push_back({"s" + std::to_string(i), given[i], ""});
  return std::make_shared<const ScrubPatterns>(secrets);
}

const std::shared_ptr<const ScrubPatterns>& patterns() {
  static const std::shared_ptr<const ScrubPatterns> built = build(values());
  return built;
}

const std::shared_ptr<const ScrubPatterns>& twin_patterns() {
  static const std::shared_ptr<const ScrubPatterns> built = build(twin_values());
  return built;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const unsigned flush_bits = data[0];
  const fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  const std::string_view input = split.payload;
  ResponseScrubber scrubber(patterns());
  ResponseScrubber twin(twin_patterns());
  std::string out;
  std::string twin_out;
  std::vector<std::size_t> flushes{0};  // offsets where a flush interval starts
  std::size_t at = 0;
  for (std::size_t i = 0; at < input.size(); ++i) {
    const std::size_t n = std::min(split.chunks[i % split.chunks.size()], input.size() - at);
    scrubber.feed(input.substr(at, n), out);
    twin.feed(input.substr(at, n), twin_out);
    FUZZ_CHECK(scrubber.work() == twin.work());
    at += n;
    const std::string_view since = input.substr(flushes.back(), at - flushes.back());
    std::size_t run = 0;
    while (run < since.size() && since[since.size() - 1 - run] >= 0x21 && since[since.size() - 1 - run] <= 0x7e) ++run;
    FUZZ_CHECK(scrubber.held().size() == std::min(run, patterns()->hold_limit()));
    FUZZ_CHECK(out.size() + scrubber.held().size() == at);
    if ((flush_bits >> (i % 8)) & 1u) {
      scrubber.flush(out);
      twin.flush(twin_out);
      flushes.push_back(at);
    }
  }
  scrubber.flush(out);
  flushes.push_back(input.size());
  FUZZ_CHECK(out.size() == input.size());
  for (std::size_t i = 0; i < input.size(); ++i) FUZZ_CHECK(out[i] == '*' || out[i] == input[i]);
  for (const std::string& value : values()) {
    for (const SecretText& spelling : secret_spellings(value)) {
      for (std::size_t f = 0; f + 1 < flushes.size(); ++f) {
        const std::string_view interval = std::string_view(out).substr(flushes[f], flushes[f + 1] - flushes[f]);
        FUZZ_CHECK(interval.find(spelling.view()) == std::string_view::npos);
        const std::string_view was = input.substr(flushes[f], flushes[f + 1] - flushes[f]);
        for (std::size_t hit = was.find(spelling.view()); hit != std::string_view::npos;
             hit = was.find(spelling.view(), hit + 1)) {
          for (std::size_t k = 0; k < spelling.size(); ++k) FUZZ_CHECK(interval[hit + k] == '*');
        }
      }
    }
  }
  return 0;
}
