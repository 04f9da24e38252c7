// SPDX-License-Identifier: Apache-2.0
// The seccomp filter of a `boxproxy run` box: the sockets, namespaces and kernel interfaces
// COMMAND may not have, and no typing into the terminal. Its rules, and what they stop, are in
// socketd/confine_filter.cc (add_box_rules); they are compiled into a program when boxproxy is
// built, and loaded here as it is (socketd/confine_filter_program.h), as serve's and bridge's own
// are.
#include "socketd/box_seccomp.h"

#include <cstring>

#include <fmt/format.h>

#include "socketd/confine_filter_program.h"

namespace boxproxy {

std::optional<std::string> install_box_filter(BoxLifts lifts) {
  const int error = load_confine_program(box_filter(lifts), false);
  if (error != 0) return fmt::format("boxproxy run: cannot load the box's seccomp filter: {}", std::strerror(error));
  return std::nullopt;
}

}  // namespace boxproxy
