// SPDX-License-Identifier: Apache-2.0
// proxy/first_bytes_gate: the SNI and Host checks on a tunnel's first client bytes (SPEC §16), fed
// as the tunnel session feeds them: start() with the early bytes, feed() with each read while the
// answer is wait (taking what may go upstream after each), finish() at the client's FIN.
//
// Input: an options byte (bits 0-1: the decided port 443, 80, 8080 or 7; bit 2: a head bound of 64
// rather than 4096; bit 3: no early bytes, so every piece comes through feed()), the Split framing
// (fuzz_support.h), then the bytes.
// Invariants:
//   - the answer (after finish() when the bytes end while it waits) is the same however the bytes
//     are split as for all of them handed to start() at once; finish() never answers wait;
//   - wait only with room() left: the gate answers by its bounds, never holds past them;
//   - what take_forwardable hands out, in order, is a prefix of the bytes fed, never more than
//     were fed, and nothing at all while the bytes may be a ClientHello (first byte 22);
//   - on pass, what went up while it waited followed by unforwarded() is exactly the bytes fed:
//     nothing lost, nothing sent twice.
#include <string>

#include "proxy/wire/first_bytes_gate.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;
using Verdict = FirstBytesGate::Verdict;

namespace {

constexpr std::string_view kHost = "good.test";
constexpr std::uint16_t kPorts[] = {443, 80, 8080, 7};

struct Options {
  std::uint16_t port = 443;
  std::size_t max_head = 4096;
  bool empty_start = false;
};

Verdict at_once(std::string_view bytes, const Options& options) {
  FirstBytesGate gate(kHost, options.port, options.max_head);
  const Verdict verdict = gate.start(std::string(bytes));
  return verdict == Verdict::wait ? gate.finish() : verdict;
}

// What went up while the gate waited: a prefix of `fed`, and nothing of a ClientHello.
void take_forwardable(FirstBytesGate& gate, std::string_view fed, std::string& forwarded) {
  const std::string_view taken = gate.take_forwardable();
  forwarded += taken;
  FUZZ_CHECK(forwarded.size() <= fed.size());
  FUZZ_CHECK(fed.substr(0, forwarded.size()) == forwarded);
  if (!fed.empty() && fed[0] == '\x16') FUZZ_CHECK(forwarded.empty());
}

void check(const fuzz::Split& split, const Options& options) {
  const std::string_view bytes = split.payload;
  FirstBytesGate gate(kHost, options.port, options.max_head);
  std::string forwarded;
  std::size_t fed = 0;
  bool started = options.empty_start;
  Verdict verdict = started ? gate.start({}) : Verdict::wait;
  for (const std::size_t end : fuzz::prefix_ends(split)) {
    if (verdict != Verdict::wait) break;
    if (started) FUZZ_CHECK(gate.room() > 0);
    const std::string_view piece = bytes.substr(fed, end - fed);
    verdict = started ? gate.feed(piece) : gate.start(std::string(piece));
    started = true;
    fed = end;
    if (verdict == Verdict::wait) take_forwardable(gate, bytes.substr(0, fed), forwarded);
  }
  if (!started) verdict = gate.start({});  // no bytes at all
  if (verdict == Verdict::wait) {
    FUZZ_CHECK(gate.room() > 0);
    verdict = gate.finish();
    FUZZ_CHECK(verdict != Verdict::wait);
  }
  FUZZ_CHECK(verdict == at_once(bytes, options));
  if (verdict == Verdict::pass) FUZZ_CHECK(forwarded + std::string(gate.unforwarded()) == bytes.substr(0, fed));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 20000) return 0;
  Options options;
  options.port = kPorts[data[0] & 3];
  options.max_head = (data[0] & 4) != 0 ? 64 : 4096;
  options.empty_start = (data[0] & 8) != 0;
  check(fuzz::take_split(fuzz::as_text(data + 1, size - 1)), options);
  return 0;
}
