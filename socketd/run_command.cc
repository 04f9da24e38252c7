// `boxproxy run`: the one-line way to run a command in a box whose only way out is boxproxy.
//
// The processes, and who ends whom:
//
//   run (the caller's network namespace)
//    ├─ boxproxy serve --socket DIR/egress.sock   (unless --socket names a running proxy)
//    └─ box: unshares a network namespace (and a user namespace when not root), brings lo up
//        ├─ boxproxy bridge --socket ...           (127.0.0.1:3128, [::1]:3128)
//        └─ COMMAND, with the proxy variables set
//
// The box waits for the command, then ends the bridge; run waits for the box, then ends the
// proxy it started. serve and bridge run in process groups of their own, so a Ctrl-C at the
// terminal reaches the command (which shares run's group) and not the box's way out while the
// command may still be using it. Each helper has --die-with-parent, and the box gets SIGTERM if
// run dies, so nothing outlives a run that is killed.
#include "socketd/run_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proxy/event_owners.h"

namespace boxproxy {
namespace {

// Exit codes of run's own failures, as env(1), chroot(1) and container runtimes use them, so that
// they stand apart from the command's own statuses as far as any code can.
constexpr int kUsage = 2;
constexpr int kSetupFailed = 125;
constexpr int kCannotExecute = 126;
constexpr int kNotFound = 127;

// How long serve and the bridge may take to say they listen, and to exit after SIGTERM (both
// exit within a second by contract; the rest is slack for a loaded machine).
constexpr double kStartSeconds = 10;
constexpr double kStopSeconds = 3;

// Where the bridge listens inside the box, and what the command is told. The box's namespace is
// new, so the port is always free.
constexpr const char* kHttpProxy = "http://127.0.0.1:3128";
// The bridge hands every byte to the proxy, which tells SOCKS5 from HTTP by the first byte: the
// same port serves both. socks5h: names are resolved by the proxy (the box has no resolver).
constexpr const char* kAllProxy = "socks5h://127.0.0.1:3128";
constexpr const char* kNoProxy = "localhost,127.0.0.1,::1";

// One listening line is far below this; a helper that writes more is not ours.
constexpr std::size_t kMaxLineBytes = 64 * 1024;

constexpr const char* kHelp =
    "usage: boxproxy run [SERVE OPTION]... -- COMMAND [ARG]...\n"
    "       boxproxy run --socket PATH -- COMMAND [ARG]...\n"
    "\n"
    "Runs COMMAND in a new network namespace that holds only its own loopback (with a user\n"
    "namespace when not root), whose only way out is boxproxy: it starts `boxproxy serve` with\n"
    "the SERVE OPTIONs on a socket in a fresh private directory (or, with --socket, uses a\n"
    "running proxy's socket), starts `boxproxy bridge` on 127.0.0.1:3128 (and [::1]:3128) inside,\n"
    "and sets for COMMAND:\n"
    "  HTTP_PROXY, HTTPS_PROXY  http://127.0.0.1:3128\n"
    "  ALL_PROXY                socks5h://127.0.0.1:3128 (the same port: the proxy sniffs)\n"
    "  NO_PROXY                 localhost,127.0.0.1,::1\n"
    "  (and their lower-case forms), and BOXPROXY_SOCKET, the proxy's socket path.\n"
    "The proxy's decision lines go to standard error unless --log-file says otherwise.\n"
    "\n"
    "Exit status: COMMAND's, or 128+N when signal N ended it; 2 a usage error; 125 the box could\n"
    "not be set up; 126 COMMAND cannot be executed; 127 COMMAND was not found.\n"
    "SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 are passed on to COMMAND; SIGINT and SIGQUIT are left to\n"
    "the terminal, which sends them to COMMAND itself.\n";

struct UsageError {
  std::string message;
};
struct HelpRequested {};

struct RunOptions {
  std::optional<std::string> socket_path;  // --socket: a running proxy's socket
  std::vector<std::string> serve_args;     // passed to `boxproxy serve` as given
  std::vector<std::string> command;
};

RunOptions parse_run_options(int argc, char** argv) {
  RunOptions options;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h") throw HelpRequested{};
    if (arg == "--socket" || arg.starts_with("--socket=")) {
      if (options.socket_path) throw UsageError{"boxproxy run: --socket: given twice"};
      if (arg == "--socket") {
        if (i + 1 >= argc) throw UsageError{"boxproxy run: --socket: needs a value"};
        options.socket_path = argv[++i];
      } else {
        options.socket_path = std::string(arg.substr(9));
      }
      if (options.socket_path->empty()) throw UsageError{"boxproxy run: --socket: \"\": a path is needed"};
      continue;
    }
    options.serve_args.emplace_back(arg);
    // Every serve option but the flags takes a value: keep it with its option, so a value that
    // happens to read "--socket" or "--" stays serve's. serve itself judges both.
    const bool is_flag = arg == "--die-with-parent";
    if (arg.starts_with("--") && arg.find('=') == std::string_view::npos && !is_flag && i + 1 < argc) {
      options.serve_args.emplace_back(argv[++i]);
    }
  }
  if (i >= argc) throw UsageError{"boxproxy run: -- COMMAND is needed: boxproxy run [SERVE OPTION]... -- COMMAND [ARG]..."};
  for (++i; i < argc; ++i) options.command.emplace_back(argv[i]);
  if (options.command.empty()) throw UsageError{"boxproxy run: a COMMAND is needed after --"};
  if (options.socket_path && !options.serve_args.empty()) {
    throw UsageError{fmt::format("boxproxy run: {}: serve options are for a proxy run starts; with --socket the "
                                 "running proxy keeps its own",
                                 options.serve_args.front())};
  }
  return options;
}

// --- signals --------------------------------------------------------------------------------

volatile sig_atomic_t g_forward_to = 0;  // the child that receives the signals we pass on

void forward_signal(int signal) {
  const pid_t child = g_forward_to;
  if (child > 0) ::kill(child, signal);
}

// While a supervisor waits for its child: SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 go on to the
// child; SIGINT and SIGQUIT are ignored, as a shell ignores them for its foreground job, since
// the terminal sends them to the command itself.
void supervise(pid_t child) {
  g_forward_to = child;
  struct sigaction forward {};
  forward.sa_handler = &forward_signal;
  sigemptyset(&forward.sa_mask);
  for (int signal : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) ::sigaction(signal, &forward, nullptr);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGQUIT, SIG_IGN);
}

// In a child before exec: the dispositions a plain process starts with.
void default_signals() noexcept {
  for (int signal : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT, SIGPIPE}) ::signal(signal, SIG_DFL);
}

// --- processes ------------------------------------------------------------------------------

int exit_status(int status) noexcept {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kSetupFailed;
}

int wait_for(pid_t pid) noexcept {
  int status = 0;
  while (::waitpid(pid, &status, 0) == -1) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// SIGTERM, then at most kStopSeconds before SIGKILL. Returns the wait status.
int stop_child(pid_t pid) noexcept {
  ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStopSeconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done == -1 && errno != EINTR) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "boxproxy run: process %d did not exit within %.0f s of SIGTERM; killed\n",
               static_cast<int>(pid), kStopSeconds);
  ::kill(pid, SIGKILL);
  return wait_for(pid);
}

// Starts this binary again (/proc/self/exe) with `args`, its standard output on `stdout_fd`, its
// standard input /dev/null, in a process group of its own. Returns the pid, or -1.
pid_t spawn_self(const std::vector<std::string>& args, int stdout_fd) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  default_signals();
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null != -1) ::dup2(null, STDIN_FILENO);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "boxproxy run: cannot start boxproxy %s: %s\n", args[1].c_str(), std::strerror(errno));
  std::fflush(stderr);
  ::_exit(kSetupFailed);
}

// One line from `fd`, within `seconds`; nullopt on EOF, an error or the time running out.
std::optional<std::string> read_line(int fd, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string data;
  while (data.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || data.size() > kMaxLineBytes) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready == -1 && errno != EINTR) return std::nullopt;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == -1 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  return data.substr(0, data.find('\n'));
}

// Starts a helper (serve or bridge) and waits for its listening line. On success the pid; on
// failure -1 with the helper reaped and *status set to its wait status (-1: it was stopped for
// being too slow).
pid_t start_helper(const std::vector<std::string>& args, int* status) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) == -1) {
    *status = -1;
    return -1;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const pid_t pid = spawn_self(args, write_end.get());
  write_end.reset();  // EOF on read_end once the helper is gone
  if (pid == -1) {
    *status = -1;
    return -1;
  }
  const std::optional<std::string> line = read_line(read_end.get(), kStartSeconds);
  if (line && line->starts_with("{\"event\":\"listening\"")) return pid;
  // No line: it failed (its own message is on standard error, and it is exiting: its end of the
  // pipe is closed), or it took too long.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStopSeconds);
  do {
    int reaped = 0;
    if (::waitpid(pid, &reaped, WNOHANG) == pid) {
      *status = reaped;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  std::fprintf(stderr, "boxproxy run: boxproxy %s did not listen within %.0f s\n", args[1].c_str(), kStartSeconds);
  stop_child(pid);
  *status = -1;
  return -1;
}

// --- the box --------------------------------------------------------------------------------

bool write_file(const char* path, std::string_view text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd == -1) return false;
  const ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  return n == static_cast<ssize_t>(text.size());
}

// A new network namespace for this process, holding only a loopback that is down. When not root
// (or root without CAP_SYS_ADMIN, as in a container), a user namespace too, mapping the caller
// to root inside it, which is what may make a network namespace there. An error message when
// neither can be made.
std::optional<std::string> enter_network_namespace() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::geteuid() == 0) {
    if (::unshare(CLONE_NEWNET) == 0) return std::nullopt;
    if (errno != EPERM) {
      return fmt::format("boxproxy run: cannot make a network namespace: unshare(CLONE_NEWNET): {}", std::strerror(errno));
    }
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1) {
    const int error = errno;
    std::string message = fmt::format(
        "boxproxy run: cannot make a network namespace: unshare(CLONE_NEWUSER|CLONE_NEWNET): {}", std::strerror(error));
    if (error == EPERM || error == EINVAL || error == ENOSPC || error == EUSERS || error == ENOSYS) {
      message +=
          "\n  This system does not let this user make namespaces. Either run boxproxy run as root, or allow"
          "\n  unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 (Debian and older"
          "\n  Ubuntu kernels), sysctl -w user.max_user_namespaces=15000 (when it is 0), and on Ubuntu 23.10 or"
          "\n  later sysctl -w kernel.apparmor_restrict_unprivileged_userns=0. In a container, the runtime must"
          "\n  allow unshare (its seccomp profile), or run boxproxy serve outside and bind-mount the socket in"
          "\n  (man boxproxy, EXAMPLES).";
    }
    return message;
  }
  // Map the caller to root in the new user namespace (setgroups must be denied before an
  // unprivileged process may write gid_map).
  (void)write_file("/proc/self/setgroups", "deny");
  if (!write_file("/proc/self/uid_map", fmt::format("0 {} 1\n", uid)) ||
      !write_file("/proc/self/gid_map", fmt::format("0 {} 1\n", gid))) {
    return fmt::format("boxproxy run: cannot map user {} to root in the new user namespace: {}", uid, std::strerror(errno));
  }
  return std::nullopt;
}

// `ip link set lo up`, without needing ip(8): SIOCSIFFLAGS on any socket of the namespace.
std::optional<std::string> bring_loopback_up() {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fmt::format("boxproxy run: cannot bring lo up: socket: {}", std::strerror(errno));
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFFLAGS, &request) == -1) {
    return fmt::format("boxproxy run: cannot bring lo up: SIOCGIFFLAGS: {}", std::strerror(errno));
  }
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(fd.get(), SIOCSIFFLAGS, &request) == -1) {
    return fmt::format("boxproxy run: cannot bring lo up: SIOCSIFFLAGS: {}", std::strerror(errno));
  }
  return std::nullopt;
}

[[noreturn]] void exec_command(const RunOptions& options, const std::string& socket_path) {
  default_signals();
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) ::setenv(name, kHttpProxy, 1);
  for (const char* name : {"ALL_PROXY", "all_proxy"}) ::setenv(name, kAllProxy, 1);
  for (const char* name : {"NO_PROXY", "no_proxy"}) ::setenv(name, kNoProxy, 1);
  ::setenv("BOXPROXY_SOCKET", socket_path.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int error = errno;
  std::fprintf(stderr, "boxproxy run: %s: %s\n", argv[0], std::strerror(error));
  std::fflush(stderr);
  ::_exit(error == ENOENT ? kNotFound : kCannotExecute);
}

// The box: runs in a child of run. Returns its exit status (the command's, or a setup failure).
int box(const RunOptions& options, const std::string& socket_path, pid_t run_pid) {
  // If run dies, the box ends the command (SIGTERM passed on) and the bridge with it.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0UL, 0UL, 0UL);
  if (::getppid() != run_pid) return kSetupFailed;
  if (auto error = enter_network_namespace()) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return kSetupFailed;
  }
  if (auto error = bring_loopback_up()) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return kSetupFailed;
  }
  int status = 0;
  const pid_t bridge = start_helper({"boxproxy", "bridge", "--socket", socket_path, "--die-with-parent"}, &status);
  if (bridge == -1) {
    std::fprintf(stderr, "boxproxy run: the bridge did not start\n");
    return kSetupFailed;
  }
  std::fflush(nullptr);
  const pid_t command = ::fork();
  if (command == -1) {
    std::fprintf(stderr, "boxproxy run: fork: %s\n", std::strerror(errno));
    stop_child(bridge);
    return kSetupFailed;
  }
  if (command == 0) exec_command(options, socket_path);
  supervise(command);
  status = wait_for(command);
  g_forward_to = 0;
  stop_child(bridge);
  return status == -1 ? kSetupFailed : exit_status(status);
}

// A private directory for the socket of a proxy run starts: the session's runtime directory
// when there is one, else TMPDIR or /tmp. mkdtemp makes it 0700.
std::optional<std::string> make_private_dir() {
  std::string base = "/tmp";
  for (const char* name : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    struct stat st {};
    if (value != nullptr && *value == '/' && ::stat(value, &st) == 0 && S_ISDIR(st.st_mode)) {
      base = value;
      break;
    }
  }
  std::string path = base + "/boxproxy-run.XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) return std::nullopt;
  return path;
}

int run(const RunOptions& options) {
  std::string socket_path;
  std::string dir;
  pid_t serve = -1;
  if (options.socket_path) {
    socket_path = *options.socket_path;
    struct stat st {};
    if (::stat(socket_path.c_str(), &st) == -1) {
      std::fprintf(stderr, "boxproxy run: --socket %s: %s\n", socket_path.c_str(), std::strerror(errno));
      return kSetupFailed;
    }
    if (!S_ISSOCK(st.st_mode)) {
      std::fprintf(stderr, "boxproxy run: --socket %s: not a socket\n", socket_path.c_str());
      return kSetupFailed;
    }
  } else {
    auto made = make_private_dir();
    if (!made) {
      std::fprintf(stderr, "boxproxy run: cannot make a private directory for the socket: %s\n", std::strerror(errno));
      return kSetupFailed;
    }
    dir = *made;
    socket_path = dir + "/egress.sock";
    std::vector<std::string> args = {"boxproxy", "serve", "--socket", socket_path, "--die-with-parent"};
    args.insert(args.end(), options.serve_args.begin(), options.serve_args.end());
    int status = 0;
    serve = start_helper(args, &status);
    if (serve == -1) {
      ::unlink(socket_path.c_str());
      ::rmdir(dir.c_str());
      // serve said why on standard error; a usage error in the serve options is run's too.
      if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == kUsage) return kUsage;
      std::fprintf(stderr, "boxproxy run: the proxy did not start\n");
      return kSetupFailed;
    }
  }

  const pid_t run_pid = ::getpid();
  std::fflush(nullptr);
  const pid_t box_pid = ::fork();
  if (box_pid == 0) {
    const int code = box(options, socket_path, run_pid);
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = -1;
  if (box_pid == -1) {
    std::fprintf(stderr, "boxproxy run: fork: %s\n", std::strerror(errno));
  } else {
    supervise(box_pid);
    status = wait_for(box_pid);
    g_forward_to = 0;
  }
  if (serve != -1) {
    const int serve_status = stop_child(serve);
    if (serve_status != -1 && !(WIFEXITED(serve_status) && WEXITSTATUS(serve_status) == 0)) {
      std::fprintf(stderr, "boxproxy run: the proxy ended with status %d\n", exit_status(serve_status));
    }
    ::unlink(socket_path.c_str());  // serve removed it already unless it was killed
    ::rmdir(dir.c_str());
  }
  return status == -1 ? kSetupFailed : exit_status(status);
}

}  // namespace

int run_run_command(int argc, char** argv) {
  RunOptions options;
  try {
    options = parse_run_options(argc, argv);
  } catch (const HelpRequested&) {
    std::fputs(kHelp, stdout);
    return 0;
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s\n", error.message.c_str());
    return kUsage;
  }
  return run(options);
}

}  // namespace boxproxy
