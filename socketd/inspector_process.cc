// SPDX-License-Identifier: Apache-2.0
// Starting serve's request inspector (socketd/inspector_process.h).
#include "socketd/inspector_process.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "proxy/fd_channel.h"
#include "proxy/inspector_messages.h"
#include "socketd/exit_code.h"

extern char** environ;

namespace boxproxy {
namespace {

constexpr const char* kInspectorName = "boxproxy-inspect";
constexpr const char* kSystemTrustStore = "/etc/ssl/certs/ca-certificates.crt";
constexpr int kChannelFd = 3;
constexpr int kExecutableFd = 4;
constexpr int kReadyTimeoutMs = 10'000;

[[noreturn]] void fail(std::string message) { throw StartupError{ExitCode::failure, std::move(message)}; }

// The inspector executable, held open by descriptor from here on: it is looked up once, next to
// this executable (the build tree, /usr/bin) or in the package's libexec directory, and what is
// run is what was opened, whatever is renamed over that path meanwhile.
UniqueFd open_inspector_executable() {
  std::vector<std::string> candidates;
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/') + 1);
    candidates.push_back(dir + kInspectorName);
  }
  candidates.push_back(std::string(BOXPROXY_LIBEXEC_DIR) + "/" + kInspectorName);
  for (const std::string& path : candidates) {
    UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (fd.valid()) return fd;
  }
  fail(fmt::format("request inspection needs {}, found neither next to boxproxy nor in {}", kInspectorName,
                   BOXPROXY_LIBEXEC_DIR));
}

UniqueFd open_readable(const std::string& path, std::string_view what) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) fail(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
  return fd;
}

// In the child, between fork and exec: only what async-signal-safe calls may do.
// `confined`: serve confines itself, and so the inspector does too (without, --no-confine).
[[noreturn]] void exec_inspector(int executable, int channel, bool confined) noexcept {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives serve
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) (void)::dup2(devnull, STDIN_FILENO);
  // Both out of the way first, so that placing one cannot overwrite the other.
  const int exe = ::fcntl(executable, F_DUPFD_CLOEXEC, 10);
  const int chan = ::fcntl(channel, F_DUPFD_CLOEXEC, 10);
  if (exe == -1 || chan == -1) ::_exit(127);
  // The channel as descriptor 3, inherited; the executable as 4, close-on-exec (execveat runs an
  // ELF file from such a descriptor). Nothing else of serve's: no socket, log or audit file.
  if (::dup2(chan, kChannelFd) == -1 || ::dup3(exe, kExecutableFd, O_CLOEXEC) == -1) ::_exit(127);
  (void)::syscall(SYS_close_range, kExecutableFd + 1, ~0U, 0);
  char name[] = "boxproxy-inspect";
  char no_confine[] = "--no-confine";
  char* argv[] = {name, confined ? nullptr : no_confine, nullptr};
  (void)::syscall(SYS_execveat, kExecutableFd, "", argv, environ, AT_EMPTY_PATH);
  ::_exit(127);
}

std::string ready_ca(int channel, pid_t pid) {
  std::string error;
  auto message = receive_channel_message(channel, kReadyTimeoutMs, error);
  if (!message) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      fail(fmt::format("the request inspector did not start (it exited {}; its reason is on standard error)",
                       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
    }
    fail("the request inspector did not start: " + error);
  }
  auto parsed = parse_inspector_report(message->bytes);
  const auto* report = std::get_if<InspectorReport>(&parsed);
  const auto* ready = report != nullptr ? std::get_if<InspectorReady>(report) : nullptr;
  if (ready == nullptr) fail("the request inspector did not say it was ready");
  return ready->ca_pem;
}

}  // namespace

StartedInspector start_inspector(const ServeOptions& options, const std::string& label,
                                 const std::string& endpoints_json) {
  UniqueFd executable = open_inspector_executable();
  std::vector<UniqueFd> files;
  files.push_back(open_readable(options.upstream_ca.value_or(kSystemTrustStore), "--upstream-ca"));
  if (options.ca_cert && options.ca_key) {
    files.push_back(open_readable(*options.ca_cert, "--ca-cert"));
    files.push_back(open_readable(*options.ca_key, "--ca-key"));
  }
  UniqueFd ours, theirs;
  if (!make_channel_pair(ours, theirs)) fail(fmt::format("cannot make the inspector's channel: {}", std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid == -1) fail(fmt::format("cannot start the request inspector: {}", std::strerror(errno)));
  if (pid == 0) exec_inspector(executable.get(), theirs.get(), options.confine);
  theirs.reset();
  StartedInspector started;
  started.pid = pid;
  try {
    std::vector<int> fds;
    for (const UniqueFd& file : files) fds.push_back(file.get());
    std::string error;
    // serve's own head and idle timeouts and head bound hold inside TLS as well (SPEC §18).
    const std::string start =
        serve_message(InspectorStart{label, options.proxy.log_paths, endpoints_json, options.proxy.head_timeout,
                                     options.proxy.idle_timeout, options.proxy.max_head_bytes,
                                     options.proxy.max_held_body});
    if (!send_channel_message(ours.get(), start, fds, kReadyTimeoutMs, error)) {
      fail("cannot tell the request inspector its endpoints: " + error);
    }
    started.ca_pem = ready_ca(ours.get(), pid);
  } catch (...) {
    (void)::kill(pid, SIGKILL);
    (void)::waitpid(pid, nullptr, 0);
    throw;
  }
  started.channel = std::move(ours);
  return started;
}

void write_ca_out(const std::string& path, const std::string& pem) {
  const std::string temporary = path + ".tmp";
  UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) fail(fmt::format("--ca-out {}: {}", path, std::strerror(errno)));
  (void)::fchmod(fd.get(), 0644);  // whatever the umask: the box's clients read it
  std::size_t written = 0;
  while (written < pem.size()) {
    const ssize_t n = ::write(fd.get(), pem.data() + written, pem.size() - written);
    if (n <= 0) fail(fmt::format("--ca-out {}: {}", path, std::strerror(errno)));
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
    fail(fmt::format("--ca-out {}: {}", path, std::strerror(errno)));
  }
}

}  // namespace boxproxy
