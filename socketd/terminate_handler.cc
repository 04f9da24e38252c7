// SPDX-License-Identifier: Apache-2.0
// The lean build's terminate handler, in place of libstdc++'s verbose one (the lean build only:
// socketd/CMakeLists.txt).
//
// libstdc++'s handler names the uncaught exception's type, and for that it links the C++
// demangler, whose tables (3.2 KiB of pointers) static-pie relocates at every start: a page of
// .data.rel.ro private to every session, of which a host runs thousands (bench/README.md,
// bench/density). Defining the handler here keeps libstdc++'s (vterminate.o) and the demangler
// out of the link. It says as much as is needed to find the cause, the exception's what(), with
// write(2) only (no stdio, no allocation of its own), and aborts as libstdc++'s does.
#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>

namespace {

void say(const char* text) noexcept {
  // Best effort: standard error may be closed or full, and the process aborts either way.
  const ssize_t written = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)written;
}

}  // namespace

namespace __gnu_cxx {

// Called by std::terminate: an exception nobody caught, a noexcept function that threw.
void __verbose_terminate_handler() {
  static bool terminating = false;  // a what() that throws brings us back here: abort at once
  if (!terminating) {
    terminating = true;
    say("boxproxy: terminate called");
    if (const std::exception_ptr thrown = std::current_exception()) {
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& error) {
        say(" after throwing: ");
        say(error.what());
      } catch (...) {
        say(" after throwing an exception that is not a std::exception");
      }
    }
    say("\n");
  }
  std::abort();
}

}  // namespace __gnu_cxx
