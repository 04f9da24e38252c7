// The seccomp filter of a `boxproxy run` box (SPEC §14): no new Unix socket for COMMAND.
#pragma once

#include <optional>
#include <string>

namespace boxproxy {

// Installs, in the calling process and every process it starts from now on, a filter that makes
// socket(AF_UNIX, ...) fail with EPERM, for every system-call ABI this CPU can run (on x86_64 the
// native one, x32 and i386, where socketcall(SYS_SOCKET, ...) is refused whatever the family,
// since a filter cannot read socketcall's arguments in memory); a program of any other ABI is
// killed. io_uring_setup fails with EPERM too, since a ring creates sockets without socket(2).
// socketpair(2) still works: its sockets are connected to each other and to nothing else.
// PR_SET_NO_NEW_PRIVS must be set already. Returns an error message, or nullopt.
[[nodiscard]] std::optional<std::string> refuse_unix_sockets();

}  // namespace boxproxy
