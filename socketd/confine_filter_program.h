// SPDX-License-Identifier: Apache-2.0
// The seccomp programs boxproxy loads, compiled when it is built: the ones `serve` and `bridge`
// confine themselves with (SPEC §17), the request inspector's (boxproxy-inspect, SPEC §18), and
// the one `run` puts on COMMAND's box (SPEC §14).
//
// socketd/confine_filter.cc states the rules with libseccomp; the build runs
// socketd/confine_filter_gen, which makes each filter below into its BPF program and writes the
// programs into a source file of the build directory (confine_filter_programs.cc, never
// committed). At start the process loads its program as it is: nothing is built, nothing
// allocated. Why: building the filter with libseccomp at every start took heap, part of which
// stayed resident for the life of every session even after malloc_trim (and a host runs thousands
// of sessions), and CPU at every start (bench/README.md, bench/density). With the box's filter made
// the same way, libseccomp is not in the binary at all (nor the assert, wide printf and gettext it
// brings).
#pragma once

#include <linux/filter.h>

#include <optional>
#include <span>

namespace boxproxy {

// Every filter boxproxy loads: one program each.
enum class ConfineFilter {
  serve,            // serve with no file to re-read: it opens no file at all once set up
  serve_rereading,  // serve with --config or --allow-file (SIGHUP re-reads them): read-only opens
  bridge,           // the bridge of a `run` box: no file, no audit, no netlink, no socket removal
  // serve's request inspector (boxproxy-inspect): reads and writes the sockets serve hands it and
  // nothing more. No socket, connect, bind, accept, open, exec, fork or ptrace at all.
  inspector,
  // COMMAND in a `run` box (socketd/box_seccomp.h), one program for each set of BoxLifts: sockets of
  // the Internet families and netlink's route protocol only, Unix sockets only as stream and
  // seqpacket pairs, no new namespace, no io_uring, bpf, perf, userfaultfd or keys, no typing into
  // the terminal.
  box,
  box_unix_sockets,                    // --allow-unix-sockets: Unix sockets of any kind
  box_nested_namespaces,               // --allow-nested-namespaces: new namespaces and setns
  box_unix_sockets_nested_namespaces,  // both
};

inline constexpr ConfineFilter kConfineFilters[] = {
    ConfineFilter::serve,
    ConfineFilter::serve_rereading,
    ConfineFilter::bridge,
    ConfineFilter::inspector,
    ConfineFilter::box,
    ConfineFilter::box_unix_sockets,
    ConfineFilter::box_nested_namespaces,
    ConfineFilter::box_unix_sockets_nested_namespaces};

// What `run`'s options lift of the box's filter (every other rule holds whatever they say).
struct BoxLifts {
  bool unix_sockets = false;       // --allow-unix-sockets: socket(AF_UNIX) and every socketpair type
  bool nested_namespaces = false;  // --allow-nested-namespaces: unshare/clone of new namespaces,
                                   // clone3, setns

  friend constexpr bool operator==(BoxLifts, BoxLifts) noexcept = default;
};

// The box's program for `lifts`.
[[nodiscard]] constexpr ConfineFilter box_filter(BoxLifts lifts) noexcept {
  if (lifts.unix_sockets) {
    return lifts.nested_namespaces ? ConfineFilter::box_unix_sockets_nested_namespaces
                                   : ConfineFilter::box_unix_sockets;
  }
  return lifts.nested_namespaces ? ConfineFilter::box_nested_namespaces : ConfineFilter::box;
}

// What a box's program lifts; nullopt for serve's, bridge's and the inspector's.
[[nodiscard]] constexpr std::optional<BoxLifts> box_lifts(ConfineFilter filter) noexcept {
  for (const bool unix_sockets : {false, true}) {
    for (const bool nested_namespaces : {false, true}) {
      const BoxLifts lifts{.unix_sockets = unix_sockets, .nested_namespaces = nested_namespaces};
      if (box_filter(lifts) == filter) return lifts;
    }
  }
  return std::nullopt;
}

// The program of `filter`, as this build's rules make it (the sanitizer build's lists are longer):
// at most BPF_MAXINSNS instructions, never empty. Defined in the generated
// confine_filter_programs.cc.
[[nodiscard]] std::span<const sock_filter> confine_program(ConfineFilter filter) noexcept;

// Loads `filter`'s program in the calling thread, for it and every process it starts from now on
// (socketd/confine_filter_load.cc). PR_SET_NO_NEW_PRIVS must be set already. With
// `log_refusals`, every refused call is also in the kernel's log (SECCOMP_FILTER_FLAG_LOG, where
// the kernel has it). 0, or the errno of the kernel's refusal.
[[nodiscard]] int load_confine_program(ConfineFilter filter, bool log_refusals) noexcept;

}  // namespace boxproxy
