// SPDX-License-Identifier: Apache-2.0
// The seccomp filter of a `boxproxy run` box (SPEC §14): the sockets, namespaces and kernel
// interfaces COMMAND may not have, and no typing into the terminal.
#pragma once

#include <optional>
#include <string>

#include "socketd/confine_filter_program.h"

namespace boxproxy {

// Installs, in the calling process and every process it starts from now on, the box's filter,
// for every system-call ABI this CPU can run (on x86_64 the native one, x32 and i386); a
// program of any other ABI is killed. Its rules, and what each stops, are in
// socketd/confine_filter.cc (add_box_rules); everything it refuses fails with EPERM but clone3
// (ENOSYS, so that libc falls back to clone):
//   - socket(2) of any family but AF_INET, AF_INET6 and AF_NETLINK with NETLINK_ROUTE;
//     socketpair(2) of any family but AF_UNIX, and of any type but SOCK_STREAM and
//     SOCK_SEQPACKET; on i386 socketcall(SYS_SOCKET) and socketcall(SYS_SOCKETPAIR) whatever
//     their arguments (a filter cannot read them in memory). `lifts.unix_sockets` allows
//     socket(AF_UNIX) and Unix pairs of any type;
//   - unshare(2) and clone(2) with any CLONE_NEW* flag, clone3(2) and setns(2), and every mount
//     call (mount, umount2, pivot_root, fsopen, fsconfig, fsmount, fspick, open_tree, move_mount,
//     mount_setattr; SPEC §19a), unless `lifts.nested_namespaces`;
//   - io_uring_setup, userfaultfd, bpf, perf_event_open, keyctl, add_key and request_key, and
//     ioctl(TIOCSTI) and ioctl(TIOCLINUX), always.
// PR_SET_NO_NEW_PRIVS must be set already. Returns an error message, or nullopt.
[[nodiscard]] std::optional<std::string> install_box_filter(BoxLifts lifts);

}  // namespace boxproxy
