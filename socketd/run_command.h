// SPDX-License-Identifier: Apache-2.0
// `boxproxy run`: a command in a box (its own user, network, mount and PID namespaces, no Unix
// sockets, no namespaces of its own) whose only way out is boxproxy.
#pragma once

namespace boxproxy {

// argv after "run": [SERVE OPTION]... [--allow-unix-sockets] [--allow-nested-namespaces] --
// COMMAND [ARG]..., or --socket PATH [--auth-token-file FILE] [--allow-unix-sockets]
// [--allow-nested-namespaces] -- COMMAND [ARG]...
// Returns the command's exit status (128+N when a signal N ended it); 2 for a usage error (run's
// own, or the serve options'); 125 when the box could not be set up (no user namespaces, the
// proxy or the bridge did not start); 126 when COMMAND cannot be executed; 127 when it is not
// found.
int run_run_command(int argc, char** argv);

}  // namespace boxproxy
