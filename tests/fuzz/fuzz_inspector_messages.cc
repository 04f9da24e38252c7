// SPDX-License-Identifier: Apache-2.0
// What the inspector process reads from serve (proxy/inspect/inspector: read_start and Inspector's
// reader of every later message), over a real channel (make_channel_pair), as a confused or
// compromised serve could write it. serve is the inspector's trusted parent, but the inspector
// holds the CA's key and every session's secrets: a message it misreads must end it, never corrupt
// it. The input is messages, one a line ("\n" ends each; serve's own never hold one). A line
// starting "N " (N from 1 to 4) goes with N descriptors, the inspector's ends of fresh socketpairs,
// as "connection" (the box's socket and the origin's, or the box's alone: with "pooled", or none
// yet) and "dialled" (the origin's) carry them.
// The first byte's low bit says whether the first line is the start message (read_start reads it,
// with a trust store); otherwise a fixed start is sent and every line is a later message.
// Invariants:
//   - no crash, no leak, nothing undefined (ASan, UBSan, LeakSanitizer);
//   - read_start either returns a set-up or throws std::runtime_error with a message;
//   - every message the inspector sends back is one serve's reader accepts (parse_inspector_report);
//   - a "connection" it cannot take (descriptors other than the box's, or the box's and the
//     origin's without "pooled") is answered at once by "ended" for that id;
//   - once the inspector and the loop are gone, every descriptor it was given is closed.
#include <dirent.h>
#include <fcntl.h>
#include <event2/event.h>
#include <openssl/pem.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/event_owners.h"
#include "proxy/fd_channel.h"
#include "proxy/inspect/inspector.h"
#include "proxy/inspect/session_ca.h"
#include "proxy/inspector_messages.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

constexpr std::size_t kMaxFds = 4;
constexpr int kPassesPerMessage = 2;
constexpr int kSendMs = 100;

// Descriptors this process holds (/proc/self/fd, less the one reading it).
int open_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  FUZZ_CHECK(dir != nullptr);
  int count = 0;
  while (::readdir(dir) != nullptr) ++count;
  ::closedir(dir);
  return count - 3;
}

// The trust store serve hands over: one CA's PEM, made once.
const std::string& trust_pem() {
  static const std::string pem = [] {
    const SessionCa ca = SessionCa::generate("fuzz-origin", std::chrono::system_clock::now());
    return ca.certificate_pem();
  }();
  return pem;
}

UniqueFd trust_file() {
  int fds[2];
  FUZZ_CHECK(::pipe2(fds, O_CLOEXEC) == 0);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const std::string& pem = trust_pem();
  FUZZ_CHECK(::write(write_end.get(), pem.data(), pem.size()) == static_cast<ssize_t>(pem.size()));
  return read_end;
}

std::string fixed_start() {
  InspectorStart start;
  start.label = "fuzz";
  start.endpoints_json = R"([{"host":"api.test","secrets":["api"],"inject":{"x-key":"{api}"}},)"
                         R"({"host":"*.example.test:8443","rules":[{"method":"GET","path":"/a/**"}]}])";
  return serve_message(start);
}

// One line of the input: the message, and how many descriptors go with it.
struct Line {
  std::string_view bytes;
  std::size_t fds = 0;
};

std::vector<Line> lines_of(std::string_view data) {
  std::vector<Line> out;
  while (!data.empty()) {
    const std::size_t end = data.find('\n');
    Line line{data.substr(0, end)};
    data.remove_prefix(end == std::string_view::npos ? data.size() : end + 1);
    if (line.bytes.size() >= 2 && line.bytes[0] >= '1' && line.bytes[0] <= '0' + static_cast<int>(kMaxFds) &&
        line.bytes[1] == ' ') {
      line.fds = static_cast<std::size_t>(line.bytes[0] - '0');
      line.bytes.remove_prefix(2);
    }
    out.push_back(line);
  }
  return out;
}

// Sends `line` with fresh socketpair ends; our ends are kept in `kept` (the box's and the origin's
// sides, silent) until the input is done. False when the channel takes no more.
bool send_line(int serve_end, const Line& line, std::vector<UniqueFd>& kept) {
  std::vector<UniqueFd> theirs;
  std::vector<int> raw;
  for (std::size_t i = 0; i < line.fds; ++i) {
    int pair[2];
    FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) == 0);
    kept.emplace_back(pair[0]);
    theirs.emplace_back(pair[1]);
    raw.push_back(pair[1]);
  }
  std::string error;
  return send_channel_message(serve_end, line.bytes, raw, kSendMs, error);
}

// Every report the inspector sent, each one serve accepts; the ids "ended" names.
void drain_reports(int serve_end, std::vector<std::uint64_t>& ended) {
  std::string error;
  while (auto message = receive_channel_message(serve_end, 0, error)) {
    const auto parsed = parse_inspector_report(message->bytes);
    const auto* report = std::get_if<InspectorReport>(&parsed);
    FUZZ_CHECK(report != nullptr);
    if (const auto* end = std::get_if<InspectorEnded>(report)) ended.push_back(end->id);
  }
}

void run(std::string_view data) {
  UniqueFd serve_end;
  UniqueFd inspector_end;
  FUZZ_CHECK(make_channel_pair(serve_end, inspector_end));
  std::vector<Line> lines = lines_of(data.substr(data.empty() ? 0 : 1));
  const bool fuzzed_start = !data.empty() && (data[0] & 1) != 0 && !lines.empty();
  std::string error;
  {
    UniqueFd trust = trust_file();
    const int fd = trust.get();
    const std::string start = fuzzed_start ? std::string(lines.front().bytes) : fixed_start();
    if (!send_channel_message(serve_end.get(), start, std::span<const int>(&fd, 1), kSendMs, error)) return;
  }
  if (fuzzed_start) lines.erase(lines.begin());
  std::optional<InspectorSetup> setup;
  try {
    setup.emplace(read_start(inspector_end.get()));
  } catch (const std::runtime_error& why) {
    FUZZ_CHECK(why.what()[0] != '\0');
    return;
  }
  EventBasePtr base(event_base_new());
  FUZZ_CHECK(base);
  std::vector<UniqueFd> kept;
  std::vector<std::uint64_t> ended;
  {
    Inspector inspector(base.get(), std::move(inspector_end), std::move(*setup));
    for (const Line& line : lines) {
      if (inspector.finished() || !send_line(serve_end.get(), line, kept)) break;
      for (int i = 0; i < kPassesPerMessage && !inspector.finished(); ++i) event_base_loop(base.get(), EVLOOP_NONBLOCK);
      drain_reports(serve_end.get(), ended);
      // A connection it did not take is ended at once: serve's slot is never held for nothing.
      const auto parsed = parse_serve_message(line.bytes);
      const auto* order = std::get_if<InspectorOrder>(&parsed);
      const auto* connection = order ? std::get_if<InspectorConnection>(&*order) : nullptr;
      const bool takeable = connection != nullptr && (line.fds == 1 || (line.fds == 2 && !connection->pooled));
      if (connection != nullptr && !takeable && !inspector.finished()) {
        FUZZ_CHECK(!ended.empty() && ended.back() == connection->id);
      }
    }
  }
  for (int i = 0; i < 3; ++i) event_base_loop(base.get(), EVLOOP_NONBLOCK);  // the closer's late closes
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)trust_pem();  // made once, before the count
  // Counted around each input: libFuzzer and LeakSanitizer open descriptors of their own between.
  const int before = open_descriptors();
  run(fuzz::as_text(data, size));
  FUZZ_CHECK(open_descriptors() == before);
  return 0;
}
