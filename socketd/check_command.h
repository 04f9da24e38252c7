// SPDX-License-Identifier: Apache-2.0
// `boxproxy check` (SPEC §13): judge targets exactly as serve would, without dialling anything.
#pragma once

namespace boxproxy {

// argv after "check". Prints one line per address judged (one per request for a "METHOD https://..."
// target, SPEC §18); returns 0 when every target is allowed,
// 1 when any is refused, 2 on a usage error (message on standard error naming the option/value).
int run_check_command(int argc, char** argv);

}  // namespace boxproxy
