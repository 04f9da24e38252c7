// The seccomp programs `serve` and `bridge` load to confine themselves (SPEC §17), compiled when
// boxproxy is built.
//
// socketd/confine_filter.cc states the rules with libseccomp; the build runs
// socketd/confine_filter_gen, which makes each filter below into its BPF program and writes the
// programs into a source file of the build directory (confine_filter_programs.cc, never
// committed). At start the process loads its program as it is: nothing is built, nothing
// allocated. Why: building the filter with libseccomp at every start cost about 84 KiB of heap,
// 28 KiB of which stayed resident for the life of every session even after malloc_trim (issue 12:
// 1,000 sessions a host), and about 85 microseconds of CPU.
#pragma once

#include <linux/filter.h>

#include <span>

namespace boxproxy {

// Every filter socketd/self_confine.cc can load: one program each.
enum class ConfineFilter {
  serve,            // serve with no file to re-read: it opens no file at all once set up
  serve_rereading,  // serve with --config or --allow-file (SIGHUP re-reads them): read-only opens
  bridge,           // the bridge of a `run` box: no file, no audit, no netlink, no socket removal
};

inline constexpr ConfineFilter kConfineFilters[] = {ConfineFilter::serve, ConfineFilter::serve_rereading,
                                                    ConfineFilter::bridge};

// The program of `filter`, as this build's rules make it (the sanitizer build's lists are longer):
// at most BPF_MAXINSNS instructions, never empty. Defined in the generated
// confine_filter_programs.cc.
[[nodiscard]] std::span<const sock_filter> confine_program(ConfineFilter filter) noexcept;

}  // namespace boxproxy
