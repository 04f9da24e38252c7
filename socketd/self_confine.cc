// SPDX-License-Identifier: Apache-2.0
// serve, bridge and serve's request inspector confine themselves once set up (SPEC §17, §18):
// NO_NEW_PRIVS, Landlock, seccomp.
#include "socketd/self_confine.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "proxy/decision_log.h"  // json_quote: the label as the log quotes it
#include "proxy/unique_fd.h"
#include "proxy/utc_time.h"
#include "socketd/confine_filter_program.h"

#if defined(BOXPROXY_TEST_HOOKS)
#include <arpa/inet.h>
#include <linux/if_ether.h>
#endif

namespace boxproxy {
namespace {

// ---------------------------------------------------------------------------------------------
// A call outside the list (socketd/confine_filter.cc): SECCOMP_RET_TRAP raises SIGSYS in the
// calling thread; the handler writes one line per system-call number (the first time only, so a
// loop of refused calls cannot flood the log) and makes the call return -EPERM, which the caller
// sees as any failed call (every call is checked against -1). Why not kill: a benign call a
// library makes on a rare path (one the trace did not meet) should fail one operation and say so
// in the log, not end every session of the box without a word. Why not ERRNO alone: a refusal must
// never be silent, or the list could never be corrected. What is refused stays refused: nothing
// outside the list is ever allowed, and a process that keeps running does so with every call it
// makes checked.

// x86_64's numbers stop below 512, aarch64's below 500: every number has its own slot, and a
// number beyond (none today) shares the last. A lock-free flag of one byte each (safe in a
// signal handler, and once only even when two threads are refused at once): 1 KiB of .bss
// where an int each took 4 KiB, which pushed the statics after it onto a page of their own in
// every session (bench/README.md, bench/density).
constexpr int kReportSlots = 1024;
std::atomic_flag g_reported[kReportSlots];

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
  std::string text_prefix;   // "boxproxy: " (or the inspector's name): a text line's start
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
// utc_time is async-signal-safe.
void add_timestamp(LineBuffer& line) noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const UtcTime t = utc_time(now.tv_sec);
  line.add_number(static_cast<std::uint64_t>(t.year), 4);
  line.add("-");
  line.add_number(t.month, 2);
  line.add("-");
  line.add_number(t.day, 2);
  line.add("T");
  line.add_number(t.hour, 2);
  line.add(":");
  line.add_number(t.minute, 2);
  line.add(":");
  line.add_number(t.second, 2);
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
    line.add(g_sink.text_prefix);
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
  if (!g_reported[slot].test_and_set(std::memory_order_relaxed)) report_refused_call(number);
  auto* registers = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  registers->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  registers->uc_mcontext.regs[0] = static_cast<unsigned long long>(-EPERM);
#endif
  errno = saved_errno;
}

void prepare_sink(int log_fd, bool json, const std::string& label, const std::string& program) {
  g_sink = Sink{.fd = log_fd, .kind = SinkKind::write_fd, .json = json, .label_suffix = {},
                .text_prefix = program + ": "};
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

// A file SIGHUP re-reads that is a symbolic link (into /nix/store, a dotfiles checkout, a
// ConfigMap's ..data): Landlock judges the file the open ends at, not the link, so the link's
// directory alone would refuse every re-read. Reading the files in the directory of the target
// as resolved now is allowed too. The directory, not the file, for the reason above: the usual
// updates of a linked file (an editor's rename over the target; the link pointed at a new file
// beside the old one, as a store does) make a new file there. A link pointed later into a third
// directory is refused: the re-read fails and says so, the list in force stays, and a restart
// follows it. What this widens: reading (never listing, writing or running) that directory's
// files, for a process that already reads the operator's configuration; a box's files are not
// the operator's, so the box cannot aim it. Not a link, or one that no longer resolves: nothing.
void add_link_target_rule(int ruleset, const std::string& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) == -1 || !S_ISLNK(st.st_mode)) return;
  char* resolved = ::realpath(file.c_str(), nullptr);
  if (resolved == nullptr) return;
  const std::string target(resolved);
  std::free(resolved);
  const std::string directory = directory_of(target);
  if (directory != directory_of(file)) add_rule(ruleset, directory, LANDLOCK_ACCESS_FS_READ_FILE);
}

// Returns a notice when the kernel has no Landlock; throws when it has and refuses. A request with
// no file to re-read and no socket to remove (the inspector's) adds no rule: every right is
// handled and none granted, so no path can be opened, made, removed or run at all.
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
    add_link_target_rule(ruleset_fd.get(), file);
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
// seccomp: the program socketd/confine_filter.cc's rules make, compiled when boxproxy was built
// (socketd/confine_filter_program.h), loaded as it is. No libseccomp here: nothing is built or
// allocated.

ConfineFilter filter_for(const ConfineRequest& request) noexcept {
  switch (request.command) {
    case ConfinedCommand::bridge:
      return ConfineFilter::bridge;
    case ConfinedCommand::inspector:
      return ConfineFilter::inspector;
    case ConfinedCommand::serve:
      break;
  }
  return request.reread_files.empty() ? ConfineFilter::serve : ConfineFilter::serve_rereading;
}

void install_filter(const ConfineRequest& request) {
#if defined(BOXPROXY_TEST_HOOKS)
  // Test builds: every refused call is also in the kernel's log (audit type 1326, dmesg), where a
  // run of the whole suite finds the refusals that its tests' own checks would not notice.
  constexpr bool kLogRefusals = true;
#else
  constexpr bool kLogRefusals = false;
#endif
  const int error = load_confine_program(filter_for(request), kLogRefusals);
  if (error != 0) throw ConfineError(fmt::format("seccomp: cannot load the filter: {}", std::strerror(error)));
}

#if defined(BOXPROXY_TEST_HOOKS)
// Test builds only (never a release: BOXPROXY_TEST_HOOKS is off by default): after confining,
// BOXPROXY_TEST_AFTER_CONFINE=execve|open|packet|inet makes the process try what confinement must
// refuse, and say what became of it (inet, a TCP socket, only the inspector's refuses: serve dials).
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
  } else if (hook == "inet") {
    result = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  // The log's UTC stamps are computed (proxy/utc_time.h), never through gmtime_r, which would read
  // /etc/localtime the first time it ran: no file outside Landlock's rules is needed after this.
  // No exec after this can gain a privilege (setuid, file capabilities); Landlock and an
  // unprivileged seccomp filter need it.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) == -1) {
    throw ConfineError(fmt::format("PR_SET_NO_NEW_PRIVS: {}", std::strerror(errno)));
  }
  if (auto notice = restrict_file_system(request)) notices.push_back(std::move(*notice));
  prepare_sink(request.log_fd, request.json_log, request.label, request.program);
  install_handler();
  install_filter(request);
#if defined(BOXPROXY_TEST_HOOKS)
  if (auto result = test_after_confine()) notices.push_back(std::move(*result));
#endif
  return notices;
}

}  // namespace boxproxy
