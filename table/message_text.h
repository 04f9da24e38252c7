// SPDX-License-Identifier: Apache-2.0
// Text that the command line shows a person: values quoted, and nothing but printable ASCII.
// Pure text, here in table/ so that every reader of what a person wrote (socketd's options and
// config, proxy/inspect_array.h for the config and the control channel alike) quotes it one way.
//
// Every message that repeats what a user (or a config file, or a box) gave goes to a terminal.
// A control byte there (ESC starts an escape sequence) could drive that terminal, and a byte of
// 0x80 or more is not even text. So every value is quoted with quote(), and every message passes
// printable_lines() on its way out, which catches a piece that a parser repeated raw.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace boxproxy {

// A value quoted in a message is cut after this many bytes, so one bad argument cannot flood the
// terminal.
inline constexpr std::size_t kMaxQuotedChars = 200;

// `text` in double quotes, `"` and `\` escaped with a backslash, every byte outside printable
// ASCII (0x20-0x7e) as \xNN, cut at kMaxQuotedChars with "..." after it.
[[nodiscard]] std::string quote(std::string_view text);

// `text` with every byte outside printable ASCII written as \xNN.
[[nodiscard]] std::string printable(std::string_view text);

// The same, but line breaks are kept (a message of several lines).
[[nodiscard]] std::string printable_lines(std::string_view text);

}  // namespace boxproxy
