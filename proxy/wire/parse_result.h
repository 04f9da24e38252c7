// SPDX-License-Identifier: Apache-2.0
// What an incremental parser says about the bytes it has been given so far.
#pragma once

#include <cstddef>
#include <optional>

#include "table/reason.h"

namespace boxproxy {

// A parser is handed everything received so far (never one recv at a time: a message may arrive
// in pieces, or several at once) and answers with one of these.
template <typename T>
struct ParseResult {
  enum class Status {
    need_more,  // not enough bytes yet; call again with more
    complete,   // `value` is set; `consumed` bytes belong to this message
    refused,    // answer `refusal` (when set) and close; when unset, just close
  };
  Status status = Status::need_more;
  std::optional<T> value;
  std::size_t consumed = 0;
  std::optional<Reason> refusal;

  static ParseResult need_more() { return {}; }
  static ParseResult done(T v, std::size_t n) { return {Status::complete, std::move(v), n, std::nullopt}; }
  static ParseResult refuse(std::optional<Reason> r) { return {Status::refused, std::nullopt, 0, r}; }
};

}  // namespace boxproxy
