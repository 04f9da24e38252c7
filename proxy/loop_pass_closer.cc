// SPDX-License-Identifier: Apache-2.0
// Descriptors closed one loop pass late (proxy/loop_pass_closer.h).
#include "proxy/loop_pass_closer.h"

#include <new>

namespace boxproxy {

LoopPassCloser::LoopPassCloser(event_base* base) : pass_(make_event(base, -1, 0, &on_pass, this)) {}

void LoopPassCloser::close_after_loop_pass(UniqueFd fd) noexcept {
  if (!fd.valid() || !pass_) return;  // an invalid timer: `fd` closes here
  try {
    closing_.push_back(std::move(fd));
  } catch (const std::bad_alloc&) {
    return;  // `fd` (not moved from) closes here
  }
  static constexpr timeval kNow{0, 0};
  if (event_add(pass_.get(), &kNow) == -1) closing_.clear();
}

void LoopPassCloser::on_pass(evutil_socket_t, short, void* self) noexcept {
  static_cast<LoopPassCloser*>(self)->closing_.clear();
}

}  // namespace boxproxy
