// The rules of serve's and bridge's seccomp filters (SPEC §17), and of a `run` box's (SPEC §14):
// what socketd/confine_filter_gen compiles into the programs the binary loads
// (socketd/confine_filter_program.h).
#include "socketd/confine_filter.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace boxproxy {
namespace {

// ---------------------------------------------------------------------------------------------
// The allow-list.
//
// How it was derived (and how to derive it again after a change to the event loop): every e2e
// module ran under strace with serve and bridge started --no-confine,
//   scripts/trace-confine build/socketd/boxproxy            (and again with the sanitizer build)
// which prints, for each command, every system call made after its listening line (the point
// where it confines itself; the readiness writes after it are traced too) and every socket(2)'s
// arguments. The lists below are that output, grouped, plus the calls the work of issues 13 and
// 14 adds (said where listed) and the fallbacks of calls the vDSO or glibc usually answers. The
// sanitizer build's own calls were found by running its tests confined: a call missing from a
// list shows as the log line "confinement refused system call N", and, in a thread that blocks
// SIGSYS (LeakSanitizer's tracer), as that thread killed by SIGSYS.

// Both commands: the event loop, relaying, timers, signals, memory, the log. Traced in both
// (2026-12-01, every e2e module: serve made 2.26 million calls after its listening line, the
// bridge 4,364), except where a comment says why a call the trace did not meet is here. Traced
// again for issue 21 (2026-12-02: the modules trace-confine takes, traced, and every e2e module
// run confined with the kernel's log of refusals read; every manual recipe; standard output and
// error a file, a pipe, a terminal, /dev/null and a socket): no call outside these lists but the
// test hooks' own.
constexpr std::string_view kEventLoopCalls[] = {
    // epoll, and libevent's signal pipe (epoll_pwait and ppoll: aarch64 has no epoll_wait, poll)
    "epoll_wait", "epoll_pwait", "epoll_ctl", "read", "write", "close", "poll", "ppoll",
    // libevent's own buffers read and write with these (the control channel's, issue 13)
    "readv", "writev",
    // clients and upstreams: accept on the listeners set up before, connect out. Never listen(2)
    // (a new listening socket would be a way in from outside).
    "accept4", "connect", "shutdown", "getsockname", "getpeername", "setsockopt",
    // SO_ORIGINAL_DST of a captured connection (the bridge, SPEC §16), SO_ERROR of a dial
    "getsockopt",
    // streams' send and recv; evdns' datagrams (serve); the box's DNS responder over UDP (the
    // bridge, SPEC §16)
    "recvfrom", "sendto", "recvmsg", "sendmsg",
    // the splice fast path and its pipes; O_NONBLOCK on a descriptor taken over (--control-fd)
    "splice", "pipe2", "fcntl",
    // time: the vDSO answers, the system call is its fallback
    "clock_gettime", "gettimeofday", "time",
    // signals: libevent's handlers, restored at exit; the SIGSYS handler's return; the readiness
    // write's check for a SIGPIPE of its own (socketd/readiness.cc)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait", "restart_syscall",
    // glibc's locks and once-only initialisations (met reading a file)
    "futex",
    // memory: malloc's heap and large blocks (mmap and mprotect never executable: allow_memory)
    "brk", "munmap", "mremap", "madvise",
    // evdns' transaction ids and libevent's random numbers
    "getrandom",
    // abort() (a failed assertion) still ends the process with SIGABRT, not a refused call
    "getpid", "gettid", "tgkill",
    "exit", "exit_group",
    // fstat of a descriptor (fstat is newfstatat with AT_EMPTY_PATH in glibc 2.36); the lstat of
    // the socket path before it is removed
    "fstat", "newfstatat",
};

// serve only: files, the audit, the interface addresses.
constexpr std::string_view kServeCalls[] = {
    // --audit: a refusal is on disk before it is answered; a line the disk took only in part is
    // cut off again (ftruncate of the open descriptor, never of a path)
    "fdatasync", "ftruncate",
    // reading a file SIGHUP re-reads
    "lseek",
    // the socket (and issue 13's --control-socket) removed at shutdown or drain (aarch64: unlinkat)
    "unlink", "unlinkat",
    // getifaddrs(3) binds a netlink socket to read the interface addresses (socket(2) below
    // allows only NETLINK_ROUTE for it)
    "bind",
};

// Opening files: only serve, only read-only, and only when it has a file to re-read (SIGHUP);
// Landlock limits which files (without Landlock, any file its user may read: a logged notice).
constexpr std::string_view kReadOnlyOpens[] = {"openat", "open"};

#if defined(BOXPROXY_SANITIZE_BUILD)
// The sanitizer build only: what AddressSanitizer and LeakSanitizer do themselves (LeakSanitizer
// stops the world at exit: a tracer clone that ptraces this process and reads /proc/self), and
// executable mappings of their own. Never in a release build.
constexpr std::string_view kSanitizerCalls[] = {
    "clone", "ptrace", "wait4", "waitid", "prctl", "sched_yield", "getdents", "getdents64", "readlink", "readlinkat",
    "mprotect", "mmap", "nanosleep", "clock_nanosleep", "futex", "sched_getaffinity", "getrlimit",
    "prlimit64", "setrlimit", "kill", "openat", "open", "pread64", "access", "faccessat", "faccessat2",
    "uname", "dup", "dup2", "dup3", "ioctl", "sigaltstack", "statx", "lseek", "getppid",
};
#endif

// A call outside the list: SECCOMP_RET_TRAP, and socketd/self_confine.cc's SIGSYS handler logs it
// once and makes it fail with EPERM (why, there). The trap works where that handler knows the
// register that carries a call's result; elsewhere the filter answers EPERM itself, unlogged.
#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kCanTrap = true;
#else
constexpr bool kCanTrap = false;
#endif

// ---------------------------------------------------------------------------------------------
// The rules (libseccomp).

void check(int result, std::string_view what) {
  if (result != 0) {
    throw ConfineFilterError(std::string("seccomp: ") + std::string(what) + ": " + std::strerror(-result));
  }
}

void allow(scmp_filter_ctx filter, std::string_view name) {
  const int number = seccomp_syscall_resolve_name(std::string(name).c_str());
  if (number == __NR_SCMP_ERROR) return;  // not a call of this architecture (e.g. "open" on aarch64)
  check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 0), name);
}

// An int argument: the kernel reads the low 32 bits of the register only, so the filter must
// ignore the high ones too, or 0x100000000 | AF_PACKET would pass as something else.
constexpr scmp_datum_t kLow32 = 0xffffffffULL;

// socket(2) by family and type (the flags SOCK_NONBLOCK and SOCK_CLOEXEC aside, any other bit
// refused): streams and datagrams of the Internet and Unix families; for serve, the netlink route
// socket getifaddrs(3) uses. Never AF_PACKET, never SOCK_RAW on an Internet family (a serve
// started as root would have CAP_NET_RAW: raw packets would go round every decision).
void allow_sockets(scmp_filter_ctx filter, bool serve) {
  constexpr scmp_datum_t kTypeMask = kLow32 & ~static_cast<scmp_datum_t>(SOCK_NONBLOCK | SOCK_CLOEXEC);
  for (const int family : {AF_UNIX, AF_INET, AF_INET6}) {
    for (const int type : {SOCK_STREAM, SOCK_DGRAM}) {
      check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(family)),
                             SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, static_cast<scmp_datum_t>(type))),
            "socket");
    }
  }
  if (serve) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(socket), 3,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(AF_NETLINK)),
                           SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, static_cast<scmp_datum_t>(SOCK_RAW)),
                           SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(NETLINK_ROUTE))),
          "socket(AF_NETLINK)");
  }
}

// mmap and mprotect, never with PROT_EXEC: a bug that writes code into memory cannot make it
// executable (the binary is linked with immediate binding and needs no new code after start).
void allow_memory(scmp_filter_ctx filter) {
#if defined(BOXPROXY_SANITIZE_BUILD)
  (void)filter;  // the sanitizer runtime maps code of its own: kSanitizerCalls allows both whole
#else
  for (const int call : {SCMP_SYS(mmap), SCMP_SYS(mprotect)}) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, call, 1,
                           SCMP_A2(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(PROT_EXEC), 0)),
          "mmap");
  }
#endif
}

// openat(2) (and open(2) where it exists) read-only: no O_CREAT, no write, no O_TRUNC, no
// O_TMPFILE. Which files: Landlock's rules. (Unused in the sanitizer build, whose runtime opens
// files of its own: kSanitizerCalls allows both whole.)
[[maybe_unused]] void allow_read_only_opens(scmp_filter_ctx filter) {
  constexpr scmp_datum_t kWriteFlags = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE;
  const int openat_number = SCMP_SYS(openat);
  check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, openat_number, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, kWriteFlags, O_RDONLY)),
        "openat");
  const int open_number = seccomp_syscall_resolve_name("open");
  if (open_number != __NR_SCMP_ERROR) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, open_number, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, kWriteFlags, O_RDONLY)),
          "open");
  }
}

// ioctl(2): FIONBIO and FIONREAD only (libevent's and the splice path's), by request number.
// Not SIOCGIFINDEX (if_nametoindex): a zone's interface index comes over the netlink route socket
// (proxy/local_addresses.h). Not TCGETS: nothing writes through stdio once confined (stdio asks
// it of a character device at its first write; socketd/readiness.h).
void allow_ioctls(scmp_filter_ctx filter) {
  for (const unsigned long request : {static_cast<unsigned long>(FIONBIO), static_cast<unsigned long>(FIONREAD)}) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(request))),
          "ioctl");
  }
}

// ---------------------------------------------------------------------------------------------
// The box's filter: COMMAND makes no Unix socket of its own and types nothing into the terminal.
//
// What it stops: a pathname Unix socket ignores network namespaces, so without the filter a
// box could connect() to any socket of the host its user may open: another session's proxy
// (which would get round this box's own --allow), a container runtime's socket, an ssh agent,
// D-Bus. The bridge reaches the proxy from outside the filter (it is not COMMAND's descendant).
// Unlike serve's, this is a deny-list: COMMAND is any program.

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

void add_box_rules(scmp_filter_ctx filter, bool allow_unix_sockets) {
  check(seccomp_reset(filter, SCMP_ACT_ALLOW), "reset");
  // A system call of an ABI the filter does not describe ends the whole process, not just the
  // thread, so that no half-dead program carries on.
  check(seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "bad-arch action");
  for (const std::uint32_t abi : other_abis()) {
    const int result = seccomp_arch_add(filter, abi);
    if (result != -EEXIST) check(result, "arch_add");
  }
  // TIOCSTI pushes bytes into a terminal's input as if typed: COMMAND shares run's terminal, and
  // what it pushed would be read by the shell that started run once run exits, outside the box
  // (TIOCLINUX can do the same on a virtual console). An ioctl's request is an unsigned int: the
  // high 32 bits of the register are ignored here as the kernel ignores them.
  for (const unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    check(seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(request))),
          "ioctl(TIOCSTI)");
  }
  if (allow_unix_sockets) return;
  // socket(2)'s family is an int: the kernel reads the low 32 bits of the register only, so the
  // comparison must ignore the high ones too, or socket(0x100000001, ...) would be AF_UNIX to the
  // kernel and not to the filter. On i386, libseccomp turns this rule into one for
  // socketcall(SYS_SOCKET, ...) as a whole (its arguments are in memory, where a filter cannot
  // look): there a 32-bit program makes no socket through socketcall, and AF_INET ones through
  // socket(2) only. Failing closed there is the price of leaving no way round.
  check(seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(AF_UNIX))),
        "socket(AF_UNIX)");
  // An io_uring ring makes sockets and connects them (IORING_OP_SOCKET, IORING_OP_CONNECT)
  // without the socket(2) system call, where no filter sees them: no rings in the box.
  check(seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(io_uring_setup), 0), "io_uring_setup");
}

}  // namespace

std::string_view confine_filter_name(ConfineFilter filter) noexcept {
  switch (filter) {
    case ConfineFilter::serve:
      return "serve";
    case ConfineFilter::serve_rereading:
      return "serve_rereading";
    case ConfineFilter::bridge:
      return "bridge";
    case ConfineFilter::box:
      return "box";
    case ConfineFilter::box_unix_sockets:
      return "box_unix_sockets";
  }
  return "unknown";
}

void add_confine_rules(scmp_filter_ctx filter, ConfineFilter which) {
  if (which == ConfineFilter::box || which == ConfineFilter::box_unix_sockets) {
    add_box_rules(filter, which == ConfineFilter::box_unix_sockets);
    return;
  }
  const std::uint32_t refused = kCanTrap ? SCMP_ACT_TRAP : SCMP_ACT_ERRNO(EPERM);
  check(seccomp_reset(filter, refused), "reset");
  // A call through another ABI (int 0x80, x32 numbers) would bypass a list written for the
  // native one: the whole process ends.
  check(seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "bad-arch action");
  // Every call the proxy makes runs the filter first: a binary tree of the call numbers (about 7
  // comparisons for the 50 or so listed) rather than a list walked call by call. Best effort:
  // an older libseccomp builds the list, which is only slower.
  (void)seccomp_attr_set(filter, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  // (Test builds log every refused call in the kernel's log too: a flag of the load, not of the
  // program, so socketd/self_confine.cc sets it.)
  const bool serve = which != ConfineFilter::bridge;
  for (const std::string_view name : kEventLoopCalls) allow(filter, name);
  if (serve) {
    for (const std::string_view name : kServeCalls) allow(filter, name);
  }
  allow_sockets(filter, serve);
  allow_memory(filter);
  allow_ioctls(filter);
#if defined(BOXPROXY_SANITIZE_BUILD)
  for (const std::string_view name : kSanitizerCalls) allow(filter, name);
#else
  if (which == ConfineFilter::serve_rereading) allow_read_only_opens(filter);
#endif
}

ConfineFilterOwner build_confine_filter(ConfineFilter which) {
  // Any default action: add_confine_rules resets it to the filter's own.
  ConfineFilterOwner filter(seccomp_init(SCMP_ACT_KILL_PROCESS));
  if (!filter) throw ConfineFilterError("seccomp: seccomp_init failed");
  add_confine_rules(filter.get(), which);
  return filter;
}

std::vector<sock_filter> export_confine_program(scmp_filter_ctx filter) {
  const int fd = ::memfd_create("confine_filter", MFD_CLOEXEC);
  if (fd == -1) throw ConfineFilterError(std::string("memfd_create: ") + std::strerror(errno));
  struct Closer {
    int owned;
    ~Closer() { ::close(owned); }
  } closer{fd};
  check(seccomp_export_bpf(filter, fd), "seccomp_export_bpf");
  struct stat st {};
  if (::fstat(fd, &st) == -1) throw ConfineFilterError(std::string("fstat: ") + std::strerror(errno));
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes == 0 || bytes % sizeof(sock_filter) != 0) {
    throw ConfineFilterError("seccomp_export_bpf: not a whole number of instructions");
  }
  std::vector<sock_filter> program(bytes / sizeof(sock_filter));
  std::size_t done = 0;
  while (done < bytes) {
    char* into = reinterpret_cast<char*>(program.data()) + done;
    const ssize_t n = ::pread(fd, into, bytes - done, static_cast<off_t>(done));
    if (n == -1 && errno == EINTR) continue;
    if (n == -1) throw ConfineFilterError(std::string("reading the exported program: ") + std::strerror(errno));
    if (n == 0) throw ConfineFilterError("reading the exported program: it is shorter than its size");
    done += static_cast<std::size_t>(n);
  }
  return program;
}

}  // namespace boxproxy
