// SPDX-License-Identifier: Apache-2.0
#include "socketd/signal_events.h"

#include <signal.h>

#include "socketd/exit_code.h"

namespace boxproxy {

void add_signal_events(event_base* base, std::initializer_list<std::pair<int, EventPtr*>> slots,
                       event_callback_fn callback, void* arg) {
  for (auto [signal, slot] : slots) {
    // Before evsignal_add, which saves the disposition it replaces and restores it on free.
    // An ignored disposition survives exec, a caught one does not: serve's inspector is forked
    // before these are added, and a child forked later inherits libevent's handler, which exec
    // resets to the default.
    if (signal == SIGTERM || signal == SIGINT) ::signal(signal, SIG_IGN);
    slot->reset(evsignal_new(base, signal, callback, arg));
    if (!*slot || evsignal_add(slot->get(), nullptr) == -1) {
      throw StartupError{ExitCode::failure, "cannot install signal handlers"};
    }
  }
}

}  // namespace boxproxy
