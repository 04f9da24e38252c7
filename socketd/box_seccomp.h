// The seccomp filter of a `boxproxy run` box (SPEC §14): no new Unix socket for COMMAND, no
// typing into the terminal.
#pragma once

#include <optional>
#include <string>

namespace boxproxy {

// Installs, in the calling process and every process it starts from now on, the box's filter,
// for every system-call ABI this CPU can run (on x86_64 the native one, x32 and i386); a
// program of any other ABI is killed. Always: ioctl(TIOCSTI) and ioctl(TIOCLINUX) fail with
// EPERM (no typing into the terminal run was started from). Unless `allow_unix_sockets`:
// socket(AF_UNIX, ...) fails with EPERM (on i386 socketcall(SYS_SOCKET, ...) whatever the
// family, since a filter cannot read socketcall's arguments in memory), and so does
// io_uring_setup, since a ring creates sockets without socket(2). socketpair(2) still works: its
// sockets are connected to each other and to nothing else. PR_SET_NO_NEW_PRIVS must be set
// already. Returns an error message, or nullopt.
[[nodiscard]] std::optional<std::string> install_box_filter(bool allow_unix_sockets);

}  // namespace boxproxy
