// SPDX-License-Identifier: Apache-2.0
// proxy/stages/scrub_stage: the response stage over the scrubber, and what becomes of the bytes it
// holds when the session's secrets change while a response streams (SPEC §19a).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/stages/scrub_stage.h"
#include "proxy/wire/body_sink.h"

using namespace boxproxy;

namespace {

std::shared_ptr<const ScrubPatterns> patterns_of(const std::vector<ScrubSecret>& secrets) {
  return std::make_shared<const ScrubPatterns>(secrets);
}

void feed(ScrubStage& stage, std::string_view piece, std::string& out) {
  StringBodySink sink(piece, out);
  stage.on_body(piece, sink);
}

const std::string kOldValue = "old-secret-value-0123456789";
const std::string kNewValue = "NEWKEY-abcdefghij-9876543210";
const ScrubSecret kOld{"OLD", kOldValue, "bxp_old"};
const ScrubSecret kNew{"NEW", kNewValue, "bxp_new"};

}  // namespace

TEST_CASE("scrub stage: a value set while a body streams is caught even when it began in the held bytes") {
  ScrubStage stage(patterns_of({kOld}));
  std::string out;
  // The first half of the new value ends the first piece: held back (a trailing printable run).
  const std::string first = "line one\nthe key is " + kNewValue.substr(0, 12);
  feed(stage, first, out);
  REQUIRE(stage.held() > 0);
  stage.renew(patterns_of({kOld, kNew}), out);
  feed(stage, kNewValue.substr(12) + " and more\n", out);
  stage.flush(out);
  CHECK(out == "line one\nthe key is " + std::string(kNewValue.size(), '*') + " and more\n");
  std::vector<TraceEntry> trace;
  stage.trace(trace);
  REQUIRE(trace.size() == 1);
  CHECK(trace[0].what == "NEW");
}

TEST_CASE("scrub stage: a kept secret begun before the change is still caught after it") {
  ScrubStage stage(patterns_of({kOld}));
  std::string out;
  feed(stage, "x " + kOldValue.substr(0, 10), out);
  stage.renew(patterns_of({kOld, kNew}), out);
  feed(stage, kOldValue.substr(10) + "\n", out);
  stage.flush(out);
  CHECK(out == "x " + std::string(kOldValue.size(), '*') + "\n");
}

TEST_CASE("scrub stage: a revoked secret is not searched for in what comes after") {
  ScrubStage stage(patterns_of({kOld}));
  std::string out;
  feed(stage, "a\n", out);
  stage.renew(nullptr, out);
  feed(stage, kOldValue + "\n", out);
  stage.flush(out);
  CHECK(out == "a\n" + kOldValue + "\n");
}
