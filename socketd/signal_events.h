// SPDX-License-Identifier: Apache-2.0
// The daemon's signals as loop events, for serve and the bridge alike.
#pragma once

#include <initializer_list>
#include <utility>

#include "proxy/event_owners.h"

namespace boxproxy {

// One event per (signal, slot) on `base`, each calling `callback(signal, ..., arg)`. SIGTERM and
// SIGINT are set to be ignored beneath libevent's handler, so that what libevent puts back when
// the events are freed on the way out is "ignore": a stop signal that arrives while the process
// is already exiting cleanly (after a drain, say) cannot turn the exit status the supervisor is
// owed into "killed by SIGTERM". Throws StartupError (exit 1) if an event cannot be added: it is
// called only while the daemon starts.
void add_signal_events(event_base* base, std::initializer_list<std::pair<int, EventPtr*>> slots,
                       event_callback_fn callback, void* arg);

}  // namespace boxproxy
