// SPDX-License-Identifier: Apache-2.0
// How a command ends: the exit statuses boxproxy gives of its own (SPEC §4, and each command's
// --help), and the start-up error that carries one.
#pragma once

#include <string>

namespace boxproxy {

enum class ExitCode : int {
  ok = 0,              // a clean shutdown; check: every target allowed; --help, --version
  failure = 1,         // serve, bridge: a failure at start or while running
  refused = 1,         // check: a target is refused
  usage = 2,           // a bad argument or config file (check: also a target it could not judge)
  path_taken = 3,      // serve: the socket path is taken (a live proxy, or not a socket)
  // run's own failures, as env(1), chroot(1) and container runtimes give them, so that they stand
  // apart from COMMAND's statuses (which run passes on) as far as any code can.
  setup_failed = 125,    // the box could not be set up
  cannot_execute = 126,  // COMMAND cannot be executed
  not_found = 127,       // COMMAND was not found
};

[[nodiscard]] constexpr int as_status(ExitCode code) noexcept { return static_cast<int>(code); }

// A failure once the options are read, before the command's work has begun (serve's socket, a
// bridge's listener, an event loop that cannot be made): the exit code, and what to say after
// "boxproxy COMMAND: " (socketd/command_shell.h prints it).
struct StartupError {
  ExitCode exit_code = ExitCode::failure;
  std::string message;
};

}  // namespace boxproxy
