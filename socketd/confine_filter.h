// SPDX-License-Identifier: Apache-2.0
// The rules of every seccomp filter boxproxy loads, stated with libseccomp: serve's and bridge's
// own (SPEC §17), the request inspector's (SPEC §18) and a `run` box's (SPEC §14).
//
// Used when boxproxy is built, never when it runs: socketd/confine_filter_gen makes each filter
// into the BPF program the binary embeds (socketd/confine_filter_program.h), and the unit test
// (tests/unit/socketd_confine_filter_test.cc) makes them again to check the embedded ones are
// what these rules give. Both must be compiled with the binary's definitions
// (BOXPROXY_SANITIZE_BUILD lengthens the lists), which the one library they link guarantees.
#pragma once

#include <linux/filter.h>
#include <seccomp.h>

#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "socketd/confine_filter_program.h"

namespace boxproxy {

// libseccomp refused a rule or an attribute, or could not export the program.
struct ConfineFilterError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ConfineFilterDeleter {
  void operator()(void* context) const noexcept { seccomp_release(context); }
};
using ConfineFilterOwner = std::unique_ptr<void, ConfineFilterDeleter>;

// The filter's name in the generated source and in messages: "serve", "serve_rereading", "bridge",
// "inspector", "box", "box_unix_sockets" and so on.
[[nodiscard]] std::string_view confine_filter_name(ConfineFilter filter) noexcept;

// Adds `filter`'s attributes (its default and bad-architecture actions, the optimisation) and
// rules to `context`, which is reset first: whatever it held is gone. Throws ConfineFilterError.
void add_confine_rules(scmp_filter_ctx context, ConfineFilter filter);

// A new libseccomp filter holding `filter`'s rules (add_confine_rules). Throws ConfineFilterError.
[[nodiscard]] ConfineFilterOwner build_confine_filter(ConfineFilter filter);

// The BPF program libseccomp makes of `context`, instruction by instruction as the kernel takes
// it (seccomp_export_bpf through a memfd: libseccomp 2.5.4, Debian 12's, has no export to memory).
// Throws ConfineFilterError.
[[nodiscard]] std::vector<sock_filter> export_confine_program(scmp_filter_ctx context);

}  // namespace boxproxy
