// SPDX-License-Identifier: Apache-2.0
// The processes `boxproxy run` starts and waits for (serve, the bridge, the box, pid 1 and
// COMMAND), and the signals a waiting parent passes on to its child.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace boxproxy {

// While a supervisor waits for its child: SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 go on to the
// child; SIGINT and SIGQUIT are ignored, as a shell ignores them for its foreground job, since
// the terminal sends them to the command itself.
void supervise(pid_t child);

// The child has been waited for: nothing is passed on any more.
void stop_forwarding() noexcept;

// Blocks (how == SIG_BLOCK) or unblocks (SIG_UNBLOCK) the signals passed on. The box blocks them
// across the fork of pid 1: a signal for pid 1 of a PID namespace that has no handler yet would
// be dropped, while a blocked one waits until pid 1 has installed its handler and unblocks it.
void mask_forwarded_signals(int how) noexcept;

// In a child before exec: the dispositions and mask a plain process starts with.
void default_signals() noexcept;

// In the box, before it starts anything: closes every descriptor but standard input, output and
// error (SPEC §19a). What the caller left open (a --secret's /dev/fd/N, a namespace, a socket of
// the host's) and what run holds would otherwise reach the bridge, pid 1 and COMMAND. An error
// message, or nullopt.
[[nodiscard]] std::optional<std::string> close_inherited_descriptors();

// A wait status as an exit status: the code, or 128+N for signal N.
[[nodiscard]] int exit_status(int status) noexcept;

// Waits for `pid`; its wait status, or -1.
[[nodiscard]] int wait_for(pid_t pid) noexcept;

// Waits for `command`, reaping every other child meanwhile (orphans of the PID namespace come
// to its pid 1). Returns the command's wait status, or -1.
[[nodiscard]] int reap_until(pid_t command) noexcept;

// SIGTERM, then SIGKILL if it has not exited within a few seconds. Returns the wait status.
int stop_child(pid_t pid) noexcept;

// Starts a helper (this binary again with `args`: serve or bridge) and waits for its listening
// line. On success the pid; on failure -1 with the helper reaped and *status set to its wait
// status (-1: it was stopped for being too slow). The placeholder lines serve prints before it
// (SPEC §19) go to `before` when it is given.
[[nodiscard]] pid_t start_helper(const std::vector<std::string>& args, int* status,
                                 std::vector<std::string>* before = nullptr);

}  // namespace boxproxy
