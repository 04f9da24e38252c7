// SPDX-License-Identifier: Apache-2.0
// boxproxy-inspect: the request inspector serve starts when an endpoint is named for inspection
// (proxy/inspect/DESIGN.md). Not a command for people: serve starts it with its channel's end as
// descriptor 3, sends "start" (the endpoints, the trust store, the operator's CA if any), and
// hands it the connections to inspect. It ends when serve closes the channel.
#include <event2/event.h>
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "proxy/event_owners.h"
#include "proxy/inspect/inspector.h"

namespace {

constexpr int kChannelFd = 3;

}  // namespace

int main() {
  // The CA's key and every session's TLS keys live in this process: no core dump, no ptrace by
  // another process of the same user.
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);  // serve ends it (by closing the channel), not the terminal
  try {
    boxproxy::InspectorSetup setup = boxproxy::read_start(kChannelFd);
    boxproxy::EventBasePtr base(event_base_new());
    if (!base) throw std::runtime_error("cannot make an event loop");
    boxproxy::Inspector inspector(base.get(), boxproxy::UniqueFd(kChannelFd), std::move(setup));
    if (!inspector.send_ready()) throw std::runtime_error("cannot tell serve it is ready");
    while (!inspector.finished()) {
      if (event_base_loop(base.get(), EVLOOP_ONCE) == -1) break;
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "boxproxy-inspect: %s\n", error.what());
    return 1;
  }
}
