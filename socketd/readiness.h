// SPDX-License-Identifier: Apache-2.0
// Telling the supervisor the proxy is ready, and dying with it (SPEC §4).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

// Prints {"event":"listening","socket":PATH,"pid":N} and a newline to standard output with
// write(2), `more_fields` (the bridge's: `,"listen":[...]`, already JSON) before "pid". The only
// thing serve and bridge ever write there, but serve's --placeholder lines before it (SPEC §19).
// Never stdio: its first write to a terminal or to /dev/null asks ioctl(TCGETS) whether it is
// one, a call their confinement (which comes first, SPEC §17) refuses.
void announce_listening(const std::string& socket_path, std::string_view more_fields = {});

// Writes `lines` (whole JSON lines, each ending in a newline) to standard output as
// announce_listening writes its line: serve's placeholder events (SPEC §19), before it.
void announce_lines(std::string_view lines);

// Writes "READY=1\n" to `fd` and closes it (--ready-fd). Returns an error message on failure.
[[nodiscard]] std::optional<std::string> notify_ready_fd(int fd);

// Sends "READY=1" as one datagram to $NOTIFY_SOCKET when set (systemd's notify protocol; an '@'
// first means the abstract namespace). Written by hand: no libsystemd. Returns an error message.
[[nodiscard]] std::optional<std::string> notify_systemd_ready();

// --die-with-parent: PR_SET_PDEATHSIG with `signal`, then if the parent already died before that
// took effect (getppid() no longer the pid we were started by), raise it now.
void die_with_parent(int signal, pid_t original_parent);

}  // namespace boxproxy
