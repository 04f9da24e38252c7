// SPDX-License-Identifier: Apache-2.0
// `boxproxy sidecar`: a pod's proxy in one container (issue 38). Starts serve on its Unix socket,
// then the bridge with its transparent listener and DNS responder on the pod's loopback (the
// ports `boxproxy capture` sends the pod's traffic to), writes a ready file a probe reads, and
// stays the two processes' parent: a signal is passed on, and when either ends the other is
// stopped and the sidecar exits, so the pod's restart policy sees it.
#pragma once

namespace boxproxy {

// argv after "sidecar". Returns the exit code: 0 stopped by SIGTERM or SIGINT, 1 serve or the
// bridge did not start or ended (--probe: the ready file is not there), 2 a usage error.
int run_sidecar_command(int argc, char** argv);

}  // namespace boxproxy
