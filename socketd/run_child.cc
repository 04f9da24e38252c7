// SPDX-License-Identifier: Apache-2.0
// The processes `boxproxy run` starts and waits for: serve and the bridge, started again from
// this binary and awaited until they listen; the signals a waiting parent passes on; and the
// ways a child is waited for and stopped.
#include "socketd/run_child.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "proxy/unique_fd.h"
#include "socketd/exit_code.h"
#include "table/secret_value.h"

namespace boxproxy {
namespace {

// How long serve and the bridge may take to say they listen, and to exit after SIGTERM (both
// exit within a second by contract; the rest is slack for a loaded machine).
constexpr double kStartSeconds = 10;
constexpr double kStopSeconds = 3;

// One listening line is far below this; a helper that writes more is not ours.
constexpr std::size_t kMaxLineBytes = 64 * 1024;

// The signals run, the box and pid 1 pass on to the command.
constexpr int kForwardedSignals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_forward_to = 0;  // the child that receives the signals we pass on

void forward_signal(int signal) {
  const pid_t child = g_forward_to;
  if (child > 0) ::kill(child, signal);
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
  ::_exit(as_status(ExitCode::setup_failed));
}

// One line from `fd`, within `seconds`; nullopt on EOF, an error or the time running out. `data`
// holds what was read past the line (the next one's start) for the next call.
std::optional<std::string> read_line(int fd, double seconds, std::string& data) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
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
  const std::size_t end = data.find('\n');
  std::string line = data.substr(0, end);
  data.erase(0, end + 1);
  return line;
}

}  // namespace

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

void stop_forwarding() noexcept { g_forward_to = 0; }

std::optional<std::string> close_inherited_descriptors() {
  if (::close_range(3, ~0U, 0) == 0) return std::nullopt;
  if (errno != ENOSYS) return fmt::format("boxproxy run: close_range: {}", std::strerror(errno));
  // Before Linux 5.9: each descriptor /proc/self/fd lists (the host's /proc, still in view here).
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fmt::format("boxproxy run: cannot list /proc/self/fd: {}", std::strerror(errno));
  std::vector<int> open;
  while (const dirent* entry = ::readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    if (fd > STDERR_FILENO && fd != ::dirfd(dir)) open.push_back(fd);
  }
  ::closedir(dir);
  for (const int fd : open) ::close(fd);
  return std::nullopt;
}

int exit_status(int status) noexcept {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return as_status(ExitCode::setup_failed);
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

// Starts a helper (serve or bridge) and waits for its listening line. On success the pid; on
// failure -1 with the helper reaped and *status set to its wait status (-1: it was stopped for
// being too slow).
pid_t start_helper(const std::vector<std::string>& args, int* status, std::vector<std::string>* before) {
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
  std::string pending;
  std::optional<std::string> line = read_line(read_end.get(), kStartSeconds, pending);
  // serve's placeholder lines (SPEC §19) come first, one per --placeholder: at most kMaxSecrets.
  for (std::size_t n = 0; before != nullptr && line && n < kMaxSecrets; ++n) {
    if (!line->starts_with("{\"event\":\"placeholder\"")) break;
    before->push_back(std::move(*line));
    line = read_line(read_end.get(), kStartSeconds, pending);
  }
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

}  // namespace boxproxy
