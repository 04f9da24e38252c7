// SPDX-License-Identifier: Apache-2.0
// The frame every command runs in: its usage errors, --help and start-up errors told one way.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "socketd/exit_code.h"

namespace boxproxy {

// Runs `body` (which reads the command's options and does its work) and returns its exit status.
// What it throws is told here: HelpRequested prints `help()` on standard output (exit 0), a
// UsageError its message (exit 2), a StartupError "boxproxy COMMAND: MESSAGE" with its own exit
// code, both on standard error. Anything else is not caught.
[[nodiscard]] int run_command_shell(std::string_view command, std::string (*help)(), const std::function<int()>& body);

}  // namespace boxproxy
