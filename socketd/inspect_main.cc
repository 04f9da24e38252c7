// SPDX-License-Identifier: Apache-2.0
// boxproxy-inspect: the request inspector serve starts when an endpoint is named for inspection
// (proxy/inspect/DESIGN.md). Not a command for people: serve starts it with its channel's end as
// descriptor 3 (and --no-confine when serve itself runs unconfined), sends "start" (the
// endpoints, the trust store, the operator's CA if any), and hands it the connections to inspect.
// It ends when serve closes the channel.
#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "proxy/event_owners.h"
#include "proxy/inspect/inspector.h"
#include "socketd/self_confine.h"

namespace {

constexpr int kChannelFd = 3;
constexpr int kUsageExit = 2;

// What would otherwise happen lazily, after confinement took the right away, is done now. Most of
// it has happened already (the CA and the leaves' key made, the TLS contexts built); this states
// it, so that another order of setup cannot leave a file to open later:
//  - glibc reads /etc/localtime the first time it converts a time (OpenSSL's certificate times:
//    today the CA's own, made or checked, come first) and keeps it;
//  - OpenSSL reads openssl.cnf at its first initialisation;
//  - its random generator is seeded from getrandom(2) at its first use (later reseeds ask
//    getrandom again, which the filter allows; its fallback, /dev/urandom, could not be opened).
// Throws std::runtime_error when OpenSSL cannot initialise or seed.
void prepare_for_confinement() {
  ::tzset();
  if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG | OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
                       nullptr) != 1) {
    throw std::runtime_error("cannot initialise OpenSSL");
  }
  unsigned char byte = 0;
  if (RAND_bytes(&byte, 1) != 1) throw std::runtime_error("cannot seed OpenSSL's random generator");
}

// The inspector parses every byte of an inspected connection with a TLS library: once set up, it
// confines itself as serve does (SPEC §17), tighter: no file by any path (Landlock, no rule), and
// a seccomp filter with no socket, connect, bind, open, exec, fork or ptrace
// (socketd/confine_filter.cc, ConfineFilter::inspector). A refused call is said on standard error,
// which it shares with serve. Before "ready": serve does not listen until the inspector is confined.
void confine() {
  boxproxy::ConfineRequest request;
  request.command = boxproxy::ConfinedCommand::inspector;
  request.log_fd = STDERR_FILENO;
  request.program = "boxproxy-inspect";
  try {
    for (const std::string& notice : boxproxy::confine_self(request)) {
      std::fprintf(stderr, "boxproxy-inspect: %s\n", notice.c_str());
    }
  } catch (const boxproxy::ConfineError& error) {
    // Fail closed: serve does not start (serve's --no-confine runs both without).
    throw std::runtime_error(std::string("cannot confine itself: ") + error.what() + " (--no-confine runs without)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The CA's key and every session's TLS keys live in this process: no core dump, no ptrace by
  // another process of the same user.
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);  // serve ends it (by closing the channel), not the terminal
  bool confined = true;
  if (argc == 2 && std::string_view(argv[1]) == "--no-confine") {
    confined = false;  // serve runs --no-confine (for a debugger or strace): so does its inspector
  } else if (argc != 1) {
    std::fprintf(stderr, "boxproxy-inspect: started by boxproxy serve only (usage: boxproxy-inspect [--no-confine])\n");
    return kUsageExit;
  }
  try {
    boxproxy::InspectorSetup setup = boxproxy::read_start(kChannelFd);
    boxproxy::EventBasePtr base = boxproxy::make_batching_event_base();
    if (!base) throw std::runtime_error("cannot make an event loop");
    boxproxy::Inspector inspector(base.get(), boxproxy::UniqueFd(kChannelFd), std::move(setup));
    if (confined) {
      prepare_for_confinement();
      confine();
    }
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
