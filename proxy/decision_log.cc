#include "proxy/decision_log.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace boxproxy {
namespace {

// Past this much buffered text the log is written at once rather than at the end of the loop
// iteration: a burst of decisions cannot grow the buffer without bound.
constexpr std::size_t kLogFlushThreshold = 64 * 1024;

std::string utc_timestamp() {
  timeval now{};
  gettimeofday(&now, nullptr);
  tm parts{};
  gmtime_r(&now.tv_sec, &parts);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", parts.tm_year + 1900, parts.tm_mon + 1,
                     parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_usec / 1000);
}

// Writes all of `text`, retrying on EINTR and short writes. A log that cannot be written is
// dropped rather than blocking the loop forever (the fd is blocking only for files and pipes).
// Returns false on failure, with `written` saying how much of `text` reached the file.
bool write_all(int fd, std::string_view text, std::size_t& written) noexcept {
  written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n == -1) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<std::size_t>(n);
  }
  return true;
}

// Writes whole lines or nothing: when a write fails part-way (a full disk), the part that reached
// a regular file is cut off again, so the next line never ends up glued to half of this one.
bool write_lines(int fd, std::string_view lines) noexcept {
  std::size_t written = 0;
  if (write_all(fd, lines, written)) return true;
  const int saved = errno;
  struct stat st {};
  if (written > 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) >= written) {
    (void)::ftruncate(fd, st.st_size - static_cast<off_t>(written));
  }
  errno = saved;
  return false;
}

std::string json_decision(const DecisionEntry& e, const std::string& ts) {
  std::string_view cls = e.refusal ? log_class(*e.refusal) : std::string_view("ok");
  return fmt::format(R"({{"ts":"{}","kind":"{}","host":{},"port":{},"ip":{},"class":{}}})", ts, kind_name(e.kind),
                     e.host ? json_quote(*e.host) : std::string("null"), e.port, json_quote(e.ip), json_quote(cls));
}

std::string json_done(const DoneEntry& e, const std::string& ts) {
  return fmt::format(R"({{"ts":"{}","kind":"{}","host":{},"port":{},"ip":{},"class":"done","up":{},"down":{},"ms":{}}})",
                     ts, kind_name(e.kind), json_quote(e.host), e.port, json_quote(e.ip), e.up, e.down, e.ms);
}

}  // namespace

std::string_view kind_name(ClientKind kind) noexcept {
  switch (kind) {
    case ClientKind::connect: return "connect";
    case ClientKind::http: return "http";
    case ClientKind::socks: return "socks";
    case ClientKind::socks4: return "socks4";
  }
  return "?";
}

std::string json_quote(std::string_view text, std::size_t max_chars) {
  if (text.size() > max_chars) text = text.substr(0, max_chars);
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      // Every byte outside printable ASCII becomes \u00XX: no newline, no escape sequence and no
      // invalid UTF-8 can reach a log reader.
      out += fmt::format("\\u{:04x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

DecisionLog::DecisionLog(event_base* base, bool json, int log_fd, bool owns_log_fd, UniqueFd audit)
    : json_(json), log_fd_(log_fd), owns_log_fd_(owns_log_fd), audit_(std::move(audit)) {
  if (base != nullptr) flush_event_ = make_event(base, -1, 0, &DecisionLog::on_flush, this);
}

DecisionLog::~DecisionLog() {
  flush();
  if (owns_log_fd_ && log_fd_ != -1) ::close(log_fd_);
}

void DecisionLog::decision(const DecisionEntry& entry) {
  // The JSON form (and its timestamp) only when the audit or a JSON log wants it: the text log
  // is the common case, and this runs for every decision.
  if (audit_.valid() || json_) {
    const std::string json_line = json_decision(entry, utc_timestamp());
    // A refusal reaches the disk before it is answered (SPEC §2 --audit): fdatasync here.
    if (audit_.valid()) audit(json_line, entry.refusal.has_value());
    if (json_) {
      append(json_line);
      return;
    }
  }
  const std::string_view cls = entry.refusal ? log_class(*entry.refusal) : std::string_view("ok");
  append(fmt::format("egress {} host={} port={} ip={} class={}", kind_name(entry.kind),
                     entry.host ? json_quote(*entry.host) : std::string("-"), entry.port, entry.ip, cls));
}

void DecisionLog::done(const DoneEntry& entry) {
  if (audit_.valid() || json_) {
    const std::string json_line = json_done(entry, utc_timestamp());
    if (audit_.valid()) audit(json_line, false);
    if (json_) {
      append(json_line);
      return;
    }
  }
  append(fmt::format("egress {} host={} port={} ip={} class=done up={} down={} ms={}", kind_name(entry.kind),
                     json_quote(entry.host), entry.port, entry.ip, entry.up, entry.down, entry.ms));
}

void DecisionLog::message(std::string_view text) {
  if (json_) {
    append(fmt::format(R"({{"ts":"{}","event":"message","text":{}}})", utc_timestamp(), json_quote(text, 4096)));
  } else {
    append(fmt::format("boxproxy: {}", text));
  }
}

void DecisionLog::raw_line(std::string_view line) { append(line); }

void DecisionLog::append(std::string_view line) {
  pending_.append(line);
  pending_.push_back('\n');
  if (pending_.size() >= kLogFlushThreshold || !flush_event_) {
    flush();
  } else if (!flush_scheduled_) {
    // Written once the loop has run this iteration's callbacks: one write for a burst of lines.
    flush_scheduled_ = true;
    event_active(flush_event_.get(), 0, 0);
  }
}

void DecisionLog::flush() noexcept {
  if (!pending_.empty()) {
    (void)write_lines(log_fd_, pending_);
    pending_.clear();
  }
}

void DecisionLog::on_flush(evutil_socket_t, short, void* self) {
  auto* log = static_cast<DecisionLog*>(self);
  log->flush_scheduled_ = false;
  log->flush();
}

void DecisionLog::audit(std::string_view json_line, bool sync) {
  std::string line(json_line);
  line.push_back('\n');
  bool ok = write_lines(audit_.get(), line);
  if (ok && sync) ok = ::fdatasync(audit_.get()) == 0;
  if (!ok) {
    ++audit_failures_;
    // The refusal still stands (it is answered whatever happens to the audit); the failure is
    // logged once when it starts, and again when writes succeed after it.
    if (!audit_failing_) {
      audit_failing_ = true;
      message(fmt::format("audit: write failed: {}", std::strerror(errno)));
    }
  } else if (audit_failing_) {
    audit_failing_ = false;
    message("audit: writes succeed again");
  }
}

}  // namespace boxproxy
