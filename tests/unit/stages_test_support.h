// SPDX-License-Identifier: Apache-2.0
// What the request pipeline's unit tests (tests/unit/stages_*_test.cc) build their requests from:
// an endpoint from its entry, a rule, and a parsed head that owns its text. A bad entry or rule
// fails the test that made it.
#pragma once

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "proxy/wire/http_head.h"
#include "table/inspect_endpoint.h"

namespace boxproxy::testing {

inline InspectEndpoint endpoint_of(std::string_view entry) {
  auto parsed = parse_inspect_entry(entry);
  if (const auto* error = std::get_if<std::string>(&parsed)) FAIL(*error);
  return std::get<InspectEndpoint>(parsed);
}

inline InspectRule rule(std::string_view method, std::string_view path) {
  auto made = make_inspect_rule(method, path, std::nullopt);
  if (const auto* error = std::get_if<std::string>(&made)) FAIL(*error);
  return std::get<InspectRule>(made);
}

// A parsed head that owns its text.
struct Head {
  std::string text;
  RequestHead head;
  explicit Head(std::string t) : text(std::move(t)) {
    const auto parsed = parse_request_head(text, 65536);
    REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
    head = *parsed.value;
  }
};

}  // namespace boxproxy::testing
