// SPDX-License-Identifier: Apache-2.0
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

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "proxy/defaults.h"
#include "proxy/unique_fd.h"
#include "socketd/box_capture.h"
#include "socketd/box_namespaces.h"
#include "socketd/box_seccomp.h"
#include "socketd/box_trust.h"
#include "socketd/command_shell.h"
#include "socketd/run_child.h"
#include "socketd/run_options.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "run";

// Where the bridge listens inside the box, and what the command is told. The box's namespace is
// new, so the port is always free. The bridge hands every byte to the proxy, which tells SOCKS5
// from HTTP by the first byte: the same port serves both.
constexpr const char* kProxyHost = "127.0.0.1";
constexpr std::uint16_t kProxyPort = defaults::kBridgePort;
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

// Variables that speak to run's service manager, not to anything run starts: with them the
// inner proxy would send READY=1 for run (which is not ready until COMMAND is), and COMMAND could
// send the manager anything (MAINPID=, STOPPING=1) or claim run's socket-activated descriptors.
constexpr const char* kServiceManagerVariables[] = {"NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"};

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

// "http://127.0.0.1:3128", with box:TOKEN@ when the proxy wants a token.
std::string proxy_url(const std::optional<std::string>& token) {
  if (!token) return fmt::format("http://{}:{}", kProxyHost, kProxyPort);
  return fmt::format("http://{}:{}@{}:{}", kTokenUser, userinfo_encoded(*token), kProxyHost, kProxyPort);
}

// JAVA_TOOL_OPTIONS for the box: Java reads no proxy variable, only its http(s).proxyHost and
// proxyPort properties, and every JVM reads this variable at start. The caller's value is kept and
// ours appended: of two -D for one property the last is in force, so the box's proxy wins while the
// caller's other options stay. (Java takes no credentials from properties: with a token it needs
// an Authenticator of its own.)
// With --inspect the trust store's properties follow, for the same reason (SPEC §18).
std::string java_tool_options(const char* existing, const std::optional<std::string>& trust_store) {
  std::string options = existing != nullptr ? existing : "";
  if (!options.empty()) options.push_back(' ');
  options += fmt::format("-Dhttp.proxyHost={0} -Dhttp.proxyPort={1} -Dhttps.proxyHost={0} -Dhttps.proxyPort={1}",
                         kProxyHost, kProxyPort);
  if (trust_store) options += " " + java_trust_options(*trust_store);
  return options;
}

// --- the box --------------------------------------------------------------------------------

// What COMMAND is told about its way out, and what of the proxy's it must not change.
struct BoxEnvironment {
  std::string socket_path;
  std::optional<std::string> token;  // the proxy wants this token
  ProxyPaths protected_paths;        // the socket's directory, the proxy's own files
  std::optional<BoxTrust> trust;     // with --inspect: what makes the box trust the session's CA
  // --secret-env (SPEC §19): each VAR with its secret's placeholder (never a value).
  std::vector<std::pair<std::string, std::string>> placeholder_variables;
};

[[noreturn]] void exec_command(const RunOptions& options, const BoxEnvironment& environment) {
  default_signals();
  // The caller's environment, unless --clearenv, then --setenv's; run's own variables below are
  // set over both (the box's way out is the proxy's, whatever the caller said).
  if (options.clearenv) ::clearenv();
  for (const auto& [name, value] : options.setenv) ::setenv(name.c_str(), value.c_str(), 1);
  // ALL_PROXY is the HTTP proxy too, not socks5h://: Python's httpx (the client of the OpenAI and
  // Anthropic SDKs, among others) reads every proxy variable when a client is made and fails at
  // once on a SOCKS one unless the optional socksio is installed (0.23, Debian 12's, knows no
  // socks5h:// at all), even for https URLs HTTPS_PROXY covers. An HTTP proxy resolves names as
  // socks5h does; a client that wants SOCKS is given the same port explicitly (it speaks both).
  const std::string http = proxy_url(environment.token);
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}) {
    ::setenv(name, http.c_str(), 1);
  }
  for (const char* name : {"NO_PROXY", "no_proxy"}) ::setenv(name, kNoProxy, 1);
  std::optional<std::string> java_store;
  if (environment.trust) {
    set_trust_variables();
    java_store = environment.trust->java_store;
  }
  ::setenv("JAVA_TOOL_OPTIONS", java_tool_options(std::getenv("JAVA_TOOL_OPTIONS"), java_store).c_str(), 1);
  // Node (24 and later) reads HTTP_PROXY, HTTPS_PROXY and NO_PROXY only when this is set.
  ::setenv("NODE_USE_ENV_PROXY", "1", 1);
  ::setenv("BOXPROXY_SOCKET", environment.socket_path.c_str(), 1);
  for (const auto& [variable, placeholder] : environment.placeholder_variables) {
    ::setenv(variable.c_str(), placeholder.c_str(), 1);
  }
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int error = errno;
  std::fprintf(stderr, "boxproxy run: %s: %s\n", argv[0], std::strerror(error));
  std::fflush(stderr);
  ::_exit(as_status(error == ENOENT ? ExitCode::not_found : ExitCode::cannot_execute));
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
  if (!box_alive(box_alive_fd.get())) return as_status(ExitCode::setup_failed);
  box_alive_fd.reset();
  UniqueFd self_dir(::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!self_dir.valid()) {
    std::fprintf(stderr, "boxproxy run: cannot open /proc/self: %s\n", std::strerror(errno));
    return as_status(ExitCode::setup_failed);
  }
  std::string note;
  auto error = mount_box_proc(&note);
  if (!error) error = confine_box_mounts();
  // With capture, names are the bridge's to answer (SPEC §16): the box's resolver is its
  // loopback, where the bridge listens, whatever the host's file says.
  if (!error && options.transparent) error = mount_box_resolv_conf(kBoxResolvConf);
  // With --inspect the box's programs trust the session's CA through the system's bundle too (not
  // only the variables, which some ignore); locked read-only by the inner user namespace below.
  if (!error && environment.trust) error = mount_trust_bundle(environment.trust->bundle);
  // Before the inner user namespace, which locks these mounts: COMMAND (the caller, to the file
  // system) cannot rename or replace the socket, nor write the proxy's files. (The bridge is held
  // to the socket it was started with anyway, proxy/bridge/proxy_socket.h; this keeps the name true for
  // whoever connects by it later, and the proxy's files the proxy's.)
  if (!error) error = protect_proxy_paths(environment.protected_paths);
  if (!error) error = enter_inner_user_namespace(self_dir.get());
  self_dir.reset();
  if (error) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return as_status(ExitCode::setup_failed);
  }
  if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  // No exec can give COMMAND a privilege this process lacks (no setuid binary, no file
  // capability), and the filter below requires it.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) == -1) {
    std::fprintf(stderr, "boxproxy run: PR_SET_NO_NEW_PRIVS: %s\n", std::strerror(errno));
    return as_status(ExitCode::setup_failed);
  }
  // The session keyring is inherited, and its keys are the caller's secrets (its possessor may
  // read them): COMMAND gets a new, empty one. (The user keyring is per user namespace already.)
  if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) == -1 && errno != ENOSYS) {
    std::fprintf(stderr, "boxproxy run: cannot give the box a session keyring of its own: %s\n", std::strerror(errno));
    return as_status(ExitCode::setup_failed);
  }
  // COMMAND (same user) must not ptrace pid 1 or open its /proc/1/mem: a process that is not
  // dumpable can be traced only with CAP_SYS_PTRACE in the host's user namespace. (pid 1 is under
  // the filter too, so even that would give nothing more.)
  ::prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
  if (auto refused = install_box_filter(options.box_lifts)) {
    std::fprintf(stderr, "%s\n", refused->c_str());
    return as_status(ExitCode::setup_failed);
  }
  std::fflush(nullptr);
  const pid_t command = ::fork();
  if (command == -1) {
    std::fprintf(stderr, "boxproxy run: fork: %s\n", std::strerror(errno));
    return as_status(ExitCode::setup_failed);
  }
  if (command == 0) exec_command(options, environment);
  supervise(command);
  mask_forwarded_signals(SIG_UNBLOCK);  // a signal that came meanwhile goes on to the command now
  const int status = reap_until(command);
  stop_forwarding();
  return status == -1 ? as_status(ExitCode::setup_failed) : exit_status(status);
}

// The box: runs in a child of run. Returns its exit status (the command's, or a setup failure).
int box(const RunOptions& options, const BoxEnvironment& environment, pid_t run_pid) {
  // If run dies, the box ends the command (SIGTERM passed on) and the bridge with it.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0UL, 0UL, 0UL);
  if (::getppid() != run_pid) return as_status(ExitCode::setup_failed);
  // Nothing of run's or the caller's but standard input, output and error reaches the bridge, pid 1
  // or COMMAND (SPEC §19a): not a --secret given as /dev/fd/N (whose masked path the descriptor
  // would get round), a namespace, or a socket of the host's.
  auto error = close_inherited_descriptors();
  if (!error) error = enter_box_namespaces();
  if (!error) error = bring_loopback_up();
  if (error) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return as_status(ExitCode::setup_failed);
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
      return as_status(ExitCode::setup_failed);
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
    return as_status(ExitCode::setup_failed);
  }
  if (::unshare(CLONE_NEWPID) == -1) {
    std::fprintf(stderr, "boxproxy run: cannot make the box's PID namespace: %s\n", std::strerror(errno));
    stop_child(bridge);
    return as_status(ExitCode::setup_failed);
  }
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) == -1) {
    std::fprintf(stderr, "boxproxy run: pipe: %s\n", std::strerror(errno));
    stop_child(bridge);
    return as_status(ExitCode::setup_failed);
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
    return as_status(ExitCode::setup_failed);
  }
  supervise(init);
  mask_forwarded_signals(SIG_UNBLOCK);
  status = wait_for(init);
  stop_forwarding();
  stop_child(bridge);
  return status == -1 ? as_status(ExitCode::setup_failed) : exit_status(status);
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

// True when `path` (run --socket) names a socket; says why not on standard error.
bool is_running_proxy_socket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == -1) {
    std::fprintf(stderr, "boxproxy run: --socket %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "boxproxy run: --socket %s: not a socket\n", path.c_str());
    return false;
  }
  return true;
}

// The proxy run started, and the private directory of its socket.
struct StartedProxy {
  pid_t pid = -1;
  std::string dir;
  std::vector<std::string> files;  // what else run and serve put in dir (the CA, the bundle, ...)
};

// The names run gives its files in the private directory (SPEC §18 run --inspect).
constexpr const char* kSessionCaName = "session-ca.pem";
constexpr const char* kBundleName = "ca-bundle.pem";
constexpr const char* kJavaStoreName = "java-trust.jks";

// --secret-env: each VAR gets the placeholder serve printed for its NAME
// ({"event":"placeholder","name":NAME,"value":P}, before its listening line).
void set_placeholder_variables(const RunOptions& options, const std::vector<std::string>& lines,
                               BoxEnvironment& environment) {
  std::map<std::string, std::string, std::less<>> made;
  for (const std::string& line : lines) {
    const nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    if (!event.is_object() || !event.value("name", nlohmann::json()).is_string() ||
        !event.value("value", nlohmann::json()).is_string()) {
      continue;
    }
    made[event["name"].get<std::string>()] = event["value"].get<std::string>();
  }
  for (const auto& [variable, name] : options.secret_env) {
    // serve prints one line for every --placeholder run gave it: a name without one is left unset,
    // and COMMAND's requests carrying nothing are refused as they would be without it.
    if (const auto it = made.find(name); it != made.end()) {
      environment.placeholder_variables.emplace_back(variable, it->second);
    }
  }
}

// Starts `boxproxy serve` with the serve options on a socket in a new private directory (its
// path into environment.socket_path) and waits until it listens. Returns ExitCode::ok, or the
// status run exits with (nothing left behind).
int start_proxy(const RunOptions& options, BoxEnvironment& environment, StartedProxy& proxy) {
  auto made = make_private_dir();
  if (!made) {
    std::fprintf(stderr, "boxproxy run: cannot make a private directory for the socket: %s\n", std::strerror(errno));
    return as_status(ExitCode::setup_failed);
  }
  proxy.dir = *made;
  environment.socket_path = proxy.dir + "/egress.sock";
  std::vector<std::string> args = {"boxproxy", "serve", "--socket", environment.socket_path, "--die-with-parent"};
  args.insert(args.end(), options.serve_args.begin(), options.serve_args.end());
  if (options.serve_facts.inspect && !options.serve_facts.ca_out) {
    // The session's CA, written by serve before it listens, for run to give the box.
    const std::string ca = proxy.dir + "/" + kSessionCaName;
    proxy.files.push_back(ca);
    args.push_back("--ca-out=" + ca);
  }
  int status = 0;
  std::vector<std::string> placeholder_lines;
  proxy.pid = start_helper(args, &status, &placeholder_lines);
  if (proxy.pid != -1) set_placeholder_variables(options, placeholder_lines, environment);
  // The supervisor's readiness descriptor is the proxy's to write: were the box to inherit it,
  // COMMAND could write READY=1 (or hold off the EOF) in the proxy's name.
  if (options.serve_facts.ready_fd) ::close(*options.serve_facts.ready_fd);
  // Nor the supervisor's channel: with it, COMMAND could edit the host list or answer its own
  // asks (SPEC §14: the box never inherits the proxy's control descriptors).
  if (options.serve_facts.control_fd) ::close(*options.serve_facts.control_fd);
  if (proxy.pid != -1) return as_status(ExitCode::ok);
  for (const std::string& file : proxy.files) ::unlink(file.c_str());
  ::unlink(environment.socket_path.c_str());
  ::rmdir(proxy.dir.c_str());
  // serve said why on standard error; a usage error in the serve options is run's too.
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == as_status(ExitCode::usage)) {
    return as_status(ExitCode::usage);
  }
  std::fprintf(stderr, "boxproxy run: the proxy did not start\n");
  return as_status(ExitCode::setup_failed);
}

// Removes what run put in its private directory, and the directory (nothing when it made none).
void remove_private_dir(const StartedProxy& proxy) {
  if (proxy.dir.empty()) return;
  for (const std::string& file : proxy.files) ::unlink(file.c_str());
  ::rmdir(proxy.dir.c_str());
}

// Ends the proxy run started, and removes its socket and directory.
void stop_proxy(const StartedProxy& proxy, const std::string& socket_path) {
  const int serve_status = stop_child(proxy.pid);
  if (serve_status != -1 && !(WIFEXITED(serve_status) && WEXITSTATUS(serve_status) == as_status(ExitCode::ok))) {
    std::fprintf(stderr, "boxproxy run: the proxy ended with status %d\n", exit_status(serve_status));
  }
  ::unlink(socket_path.c_str());  // serve removed it already unless it was killed
  remove_private_dir(proxy);
}

// With --inspect, once serve has written its CA: the bundle (and Java's trust store) in the
// proxy's private directory, into environment.trust. An error message, or nullopt. Fails closed:
// without them COMMAND would not run at all rather than run unable to trust what it meets.
// The files live in the proxy's private directory, which the box sees read-only (the socket's
// directory, protect_proxy_paths): COMMAND cannot rewrite the bundle through its path there, which
// would change what the read-only bind over the system's bundle shows (the same file).
std::optional<std::string> make_box_trust(const std::string& ca, StartedProxy& proxy, BoxEnvironment& environment) {
  BoxTrust trust{.bundle = proxy.dir + "/" + kBundleName, .java_store = std::nullopt};
  proxy.files.push_back(trust.bundle);
  if (auto error = make_trust_bundle(ca, trust.bundle)) return error;
  const std::string store = proxy.dir + "/" + kJavaStoreName;
  proxy.files.push_back(store);
  bool made = false;
  if (auto error = make_java_trust_store(trust.bundle, store, &made)) return error;
  if (made) {
    // JAVA_TOOL_OPTIONS is split at white space: a path holding any cannot be named in it.
    if (store.find_first_of(" \t\n\"'") != std::string::npos) {
      return fmt::format("boxproxy run: Java's trust store {} cannot be named in JAVA_TOOL_OPTIONS (white space or "
                         "quotes in the path); set TMPDIR to a plainer directory",
                         store);
    }
    trust.java_store = store;
  }
  environment.trust = std::move(trust);
  return std::nullopt;
}

// run --socket PATH --ca FILE: the box trusts the running proxy's session CA as a box of run's own
// inspecting proxy does, from files in a private directory of run's (the socket's directory is
// the running proxy's). ExitCode::ok, or the status run exits with (nothing left behind).
int trust_running_proxy(const std::string& ca, StartedProxy& proxy, BoxEnvironment& environment) {
  auto made = make_private_dir();
  if (!made) {
    std::fprintf(stderr, "boxproxy run: cannot make a private directory for the CA bundle: %s\n", std::strerror(errno));
    return as_status(ExitCode::setup_failed);
  }
  proxy.dir = *made;
  if (auto error = make_box_trust(ca, proxy, environment)) {
    std::fprintf(stderr, "%s\n", error->c_str());
    remove_private_dir(proxy);
    return as_status(ExitCode::setup_failed);
  }
  // Read-only binds of themselves in the box: the bundle is the same file pid 1 binds over the
  // system's bundle, and through its path here COMMAND could otherwise add a CA of its own to it.
  environment.protected_paths.files.push_back(environment.trust->bundle);
  if (environment.trust->java_store) environment.protected_paths.files.push_back(*environment.trust->java_store);
  return as_status(ExitCode::ok);
}

int run(const RunOptions& options) {
  lead_a_process_group();
  BoxEnvironment environment{
      .socket_path = {}, .token = options.serve_facts.token, .protected_paths = {}, .trust = std::nullopt};
  // The files run knows of: with --socket only the token file (the running proxy keeps its own
  // list of files, which run never sees).
  environment.protected_paths.files = options.serve_facts.files;
  environment.protected_paths.hidden = options.serve_facts.hidden_files;
  StartedProxy proxy;
  if (options.socket_path) {
    environment.socket_path = *options.socket_path;
    if (!is_running_proxy_socket(*options.socket_path)) return as_status(ExitCode::setup_failed);
  } else if (const int code = start_proxy(options, environment, proxy); code != as_status(ExitCode::ok)) {
    return code;
  } else if (options.serve_facts.inspect) {
    const std::string ca = options.serve_facts.ca_out.value_or(proxy.dir + "/" + kSessionCaName);
    if (auto error = make_box_trust(ca, proxy, environment)) {
      std::fprintf(stderr, "%s\n", error->c_str());
      stop_proxy(proxy, environment.socket_path);
      return as_status(ExitCode::setup_failed);
    }
  }
  if (options.socket_path && options.ca_file) {
    if (const int code = trust_running_proxy(*options.ca_file, proxy, environment); code != as_status(ExitCode::ok)) {
      return code;
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
    stop_forwarding();
  }
  if (proxy.pid != -1) {
    stop_proxy(proxy, environment.socket_path);
  } else {
    remove_private_dir(proxy);
  }
  return status == -1 ? as_status(ExitCode::setup_failed) : exit_status(status);
}

}  // namespace

int run_run_command(int argc, char** argv) {
  for (const char* name : kServiceManagerVariables) ::unsetenv(name);
  return run_command_shell(kCommand, &run_help_text, [argc, argv] {
    const RunOptions options = read_run_options(argc, argv);
    if (options.transparent) {
      // What capture needs is checked before anything starts (SPEC §16): run does not start a box
      // that would leak nothing but also reach nothing the way the user expects.
      if (auto missing = capture_available()) {
        std::fprintf(stderr, "%s\n", missing->c_str());
        return as_status(ExitCode::setup_failed);
      }
    }
    return run(options);
  });
}

}  // namespace boxproxy
