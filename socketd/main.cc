// SPDX-License-Identifier: Apache-2.0
// boxproxy: the egress proxy for one sandbox session. See man/boxproxy.1.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "socketd/bridge_command.h"
#include "socketd/capture_command.h"
#include "socketd/check_command.h"
#include "socketd/exit_code.h"
#include "table/message_text.h"
#include "socketd/run_command.h"
#include "socketd/serve_command.h"
#include "socketd/sidecar_command.h"

namespace {

constexpr const char* kUsage =
    "usage: boxproxy serve --socket PATH [OPTION]...      run the proxy for one session\n"
    "       boxproxy check [OPTION]... TARGET...          say what the rule makes of addresses or names, and why\n"
    "       boxproxy bridge --socket PATH [--listen ADDR:PORT]...\n"
    "                                                     inside a box: loopback TCP to the proxy's socket\n"
    "       boxproxy run [SERVE OPTION]... -- COMMAND [ARG]...\n"
    "                                                     run COMMAND in a new network namespace whose only way\n"
    "                                                     out is a proxy of its own (or --socket PATH's)\n"
    "       boxproxy capture --exempt-uid N [OPTION]...\n"
    "                                                     in a pod's init container: send the network namespace's\n"
    "                                                     traffic to the bridge, drop the rest\n"
    "       boxproxy sidecar --socket PATH [OPTION]... [-- SERVE OPTION...]\n"
    "                                                     a pod's proxy: serve and the bridge in one container\n"
    "       boxproxy --help | --version\n"
    "\n"
    "`boxproxy COMMAND --help` lists each command's options; man boxproxy has the rest.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return boxproxy::as_status(boxproxy::ExitCode::usage);
  }
  const std::string_view command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return boxproxy::as_status(boxproxy::ExitCode::ok);
  }
  if (command == "--version") {
    std::printf("boxproxy %s\n", BOXPROXY_VERSION);
    return boxproxy::as_status(boxproxy::ExitCode::ok);
  }
  if (command == "serve") return boxproxy::run_serve_command(argc - 2, argv + 2);
  if (command == "check") return boxproxy::run_check_command(argc - 2, argv + 2);
  if (command == "bridge") return boxproxy::run_bridge_command(argc - 2, argv + 2);
  if (command == "run") return boxproxy::run_run_command(argc - 2, argv + 2);
  if (command == "capture") return boxproxy::run_capture_command(argc - 2, argv + 2);
  if (command == "sidecar") return boxproxy::run_sidecar_command(argc - 2, argv + 2);
  std::fprintf(stderr, "boxproxy: unknown command %s\n%s", boxproxy::quote(argv[1]).c_str(), kUsage);
  return boxproxy::as_status(boxproxy::ExitCode::usage);
}
