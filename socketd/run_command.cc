// `boxproxy run`: the one-line way to run a command in a box whose only way out is boxproxy.
//
// The processes, their namespaces (socketd/box_namespaces.h), and who ends whom:
//
//   run (the caller's namespaces)
//    ├─ boxproxy serve --socket DIR/egress.sock   (unless --socket names a running proxy)
//    └─ box: a user namespace of its own (also for root) and a network namespace, lo up
//        ├─ boxproxy bridge --socket ...           (127.0.0.1:3128, [::1]:3128; the host's PID
//        │                                          namespace, so COMMAND cannot see it)
//        └─ pid 1 of a new PID namespace: a fresh /proc, then an inner user namespace that locks
//           the mounts, PR_SET_NO_NEW_PRIVS, the seccomp filter (socketd/box_seccomp.h)
//            └─ COMMAND, with the proxy variables set
//
// pid 1 waits for the command (reaping orphans meanwhile) and exits with its status, which
// ends every other process of the PID namespace; the box then ends the bridge; run waits for
// the box, then ends the proxy it started. serve and bridge run in process groups of their own,
// so a Ctrl-C at the terminal reaches the command (which shares run's group) and not the box's
// way out while the command may still be using it. Each helper has --die-with-parent, the box
// gets SIGTERM if run dies and pid 1 SIGKILL if the box dies, so nothing outlives a killed run.

#include "socketd/run_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

#include "proxy/defaults.h"
#include "proxy/event_owners.h"
#include "socketd/box_capture.h"
#include "socketd/box_namespaces.h"
#include "socketd/box_seccomp.h"
#include "socketd/option_table.h"
#include "socketd/serve_options.h"

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
// new, so the port is always free. The bridge hands every byte to the proxy, which tells SOCKS5
// from HTTP by the first byte: the same port serves both.
constexpr const char* kProxyHostPort = "127.0.0.1:3128";
constexpr const char* kNoProxy = "localhost,127.0.0.1,::1";
// With --transparent: where nftables sends the box's captured connections (the bridge listens
// there on 127.0.0.1 and [::1]).
constexpr std::uint16_t kTransparentPort = 3129;
// With --transparent: the box's /etc/resolv.conf, and where DNS sent to any other server is
// redirected (the bridge answers DNS on the box's loopback).
constexpr std::uint16_t kBoxDnsPort = 53;
constexpr const char* kBoxResolvConf = "# boxproxy run --transparent: the bridge answers\nnameserver 127.0.0.1\n";
// The user name in the proxy variables when the proxy wants a token (any name will do, SPEC §11).
constexpr const char* kTokenUser = "box";

// One listening line is far below this; a helper that writes more is not ours.
constexpr std::size_t kMaxLineBytes = 64 * 1024;

// Variables that speak to run's service manager, not to anything run starts: with them the
// inner proxy would send READY=1 for run (which is not ready until COMMAND is), and COMMAND could
// send the manager anything (MAINPID=, STOPPING=1) or claim run's socket-activated descriptors.
constexpr const char* kServiceManagerVariables[] = {"NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"};

// The signals run, the box and pid 1 pass on to the command.
constexpr int kForwardedSignals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

constexpr std::string_view kCommand = "run";

// run's own options, then serve's (not listed in run's help: serve --help lists them). run
// knows from serve's rows which of serve's options take a value, so a value that reads "--" or
// "--socket" stays with its option and is never taken for run's.
const OptionTable& run_table() {
  static const OptionTable table = [] {
    std::vector<OptionSpec> rows = {
        OptionSpec{.name = "socket", .kind = OptionKind::value, .value_name = "PATH",
                   .help = "use the running proxy at PATH instead of starting one"},
        OptionSpec{.name = "auth-token-file", .kind = OptionKind::value, .value_name = "FILE",
                   .help = "with --socket: the token that proxy wants, for the variables (without --socket it "
                           "is a serve option, read by both)"},
        OptionSpec{.name = "transparent", .kind = OptionKind::flag,
                   .help = "also capture every TCP connection COMMAND opens to any address but the box's loopback "
                           "(nftables in the box), for programs that ignore the proxy variables"},
        OptionSpec{.name = "allow-unix-sockets", .kind = OptionKind::flag,
                   .help = "let COMMAND make Unix sockets: by default socket(AF_UNIX, ...) and datagram "
                           "socketpairs fail with EPERM in the box, so that the host's pathname sockets (another "
                           "session's proxy, an ssh agent, journald) are out of reach"},
        OptionSpec{.name = "allow-nested-namespaces", .kind = OptionKind::flag,
                   .help = "let COMMAND make namespaces of its own (unshare, clone, setns; for a box that runs "
                           "containers): by default they fail with EPERM in the box, since a network namespace of "
                           "its own gives it the kernel's network configuration to attack"},
    };
    for (const OptionSpec& spec : serve_option_table().options()) {
      const bool own = std::any_of(rows.begin(), rows.end(), [&](const OptionSpec& row) { return row.name == spec.name; });
      if (own) continue;
      OptionSpec serve_row = spec;
      serve_row.in_help = false;
      rows.push_back(std::move(serve_row));
    }
    return OptionTable(std::string(kCommand), std::move(rows));
  }();
  return table;
}

std::string help_text() {
  return fmt::format(
      "usage: boxproxy run [SERVE OPTION]... [--allow-unix-sockets] [--allow-nested-namespaces] -- COMMAND\n"
      "                    [ARG]...\n"
      "       boxproxy run --socket PATH [--auth-token-file FILE] [--allow-unix-sockets]\n"
      "                    [--allow-nested-namespaces] -- COMMAND [ARG]...\n"
      "\n"
      "Runs COMMAND in a box whose only way out is boxproxy: its own user namespace (root inside,\n"
      "the caller outside, also when run is root), network namespace (only its own loopback), mount\n"
      "namespace and PID namespace (a /proc of its own processes), with no new privileges and no\n"
      "capability outside. run starts `boxproxy serve` with the SERVE OPTIONs on a socket in a fresh\n"
      "private directory (or, with --socket, uses a running proxy's socket), starts `boxproxy bridge`\n"
      "on 127.0.0.1:{1} (and [::1]:{1}) inside, and sets for COMMAND:\n"
      "  HTTP_PROXY, HTTPS_PROXY  http://127.0.0.1:{1} (http://box:TOKEN@... when the proxy wants\n"
      "                           a token)\n"
      "  ALL_PROXY                socks5h://127.0.0.1:{1} (the same port: the proxy sniffs)\n"
      "  NO_PROXY                 localhost,127.0.0.1,::1\n"
      "  (and their lower-case forms), and BOXPROXY_SOCKET, the proxy's socket path. NOTIFY_SOCKET,\n"
      "LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES are removed for the proxy and for COMMAND.\n"
      "The proxy's decision lines go to standard error unless --log-file says otherwise.\n"
      "\n"
      "Options of run itself (the SERVE OPTIONs are in boxproxy serve --help):\n"
      "{0}"
      "\n"
      "Exit status: COMMAND's, or 128+N when signal N ended it; 2 a usage error; 125 the box could\n"
      "not be set up (say, no user namespaces here: run never makes a weaker box); 126 COMMAND\n"
      "cannot be executed; 127 COMMAND was not found.\n"
      "SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 are passed on to COMMAND; SIGINT and SIGQUIT are left to\n"
      "the terminal, which sends them to COMMAND itself.\n",
      run_table().options_help(), defaults::kBridgePort);
}

struct RunOptions {
  std::optional<std::string> socket_path;      // --socket: a running proxy's socket
  std::optional<std::string> auth_token_file;  // --auth-token-file with --socket
  BoxLifts box_lifts;                          // --allow-unix-sockets, --allow-nested-namespaces
  bool transparent = false;                    // --transparent (SPEC §16)
  std::vector<std::string> serve_args;         // passed to `boxproxy serve` as given
  std::vector<std::string> command;
};

// serve's options as `boxproxy serve` arguments, each value as --name=VALUE so that nothing a
// value reads can change how serve splits them.
std::vector<std::string> serve_arguments(const RawOptions& serve_options) {
  std::vector<std::string> args;
  for (const auto& [name, raw] : serve_options) {
    if (raw.flag) {
      args.push_back("--" + name);
      continue;
    }
    for (const std::string& value : raw.values) args.push_back(fmt::format("--{}={}", name, value));
  }
  return args;
}

RunOptions parse_run_options(int argc, char** argv) {
  ParsedArguments parsed = parse_arguments(run_table(), argc, argv, Operands::after_dashes);
  if (!parsed.dashes) {
    throw usage_error(kCommand, "-- COMMAND is needed: boxproxy run [SERVE OPTION]... -- COMMAND [ARG]...");
  }
  if (parsed.operands.empty()) throw usage_error(kCommand, "a COMMAND is needed after --");
  RunOptions options;
  options.command = std::move(parsed.operands);
  RawOptions& given = parsed.options;
  if (const auto socket = given.find("socket"); socket != given.end()) {
    const std::string& path = socket->second.values.front();
    if (path.empty()) fail_value(kCommand, "--socket", path, "is not a path (it is empty)");
    options.socket_path = path;
    given.erase(socket);
  }
  if (given.erase("allow-unix-sockets") != 0) options.box_lifts.unix_sockets = true;
  if (given.erase("allow-nested-namespaces") != 0) options.box_lifts.nested_namespaces = true;
  if (given.erase("transparent") != 0) options.transparent = true;
  if (options.socket_path) {
    // With --socket the only option besides run's own is --auth-token-file (run reads it to put
    // the token in the variables); every other serve option belongs to a proxy run starts.
    if (const auto token = given.find("auth-token-file"); token != given.end()) {
      options.auth_token_file = token->second.values.front();
      given.erase(token);
    }
    if (!given.empty()) {
      throw usage_error(kCommand, fmt::format("--{}: serve options are for a proxy run starts; with --socket the "
                                              "running proxy keeps its own",
                                              given.begin()->first));
    }
  }
  options.serve_args = serve_arguments(given);
  return options;
}

// What run must know of the proxy it starts, read as serve reads it.
struct ServeFacts {
  std::optional<std::string> token;  // --auth-token-file, on the command line or in --config
  std::optional<int> ready_fd;       // --ready-fd: serve's, and nobody else's
  std::optional<int> control_fd;     // --control-fd: serve's and the supervisor's (SPEC §14, §15)
  // The proxy's own files, out of COMMAND's reach in the box (SPEC §14): --log-file, --audit,
  // --config, --allow-file, --auth-token-file, --control-socket, wherever they were given.
  std::vector<std::string> files;
};

// The serve options parsed here as serve will parse them. Throws UsageError as serve would, so a
// bad option is reported before anything starts.
ServeFacts facts_of_serve_args(const std::vector<std::string>& serve_args, const std::string& socket) {
  std::vector<std::string> args = {"--socket", socket};
  args.insert(args.end(), serve_args.begin(), serve_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  ServeOptions parsed = parse_serve_options(static_cast<int>(args.size()), argv.data());
  std::vector<std::string> files;
  for (const std::optional<std::string>* file : {&parsed.log_file, &parsed.audit_path, &parsed.config_path,
                                                 &parsed.allow_file, &parsed.auth_token_file, &parsed.control_socket}) {
    if (*file) files.push_back(**file);
  }
  return {.token = std::move(parsed.auth_token), .ready_fd = parsed.ready_fd, .control_fd = parsed.control_fd,
          .files = std::move(files)};
}

// The token of `run --socket PATH --auth-token-file FILE`, read by serve's rules. Throws
// UsageError (the message is run's).
std::string token_of_file(const std::string& path) {
  try {
    return read_auth_token_file("--auth-token-file", path);
  } catch (const UsageError& error) {
    throw error.for_command(kCommand);
  }
}

// The token as URL userinfo: every byte but RFC 3986's unreserved ones percent-encoded, so that
// an '@', ':' or '/' in a token cannot change where the URL points.
std::string userinfo_encoded(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') || (byte >= '0' && byte <= '9') ||
                            byte == '-' || byte == '.' || byte == '_' || byte == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

// "SCHEME://127.0.0.1:3128", with box:TOKEN@ when the proxy wants a token.
std::string proxy_url(std::string_view scheme, const std::optional<std::string>& token) {
  if (!token) return fmt::format("{}://{}", scheme, kProxyHostPort);
  return fmt::format("{}://{}:{}@{}", scheme, kTokenUser, userinfo_encoded(*token), kProxyHostPort);
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
  for (int signal : kForwardedSignals) ::sigaction(signal, &forward, nullptr);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGQUIT, SIG_IGN);
}

// Blocks (how == SIG_BLOCK) or unblocks (SIG_UNBLOCK) the signals passed on. The box blocks them
// across the fork of pid 1: a signal for pid 1 of a PID namespace that has no handler yet would
// be dropped, while a blocked one waits until pid 1 has installed its handler and unblocks it.
void mask_forwarded_signals(int how) noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : kForwardedSignals) sigaddset(&set, signal);
  ::sigprocmask(how, &set, nullptr);
}

// In a child before exec: the dispositions and mask a plain process starts with.
void default_signals() noexcept {
  for (int signal : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT, SIGPIPE}) ::signal(signal, SIG_DFL);
  mask_forwarded_signals(SIG_UNBLOCK);
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

// What COMMAND is told about its way out, and what of the proxy's it must not change.
struct BoxEnvironment {
  std::string socket_path;
  std::optional<std::string> token;  // the proxy wants this token
  ProxyPaths protected_paths;        // the socket's directory, the proxy's own files
};

[[noreturn]] void exec_command(const RunOptions& options, const BoxEnvironment& environment) {
  default_signals();
  const std::string http = proxy_url("http", environment.token);
  const std::string all = proxy_url("socks5h", environment.token);  // socks5h: the proxy resolves names
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) ::setenv(name, http.c_str(), 1);
  for (const char* name : {"ALL_PROXY", "all_proxy"}) ::setenv(name, all.c_str(), 1);
  for (const char* name : {"NO_PROXY", "no_proxy"}) ::setenv(name, kNoProxy, 1);
  ::setenv("BOXPROXY_SOCKET", environment.socket_path.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int error = errno;
  std::fprintf(stderr, "boxproxy run: %s: %s\n", argv[0], std::strerror(error));
  std::fflush(stderr);
  ::_exit(error == ENOENT ? kNotFound : kCannotExecute);
}

// Waits for `command`, reaping every other child meanwhile (orphans of the PID namespace come
// to its pid 1). Returns the command's wait status, or -1.
int reap_until(pid_t command) noexcept {
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, 0);
    if (done == command) return status;
    if (done == -1 && errno != EINTR) return -1;
  }
}

// True while the box (the process holding the write end of `box_alive`) lives.
bool box_alive(int read_end) noexcept {
  pollfd p{read_end, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

// Pid 1 of the box's PID namespace: makes COMMAND's view of the system and its limits, starts
// it and waits for it. Returns the exit status for the box (the command's, or a setup failure).
// Its return ends every process left in the PID namespace.
int box_init(const RunOptions& options, const BoxEnvironment& environment, UniqueFd box_alive_fd) {
  // If the box dies, so does pid 1, and with it everything in the namespace. The box holds a
  // pipe's write end: EOF here means it died before this line could arm the signal.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL);
  if (!box_alive(box_alive_fd.get())) return kSetupFailed;
  box_alive_fd.reset();
  UniqueFd self_dir(::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!self_dir.valid()) {
    std::fprintf(stderr, "boxproxy run: cannot open /proc/self: %s\n", std::strerror(errno));
    return kSetupFailed;
  }
  std::string note;
  auto error = mount_box_proc(&note);
  if (!error) error = confine_box_mounts();
  // With capture, names are the bridge's to answer (SPEC §16): the box's resolver is its
  // loopback, where the bridge listens, whatever the host's file says.
  if (!error && options.transparent) error = mount_box_resolv_conf(kBoxResolvConf);
  // Before the inner user namespace, which locks these mounts: COMMAND (the caller, to the file
  // system) cannot rename or replace the socket, nor write the proxy's files. (The bridge is held
  // to the socket it was started with anyway, proxy/proxy_socket.h; this keeps the name true for
  // whoever connects by it later, and the proxy's files the proxy's.)
  if (!error) error = protect_proxy_paths(environment.protected_paths);
  if (!error) error = enter_inner_user_namespace(self_dir.get());
  self_dir.reset();
  if (error) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return kSetupFailed;
  }
  if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  // No exec can give COMMAND a privilege this process lacks (no setuid binary, no file
  // capability), and the filter below requires it.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) == -1) {
    std::fprintf(stderr, "boxproxy run: PR_SET_NO_NEW_PRIVS: %s\n", std::strerror(errno));
    return kSetupFailed;
  }
  // The session keyring is inherited, and its keys are the caller's secrets (its possessor may
  // read them): COMMAND gets a new, empty one. (The user keyring is per user namespace already.)
  if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) == -1 && errno != ENOSYS) {
    std::fprintf(stderr, "boxproxy run: cannot give the box a session keyring of its own: %s\n", std::strerror(errno));
    return kSetupFailed;
  }
  // COMMAND (same user) must not ptrace pid 1 or open its /proc/1/mem: a process that is not
  // dumpable can be traced only with CAP_SYS_PTRACE in the host's user namespace. (pid 1 is under
  // the filter too, so even that would give nothing more.)
  ::prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
  if (auto refused = install_box_filter(options.box_lifts)) {
    std::fprintf(stderr, "%s\n", refused->c_str());
    return kSetupFailed;
  }
  std::fflush(nullptr);
  const pid_t command = ::fork();
  if (command == -1) {
    std::fprintf(stderr, "boxproxy run: fork: %s\n", std::strerror(errno));
    return kSetupFailed;
  }
  if (command == 0) exec_command(options, environment);
  supervise(command);
  mask_forwarded_signals(SIG_UNBLOCK);  // a signal that came meanwhile goes on to the command now
  const int status = reap_until(command);
  g_forward_to = 0;
  return status == -1 ? kSetupFailed : exit_status(status);
}

// The box: runs in a child of run. Returns its exit status (the command's, or a setup failure).
int box(const RunOptions& options, const BoxEnvironment& environment, pid_t run_pid) {
  // If run dies, the box ends the command (SIGTERM passed on) and the bridge with it.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0UL, 0UL, 0UL);
  if (::getppid() != run_pid) return kSetupFailed;
  auto error = enter_box_namespaces();
  if (!error) error = bring_loopback_up();
  if (error) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return kSetupFailed;
  }
  allow_low_ports();
  std::vector<std::string> bridge_args = {"boxproxy", "bridge", "--socket", environment.socket_path,
                                          "--die-with-parent"};
  if (options.transparent) {
    // Routes and nftables rules in the box's network namespace, set by this process (it has
    // CAP_NET_ADMIN there; COMMAND, in the inner user namespace, has none over it and cannot
    // remove them): every TCP connection to another address ends at the bridge's transparent port.
    if (auto failure = capture_box_traffic(kTransparentPort, kBoxDnsPort)) {
      std::fprintf(stderr, "%s\n", failure->c_str());
      return kSetupFailed;
    }
    for (const char* address : {"127.0.0.1", "[::1]"}) {
      bridge_args.push_back("--transparent");
      bridge_args.push_back(fmt::format("{}:{}", address, kTransparentPort));
      // The bridge answers the box's DNS there (its resolv.conf, and port 53 redirected).
      bridge_args.push_back("--dns");
      bridge_args.push_back(fmt::format("{}:{}", address, kBoxDnsPort));
    }
  }
  int status = 0;
  // The bridge starts before the new PID namespace exists: it stays in the host's, where
  // COMMAND can neither see nor trace it (it makes Unix sockets, outside the filter).
  const pid_t bridge = start_helper(bridge_args, &status);
  if (bridge == -1) {
    std::fprintf(stderr, "boxproxy run: the bridge did not start\n");
    return kSetupFailed;
  }
  if (::unshare(CLONE_NEWPID) == -1) {
    std::fprintf(stderr, "boxproxy run: cannot make the box's PID namespace: %s\n", std::strerror(errno));
    stop_child(bridge);
    return kSetupFailed;
  }
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) == -1) {
    std::fprintf(stderr, "boxproxy run: pipe: %s\n", std::strerror(errno));
    stop_child(bridge);
    return kSetupFailed;
  }
  UniqueFd alive_read(alive[0]);
  UniqueFd alive_write(alive[1]);  // held until the box exits
  std::fflush(nullptr);
  mask_forwarded_signals(SIG_BLOCK);
  const pid_t init = ::fork();
  if (init == 0) {
    alive_write.reset();  // else pid 1 would hold the pipe open itself and never see the box die
    const int code = box_init(options, environment, std::move(alive_read));
    std::fflush(nullptr);
    ::_exit(code);
  }
  alive_read.reset();
  if (init == -1) {
    std::fprintf(stderr, "boxproxy run: fork: %s\n", std::strerror(errno));
    mask_forwarded_signals(SIG_UNBLOCK);
    stop_child(bridge);
    return kSetupFailed;
  }
  supervise(init);
  mask_forwarded_signals(SIG_UNBLOCK);
  status = wait_for(init);
  g_forward_to = 0;
  stop_child(bridge);
  return status == -1 ? kSetupFailed : exit_status(status);
}

// COMMAND stays in run's process group, so that a terminal's Ctrl-C and Ctrl-Z reach it; but
// kill(0, ...) in COMMAND signals every process of that group, inside the box or not (a process
// group ignores PID namespaces), and a supervisor that starts run without a group of its own
// shares it. So run leads a group of its own, unless its group is a terminal's foreground one,
// whose job control then wins (a shell makes each job a group of its own already).
void lead_a_process_group() noexcept {
  if (::getpgrp() == ::getpid()) return;
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::isatty(fd) == 1 && ::tcgetpgrp(fd) == ::getpgrp()) return;
  }
  ::setpgid(0, 0);
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

// The directory holding `path` ("." for a bare name), as the kernel resolves the name's parent.
std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

int run(const RunOptions& options, const ServeFacts& serve_facts) {
  lead_a_process_group();
  BoxEnvironment environment{.socket_path = {}, .token = serve_facts.token, .protected_paths = {}};
  // The files run knows of: with --socket only the token file (the running proxy keeps its own
  // list of files, which run never sees).
  environment.protected_paths.files = serve_facts.files;
  if (options.auth_token_file) environment.protected_paths.files.push_back(*options.auth_token_file);
  std::string dir;
  pid_t serve = -1;
  if (options.socket_path) {
    environment.socket_path = *options.socket_path;
    struct stat st {};
    if (::stat(options.socket_path->c_str(), &st) == -1) {
      std::fprintf(stderr, "boxproxy run: --socket %s: %s\n", options.socket_path->c_str(), std::strerror(errno));
      return kSetupFailed;
    }
    if (!S_ISSOCK(st.st_mode)) {
      std::fprintf(stderr, "boxproxy run: --socket %s: not a socket\n", options.socket_path->c_str());
      return kSetupFailed;
    }
  } else {
    auto made = make_private_dir();
    if (!made) {
      std::fprintf(stderr, "boxproxy run: cannot make a private directory for the socket: %s\n", std::strerror(errno));
      return kSetupFailed;
    }
    dir = *made;
    environment.socket_path = dir + "/egress.sock";
    std::vector<std::string> args = {"boxproxy", "serve", "--socket", environment.socket_path, "--die-with-parent"};
    args.insert(args.end(), options.serve_args.begin(), options.serve_args.end());
    int status = 0;
    serve = start_helper(args, &status);
    // The supervisor's readiness descriptor is the proxy's to write: were the box to inherit it,
    // COMMAND could write READY=1 (or hold off the EOF) in the proxy's name.
    if (serve_facts.ready_fd) ::close(*serve_facts.ready_fd);
    // Nor the supervisor's channel: with it, COMMAND could edit the host list or answer its own
    // asks (SPEC §14: the box never inherits the proxy's control descriptors).
    if (serve_facts.control_fd) ::close(*serve_facts.control_fd);
    if (serve == -1) {
      ::unlink(environment.socket_path.c_str());
      ::rmdir(dir.c_str());
      // serve said why on standard error; a usage error in the serve options is run's too.
      if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == kUsage) return kUsage;
      std::fprintf(stderr, "boxproxy run: the proxy did not start\n");
      return kSetupFailed;
    }
  }

  environment.protected_paths.socket_directory = directory_of(environment.socket_path);

  const pid_t run_pid = ::getpid();
  std::fflush(nullptr);
  const pid_t box_pid = ::fork();
  if (box_pid == 0) {
    const int code = box(options, environment, run_pid);
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
    ::unlink(environment.socket_path.c_str());  // serve removed it already unless it was killed
    ::rmdir(dir.c_str());
  }
  return status == -1 ? kSetupFailed : exit_status(status);
}

}  // namespace

int run_run_command(int argc, char** argv) {
  for (const char* name : kServiceManagerVariables) ::unsetenv(name);
  RunOptions options;
  ServeFacts serve_facts;
  try {
    options = parse_run_options(argc, argv);
    if (options.auth_token_file) {
      serve_facts.token = token_of_file(*options.auth_token_file);
    } else if (!options.socket_path) {
      // Parsing looks at no socket path: the real one is made only once the options are good.
      serve_facts = facts_of_serve_args(options.serve_args, "egress.sock");
    }
    if (options.transparent && serve_facts.token) {
      // A captured connection carries no credentials, and the bridge holds no token to add.
      throw usage_error(kCommand, "--transparent cannot be used with a proxy that wants a token (--auth-token-file)");
    }
  } catch (const HelpRequested&) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s\n", error.message.c_str());
    return kUsage;
  }
  if (options.transparent) {
    // What capture needs is checked before anything starts (SPEC §16): run does not start a box
    // that would leak nothing but also reach nothing the way the user expects.
    if (auto missing = capture_available()) {
      std::fprintf(stderr, "%s\n", missing->c_str());
      return kSetupFailed;
    }
  }
  return run(options, serve_facts);
}

}  // namespace boxproxy
