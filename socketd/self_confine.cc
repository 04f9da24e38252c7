// serve and bridge confine themselves once set up (SPEC §17): NO_NEW_PRIVS, Landlock, seccomp.
#include "socketd/self_confine.h"

#include <fcntl.h>
#include <malloc.h>
#include <linux/landlock.h>
#include <linux/netlink.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "proxy/decision_log.h"
#include "proxy/event_owners.h"

#if defined(BOXPROXY_TEST_HOOKS)
#include <arpa/inet.h>
#include <linux/if_ether.h>
#endif

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
// bridge 4,364), except where a comment says why a call the trace did not meet is here.
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

// ---------------------------------------------------------------------------------------------
// A call outside the list: SECCOMP_RET_TRAP raises SIGSYS in the calling thread; the handler
// writes one line per system-call number (the first time only, so a loop of refused calls cannot
// flood the log) and makes the call return -EPERM, which the caller sees as any failed call
// (every call is checked against -1). Why not kill: a benign call a library makes on a rare path
// (one the trace did not meet) should fail one operation and say so in the log, not end every
// session of the box without a word. Why not ERRNO alone: a refusal must never be silent, or the
// list could never be corrected. What is refused stays refused: nothing outside the list is ever
// allowed, and a process that keeps running does so with every call it makes checked.

// x86_64's numbers stop below 512, aarch64's below 500: every number has its own slot, and a
// number beyond (none today) shares the last.
constexpr int kReportSlots = 1024;
volatile sig_atomic_t g_reported[kReportSlots];

// Where the handler writes, chosen before confinement (the handler may use no allocation and no
// call outside the list).
enum class SinkKind : std::uint8_t {
  write_fd,   // a regular file, or a descriptor opened anew with O_NONBLOCK: write(2) never waits
  socket,     // send(2) with MSG_DONTWAIT, never changing the shared descriptor's flags
  poll_first  // a pipe that could not be reopened: poll for room first, drop the line if none
};
struct Sink {
  int fd = -1;
  SinkKind kind = SinkKind::write_fd;
  bool json = false;
  std::string label_suffix;  // " label=TEXT", or ",\"label\":\"TEXT\"", made before confinement
};
Sink g_sink;
UniqueFd g_reopened_log;  // the log reopened with O_NONBLOCK, for the handler only

// The largest line the handler writes: a JSON message with its timestamp is under 200 bytes,
// plus a label of at most 128 characters quoted (each at most 2 bytes: 258): under 512, below
// PIPE_BUF (4096), so a pipe takes it whole or not at all.
constexpr std::size_t kReportLineBytes = 512;

struct LineBuffer {
  std::array<char, kReportLineBytes> bytes{};
  std::size_t size = 0;
  void add(std::string_view text) noexcept {
    for (char c : text) {
      if (size < bytes.size()) bytes[size++] = c;
    }
  }
  void add_number(std::uint64_t value, int min_digits = 1) noexcept {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0 && n < 24);
    while (n < min_digits && n < 24) digits[n++] = '0';
    while (n > 0) add(std::string_view(&digits[--n], 1));
  }
};

// RFC 3339 UTC with milliseconds, as the log writes it, without gmtime_r (which may take a lock):
// days since the epoch to a civil date (the proleptic Gregorian calendar, eras of 400 years).
void add_timestamp(LineBuffer& line) noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t seconds = now.tv_sec;
  std::int64_t days = seconds / 86400;
  std::int64_t rest = seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  days += 719468;  // days from 0000-03-01 to 1970-01-01
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t day_of_era = days - era * 146097;
  const std::int64_t year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t month_index = (5 * day_of_year + 2) / 153;  // 0 is March
  const std::int64_t day = day_of_year - (153 * month_index + 2) / 5 + 1;
  const std::int64_t month = month_index < 10 ? month_index + 3 : month_index - 9;
  const std::int64_t year = year_of_era + era * 400 + (month <= 2 ? 1 : 0);
  line.add_number(static_cast<std::uint64_t>(year), 4);
  line.add("-");
  line.add_number(static_cast<std::uint64_t>(month), 2);
  line.add("-");
  line.add_number(static_cast<std::uint64_t>(day), 2);
  line.add("T");
  line.add_number(static_cast<std::uint64_t>(rest / 3600), 2);
  line.add(":");
  line.add_number(static_cast<std::uint64_t>(rest / 60 % 60), 2);
  line.add(":");
  line.add_number(static_cast<std::uint64_t>(rest % 60), 2);
  line.add(".");
  line.add_number(static_cast<std::uint64_t>(now.tv_nsec / 1000000), 3);
  line.add("Z");
}

// Nothing to do when the write fails: the log is the only place to say so.
void write_line(const LineBuffer& line) noexcept {
  const ssize_t written = ::write(g_sink.fd, line.bytes.data(), line.size);
  (void)written;
}

void report_refused_call(int number) noexcept {
  LineBuffer line;
  constexpr std::string_view kWords = "confinement refused system call ";
  constexpr std::string_view kAfter = " (it failed with EPERM; scmp_sys_resolver names it; logged once)";
  if (g_sink.json) {
    line.add("{\"ts\":\"");
    add_timestamp(line);
    line.add("\",\"event\":\"message\",\"text\":\"");
  } else {
    line.add("boxproxy: ");
  }
  line.add(kWords);
  line.add_number(static_cast<std::uint64_t>(number));
  line.add(kAfter);
  if (g_sink.json) line.add("\"");
  line.add(g_sink.label_suffix);
  if (g_sink.json) line.add("}");
  line.add("\n");
  switch (g_sink.kind) {
    case SinkKind::socket:
      (void)::send(g_sink.fd, line.bytes.data(), line.size, MSG_DONTWAIT | MSG_NOSIGNAL);
      break;
    case SinkKind::poll_first: {
      pollfd room{g_sink.fd, POLLOUT, 0};
      if (::poll(&room, 1, 0) != 1 || (room.revents & POLLOUT) == 0) break;
      write_line(line);
      break;
    }
    case SinkKind::write_fd:
      write_line(line);
      break;
  }
}

// si_code of a SIGSYS raised by a seccomp filter (<asm-generic/siginfo.h>; glibc's headers do
// not name it for C++).
constexpr int kSysSeccomp = 1;

// SIGSYS from the filter: report the call once, and make it fail with EPERM.
void on_refused_call(int, siginfo_t* info, void* context) noexcept {
  // Another process's kill(SIGSYS) is not a refused call: the interrupted code's registers are
  // left alone.
  if (info->si_code != kSysSeccomp) return;
  const int saved_errno = errno;
  const int number = info->si_syscall;
  const int slot = number >= 0 && number < kReportSlots - 1 ? number : kReportSlots - 1;
  if (g_reported[slot] == 0) {
    g_reported[slot] = 1;
    report_refused_call(number);
  }
  auto* registers = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  registers->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  registers->uc_mcontext.regs[0] = static_cast<unsigned long long>(-EPERM);
#endif
  errno = saved_errno;
}

// The trap works where this file knows the register that carries a call's result; elsewhere the
// filter answers EPERM itself, unlogged.
#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kCanTrap = true;
#else
constexpr bool kCanTrap = false;
#endif

void prepare_sink(int log_fd, bool json, const std::string& label) {
  g_sink = Sink{.fd = log_fd, .kind = SinkKind::write_fd, .json = json, .label_suffix = {}};
  if (!label.empty()) {
    // The caller checked the label (printable ASCII, at most 128 characters).
    g_sink.label_suffix = json ? fmt::format(",\"label\":{}", json_quote(label, label.size()))
                               : fmt::format(" label={}", label);
  }
  struct stat st {};
  if (::fstat(log_fd, &st) == -1 || S_ISREG(st.st_mode)) return;
  if (S_ISSOCK(st.st_mode)) {
    g_sink.kind = SinkKind::socket;
    return;
  }
  // A pipe, FIFO or terminal: the log's reader may stall, and a write to the shared descriptor
  // would then block the whole proxy inside a signal handler. One opened anew through /proc has
  // flags of its own.
  const std::string path = fmt::format("/proc/self/fd/{}", log_fd);
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd != -1) {
    g_reopened_log.reset(fd);
    g_sink.fd = fd;
  } else {
    g_sink.kind = SinkKind::poll_first;
  }
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = &on_refused_call;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (::sigaction(SIGSYS, &action, nullptr) == -1) {
    throw ConfineError(fmt::format("cannot install the SIGSYS handler: {}", std::strerror(errno)));
  }
  // A blocked SIGSYS would make the kernel kill the process at the first refused call.
  sigset_t sys;
  sigemptyset(&sys);
  sigaddset(&sys, SIGSYS);
  (void)::sigprocmask(SIG_UNBLOCK, &sys, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Landlock (raw system calls: glibc has no wrappers). Its rights are probed at run time: the
// ABI version says which the kernel knows, and only those are handled (denied unless a rule
// grants them). A kernel without Landlock: a notice, and seccomp alone.

// LANDLOCK_ACCESS_FS_TRUNCATE (ABI 3): Debian 12's headers predate it; the value is ABI.
constexpr std::uint64_t kAccessTruncate = 1ULL << 14;

std::uint64_t handled_rights(int abi) {
  std::uint64_t rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                         LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                         LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) rights |= kAccessTruncate;
  return rights;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void add_rule(int ruleset, const std::string& directory, std::uint64_t rights) {
  const int fd = ::open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd == -1) throw ConfineError(fmt::format("Landlock: {}: {}", directory, std::strerror(errno)));
  UniqueFd owner(fd);
  landlock_path_beneath_attr rule{};
  rule.allowed_access = rights;
  rule.parent_fd = fd;
  if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == -1) {
    throw ConfineError(fmt::format("Landlock: a rule for {}: {}", directory, std::strerror(errno)));
  }
}

// Returns a notice when the kernel has no Landlock; throws when it has and refuses.
std::optional<std::string> restrict_file_system(const ConfineRequest& request) {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi == -1) {
    // ENOSYS (too old a kernel) or EOPNOTSUPP (built without it, or not enabled at boot).
    return fmt::format("confinement: this kernel has no Landlock ({}): system calls are filtered, but files are "
                       "not restricted by path",
                       std::strerror(errno));
  }
  const std::uint64_t handled = handled_rights(static_cast<int>(abi));
  landlock_ruleset_attr attributes{};
  attributes.handled_access_fs = handled;
  const long ruleset = ::syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0);
  if (ruleset == -1) throw ConfineError(fmt::format("Landlock: cannot create a ruleset: {}", std::strerror(errno)));
  UniqueFd ruleset_fd(static_cast<int>(ruleset));
  // Reading (never listing) the files in the directory of each file SIGHUP re-reads: a supervisor
  // or an editor replaces a file by rename(2), and a rule on the old file would refuse the new.
  for (const std::string& file : request.reread_files) {
    add_rule(ruleset_fd.get(), directory_of(file), LANDLOCK_ACCESS_FS_READ_FILE);
  }
  // Removing (only) files in each socket's directory: the socket at exit.
  for (const std::string& socket : request.removed_sockets) {
    add_rule(ruleset_fd.get(), directory_of(socket), LANDLOCK_ACCESS_FS_REMOVE_FILE);
  }
#if defined(BOXPROXY_SANITIZE_BUILD)
  // LeakSanitizer reads /proc/self (maps, task) at exit.
  add_rule(ruleset_fd.get(), "/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
#endif
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd.get(), 0) == -1) {
    throw ConfineError(fmt::format("Landlock: cannot restrict this process: {}", std::strerror(errno)));
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// seccomp (libseccomp).

struct FilterDeleter {
  void operator()(void* context) const noexcept { seccomp_release(context); }
};
using FilterOwner = std::unique_ptr<void, FilterDeleter>;

void check(int result, std::string_view what) {
  if (result != 0) throw ConfineError(fmt::format("seccomp: {}: {}", what, std::strerror(-result)));
}

void allow(void* filter, std::string_view name) {
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
void allow_sockets(void* filter, ConfinedCommand command) {
  constexpr scmp_datum_t kTypeMask = kLow32 & ~static_cast<scmp_datum_t>(SOCK_NONBLOCK | SOCK_CLOEXEC);
  for (const int family : {AF_UNIX, AF_INET, AF_INET6}) {
    for (const int type : {SOCK_STREAM, SOCK_DGRAM}) {
      check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(family)),
                             SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, static_cast<scmp_datum_t>(type))),
            "socket");
    }
  }
  if (command == ConfinedCommand::serve) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(socket), 3,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(AF_NETLINK)),
                           SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, static_cast<scmp_datum_t>(SOCK_RAW)),
                           SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(NETLINK_ROUTE))),
          "socket(AF_NETLINK)");
  }
}

// mmap and mprotect, never with PROT_EXEC: a bug that writes code into memory cannot make it
// executable (the binary is linked with immediate binding and needs no new code after start).
void allow_memory(void* filter) {
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
// O_TMPFILE. Which files: Landlock's rules.
void allow_read_only_opens(void* filter) {
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
void allow_ioctls(void* filter) {
  for (const unsigned long request : {static_cast<unsigned long>(FIONBIO), static_cast<unsigned long>(FIONREAD)}) {
    check(seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(request))),
          "ioctl");
  }
}

void install_filter(const ConfineRequest& request) {
  const std::uint32_t refused = kCanTrap ? SCMP_ACT_TRAP : SCMP_ACT_ERRNO(EPERM);
  FilterOwner filter(seccomp_init(refused));
  if (!filter) throw ConfineError("seccomp: seccomp_init failed");
  // A call through another ABI (int 0x80, x32 numbers) would bypass a list written for the
  // native one: the whole process ends.
  check(seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "bad-arch action");
  // Every call the proxy makes runs the filter first: a binary tree of the call numbers (about 7
  // comparisons for the 50 or so listed) rather than a list walked call by call. Best effort:
  // an older libseccomp builds the list, which is only slower.
  (void)seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
#if defined(BOXPROXY_TEST_HOOKS)
  // Test builds: every refused call is also in the kernel's log (audit type 1326, dmesg), where a
  // run of the whole suite finds the refusals that its tests' own checks would not notice.
  (void)seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_LOG, 1);
#endif
  for (const std::string_view name : kEventLoopCalls) allow(filter.get(), name);
  if (request.command == ConfinedCommand::serve) {
    for (const std::string_view name : kServeCalls) allow(filter.get(), name);
  }
  allow_sockets(filter.get(), request.command);
  allow_memory(filter.get());
  allow_ioctls(filter.get());
#if defined(BOXPROXY_SANITIZE_BUILD)
  for (const std::string_view name : kSanitizerCalls) allow(filter.get(), name);
#else
  if (request.command == ConfinedCommand::serve && !request.reread_files.empty()) allow_read_only_opens(filter.get());
#endif
  check(seccomp_load(filter.get()), "seccomp_load");
}

#if defined(BOXPROXY_TEST_HOOKS)
// Test builds only (never a release: BOXPROXY_TEST_HOOKS is off by default): after confining,
// BOXPROXY_TEST_AFTER_CONFINE=execve|open|packet makes the process try what confinement must
// refuse, and say what became of it.
std::optional<std::string> test_after_confine() {
  const char* what = std::getenv("BOXPROXY_TEST_AFTER_CONFINE");
  if (what == nullptr) return std::nullopt;
  const std::string_view hook = what;
  int result = -1;
  if (hook == "execve") {
    // Twice: the refusal is logged once.
    char program[] = "/bin/true";
    char* argv[] = {program, nullptr};
    char* envp[] = {nullptr};
    (void)::execve(program, argv, envp);
    result = ::execve(program, argv, envp);
  } else if (hook == "open") {
    result = ::open("/etc/hostname", O_RDONLY | O_CLOEXEC);
    if (result != -1) ::close(result);
  } else if (hook == "packet") {
    result = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (result != -1) ::close(result);
  } else {
    return fmt::format("test hook: {}: unknown", hook);
  }
  if (result != -1) return fmt::format("test hook: {}: succeeded", hook);
  return fmt::format("test hook: {}: failed: {}", hook, std::strerror(errno));
}
#endif

}  // namespace

std::vector<std::string> confine_self(const ConfineRequest& request) {
  std::vector<std::string> notices;
  // glibc reads the time zone (/etc/localtime, an open) the first time it converts a time, even
  // gmtime_r for the log's UTC stamps: once now, while files may still be opened.
  ::tzset();
  // No exec after this can gain a privilege (setuid, file capabilities); Landlock and an
  // unprivileged seccomp filter need it.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) == -1) {
    throw ConfineError(fmt::format("PR_SET_NO_NEW_PRIVS: {}", std::strerror(errno)));
  }
  if (auto notice = restrict_file_system(request)) notices.push_back(std::move(*notice));
  prepare_sink(request.log_fd, request.json_log, request.label);
  install_handler();
  install_filter(request);
  // libseccomp builds the filter on the heap (about 80 KiB for ours) and frees it once it is
  // loaded; give those pages back, or every session would keep them (measured: 224 KiB of
  // anonymous memory after start instead of 148 without confinement; issue 12 item 4).
  ::malloc_trim(0);
#if defined(BOXPROXY_TEST_HOOKS)
  if (auto result = test_after_confine()) notices.push_back(std::move(*result));
#endif
  return notices;
}

ConfineRequest serve_confinement(const ServeOptions& options, int log_fd) {
  ConfineRequest request;
  request.command = ConfinedCommand::serve;
  request.log_fd = log_fd;
  request.json_log = options.log_format == LogFormat::json;
  request.label = options.label;
  if (options.config_path) request.reread_files.push_back(*options.config_path);
  if (options.allow_file) request.reread_files.push_back(*options.allow_file);
  request.removed_sockets.push_back(options.socket_path);
  if (options.control_socket) request.removed_sockets.push_back(*options.control_socket);  // SPEC §15
  return request;
}

}  // namespace boxproxy
