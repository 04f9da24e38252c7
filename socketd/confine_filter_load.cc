// SPDX-License-Identifier: Apache-2.0
// Loading a compiled seccomp program (socketd/confine_filter_program.h): the one way boxproxy
// installs a filter, for serve's and bridge's confinement and for run's box alike.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <span>

#include "socketd/confine_filter_program.h"

namespace boxproxy {

int load_confine_program(ConfineFilter filter, bool log_refusals) noexcept {
  const std::span<const sock_filter> program = confine_program(filter);
  sock_fprog fprog{};
  // At most BPF_MAXINSNS (4096) instructions: the generator checks.
  fprog.len = static_cast<unsigned short>(program.size());
  fprog.filter = const_cast<sock_filter*>(program.data());  // the kernel copies it, never writes it
  const unsigned int flags = log_refusals ? SECCOMP_FILTER_FLAG_LOG : 0U;
  long result = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
  // A kernel without the log flag (before 4.14) says EINVAL: the filter is loaded without it (the
  // log is an aid to the tests, not a part of the filter).
  if (result == -1 && errno == EINVAL && flags != 0) {
    result = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0U, &fprog);
  }
  // A kernel without seccomp(2) (before 3.17) has the same filter mode through prctl.
  if (result == -1 && errno == ENOSYS) result = ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0UL, 0UL);
  return result == -1 ? errno : 0;
}

}  // namespace boxproxy
