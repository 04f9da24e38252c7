// SPDX-License-Identifier: Apache-2.0
// `boxproxy serve`: one proxy for one session (SPEC §2–§4).
#pragma once

namespace boxproxy {

// argv after "serve". Returns the exit code: 0 clean shutdown, 1 runtime failure, 2 usage error,
// 3 the socket path is taken.
int run_serve_command(int argc, char** argv);

}  // namespace boxproxy
