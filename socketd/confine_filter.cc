// SPDX-License-Identifier: Apache-2.0
// The rules of serve's and bridge's seccomp filters (SPEC §17), the request inspector's (SPEC §18),
// and a `run` box's (SPEC §14):
// what socketd/confine_filter_gen compiles into the programs the binary loads
// (socketd/confine_filter_program.h).
#include "socketd/confine_filter.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
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
// arguments. The lists below are that output, grouped, plus the calls of features added after
// that trace (said where listed) and the fallbacks of calls the vDSO or glibc usually answers. The
// sanitizer build's own calls were found by running its tests confined: a call missing from a
// list shows as the log line "confinement refused system call N", and, in a thread that blocks
// SIGSYS (LeakSanitizer's tracer), as that thread killed by SIGSYS.

// Both commands: the event loop, relaying, timers, signals, memory, the log. Traced in both
// (2026-12-01, every e2e module: serve made 2.26 million calls after its listening line, the
// bridge 4,364), except where a comment says why a call the trace did not meet is here. Traced
// again (2026-12-02: the modules trace-confine takes, traced, and every e2e module run confined
// with the kernel's log of refusals read; every manual recipe; standard output and error a file,
// a pipe, a terminal, /dev/null and a socket): no call outside these lists but the test hooks' own.
constexpr std::string_view kEventLoopCalls[] = {
    // epoll, and libevent's signal pipe (epoll_pwait and ppoll: aarch64 has no epoll_wait, poll)
    "epoll_wait", "epoll_pwait", "epoll_ctl", "read", "write", "close", "poll", "ppoll",
    // libevent's own buffers read and write with these (the control channel's)
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
    // the socket (and --control-socket's) removed at shutdown or drain (aarch64: unlinkat)
    "unlink", "unlinkat",
    // getifaddrs(3) binds a netlink socket to read the interface addresses (socket(2) below
    // allows only NETLINK_ROUTE for it)
    "bind",
};

// The request inspector (boxproxy-inspect, SPEC §18), instead of the lists above: it parses every
// byte of an inspected connection, the box's and the origin's, with a TLS library, so a bug there
// must find nothing to use but the sockets it was handed. No socket(2), connect, bind, listen or
// accept (it cannot reach anything serve did not dial and check), no open (Landlock denies every
// path too), no exec, no fork or clone, no ptrace. Traced (2026-12-03: scripts/trace-confine over
// test_inspect, test_inspect_rules, test_run_inspect and test_inspect_confine; 1,837 calls after
// the point it confines itself): brk, close, epoll_ctl, epoll_wait, exit_group, futex, getpid,
// munmap, read, recvfrom, recvmsg, sendmsg, write. The rest are fallbacks or rare paths, each said.
constexpr std::string_view kInspectorCalls[] = {
    // the loop (epoll_pwait: aarch64 has no epoll_wait)
    "epoll_wait", "epoll_pwait", "epoll_ctl",
    // the TLS sockets (OpenSSL's socket BIO reads and writes), libevent's buffers, the first byte
    // peeked (recv is recvfrom), and serve's channel: messages with SCM_RIGHTS
    "read", "write", "readv", "writev", "recvfrom", "recvmsg", "sendmsg", "close",
    // a kept origin connection ended at once when closed for serve (origin_pool.cc), before its
    // descriptor closes a loop pass later: only ever its own sockets, so nothing new to reach
    "shutdown",
    // time: the vDSO answers, the system call is its fallback
    "clock_gettime", "gettimeofday", "time",
    // glibc's and OpenSSL's locks and once-only initialisations
    "futex",
    // memory: malloc's heap and large blocks (mmap and mprotect never executable: allow_memory)
    "brk", "munmap", "mremap", "madvise",
    // OpenSSL's random generator reseeds from the kernel (seeded before confinement; its fallback,
    // /dev/urandom, could not be opened); getpid is its check for a fork
    "getrandom", "getpid",
    // the SIGSYS handler's return; abort() (a failed assertion) still ends the process with SIGABRT
    "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "restart_syscall", "gettid", "tgkill",
    "exit", "exit_group",
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

// The bridge's SIGHUP (proxy/bridge/proxy_socket.h): openat(2) (and open(2) where it exists) with O_PATH
// and nothing that writes or creates. An O_PATH descriptor reads and writes nothing; the only use
// the bridge makes of it, connect(2) through /proc/self/fd, it could make by the path anyway.
[[maybe_unused]] void allow_path_only_opens(scmp_filter_ctx filter) {
  constexpr scmp_datum_t kFlags = O_PATH | O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE;
  check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, kFlags, O_PATH)),
        "openat(O_PATH)");
  const int open_number = seccomp_syscall_resolve_name("open");
  if (open_number != __NR_SCMP_ERROR) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, open_number, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, kFlags, O_PATH)),
          "open(O_PATH)");
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
// The box's filter (SPEC §14): what COMMAND may not do, even as root of its own namespaces.
//
// Unlike serve's, a deny-list: COMMAND is any program, so what is not refused is allowed, and each
// rule below says what it stops. Every refusal is EPERM (what a kernel whose settings forbid a
// call answers), but clone3's (ENOSYS, below). One errno a call, too: on i386 libseccomp folds
// every rule of socket(2) into one of socketcall(SYS_SOCKET), which holds one action only (and
// likewise socketpair's).

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

// Makes `call` fail with `error` when all of `conditions` hold (always, when there are none).
void refuse(scmp_filter_ctx filter, int error, int call, std::initializer_list<scmp_arg_cmp> conditions,
            std::string_view what) {
  check(seccomp_rule_add_array(filter, SCMP_ACT_ERRNO(error), call, static_cast<unsigned int>(conditions.size()),
                               conditions.begin()),
        what);
}

// An argument compared with a constant, as libseccomp wants it.
constexpr scmp_datum_t datum(long value) noexcept { return static_cast<scmp_datum_t>(value); }

// TIOCSTI pushes bytes into a terminal's input as if typed: COMMAND shares run's terminal, and
// what it pushed would be read by the shell that started run once run exits, outside the box
// (TIOCLINUX can do the same on a virtual console). An ioctl's request is an unsigned int: the
// high 32 bits of the register are ignored here as the kernel ignores them.
void refuse_terminal_input(scmp_filter_ctx filter) {
  for (const unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    refuse(filter, EPERM, SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(request))},
           "ioctl(TIOCSTI)");
  }
}

// The socket families COMMAND may make: the Internet ones (the box's network namespace fences
// them: its loopback is all there is), netlink (its route protocol only, below), and with
// --allow-unix-sockets the Unix family.
constexpr bool box_family(int family, bool unix_sockets) noexcept {
  return family == AF_INET || family == AF_INET6 || family == AF_NETLINK || (unix_sockets && family == AF_UNIX);
}

// The socket type is the low four bits of socketpair's second argument (the kernel's
// SOCK_TYPE_MASK); SOCK_NONBLOCK and SOCK_CLOEXEC are flags above them.
constexpr int kLastSocketType = 0xf;

// socket(2) and socketpair(2): an allow-list of families, written as refusals of the rest.
//
// What it stops: every family the box's network namespace does not fence. AF_VSOCK is not per
// network namespace: on a VM with a vsock device it reaches the hypervisor's services round the
// proxy. AF_PACKET, AF_ALG, netlink's other protocols (nf_tables, audit, uevents) and the rest are
// kernel code COMMAND has no use for (and the first socket of a family loads its module). A
// pathname Unix socket ignores network namespaces: socket(AF_UNIX) could connect() to any socket
// of the host the caller may open (another session's proxy, which would get round this box's own
// host list, a container runtime's socket, an ssh agent, D-Bus), and a datagram pair's sockets
// can sendto(), connect() and bind() pathnames (journald, /dev/log, a notify socket) just as
// well. Stream and seqpacket pairs are connected to each other and can never be connected
// again: those stay, unless `unix_sockets` lifts the Unix rules.
//
// On i386 libseccomp turns each rule into two: one of socket(2) (socketpair(2)) as written, and
// one of socketcall(SYS_SOCKET) (SYS_SOCKETPAIR) whatever its arguments, which are in memory where
// a filter cannot look. So a 32-bit program makes no socket and no pair through socketcall, only
// through socket(2) and socketpair(2) (Linux 4.3 and later). Failing closed is the price of
// leaving no way round.
void refuse_box_sockets(scmp_filter_ctx filter, bool unix_sockets) {
  // The family is an int, which the kernel reads from the low 32 bits of the register: each
  // family up to AF_NETLINK (the highest allowed) is refused by those bits, and every value of the
  // whole register above AF_NETLINK is refused too. High bits set never let a refused family
  // through; they make an allowed one fail, the safe side (a compiler extends an int's register).
  for (int family = AF_UNSPEC; family <= AF_NETLINK; ++family) {
    if (box_family(family, unix_sockets)) continue;
    refuse(filter, EPERM, SCMP_SYS(socket), {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, datum(family))}, "socket(family)");
  }
  refuse(filter, EPERM, SCMP_SYS(socket), {SCMP_A0(SCMP_CMP_GT, datum(AF_NETLINK))}, "socket(family)");
  // Netlink's route protocol (NETLINK_ROUTE, 0) only: glibc's getaddrinfo (AI_ADDRCONFIG),
  // getifaddrs and if_nametoindex read the interfaces with it; changing them needs a capability
  // COMMAND lacks over the box's network namespace. Any other protocol, high bits included, fails.
  refuse(filter, EPERM, SCMP_SYS(socket),
         {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, datum(AF_NETLINK)), SCMP_A2(SCMP_CMP_NE, datum(NETLINK_ROUTE))},
         "socket(AF_NETLINK)");
  // Pairs of the Unix family only (the one other family with pairs, AF_TIPC, is refused above).
  refuse(filter, EPERM, SCMP_SYS(socketpair), {SCMP_A0(SCMP_CMP_NE, datum(AF_UNIX))}, "socketpair(family)");
  if (unix_sockets) return;
  // socket(AF_UNIX) was refused above; a pair of any type but stream and seqpacket is refused by
  // its type's bits, the flags aside (SOCK_RAW is SOCK_DGRAM to the Unix family). A type with
  // other bits set the kernel refuses itself (EINVAL).
  constexpr scmp_datum_t kTypeMask = kLow32 & ~static_cast<scmp_datum_t>(SOCK_NONBLOCK | SOCK_CLOEXEC);
  for (int type = 0; type <= kLastSocketType; ++type) {
    if (type == SOCK_STREAM || type == SOCK_SEQPACKET) continue;
    refuse(filter, EPERM, SCMP_SYS(socketpair), {SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, datum(type))},
           "socketpair(type)");
  }
}

// Every flag that makes a new namespace, for unshare(2) and clone(2). (CLONE_NEWTIME is
// unshare's alone: in clone(2) its bit is the exit signal's.)
constexpr unsigned long kNewNamespaceFlags[] = {CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                                CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET};

// New namespaces, of any kind, and joining one.
//
// What it stops: COMMAND is root of the box's inner user namespace, which owns its mount, IPC
// and UTS namespaces, so the kernel lets it make namespaces: unshare(CLONE_NEWNET), even without
// a nested user namespace, gives it a network namespace of its own with CAP_NET_ADMIN and
// CAP_NET_RAW there, and with them nf_tables, traffic control and the rest of the kernel's network
// configuration: the usual way to a kernel exploit from an unprivileged user. (The socket rules
// above still hold within any namespace.) `run --allow-nested-namespaces` lifts this, for a box
// that runs containers of its own.
void refuse_box_namespaces(scmp_filter_ctx filter) {
  // A masked comparison tests one pattern: a rule for each flag, on its own bit, so that no
  // other bit of the register changes the answer.
  for (const unsigned long flag : kNewNamespaceFlags) {
    for (const int call : {SCMP_SYS(unshare), SCMP_SYS(clone)}) {
      const auto bit = static_cast<scmp_datum_t>(flag);
      refuse(filter, EPERM, call, {SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit)}, "unshare/clone(CLONE_NEW*)");
    }
  }
  refuse(filter, EPERM, SCMP_SYS(unshare), {SCMP_A0(SCMP_CMP_MASKED_EQ, datum(CLONE_NEWTIME), datum(CLONE_NEWTIME))},
         "unshare(CLONE_NEWTIME)");
  // clone3(2) takes its flags in memory, where a filter cannot look: it fails with ENOSYS, as on
  // a kernel before 5.3, so that glibc (pthread_create, posix_spawn) falls back to clone(2),
  // whose flags are checked above.
  refuse(filter, ENOSYS, SCMP_SYS(clone3), {}, "clone3");
  // setns(2) needs a capability over the namespace joined, which COMMAND has over its own only,
  // and with the rules above it makes none to join: refused all the same, so that no namespace
  // the box can name (a descriptor it inherited, /proc/PID/ns) rests on that check alone.
  refuse(filter, EPERM, SCMP_SYS(setns), {}, "setns");
}

// Every way to make, change or remove a mount, the new mount API's calls included (SPEC §19a).
//
// What it stops: COMMAND is root of the user namespace that owns the box's inner mount namespace,
// so the kernel lets it mount a tmpfs, an overlay (whose copy-up has been a way to root before), a
// FUSE file system or anything else a user namespace may mount, and detach or move the mounts run
// made: the same file-system code the nested namespaces are refused for. run makes the box's own
// mounts (its /proc, /dev, the masks over the proxy's files) before this filter is loaded; the
// inner user namespace locks them anyway, so this is the attack surface, not the masks, that it
// guards. "umount" is i386's older call (libseccomp applies a rule to each ABI that has the call).
constexpr std::string_view kBoxMountCalls[] = {
    "mount", "umount2", "umount", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount",
    "mount_setattr",
};

void refuse_box_mounts(scmp_filter_ctx filter) {
  for (const std::string_view name : kBoxMountCalls) {
    const int number = seccomp_syscall_resolve_name(std::string(name).c_str());
    if (number == __NR_SCMP_ERROR) {
      if (name == "umount") continue;  // an ABI of the i386 family only
      throw ConfineFilterError("seccomp: no system call " + std::string(name));
    }
    refuse(filter, EPERM, number, {}, name);
  }
}

// Calls COMMAND never needs that are each a known way into the kernel for an unprivileged user:
// refused (EPERM) whatever the box's options.
constexpr std::string_view kBoxRefusedCalls[] = {
    // An io_uring ring makes sockets and connects them (IORING_OP_SOCKET, IORING_OP_CONNECT)
    // without socket(2), where the socket rules cannot see them.
    "io_uring_setup",
    // Stalls the kernel at a page fault of the caller's choosing: the usual tool for winning a
    // race in the kernel (the box's /dev has no /dev/userfaultfd either).
    "userfaultfd",
    // eBPF programs and maps: the verifier and the JIT, a long list of exploits.
    "bpf",
    // Performance counters: kernel addresses, side channels, and a long list of bugs.
    "perf_event_open",
    // The kernel's keyrings: shared state the box has no use for (its session keyring is a new,
    // empty one already), and request_key(2) can make the host run /sbin/request-key, outside
    // every namespace of the box, for a key the box names.
    "keyctl", "add_key", "request_key",
};

void add_box_rules(scmp_filter_ctx filter, BoxLifts lifts) {
  check(seccomp_reset(filter, SCMP_ACT_ALLOW), "reset");
  // A system call of an ABI the filter does not describe ends the whole process, not just the
  // thread, so that no half-dead program carries on.
  check(seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "bad-arch action");
  for (const std::uint32_t abi : other_abis()) {
    const int result = seccomp_arch_add(filter, abi);
    if (result != -EEXIST) check(result, "arch_add");
  }
  refuse_terminal_input(filter);
  refuse_box_sockets(filter, lifts.unix_sockets);
  if (!lifts.nested_namespaces) {
    refuse_box_namespaces(filter);
    refuse_box_mounts(filter);
  }
  for (const std::string_view name : kBoxRefusedCalls) {
    const int number = seccomp_syscall_resolve_name(std::string(name).c_str());
    if (number == __NR_SCMP_ERROR) throw ConfineFilterError("seccomp: no system call " + std::string(name));
    refuse(filter, EPERM, number, {}, name);
  }
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
    case ConfineFilter::inspector:
      return "inspector";
    case ConfineFilter::box:
      return "box";
    case ConfineFilter::box_unix_sockets:
      return "box_unix_sockets";
    case ConfineFilter::box_nested_namespaces:
      return "box_nested_namespaces";
    case ConfineFilter::box_unix_sockets_nested_namespaces:
      return "box_unix_sockets_nested_namespaces";
  }
  return "unknown";
}

void add_confine_rules(scmp_filter_ctx filter, ConfineFilter which) {
  if (const std::optional<BoxLifts> lifts = box_lifts(which)) {
    add_box_rules(filter, *lifts);
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
  if (which == ConfineFilter::inspector) {
    for (const std::string_view name : kInspectorCalls) allow(filter, name);
    allow_memory(filter);
    allow_ioctls(filter);  // libevent's FIONREAD (how much a socket holds) and FIONBIO
#if defined(BOXPROXY_SANITIZE_BUILD)
    for (const std::string_view name : kSanitizerCalls) allow(filter, name);
#endif
    return;
  }
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
  if (which == ConfineFilter::bridge) allow_path_only_opens(filter);
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
