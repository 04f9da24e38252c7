// SPDX-License-Identifier: Apache-2.0
// `boxproxy capture`: one-shot, for a pod's init container (issue 38). Programs the current
// network namespace so that every TCP connection not made by the proxy's own user ends at the
// bridge's transparent listener, every DNS query at the bridge's DNS responder, and everything
// else goes nowhere (socketd/box_capture.h holds the rules, shared with `run --transparent`).
#pragma once

namespace boxproxy {

// argv after "capture". Returns the exit code: 0 the rules are loaded (or, with --check,
// printed), 1 they could not be (no CAP_NET_ADMIN, no libnftables, the kernel refused them),
// 2 a usage error.
int run_capture_command(int argc, char** argv);

}  // namespace boxproxy
