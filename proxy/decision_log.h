// Decision lines, done lines, stats and operational messages (SPEC §12), and the audit file.
//
// Lines are built by hand with every host escaped as a JSON string of ASCII only (control and
// non-ASCII bytes as \u00XX), so a client-chosen host can never break a line or forge another.
// Log lines are buffered and written once per loop iteration; an audit refusal is written and
// fdatasync'ed at once, before the caller answers the refusal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/event_owners.h"
#include "table/reason.h"

namespace boxproxy {

// Which protocol a decision came through: the <kind> of a log line.
enum class ClientKind : std::uint8_t { connect, http, socks, socks4 };
[[nodiscard]] std::string_view kind_name(ClientKind kind) noexcept;

// One decision, as it is logged. `host` is what the client named; nullopt when unknown or not to
// be logged (an unauthenticated peer never puts a host into the log), written `host=-` (JSON
// null). `ip` is the address judged or dialled, or "-".
struct DecisionEntry {
  ClientKind kind = ClientKind::connect;
  std::optional<std::string_view> host;
  std::uint16_t port = 0;
  std::string_view ip = "-";
  std::optional<Reason> refusal;  // nullopt: class=ok
};

struct DoneEntry {
  ClientKind kind = ClientKind::connect;
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view ip;
  std::uint64_t up = 0;    // bytes client to upstream
  std::uint64_t down = 0;  // bytes upstream to client
  std::uint64_t ms = 0;
};

// Escapes `text` as a JSON string (with quotes), cut first at `max_chars` bytes, ASCII only.
[[nodiscard]] std::string json_quote(std::string_view text, std::size_t max_chars = 255);

class DecisionLog {
 public:
  // `log_fd` is written to (standard error, or the --log-file this object then owns when
  // `owns_log_fd`); `audit` is the --audit file opened for appending, or invalid.
  DecisionLog(event_base* base, bool json, int log_fd, bool owns_log_fd, UniqueFd audit);
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  void decision(const DecisionEntry& entry);
  void done(const DoneEntry& entry);
  // An operational message ("sighup: kept the old host list: ..."): a text line, or a JSON
  // object {"ts":..,"event":"message","text":..}.
  void message(std::string_view text);
  // A whole line the caller built (the stats object), written as is with a newline.
  void raw_line(std::string_view line);
  // Writes everything buffered now (at exit, and once per loop iteration).
  void flush() noexcept;

  // How many audit writes have failed (the failure is also logged once each time it starts).
  [[nodiscard]] std::uint64_t audit_failures() const noexcept { return audit_failures_; }

 private:
  void append(std::string_view line);
  void audit(std::string_view json_line, bool sync);
  static void on_flush(evutil_socket_t, short, void* self);

  bool json_;
  int log_fd_;
  bool owns_log_fd_;
  UniqueFd audit_;
  std::string pending_;
  EventPtr flush_event_;
  bool flush_scheduled_ = false;
  std::uint64_t audit_failures_ = 0;
  bool audit_failing_ = false;
};

}  // namespace boxproxy
