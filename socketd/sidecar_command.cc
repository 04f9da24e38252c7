// SPDX-License-Identifier: Apache-2.0
#include "socketd/sidecar_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proxy/defaults.h"
#include "proxy/unique_fd.h"
#include "socketd/box_capture.h"
#include "socketd/command_shell.h"
#include "socketd/option_table.h"
#include "socketd/run_child.h"
#include "socketd/usage_error.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "sidecar";

const OptionTable& sidecar_table() {
  static const OptionTable table(
      std::string(kCommand),
      {
          OptionSpec{.name = "socket", .kind = OptionKind::value, .value_name = "PATH",
                     .help = "serve's Unix socket, in a volume only this container mounts. Required."},
          OptionSpec{.name = "port", .kind = OptionKind::number, .value_name = "N",
                     .help = "the bridge's transparent listener, on 127.0.0.1 and [::1] (capture --port)",
                     .default_text = std::to_string(kCaptureTransparentPort), .min = 1, .max = 65535},
          OptionSpec{.name = "dns-port", .kind = OptionKind::number, .value_name = "N",
                     .help = "the bridge's DNS responder, on 127.0.0.1 and [::1] (capture --dns-port)",
                     .default_text = std::to_string(kCaptureDnsPort), .min = 1, .max = 65535},
          OptionSpec{.name = "listen-port", .kind = OptionKind::number, .value_name = "N",
                     .help = "the bridge's plain listener for HTTP_PROXY and SOCKS5 (capture --listen-port)",
                     .default_text = std::to_string(defaults::kBridgePort), .min = 1, .max = 65535},
          OptionSpec{.name = "ready-file", .kind = OptionKind::value, .value_name = "PATH",
                     .help = "made once serve and the bridge listen, removed when they stop", .default_text = "none"},
          OptionSpec{.name = "probe", .kind = OptionKind::flag,
                     .help = "start nothing: exit 0 if --ready-file is there, else 1 (a readiness probe)",
                     .default_text = "off"},
          OptionSpec{.name = "probe-timeout", .kind = OptionKind::seconds, .value_name = "S",
                     .help = "with --probe: wait this long for the file (a postStart hook holding the next "
                             "container back)",
                     .default_text = "0", .max_seconds = 600, .zero_allowed = true},
      });
  return table;
}

std::string help_text() {
  return fmt::format(
      "usage: boxproxy sidecar --socket PATH [OPTION]... [-- SERVE OPTION...]\n"
      "       boxproxy sidecar --probe --ready-file PATH [--probe-timeout S]\n"
      "\n"
      "A pod's proxy in one container (man boxproxy, PODS): boxproxy serve --socket PATH with the\n"
      "SERVE OPTIONs, then boxproxy bridge on the pod's loopback (--transparent and --dns on the\n"
      "ports boxproxy capture redirects to, --listen for HTTP_PROXY). Run it as the user capture\n"
      "exempts. SIGTERM or SIGINT stop both (exit 0); SIGHUP goes to serve, SIGUSR1 to both; when\n"
      "either ends, the other is stopped and the sidecar exits 1.\n"
      "\n"
      "{}",
      sidecar_table().options_help());
}

struct SidecarOptions {
  std::string socket_path;
  std::uint16_t port = kCaptureTransparentPort;
  std::uint16_t dns_port = kCaptureDnsPort;
  std::uint16_t listen_port = defaults::kBridgePort;
  std::string ready_file;
  bool probe = false;
  double probe_timeout = 0;
  std::vector<std::string> serve_args;  // after --
};

std::uint16_t port_option(const RawOptions& raw, std::string_view name, std::uint16_t fallback) {
  const auto given = raw.find(name);
  if (given == raw.end()) return fallback;
  return static_cast<std::uint16_t>(number_value(kCommand, sidecar_table().at(name), given->second));
}

SidecarOptions parse_sidecar_options(int argc, char** argv) {
  ParsedArguments parsed = parse_arguments(sidecar_table(), argc, argv, Operands::after_dashes);
  const RawOptions& raw = parsed.options;
  SidecarOptions options;
  if (const auto ready = raw.find("ready-file"); ready != raw.end()) options.ready_file = ready->second.values.front();
  options.probe = raw.contains("probe");
  if (const auto wait = raw.find("probe-timeout"); wait != raw.end()) {
    options.probe_timeout = seconds_value(kCommand, sidecar_table().at("probe-timeout"), wait->second);
  }
  if (options.probe) {
    if (options.ready_file.empty()) throw usage_error(kCommand, "--probe needs --ready-file PATH");
    return options;
  }
  const auto socket = raw.find("socket");
  if (socket == raw.end()) throw usage_error(kCommand, "--socket PATH is required");
  options.socket_path = socket->second.values.front();
  if (options.socket_path.empty()) fail_value(kCommand, "--socket", options.socket_path, "is not a path (it is empty)");
  options.port = port_option(raw, "port", kCaptureTransparentPort);
  options.dns_port = port_option(raw, "dns-port", kCaptureDnsPort);
  options.listen_port = port_option(raw, "listen-port", defaults::kBridgePort);
  if (options.port == options.dns_port || options.port == options.listen_port ||
      options.dns_port == options.listen_port) {
    throw usage_error(kCommand, fmt::format("--port {}, --dns-port {} and --listen-port {} must differ",
                                            options.port, options.dns_port, options.listen_port));
  }
  options.serve_args = std::move(parsed.operands);
  for (const std::string& arg : options.serve_args) {
    // The socket is the sidecar's to name (the bridge must be given the same one).
    if (arg == "--socket" || arg.starts_with("--socket=")) {
      fail_value(kCommand, "--", arg, "names serve's socket: give it as the sidecar's --socket");
    }
  }
  return options;
}

// --probe: the ready file is there now, or appears within the timeout (checked every 50 ms).
int probe(const SidecarOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.probe_timeout);
  for (;;) {
    struct stat status {};
    if (::stat(options.ready_file.c_str(), &status) == 0) return as_status(ExitCode::ok);
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  fmt::print(stderr, "boxproxy sidecar: not ready ({} is not there)\n", options.ready_file);
  return as_status(ExitCode::failure);
}

int g_signal_pipe = -1;  // the write end: the handler's only way to the loop

void note_signal(int signal) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(signal);
  // A full pipe already holds a wake-up; nothing is lost that the loop would not see.
  if (::write(g_signal_pipe, &byte, 1) == -1) errno = saved;
  errno = saved;
}

std::vector<std::string> bridge_args(const SidecarOptions& options) {
  std::vector<std::string> args = {"boxproxy", "bridge", "--socket", options.socket_path, "--die-with-parent"};
  for (const char* address : {"127.0.0.1", "[::1]"}) {
    args.insert(args.end(), {"--listen", fmt::format("{}:{}", address, options.listen_port)});
    args.insert(args.end(), {"--transparent", fmt::format("{}:{}", address, options.port)});
    args.insert(args.end(), {"--dns", fmt::format("{}:{}", address, options.dns_port)});
  }
  return args;
}

// The ready file, made once both listen. Its contents say nothing a probe needs.
bool write_ready_file(const std::string& path) {
  UniqueFd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!file.valid()) {
    fmt::print(stderr, "boxproxy sidecar: --ready-file {}: {}\n", path, std::strerror(errno));
    return false;
  }
  const std::string text = fmt::format("READY=1\nPID={}\n", ::getpid());
  return ::write(file.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// Waits for a signal or a child's end; returns the exit code once the sidecar should stop.
int supervise_pair(pid_t serve, pid_t bridge, int signals) {
  for (;;) {
    pollfd wake{.fd = signals, .events = POLLIN, .revents = 0};
    (void)::poll(&wake, 1, 1000);  // the timeout only bounds a missed SIGCHLD
    unsigned char got[16];
    const ssize_t n = (wake.revents & POLLIN) != 0 ? ::read(signals, got, sizeof got) : 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (got[i] == SIGTERM || got[i] == SIGINT) {
        stop_child(bridge);
        stop_child(serve);
        return as_status(ExitCode::ok);
      }
      if (got[i] == SIGHUP) ::kill(serve, SIGHUP);  // re-read the host list
      if (got[i] == SIGUSR1) {
        ::kill(serve, SIGUSR1);
        ::kill(bridge, SIGUSR1);
      }
    }
    int status = 0;
    pid_t done = 0;
    // Reaps everything: as a container's pid 1 the sidecar also inherits orphans.
    while ((done = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (done != serve && done != bridge) continue;
      fmt::print(stderr, "boxproxy sidecar: {} ended (status {}); stopping the {}\n",
                 done == serve ? "serve" : "the bridge", exit_status(status), done == serve ? "bridge" : "proxy");
      stop_child(done == serve ? bridge : serve);
      return as_status(ExitCode::failure);
    }
  }
}

int sidecar(const SidecarOptions& options) {
  if (options.probe) return probe(options);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == -1) {
    throw StartupError{ExitCode::failure, fmt::format("pipe: {}", std::strerror(errno))};
  }
  UniqueFd signals(fds[0]);
  UniqueFd signals_write(fds[1]);
  g_signal_pipe = signals_write.get();
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGCHLD}) ::sigaction(signal, &action, nullptr);
  std::vector<std::string> serve_args = {"boxproxy", "serve", "--socket", options.socket_path, "--die-with-parent"};
  serve_args.insert(serve_args.end(), options.serve_args.begin(), options.serve_args.end());
  int status = 0;
  std::vector<std::string> placeholders;  // serve --placeholder's lines come before its listening line
  const pid_t serve = start_helper(serve_args, &status, &placeholders);
  // Stand-ins, not secrets (SPEC §19): on standard output, the container's log, for the agent's
  // supervisor to hand on.
  for (const std::string& line : placeholders) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (serve == -1) {
    // serve said why on standard error; a usage error in its options is the sidecar's too.
    const bool usage = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == as_status(ExitCode::usage);
    throw StartupError{usage ? ExitCode::usage : ExitCode::failure, "serve did not start"};
  }
  const pid_t bridge = start_helper(bridge_args(options), &status);
  if (bridge == -1) {
    stop_child(serve);
    throw StartupError{ExitCode::failure, "the bridge did not start"};
  }
  if (!options.ready_file.empty() && !write_ready_file(options.ready_file)) {
    stop_child(bridge);
    stop_child(serve);
    return as_status(ExitCode::failure);
  }
  fmt::print(stderr, "boxproxy sidecar: ready (serve {}, bridge {})\n", serve, bridge);
  const int code = supervise_pair(serve, bridge, signals.get());
  if (!options.ready_file.empty()) ::unlink(options.ready_file.c_str());
  return code;
}

}  // namespace

int run_sidecar_command(int argc, char** argv) {
  return run_command_shell(kCommand, &help_text, [argc, argv] { return sidecar(parse_sidecar_options(argc, argv)); });
}

}  // namespace boxproxy
