// Telling the supervisor the proxy is ready, and dying with it (SPEC §4).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace boxproxy {

// Prints {"event":"listening","socket":PATH,"pid":N} and a newline to standard output, flushed.
// The only thing serve ever writes there.
void announce_listening(const std::string& socket_path);

// Writes "READY=1\n" to `fd` and closes it (--ready-fd). Returns an error message on failure.
[[nodiscard]] std::optional<std::string> notify_ready_fd(int fd);

// Sends "READY=1" as one datagram to $NOTIFY_SOCKET when set (systemd's notify protocol; an '@'
// first means the abstract namespace). Written by hand: no libsystemd. Returns an error message.
[[nodiscard]] std::optional<std::string> notify_systemd_ready();

// --die-with-parent: PR_SET_PDEATHSIG with `signal`, then if the parent already died before that
// took effect (getppid() no longer the pid we were started by), raise it now.
void die_with_parent(int signal, pid_t original_parent);

}  // namespace boxproxy
