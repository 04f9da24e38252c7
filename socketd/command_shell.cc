// SPDX-License-Identifier: Apache-2.0
#include "socketd/command_shell.h"

#include <cstdio>

#include <fmt/format.h>

#include "socketd/usage_error.h"

namespace boxproxy {

int run_command_shell(std::string_view command, std::string (*help)(), const std::function<int()>& body) {
  try {
    return body();
  } catch (const HelpRequested&) {
    std::fputs(help().c_str(), stdout);
    return as_status(ExitCode::ok);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s\n", error.message.c_str());
    return as_status(ExitCode::usage);
  } catch (const StartupError& error) {
    fmt::print(stderr, "boxproxy {}: {}\n", command, error.message);
    return as_status(error.exit_code);
  }
}

}  // namespace boxproxy
