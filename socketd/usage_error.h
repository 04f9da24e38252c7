// SPDX-License-Identifier: Apache-2.0
// The one usage error of every command: a bad argument, a bad config file. Exit 2.
//
// Thrown at start-up only (never inside the event loop, except serve's SIGHUP re-read, whose
// caller catches it and keeps the host list it had). Every message is made through
// usage_error() below, so it is printable ASCII (line breaks aside) whatever it repeats: a
// value a user gave, a piece of it a parser quoted raw, a config file's bytes.
#pragma once

#include <string>
#include <string_view>

namespace boxproxy {

struct UsageError {
  std::string message{};  // complete, ready to print: "boxproxy COMMAND: DETAIL"
  std::string detail{};   // the same without "boxproxy COMMAND: " (for a log line, or another command)

  // The same error, told under another command's name: `check` and `run` report a serve
  // option's error as their own.
  [[nodiscard]] UsageError for_command(std::string_view command) const;
};

// "boxproxy COMMAND: DETAIL", made printable (table/message_text.h).
[[nodiscard]] UsageError usage_error(std::string_view command, std::string_view detail);

// `--help` or `-h` was given: the caller prints its command's help text and exits 0.
struct HelpRequested {};

}  // namespace boxproxy
