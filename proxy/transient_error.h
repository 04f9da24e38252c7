// SPDX-License-Identifier: Apache-2.0
// The errnos that mean "not now" rather than "failed": a non-blocking call that would block
// (EAGAIN, or EWOULDBLOCK where it differs) or a call a signal interrupted (EINTR). The event
// loop tries again when the descriptor is ready; any other errno ends what was being done.
#pragma once

#include <cerrno>

namespace boxproxy {

[[nodiscard]] inline bool transient_error(int error) noexcept {
  return error == EAGAIN || error == EWOULDBLOCK || error == EINTR;
}

}  // namespace boxproxy
