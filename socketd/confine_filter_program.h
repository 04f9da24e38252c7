// The seccomp programs boxproxy loads, compiled when it is built: the ones `serve` and `bridge`
// confine themselves with (SPEC §17), and the one `run` puts on COMMAND's box (SPEC §14).
//
// socketd/confine_filter.cc states the rules with libseccomp; the build runs
// socketd/confine_filter_gen, which makes each filter below into its BPF program and writes the
// programs into a source file of the build directory (confine_filter_programs.cc, never
// committed). At start the process loads its program as it is: nothing is built, nothing
// allocated. Why: building the filter with libseccomp at every start cost about 84 KiB of heap,
// 28 KiB of which stayed resident for the life of every session even after malloc_trim (issue 12:
// 1,000 sessions a host), and about 85 microseconds of CPU. With the box's filter made the same way,
// libseccomp is not in the binary at all (nor the assert, wide printf and gettext it brings).
#pragma once

#include <linux/filter.h>

#include <span>

namespace boxproxy {

// Every filter boxproxy loads: one program each.
enum class ConfineFilter {
  serve,            // serve with no file to re-read: it opens no file at all once set up
  serve_rereading,  // serve with --config or --allow-file (SIGHUP re-reads them): read-only opens
  bridge,           // the bridge of a `run` box: no file, no audit, no netlink, no socket removal
  box,              // COMMAND in a `run` box (socketd/box_seccomp.h): no Unix socket, no io_uring,
                    // no typing into the terminal
  box_unix_sockets, // the same with --allow-unix-sockets: no typing into the terminal only
};

inline constexpr ConfineFilter kConfineFilters[] = {ConfineFilter::serve, ConfineFilter::serve_rereading,
                                                    ConfineFilter::bridge, ConfineFilter::box,
                                                    ConfineFilter::box_unix_sockets};

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
