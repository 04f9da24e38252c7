// SPDX-License-Identifier: Apache-2.0
// The namespaces of a `boxproxy run` box (SPEC §14).
//
// Two user namespaces, one inside the other:
//   outer: made by the box process (also when run is root), with the box's network namespace;
//          the bridge runs here, and pid 1 of the box's PID namespace mounts its /proc here.
//   inner: made by pid 1 just before it starts COMMAND, with a mount namespace copied from the
//          outer one. Copied into a less privileged namespace, every mount is locked to the one
//          beneath it, so COMMAND (root inside, with every capability there) cannot unmount the
//          box's /proc to uncover the host's, whose /proc/PID/mem of a process of the same user
//          (the proxy) it could otherwise write. COMMAND has no capability in the outer
//          namespace, so none over its network namespace either: it cannot setns(2) anywhere.
// Every function returns a complete error message for standard error, or nullopt.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace boxproxy {

// A new user namespace mapping the caller (root or not) to root inside it, and a new network
// namespace owned by it holding only a loopback that is down. No fallback: without a user
// namespace the box would keep the caller's capabilities in the host's namespaces.
[[nodiscard]] std::optional<std::string> enter_box_namespaces();

// `ip link set lo up`, without needing ip(8).
[[nodiscard]] std::optional<std::string> bring_loopback_up();

// Lets any user of the box's network namespace bind ports below 1024 (COMMAND has no
// CAP_NET_BIND_SERVICE there). Best effort: a read-only /proc/sys leaves the default.
void allow_low_ports() noexcept;

// In pid 1 of the box's PID namespace: a mount namespace of its own with a fresh /proc of that
// PID namespace (COMMAND sees its own processes only). Where proc cannot be mounted (the host's
// /proc has paths masked, as in a container) an empty read-only tmpfs covers /proc instead, so
// the host's processes stay hidden, and *note says so.
[[nodiscard]] std::optional<std::string> mount_box_proc(std::string* note);

// In pid 1, after mount_box_proc: what uid 0 could use against the host without any capability
// made unreachable. The kernel's knobs under /proc (/proc/sys, sysrq-trigger, irq, bus, fs) and
// all of /sys read-only; a /dev of the box's own with null, zero, full, random, urandom and tty
// from the host, its own devpts and /dev/shm. (When run is root, COMMAND is uid 0 to the kernel:
// kernel.core_pattern and the host's disks would otherwise be its to write.)
[[nodiscard]] std::optional<std::string> confine_box_mounts();

// What of the proxy's a box must not change (SPEC §14): the directory of its socket, and the
// proxy's own files when run started it (log, audit, config, allow file, token file, control
// socket). Paths as run was given them (relative to its working directory, which pid 1 shares).
struct ProxyPaths {
  std::string socket_directory;
  std::vector<std::string> files;
  // Files COMMAND may not even read (--secret's, SPEC §19): covered by /dev/null on a nodev
  // mount, whatever they are, so opening one fails (EACCES).
  std::vector<std::string> hidden;
};

// In pid 1, after confine_box_mounts: every directory above them a bind of itself (so that none
// can be renamed), the socket's directory a read-only bind of itself (what is mounted below it
// kept as it was), each regular file of the proxy's a read-only bind of itself, any other (a FIFO,
// the control socket) covered by /dev/null on a nodev mount, and the working directory entered
// again through them. Paths under /dev and /proc, the box's own, are left alone. The inner user
// namespace then locks these mounts: COMMAND cannot unmount or remount them. (A symbolic link on
// the way to a path is not covered: it stays COMMAND's to replace where the caller may.)
[[nodiscard]] std::optional<std::string> protect_proxy_paths(const ProxyPaths& paths);

// In pid 1, after protect_proxy_paths: the inner user namespace (root mapped to root) and mount
// (which locks the mounts), IPC and UTS namespaces in it. `self_dir` is a descriptor of this process's
// /proc/PID directory, opened before /proc was covered (the maps are written through it).
[[nodiscard]] std::optional<std::string> enter_inner_user_namespace(int self_dir);

}  // namespace boxproxy
