// SPDX-License-Identifier: Apache-2.0
// The "request" message (proxy/inspector_messages.h), one for every request inspected: written by
// the inspector and read by serve by hand, both from one table of its fields
// (inspector_request_line.cc), without a JSON document. inspector_message and
// parse_inspector_report call these; nothing else needs to.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "proxy/inspector_records.h"

namespace boxproxy {

// How every request line begins, and how parse_inspector_report knows one.
inline constexpr std::string_view kRequestLinePrefix = R"({"op":"request")";

// The line for `request`, in its one shape.
[[nodiscard]] std::string write_request_line(const InspectorRequest& request);

// `bytes` (a line beginning with kRequestLinePrefix) read and checked, every field as the general
// path checks its kind; or why not: bad "KEY" for the first field that does not hold, "not in its
// shape" for anything after the last.
[[nodiscard]] std::variant<InspectorRequest, std::string> read_request_line(std::string_view bytes);

// Text the inspector may report, whichever message carries it: printable ASCII, 1 to `most` bytes,
// spaces only where `spaces` (a class: "request denied") and never at either end. What it reports
// is logged, and a line must not be broken, stretched or split into fields by it whatever the
// inspector was made to say.
[[nodiscard]] bool reported_text_ok(std::string_view s, std::size_t most, bool spaces) noexcept;

}  // namespace boxproxy
