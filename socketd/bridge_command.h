// SPDX-License-Identifier: Apache-2.0
// `boxproxy bridge`: inside the box, loopback TCP relayed to the proxy's Unix socket.
#pragma once

namespace boxproxy {

// argv after "bridge". Returns the exit code: 0 a clean shutdown (SIGTERM, SIGINT), 1 a runtime
// failure (a listen address cannot be bound, the socket path is not a socket), 2 a usage error.
int run_bridge_command(int argc, char** argv);

}  // namespace boxproxy
