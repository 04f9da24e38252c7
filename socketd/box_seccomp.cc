// The seccomp filter of a `boxproxy run` box: COMMAND makes no Unix socket of its own and types
// nothing into the terminal.
//
// What it stops: a pathname Unix socket ignores network namespaces, so without the filter a
// box could connect() to any socket of the host its user may open: another session's proxy
// (which would get round this box's own --allow), a container runtime's socket, an ssh agent,
// D-Bus. The bridge reaches the proxy from outside the filter (it is not COMMAND's descendant).
#include "socketd/box_seccomp.h"

#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace boxproxy {
namespace {

struct FilterDeleter {
  void operator()(void* context) const noexcept { seccomp_release(context); }
};
using FilterOwner = std::unique_ptr<void, FilterDeleter>;

// The ABIs besides the native one that this CPU runs, each filtered like the native one: a
// filter for the native ABI alone would let a 32-bit program (or an x32 one) make the same call
// under another number. Any ABI not named here is killed (the filter's bad-architecture action).
std::vector<std::uint32_t> other_abis() {
#if defined(__x86_64__)
  return {SCMP_ARCH_X86, SCMP_ARCH_X32};
#elif defined(__aarch64__)
  return {SCMP_ARCH_ARM};
#else
  return {};
#endif
}

std::string failure(const char* what, int result) {
  return fmt::format("boxproxy run: cannot build the box's seccomp filter: {}: {}", what, std::strerror(-result));
}

std::optional<std::string> load(void* filter) {
  const int result = seccomp_load(filter);
  if (result != 0) return failure("seccomp_load", result);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> install_box_filter(bool allow_unix_sockets) {
  FilterOwner filter(seccomp_init(SCMP_ACT_ALLOW));
  if (!filter) return "boxproxy run: cannot build the box's seccomp filter: seccomp_init failed";
  // A system call of an ABI the filter does not describe ends the whole process, not just the
  // thread, so that no half-dead program carries on (kernels before 4.14 lack it: then the
  // thread, libseccomp's default).
  (void)seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  for (const std::uint32_t abi : other_abis()) {
    const int result = seccomp_arch_add(filter.get(), abi);
    if (result != 0 && result != -EEXIST) return failure("seccomp_arch_add", result);
  }
  // TIOCSTI pushes bytes into a terminal's input as if typed: COMMAND shares run's terminal, and
  // what it pushed would be read by the shell that started run once run exits, outside the box
  // (TIOCLINUX can do the same on a virtual console). An ioctl's request is an unsigned int: the
  // high 32 bits of the register are ignored here as the kernel ignores them.
  for (const unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    const int result = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                        SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, static_cast<scmp_datum_t>(request)));
    if (result != 0) return failure("ioctl(TIOCSTI)", result);
  }
  if (allow_unix_sockets) return load(filter.get());
  // socket(2)'s family is an int: the kernel reads the low 32 bits of the register only, so the
  // comparison must ignore the high ones too, or socket(0x100000001, ...) would be AF_UNIX to the
  // kernel and not to the filter. On i386, libseccomp turns this rule into one for
  // socketcall(SYS_SOCKET, ...) as a whole (its arguments are in memory, where a filter cannot
  // look): there a 32-bit program makes no socket through socketcall, and AF_INET ones through
  // socket(2) only. Failing closed there is the price of leaving no way round.
  int result = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                                SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, static_cast<scmp_datum_t>(AF_UNIX)));
  if (result != 0) return failure("socket(AF_UNIX)", result);
  // An io_uring ring makes sockets and connects them (IORING_OP_SOCKET, IORING_OP_CONNECT)
  // without the socket(2) system call, where no filter sees them: no rings in the box.
  result = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(io_uring_setup), 0);
  if (result != 0) return failure("io_uring_setup", result);
  return load(filter.get());
}

}  // namespace boxproxy
