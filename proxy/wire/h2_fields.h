// SPDX-License-Identifier: Apache-2.0
// What an HTTP/2 field may be when it crosses to or from HTTP/1.1, both ways: the box's request
// list read into an HTTP/1.1 head (h2_request.h) and the origin's response list written as one
// (h2_upstream.h). Pure.
#pragma once

#include <string_view>

namespace boxproxy {

// A field name as HTTP/2 must send it: a token, no uppercase (RFC 9113 §8.2.1; uppercase is
// malformed, and ':' only starts a pseudo-header).
[[nodiscard]] bool is_lower_token(std::string_view name) noexcept;

// What an HTTP/1.1 field value can carry exactly (http_head.cc reads it the same way): no CR, LF or
// NUL (each would end the line, or a parser, early: the rest becomes a header of the sender's
// choosing), no other control character but HTAB, and no white space at either end (an HTTP/1.1
// parser trims it: the receiver would read another value than the one judged).
[[nodiscard]] bool is_carriable_value(std::string_view value) noexcept;

}  // namespace boxproxy
