// SPDX-License-Identifier: Apache-2.0
// proxy/stages/scrub_stage: the response stage over the scrubber, and what becomes of the bytes it
// holds when the session's secrets change while a response streams (SPEC §19a).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/stages/response_chain.h"
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

TEST_CASE("scrub stage: a head given as fields is scrubbed as its text would be, field by field") {
  // The inspector's HTTP/2 box side takes the head as a message, never as text (issue 34 item 2):
  // what its text would have lost to the scrubber, the message loses too.
  ResponseChain chain;
  chain.add(std::make_unique<ScrubStage>(patterns_of({kOld})));
  ResponseMessage head{200, "OK " + kOldValue, "HTTP/1.1",
                       {{"x-echo", "key=" + kOldValue}, {"x-" + kOldValue, "v"}, {"content-length", "0"}}};
  std::string text = head.text();
  chain.on_head(text);
  REQUIRE(chain.on_head(head));
  CHECK(head.text() == text);  // the same bytes either way
  CHECK(head.fields[0].value == "key=bxp_old");
  CHECK(head.fields[1].name == "x-bxp_old");  // a name too, as the text's reader would read it
  CHECK(head.reason == "OK bxp_old");

  // A match that takes in the colon leaves a line that is no field: the head does not go.
  ResponseChain other;
  other.add(std::make_unique<ScrubStage>(patterns_of({ScrubSecret{"SPAN", "abcdefgh-ijklmnop:", "bxp_span"}})));
  ResponseMessage spanning{200, "OK", "HTTP/1.1", {{"x-abcdefgh-ijklmnop", "v"}}};
  CHECK_FALSE(other.on_head(spanning));
}
