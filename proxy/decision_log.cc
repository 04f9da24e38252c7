// SPDX-License-Identifier: Apache-2.0
#include "proxy/decision_log.h"

#include "table/secret_value.h"

#include <fcntl.h>
#include <fmt/format.h>

#include "proxy/utc_time.h"
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace boxproxy {
namespace {

// Past this much queued text the log is written at once rather than at the end of the loop
// iteration: a burst of decisions is written in pieces of this size.
constexpr std::size_t kLogFlushThreshold = 64 * 1024;

// The most the log may hold for a reader that does not keep up; past it, whole lines are dropped
// and counted. Derived: one loop iteration can decide for every handshaking client at once
// (kMaxHandshakingClients, 1,024) and a typical line is about 150 to 250 bytes, so 256 KiB holds
// such a burst whole, about four pipe buffers' worth (64 KiB each); a stalled reader costs at
// most this much memory.
constexpr std::size_t kLogQueueBytes = 256 * 1024;

// Longest operational message kept (before escaping): libevent's own are cut at 1,024 bytes.
constexpr std::size_t kMessageMaxChars = 4096;

std::string utc_timestamp() {
  timeval now{};
  gettimeofday(&now, nullptr);
  const UtcTime t = utc_time(now.tv_sec);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", t.year, t.month, t.day, t.hour, t.minute, t.second,
                     now.tv_usec / 1000);
}

// Writes all of `text` to a regular file, retrying on EINTR and short writes. Returns false on
// failure, with `written` saying how much of `text` reached the file.
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
    // Best effort: if the cut fails too, there is nothing more to do than report the write.
    if (::ftruncate(fd, st.st_size - static_cast<off_t>(written)) == -1) errno = saved;
  }
  errno = saved;
  return false;
}

// `label` is the `,"label":..` suffix of every JSON line, or empty.
std::string json_decision(const DecisionEntry& e, const std::string& ts, std::string_view label) {
  std::string_view cls = e.refusal ? log_class(*e.refusal) : std::string_view("ok");
  std::string asked = e.asked ? fmt::format(R"(,"asked":{})", json_quote(*e.asked)) : std::string();
  if (e.secret) asked += fmt::format(R"(,"secret":{})", json_quote(*e.secret, 32));
  if (e.tls) asked += fmt::format(R"(,"tls":"{}")", tls_failure_name(*e.tls));
  return fmt::format(R"({{"ts":"{}","id":{},"kind":"{}","host":{},"port":{},"ip":{},"class":{}{}{}}})", ts, e.id,
                     kind_name(e.kind), e.host ? json_quote(*e.host) : std::string("null"), e.port, json_quote(e.ip),
                     json_quote(cls), asked, label);
}

std::string json_done(const DoneEntry& e, const std::string& ts, std::string_view label) {
  const std::string tls = e.tls ? fmt::format(R"(,"tls":"{}")", tls_failure_name(*e.tls)) : std::string();
  return fmt::format(
      R"({{"ts":"{}","id":{},"kind":"{}","host":{},"port":{},"ip":{},"class":"done","up":{},"down":{},"ms":{},"end":"{}"{}{}}})",
      ts, e.id, kind_name(e.kind), json_quote(e.host), e.port, json_quote(e.ip), e.up, e.down, e.ms,
      tunnel_end_name(e.end), tls, label);
}

// "a,b" (checked secret names) as the elements of a JSON array: "a","b".
std::string json_names(std::string_view names) {
  std::string out;
  while (true) {
    const std::size_t comma = names.find(',');
    if (!out.empty()) out += ',';
    out += json_quote(names.substr(0, comma), 200);
    if (comma == std::string_view::npos) return out;
    names.remove_prefix(comma + 1);
  }
}

std::string json_request(const RequestEntry& e, const std::string& ts, std::string_view label) {
  std::string out = fmt::format(
      R"({{"ts":"{}","id":{},"kind":"request","host":{},"port":{},"method":{},"rule":{},"class":"{}","status":{},"up":{},"down":{},"ms":{})",
      ts, e.id, json_quote(e.host), e.port, json_quote(e.method, 32), json_quote(e.rule, 80),
      e.refusal ? log_class(*e.refusal) : "ok", e.status, e.up, e.down, e.ms);
  if (e.report) out += R"(,"report":true,"would":"deny")";
  if (e.path) out += fmt::format(R"(,"path":{})", json_quote(*e.path, 2048));
  if (e.secret) out += fmt::format(R"(,"secret":{})", json_quote(*e.secret, 32));
  if (!e.swap.empty()) out += fmt::format(R"(,"swap":[{}])", json_names(e.swap));
  if (!e.inject.empty()) out += fmt::format(R"(,"inject":[{}])", json_names(e.inject));
  if (!e.sign.empty()) out += fmt::format(R"(,"sign":{})", json_quote(e.sign, 16));
  if (!e.asked.empty()) out += fmt::format(R"(,"asked":{})", json_quote(e.asked, 16));
  if (!e.scrub.empty()) out += fmt::format(R"(,"scrub":[{}])", json_names(e.scrub));
  out += label;
  out += '}';
  return out;
}

}  // namespace

std::string_view kind_name(ClientKind kind) noexcept {
  switch (kind) {
    case ClientKind::connect: return "connect";
    case ClientKind::http: return "http";
    case ClientKind::socks: return "socks";
    case ClientKind::socks4: return "socks4";
    case ClientKind::resolve: return "resolve";
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
    } else if (c >= 0x80) {
      // A byte of 0x80 or more is the text \xHH (an escaped backslash, then xHH), never \u0080:
      // that would decode to a C1 control (U+0080..U+009F), which some terminals act on (SPEC §12).
      out += fmt::format("\\\\x{:02x}", c);
    } else if (c < 0x20 || c == 0x7f) {
      // A control byte becomes \u00XX: no newline and no raw escape sequence reaches a log reader.
      out += fmt::format("\\u{:04x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

namespace {

// Text for a text-format message line: printable ASCII only, so no message (libevent's, or one
// quoting a file) can break a line or carry an escape sequence to a terminal.
std::string printable(std::string_view text) {
  if (text.size() > kMessageMaxChars) text = text.substr(0, kMessageMaxChars);
  std::string out(text);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

// A field's value on a text line (a method, a rule's label): printable ASCII without spaces, cut
// at `max_chars`, so that it can neither end the line nor pass for the next field.
std::string field_text(std::string_view text, std::size_t max_chars) {
  std::string out(text.substr(0, max_chars));
  for (char& c : out) {
    if (c <= 0x20 || c > 0x7e) c = '?';
  }
  return out.empty() ? std::string("-") : out;
}

// The length of the longest run of whole lines at the start of `text` that fits in `limit` bytes;
// the first line whole when it alone is longer (a long message line may then be cut by a full pipe).
std::size_t whole_lines_within(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return text.size();
  const std::size_t last_newline = text.substr(0, limit).rfind('\n');
  if (last_newline != std::string_view::npos) return last_newline + 1;
  const std::size_t first_newline = text.find('\n');
  return first_newline == std::string_view::npos ? text.size() : first_newline + 1;
}

}  // namespace

DecisionLog::DecisionLog(event_base* base, bool json, int log_fd, bool owns_log_fd, UniqueFd audit)
    : json_(json), log_fd_(log_fd), owns_log_fd_(owns_log_fd), audit_(std::move(audit)) {
  struct stat st {};
  if (::fstat(log_fd_, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
    mode_ = WriteMode::regular_file;
  } else if (S_ISSOCK(st.st_mode)) {
    mode_ = WriteMode::socket;
  } else {
    // A pipe, FIFO or terminal. O_NONBLOCK on the inherited descriptor would change the open file
    // description the supervisor shares (its own writes would start failing with EAGAIN); a new
    // one opened through /proc has its own flags. Where that is refused, poll before each write.
    const std::string path = fmt::format("/proc/self/fd/{}", log_fd_);
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd != -1) {
      reopened_log_.reset(fd);
      mode_ = WriteMode::nonblocking;
    } else {
      mode_ = WriteMode::poll_guarded;
    }
  }
  if (base != nullptr) {
    flush_event_ = make_event(base, -1, 0, &DecisionLog::on_flush, this);
    if (mode_ != WriteMode::regular_file) {
      const int fd = reopened_log_.valid() ? reopened_log_.get() : log_fd_;
      writable_event_ = make_event(base, fd, EV_WRITE, &DecisionLog::on_log_writable, this);
    }
  }
}

DecisionLog::~DecisionLog() {
  flush();
  writable_event_.reset();
  flush_event_.reset();
  if (owns_log_fd_ && log_fd_ != -1) ::close(log_fd_);
}

void DecisionLog::decision(const DecisionEntry& entry, AuditSync sync) {
  // The JSON form (and its timestamp) only when the audit or a JSON log wants it: the text log
  // is the common case, and this runs for every decision.
  if (audit_.valid() || json_ || observer_) {
    const std::string json_line = json_decision(entry, utc_timestamp(), json_label());
    if (observer_) observer_(json_line);
    // A refusal reaches the disk before it is answered (SPEC §2 --audit): fdatasync now, or with
    // this loop iteration's other refusals when the caller holds its answer until then.
    if (audit_.valid()) audit(json_line, entry.refusal ? std::optional<AuditSync>(sync) : std::nullopt);
    if (json_) {
      append(json_line);
      return;
    }
  }
  const std::string_view cls = entry.refusal ? log_class(*entry.refusal) : std::string_view("ok");
  std::string asked = entry.asked ? fmt::format(" asked={}", *entry.asked) : std::string();
  if (entry.secret) asked += fmt::format(" secret={}", field_text(*entry.secret, 32));
  if (entry.tls) asked += fmt::format(" tls={}", tls_failure_name(*entry.tls));
  append(fmt::format("egress {} host={} port={} ip={} class={}{} id={}{}", kind_name(entry.kind),
                     entry.host ? json_quote(*entry.host) : std::string("-"), entry.port, entry.ip, cls, asked,
                     entry.id, text_label()));
}

void DecisionLog::done(const DoneEntry& entry) {
  if (audit_.valid() || json_ || observer_) {
    const std::string json_line = json_done(entry, utc_timestamp(), json_label());
    if (observer_) observer_(json_line);
    if (audit_.valid()) audit(json_line, std::nullopt);
    if (json_) {
      append(json_line);
      return;
    }
  }
  const std::string tls = entry.tls ? fmt::format(" tls={}", tls_failure_name(*entry.tls)) : std::string();
  append(fmt::format("egress {} host={} port={} ip={} class=done up={} down={} ms={} end={}{} id={}{}",
                     kind_name(entry.kind), json_quote(entry.host), entry.port, entry.ip, entry.up, entry.down,
                     entry.ms, tunnel_end_name(entry.end), tls, entry.id, text_label()));
}

void DecisionLog::request(const RequestEntry& entry) {
  if (audit_.valid() || json_ || observer_) {
    const std::string json_line = json_request(entry, utc_timestamp(), json_label());
    if (observer_) observer_(json_line);
    if (audit_.valid()) audit(json_line, entry.refusal ? std::optional(AuditSync::now) : std::nullopt);
    if (json_) {
      append(json_line);
      return;
    }
  }
  // The method and rule were checked where they came from (tokens, printable ASCII); field_text
  // holds that here too. The host and path are quoted as every host is.
  std::string line = fmt::format("egress request host={} port={} method={} rule={} class={} status={} up={} down={} ms={}",
                                 json_quote(entry.host), entry.port, field_text(entry.method, 32),
                                 field_text(entry.rule, 80),
                                 entry.refusal ? log_class(*entry.refusal) : "ok", entry.status, entry.up, entry.down,
                                 entry.ms);
  if (entry.report) line += " report=1 would=deny";
  if (entry.path) line += fmt::format(" path={}", json_quote(*entry.path, 2048));
  if (entry.secret) line += fmt::format(" secret={}", field_text(*entry.secret, 32));
  if (!entry.swap.empty()) line += fmt::format(" swap={}", field_text(entry.swap, kMaxSecrets * 200));
  if (!entry.inject.empty()) line += fmt::format(" inject={}", field_text(entry.inject, kMaxSecrets * 200));
  if (!entry.sign.empty()) line += fmt::format(" sign={}", field_text(entry.sign, 16));
  if (!entry.asked.empty()) line += fmt::format(" asked={}", field_text(entry.asked, 16));
  if (!entry.scrub.empty()) line += fmt::format(" scrub={}", field_text(entry.scrub, kMaxSecrets * 33));
  line += fmt::format(" id={}{}", entry.id, text_label());
  append(line);
}

void DecisionLog::message(std::string_view text) {
  if (json_) {
    append(fmt::format(R"({{"ts":"{}","event":"message","text":{}{}}})", utc_timestamp(),
                       json_quote(text, kMessageMaxChars), json_label()));
  } else {
    append(fmt::format("boxproxy: {}{}", printable(text), text_label()));
  }
}

void DecisionLog::raw_line(std::string_view line) { append(with_label(line)); }

void DecisionLog::set_label(std::string_view label) {
  if (label.empty()) {
    json_label_.clear();
    text_label_.clear();
    return;
  }
  // Made once, not per line. The caller checked the label (printable ASCII, kMaxLabelChars), so
  // json_quote only escapes its quotes and backslashes; the text form is last on its line,
  // unquoted, and runs to the line's end (a label may hold spaces).
  json_label_ = fmt::format(",\"label\":{}", json_quote(label, kMaxLabelChars));
  text_label_ = fmt::format(" label={}", printable(label.substr(0, kMaxLabelChars)));
}

std::string DecisionLog::with_label(std::string_view object) const {
  if (json_label_.empty() || object.empty() || object.back() != '}') return std::string(object);
  std::string out(object.substr(0, object.size() - 1));
  out += json_label();
  out.push_back('}');
  return out;
}

std::string DecisionLog::log_dropped_line() const {
  return with_label(fmt::format("{{\"event\":\"log-dropped\",\"n\":{}}}", dropped_)) + "\n";
}

void DecisionLog::append(std::string_view line) {
  if (pending_.size() + line.size() + 1 > kLogQueueBytes) {
    // The reader is this far behind: drop the whole line and count it; a log-dropped line says
    // how many once the queue has drained (write_queue). Memory stays bounded whatever it does.
    ++dropped_;
    schedule_flush();
    return;
  }
  // Grown by hand: std::string's doubling would let the queue's capacity reach twice the bound.
  const std::size_t need = pending_.size() + line.size() + 1;
  if (need > pending_.capacity()) pending_.reserve(std::min(std::max(need, 2 * pending_.capacity()), kLogQueueBytes));
  pending_.append(line);
  pending_.push_back('\n');
  const bool reader_behind = writable_event_ && event_pending(writable_event_.get(), EV_WRITE, nullptr) != 0;
  if ((pending_.size() >= kLogFlushThreshold && !reader_behind) || !flush_event_) {
    write_queue();
  } else {
    schedule_flush();
  }
}

void DecisionLog::schedule_flush() noexcept {
  if (flush_scheduled_ || !flush_event_) return;
  // Run once the loop has run this iteration's callbacks: one write for a burst of lines, and one
  // fdatasync for a burst of refusals.
  flush_scheduled_ = true;
  event_active(flush_event_.get(), 0, 0);
}

void DecisionLog::flush() noexcept {
  sync_audit_now();
  write_queue();
}

void DecisionLog::drop_queue() noexcept {
  dropped_ += static_cast<std::uint64_t>(std::count(pending_.begin(), pending_.end(), '\n'));
  pending_.clear();
}

void DecisionLog::write_queue() noexcept {
  if (mode_ == WriteMode::regular_file) {
    // A file is written whole lines or nothing (write_lines); what a full disk refuses is counted.
    if (!pending_.empty() && !write_lines(log_fd_, pending_)) drop_queue();
    release_queue();
    if (dropped_ > 0) {
      const std::string line = log_dropped_line();
      if (write_lines(log_fd_, line)) dropped_ = 0;
    }
    return;
  }
  const int fd = reopened_log_.valid() ? reopened_log_.get() : log_fd_;
  for (int round = 0; round < 2; ++round) {
    std::size_t written = 0;
    while (written < pending_.size()) {
      std::size_t want = pending_.size() - written;
      ssize_t n = -1;
      if (mode_ == WriteMode::socket) {
        n = ::send(fd, pending_.data() + written, want, MSG_DONTWAIT | MSG_NOSIGNAL);
      } else {
        // A pipe takes a write of at most PIPE_BUF bytes whole or not at all: written as whole
        // lines in such pieces, what a reader finds in it, even after we exit, is whole lines.
        want = whole_lines_within(std::string_view(pending_).substr(written), PIPE_BUF);
        if (mode_ == WriteMode::poll_guarded) {
          // A blocking pipe that polls writable has room for PIPE_BUF bytes: such a write cannot
          // block.
          pollfd p{fd, POLLOUT, 0};
          if (::poll(&p, 1, 0) != 1 || (p.revents & POLLOUT) == 0) {
            errno = (p.revents & (POLLERR | POLLHUP)) != 0 ? EPIPE : EAGAIN;
            break;
          }
        }
        n = ::write(fd, pending_.data() + written, want);
      }
      if (n == -1) {
        if (errno == EINTR) continue;
        break;
      }
      written += static_cast<std::size_t>(n);
    }
    const int error = errno;
    pending_.erase(0, written);
    if (!pending_.empty()) {
      if (error == EAGAIN || error == EWOULDBLOCK) {
        // The reader is behind: try again when the log takes more (never wait here).
        if (writable_event_) event_add(writable_event_.get(), nullptr);
      } else {
        drop_queue();  // the reader is gone (EPIPE) or the log is broken: nothing will take it
      }
      return;
    }
    // Writing works again: say how many lines were lost, once.
    if (dropped_ == 0) {
      release_queue();
      return;
    }
    pending_.assign(log_dropped_line());
    dropped_ = 0;
  }
}

void DecisionLog::release_queue() noexcept {
  pending_.clear();
  // After a burst, give the memory back: an idle proxy holds no large log buffer.
  if (pending_.capacity() > kLogFlushThreshold) std::string().swap(pending_);
}

void DecisionLog::on_flush(evutil_socket_t, short, void* self) noexcept {
  auto* log = static_cast<DecisionLog*>(self);
  log->flush_scheduled_ = false;
  log->flush();
}

void DecisionLog::on_log_writable(evutil_socket_t, short, void* self) noexcept {
  static_cast<DecisionLog*>(self)->write_queue();
}

void DecisionLog::audit(std::string_view json_line, std::optional<AuditSync> sync) {
  std::string line(json_line);
  line.push_back('\n');
  if (!write_lines(audit_.get(), line)) {
    audit_result(false);
  } else if (!sync) {
    audit_result(true);  // an ok or done line: the disk gets it in its own time
  } else if (*sync == AuditSync::now) {
    audit_result(::fdatasync(audit_.get()) == 0);
  } else {
    // Group commit: one fdatasync at the end of this loop iteration covers every refusal in it.
    audit_sync_owed_ = true;
    schedule_flush();
  }
}

void DecisionLog::sync_audit_now() noexcept {
  if (!audit_sync_owed_) return;
  audit_sync_owed_ = false;
  audit_result(::fdatasync(audit_.get()) == 0);
}

void DecisionLog::audit_result(bool ok) {
  if (!ok) {
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

// ---------------------------------------------------------------------------------------------
// libevent's own messages

namespace {

DecisionLog* libevent_log_target = nullptr;
bool in_libevent_message = false;

void on_libevent_message(int severity, const char* text) noexcept {
  // Outside a LibeventLogRoute's life (teardown) the message is dropped, never written raw; a
  // message raised while one is being logged is dropped too (no recursion into the log).
  if (libevent_log_target == nullptr || in_libevent_message || text == nullptr) return;
  in_libevent_message = true;
  std::string_view level = "msg";
  if (severity == EVENT_LOG_DEBUG) level = "debug";
  if (severity == EVENT_LOG_WARN) level = "warn";
  if (severity == EVENT_LOG_ERR) level = "err";
  try {
    libevent_log_target->message(fmt::format("libevent: [{}] {}", level, text));
  } catch (...) {
    // No exception through a libevent frame: an allocation failure loses this message only.
  }
  in_libevent_message = false;
}

}  // namespace

LibeventLogRoute::LibeventLogRoute(DecisionLog& log) noexcept {
  libevent_log_target = &log;
  event_set_log_callback(&on_libevent_message);
}

LibeventLogRoute::~LibeventLogRoute() {
  // The callback stays installed: libevent may still report while the base is freed, and then
  // the message is dropped rather than written in libevent's own format among JSON lines.
  libevent_log_target = nullptr;
}

}  // namespace boxproxy
