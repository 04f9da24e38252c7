// SPDX-License-Identifier: Apache-2.0
#include "socketd/serve_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include "proxy/control/control_hub.h"
#include "proxy/decision_log.h"
#include "proxy/event_owners.h"
#include "proxy/inspect_array.h"
#include "proxy/proxy_server.h"
#include "proxy/resolver.h"
#include "socketd/command_shell.h"
#include "socketd/readiness.h"
#include "socketd/inspector_process.h"
#include "socketd/self_confine.h"
#include "socketd/serve_options.h"
#include "socketd/signal_events.h"
#include "socketd/socket_path.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "serve";

// Descriptors a tunnel needs: the client, the upstream, and a splice pipe each way (two each),
// and room for the handshaking clients
// and the process's own (log, audit, listener, DNS, signals).
constexpr rlim_t kDescriptorsPerTunnel = 6;
constexpr rlim_t kDescriptorsReserved = 64;

// Pending connections the kernel holds for us between wake-ups.
constexpr int kListenBacklog = 1024;

// Loop iterations run after shutdown to let cancelled lookups call back: one runs them all (a
// cancelled lookup's callbacks are already active); the rest are margin for evdns activating
// more than 32 at once, which it defers by one iteration.
constexpr int kFinishingTurns = 4;

// Raises RLIMIT_NOFILE toward what --max-tunnels needs, and says so when it cannot reach it.
std::optional<std::string> raise_descriptor_limit(std::uint32_t max_tunnels) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == -1) return std::nullopt;
  const rlim_t wanted = kDescriptorsPerTunnel * max_tunnels + kMaxHandshakingClients + kDescriptorsReserved;
  if (limit.rlim_cur >= wanted) return std::nullopt;
  // A process with CAP_SYS_RESOURCE (a supervisor running as root) may raise the hard limit too,
  // up to fs.nr_open; otherwise the soft limit goes as far as the hard one allows.
  rlimit raised{wanted, std::max(wanted, limit.rlim_max)};
  if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return std::nullopt;
  const rlim_t target = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  raised = rlimit{target, limit.rlim_max};
  if (::setrlimit(RLIMIT_NOFILE, &raised) == -1 || target < wanted) {
    return fmt::format("descriptor limit {} is below the {} that --max-tunnels {} needs; tunnels past it are refused",
                       target, wanted, max_tunnels);
  }
  return std::nullopt;
}

// A supervisor may start serve with standard input, output or error closed; the next descriptor
// opened would then take that number, and log lines meant for standard error would land in the
// audit file or on a client's socket. Each one that is closed is opened on /dev/null first.
void ensure_standard_descriptors() noexcept {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null_fd = ::open("/dev/null", O_RDWR);  // the lowest free number: `fd` itself
    if (null_fd != -1 && null_fd != fd) ::close(null_fd);
  }
}

UniqueFd open_append(const std::string& path, const char* what) {
  // O_NONBLOCK: a FIFO that nobody reads yet would hold open(2), and so the whole start, until
  // someone does; a supervisor that opens its reading end only after READY would wait for ever.
  // It fails at once instead (ENXIO), with words that say what to do. (On a regular file the flag
  // does nothing; a FIFO's writes may not wait anyway: see DecisionLog.)
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd == -1 && errno == ENXIO) {
    throw StartupError{ExitCode::failure, fmt::format("{} {}: a FIFO that nobody has open for reading "
                                                      "(open its reading end before starting serve)",
                                                      what, path)};
  }
  if (fd == -1) throw StartupError{ExitCode::failure, fmt::format("{} {}: {}", what, path, std::strerror(errno))};
  return UniqueFd(fd);
}

// Everything a running proxy owns, declared in dependency order so that it is destroyed in the
// reverse: the connections die first, and nothing outlives the event base (STYLE 2).
struct Daemon {
  const ServeOptions& options;
  EventBasePtr base;
  std::unique_ptr<DecisionLog> log;
  std::optional<LibeventLogRoute> libevent_messages;  // libevent's own reports, into `log`
  std::unique_ptr<Resolver> resolver;
  std::unique_ptr<ProxyServer> server;
  std::unique_ptr<ControlHub> control;          // SPEC §15; after the server it acts on
  std::optional<SessionSocket> control_socket;  // --control-socket
  std::optional<SessionSocket> socket;
  EventPtr on_term, on_int, on_hup, on_usr1;
  ExitCode exit_code = ExitCode::ok;

  explicit Daemon(const ServeOptions& opts) : options(opts) {}

  void shut_down() {
    // Stop accepting, end every connection, remove the socket while it is still ours.
    if (server) server->stop();
    if (socket) socket->remove_path();
    if (control) control->flush_all();  // a drain's reply, the last events
    if (control_socket) control_socket->remove_path();
    if (log) log->flush();
    event_base_loopbreak(base.get());
  }

  // After the loop has stopped: the lookups that shut_down() cancelled are freed only by evdns'
  // deferred callbacks (EVUTIL_EAI_CANCEL), which run in a loop iteration; without one, each
  // pending lookup's request and token would leak at exit. The iterations do not wait: nothing
  // that accepts or reads a client is left, so only those callbacks (and the log's) run.
  void finish_cancelled_lookups() {
    for (int turn = 0; turn < kFinishingTurns; ++turn) {
      if (event_base_get_num_events(base.get(), EVENT_BASE_COUNT_ACTIVE) == 0) break;
      event_base_loop(base.get(), EVLOOP_NONBLOCK);
    }
  }

  static void on_signal(evutil_socket_t signal, short, void* self) noexcept {
    auto* daemon = static_cast<Daemon*>(self);
    switch (signal) {
      case SIGTERM:
      case SIGINT:
        daemon->shut_down();
        break;
      case SIGHUP:
        daemon->reload();
        break;
      case SIGUSR1:
        daemon->log->raw_line(daemon->server->stats_json());
        break;
      default:
        break;
    }
  }

  // The control channel's "drain": no new client (the socket is removed, so a box sees the proxy
  // gone), the open ones end in their own time, then the process exits 0 as on SIGTERM.
  void drain() {
    if (socket) socket->remove_path();
    log->message(fmt::format("drain: not accepting; exiting once {} open client connections have ended",
                             server->stats().clients));
    server->drain([this] { shut_down(); });
  }

  void reload() {
    reload_host_list_now();
    reload_secrets();
  }

  // SIGHUP: every --secret file read again through its descriptor (socketd/secret_files.h); a
  // file that cannot be read or holds no value keeps the value in force. The log names the
  // secret, never its value.
  void reload_secrets() {
    for (const SecretFile& file : options.secrets) {
      SecretOrError read = read_secret_file(file);
      std::optional<std::string> error;
      if (!read.value) {
        error = "the file " + read.error;
      } else {
        error = server->set_secret(file.name, &*read.value);
      }
      log->message(error ? fmt::format("sighup: --secret {}: kept the value in force: {}", file.name, *error)
                         : fmt::format("sighup: --secret {} re-read", file.name));
    }
  }

  void reload_host_list_now() {
    try {
      std::optional<HostList> list = reload_host_list(options);
      if (!list && server->config().policy.allow) {
        // Fail closed: a config file that lost its list (truncated, half-written) must not turn
        // a narrowed box into one that reaches everything public. Restart to drop a list.
        log->message("sighup: kept the old host list: the new configuration names no list");
        return;
      }
      server->replace_host_list(std::move(list));
      log->message("sighup: host list re-read");
    } catch (const UsageError& error) {
      // Keep the list in force: a broken file never opens (or closes) the box by accident.
      std::string_view why = error.message;
      if (why.starts_with("boxproxy serve: ")) why.remove_prefix(16);  // the log has its own prefix
      log->message(fmt::format("sighup: kept the old host list: {}", why));
    } catch (const std::exception& error) {
      log->message(fmt::format("sighup: kept the old host list: {}", error.what()));
    }
  }
};

// The loop serve runs on (proxy/event_owners.h says how it is set up). Throws StartupError.
EventBasePtr make_event_base() {
  EventBasePtr base = make_batching_event_base();
  if (!base) throw StartupError{ExitCode::failure, "cannot create the event loop"};
  return base;
}

// The event loop and the log on it (--log-file or standard error, --audit, libevent's own
// reports). Returns the log's descriptor. Throws StartupError.
int open_log(Daemon& daemon, const ServeOptions& options) {
  // Fail closed: everything we were asked to enforce or record is set up before the socket exists.
  int log_fd = STDERR_FILENO;
  bool owns_log = false;
  if (options.log_file) {
    log_fd = open_append(*options.log_file, "--log-file").release();
    owns_log = true;
  }
  UniqueFd audit;
  if (options.audit_path) audit = open_append(*options.audit_path, "--audit");
  daemon.base = make_event_base();
  daemon.log = std::make_unique<DecisionLog>(daemon.base.get(), options.log_format == LogFormat::json, log_fd,
                                             owns_log, std::move(audit));
  daemon.log->set_label(options.label);  // on every line from the first (SPEC §12 --label)
  // Everything libevent reports goes through the log, in its format (SPEC §12).
  daemon.libevent_messages.emplace(*daemon.log);
  return log_fd;
}

// SIGTERM, SIGINT, SIGHUP and SIGUSR1 into Daemon::on_signal. Throws StartupError.
void install_signal_handlers(Daemon& daemon) {
  add_signal_events(daemon.base.get(),
                    {{SIGTERM, &daemon.on_term}, {SIGINT, &daemon.on_int}, {SIGHUP, &daemon.on_hup},
                     {SIGUSR1, &daemon.on_usr1}},
                    &Daemon::on_signal, &daemon);
}

// The control socket, then the session socket, made (socket_path.h) and accepted on. Throws
// StartupError.
void start_listening(Daemon& daemon, const ServeOptions& options) {
  try {
    // The control socket first: once the session socket is listening, the supervisor may connect.
    if (options.control_socket) {
      daemon.control_socket.emplace(SessionSocket::create(*options.control_socket, kListenBacklog));
      daemon.control->listen(daemon.control_socket->release_fd());
    }
    daemon.socket.emplace(SessionSocket::create(options.socket_path, kListenBacklog));
  } catch (const std::runtime_error& error) {
    throw StartupError{ExitCode::failure, error.what()};
  }
  try {
    daemon.server->start(daemon.socket->release_fd());
  } catch (const std::runtime_error& error) {
    daemon.socket->remove_path();
    throw StartupError{ExitCode::failure, error.what()};
  }
}

// What `serve` with `options` needs once set up: the files SIGHUP re-reads, its socket's removal,
// its log (`log_fd`, the --log-file or standard error) in its format.
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

// From here on a parser bug reached from the box can do nothing but proxy (SPEC §17): confined
// before the first client is read, and before anyone is told that the proxy listens. Throws
// StartupError.
void confine(Daemon& daemon, const ServeOptions& options, int log_fd) {
  try {
    for (const std::string& notice : confine_self(serve_confinement(options, log_fd))) daemon.log->message(notice);
  } catch (const ConfineError& error) {
    daemon.socket->remove_path();
    throw StartupError{ExitCode::failure,
                       fmt::format("cannot confine itself: {} (--no-confine runs without)", error.what())};
  }
}

// Request inspection (SPEC §18): the inspector starts before serve confines itself (it is a new
// process, from an executable opened by descriptor), and the CA it made is written for --ca-out
// before serve says it listens, so a supervisor that waits for READY finds it there.
void start_inspection(Daemon& daemon, const ServeOptions& options) {
  nlohmann::ordered_json endpoints = nlohmann::ordered_json::array();
  for (const InspectEndpoint& endpoint : options.proxy.policy.inspect.endpoints()) {
    endpoints.push_back(inspect_object(endpoint));
  }
  const std::string label = options.label.empty() ? std::to_string(::getpid()) : options.label;
  StartedInspector inspector = start_inspector(options, label, endpoints.dump());
  if (options.ca_out) write_ca_out(*options.ca_out, inspector.ca_pem);
  daemon.server->set_inspector(
      std::make_unique<InspectorLink>(daemon.base.get(), std::move(inspector.channel), *daemon.log),
      std::move(inspector.ca_pem));
  // The --secret values, before serve listens: the inspector reads its channel in order, so
  // every connection it is handed finds them set.
  for (const SecretFile& file : options.secrets) {
    SecretOrError read = read_secret_file(file);
    if (!read.value) {
      throw StartupError{ExitCode::failure, fmt::format("--secret {}: the file {}", file.name, read.error)};
    }
    if (auto error = daemon.server->set_secret(file.name, &*read.value)) {
      throw StartupError{ExitCode::failure, fmt::format("--secret {}: {}", file.name, *error)};
    }
  }
}

// SPEC §19: a stand-in for each --placeholder NAME, new each session (16 bytes of getrandom), for
// the inspector to swap and for serve to refuse wherever else one goes. Returns the event lines
// to print before the listening line. Throws StartupError.
std::string make_placeholders(Daemon& daemon, const ServeOptions& options) {
  Placeholders placeholders;
  std::string lines;
  for (const std::string& name : options.placeholders) {
    std::array<std::uint8_t, kPlaceholderRandomBytes> random{};
    if (::getrandom(random.data(), random.size(), 0) != static_cast<ssize_t>(random.size())) {
      throw StartupError{ExitCode::failure, "--placeholder: cannot read random bytes (getrandom)"};
    }
    const std::string value = make_placeholder(name, random);
    if (InspectorLink* link = daemon.server->inspector(); link != nullptr && !link->placeholder_made(name, value)) {
      throw StartupError{ExitCode::failure, "--placeholder: the request inspector has stopped"};
    }
    placeholders.set(name, value);
    lines += fmt::format("{{\"event\":\"placeholder\",\"name\":\"{}\",\"value\":\"{}\"}}\n", name, value);
  }
  daemon.server->set_placeholders(std::move(placeholders));
  return lines;
}

// A session that may hold secrets (SPEC §19) is made non-dumpable before it sends one on: no core
// file, and no ptrace or /proc/PID/mem by another process of the same user, could show a value on
// its way through serve (a control line, a file's buffer, a channel message; each scrubbed once
// used, but a crash may come first). That is every session that inspects at start: it runs an
// inspector, so the control channel's "secret" is accepted (and a live "inspect" may add an
// endpoint that injects), whether or not --secret or an endpoint that injects came at start.
// Parsing read each --secret file before this (to refuse a bad one with exit 2), and scrubbed what
// it read. Other sessions keep the usual flag, so their memory and descriptors stay readable to
// the operator's tools.
void guard_secrets(const ServeOptions& options) {
  const bool may_hold = !options.secrets.empty() || !options.proxy.policy.inspect.endpoints().empty();
  if (may_hold) (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

// Says the proxy listens: standard output (the placeholders' lines first, SPEC §19), --ready-fd,
// systemd.
void announce_ready(Daemon& daemon, const ServeOptions& options, std::string_view placeholder_lines) {
  announce_lines(placeholder_lines);
  announce_listening(options.socket_path);
  if (options.ready_fd) {
    if (auto error = notify_ready_fd(*options.ready_fd)) daemon.log->message(*error);
  }
  if (auto error = notify_systemd_ready()) daemon.log->message(*error);
  daemon.log->flush();
}

// Sets the proxy up, runs it until a signal, a drain or the supervisor's EOF ends it, and returns
// the exit status. Throws StartupError.
int serve(const ServeOptions& options) {
  ensure_standard_descriptors();
  const pid_t parent = ::getppid();
  // A client that leaves mid-write must not kill the process: every send uses MSG_NOSIGNAL, and
  // SIGPIPE is ignored for anything else (the log on a closed pipe).
  ::signal(SIGPIPE, SIG_IGN);

  Daemon daemon(options);
  const int log_fd = open_log(daemon, options);
  // A text log on a terminal has a person reading it (as under `run`), to whom a JSON line at the
  // end is noise; a JSON log, a file or a pipe has a program that may want the session's totals.
  // Asked now: the confined process may not ask the terminal.
  const bool exit_stats = options.log_format == LogFormat::json || ::isatty(log_fd) != 1;
  if (auto warning = raise_descriptor_limit(options.proxy.max_tunnels)) daemon.log->message(*warning);
  try {
    daemon.resolver =
        std::make_unique<Resolver>(daemon.base.get(), options.nameservers, options.proxy.dns_timeout,
                                                 options.max_lookups);
  } catch (const std::runtime_error& error) {
    throw StartupError{ExitCode::failure, error.what()};
  }
  daemon.server = std::make_unique<ProxyServer>(daemon.base.get(), options.proxy, *daemon.resolver, *daemon.log);

  // Every control channel can be asked about requests (SPEC §20: an "ask" endpoint may come with a
  // live change); names off the list only with --ask.
  if (options.control_fd || options.control_socket) daemon.server->enable_asking(options.ask_timeout, options.ask);
  std::string placeholder_lines;
  if (!options.proxy.policy.inspect.empty()) {
    guard_secrets(options);
    start_inspection(daemon, options);
    placeholder_lines = make_placeholders(daemon, options);
  }
  if (options.control_fd || options.control_socket) {
    daemon.control = std::make_unique<ControlHub>(
        daemon.base.get(), std::make_unique<ServerControl>(*daemon.server, [&daemon] { daemon.drain(); }), *daemon.log,
        [&daemon] { daemon.shut_down(); });
    try {
      if (options.control_fd) daemon.control->adopt(*options.control_fd);
    } catch (const std::runtime_error& error) {
      throw StartupError{ExitCode::failure, error.what()};
    }
  }

  install_signal_handlers(daemon);
  // After the signal handlers: a parent that is already gone raises SIGTERM into them, and the
  // proxy then exits 0 as on any SIGTERM.
  if (options.die_with_parent) die_with_parent(SIGTERM, parent);
  start_listening(daemon, options);
  if (options.confine) confine(daemon, options, log_fd);
  announce_ready(daemon, options, placeholder_lines);

  event_base_dispatch(daemon.base.get());
  daemon.shut_down();
  daemon.finish_cancelled_lookups();
  // The last line, after every connection's done line (shut_down ended them): what the session
  // did in all, however it ended (SPEC §12).
  if (exit_stats) daemon.log->raw_line(daemon.server->stats_json());
  daemon.log->flush();
  return as_status(daemon.exit_code);
}

}  // namespace

int run_serve_command(int argc, char** argv) {
  return run_command_shell(kCommand, &serve_help_text, [argc, argv] {
    const ServeOptions options = parse_serve_options(argc, argv);
    if (options.check_config) {
      // Everything serve reads has been read and checked: say what is in force, bind nothing.
      std::printf("%s\n", options_in_force(options).c_str());
      return as_status(ExitCode::ok);
    }
    // On the way out (a drain, a closed --control-fd, a signal) a SIGTERM is ignored:
    // socketd/signal_events.h.
    return serve(options);
  });
}

}  // namespace boxproxy
