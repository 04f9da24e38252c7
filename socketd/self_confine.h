// SPDX-License-Identifier: Apache-2.0
// `serve` and `bridge` confine themselves once set up (SPEC §17), and so does serve's request
// inspector (boxproxy-inspect, SPEC §18) with no file at all and a shorter list.
//
// Everything a box sends is parsed in these processes; a parser bug reached from the box must
// then be able to do nothing but what the event loop already does. After setup (socket bound,
// files open, signal handlers in place) the process sets PR_SET_NO_NEW_PRIVS, restricts its file
// system access with Landlock (where the kernel has it) to the files SIGHUP re-reads and the
// removal of its socket, and installs a seccomp allow-list of the system calls its event loop
// makes: no exec, no fork, no ptrace, no new listening socket, no packet or raw socket, no open of
// any other file. A call outside the list is logged once (by number) and fails with EPERM.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>


namespace boxproxy {

// Which process is being confined: the list differs (only serve re-reads files, syncs the
// audit, reads the interface addresses over netlink and removes its socket; the request inspector,
// boxproxy-inspect, makes no socket and opens nothing at all).
enum class ConfinedCommand { serve, bridge, inspector };

struct ConfineRequest {
  ConfinedCommand command = ConfinedCommand::serve;
  // Where a refused call is reported, in the log's own format; the descriptor stays open (the
  // log owns it). A pipe is written without blocking, like the log's own lines.
  int log_fd = 2;
  bool json_log = false;
  std::string program = "boxproxy";  // what a text line starts with ("boxproxy: ...")
  std::string label;  // --label: on the line as on every log line (SPEC §12); printable ASCII
  // Files opened again after setup (SIGHUP re-reads --config and --allow-file): their directories
  // may be read (a file replaced by rename(2) is a new file in the same directory).
  std::vector<std::string> reread_files;
  // Sockets this process removes at exit (or on drain): their directories allow removing a file.
  std::vector<std::string> removed_sockets;
};

// Confinement could not be set up (the kernel has no seccomp filter mode, or refused it): the
// caller does not start (fail closed); --no-confine is the way to run without.
struct ConfineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Confines the calling process, for the rest of its life, as described above. Single-threaded
// callers only (the filter is installed in the calling thread). Returns notices for the log: a
// kernel without Landlock (then seccomp alone, and files are not restricted by path), and in
// builds with BOXPROXY_TEST_HOOKS the result of BOXPROXY_TEST_AFTER_CONFINE. Throws ConfineError.
[[nodiscard]] std::vector<std::string> confine_self(const ConfineRequest& request);

}  // namespace boxproxy
