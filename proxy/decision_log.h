// SPDX-License-Identifier: Apache-2.0
// Decision lines, done lines, stats and operational messages (SPEC §12), and the audit file.
//
// Lines are built by hand with every host escaped as a JSON string of ASCII only (control bytes as
// \u00XX, bytes of 0x80 or more as the text \\xHH), so a client-chosen host can never break a
// line, forge another, or decode to a C1 control.
//
// Log lines are queued and written once per loop iteration, never with a write that can block:
// a log reader that stalls costs at most kLogQueueBytes of memory, then whole lines are dropped
// and counted (SPEC §12). An audit refusal is on disk (fdatasync) before the caller answers it:
// at once, or for a caller that holds its answer, once per loop iteration for all of them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/wire/client_kind.h"
#include "proxy/event_owners.h"
#include "proxy/tunnel.h"
#include "table/reason.h"
#include "table/tls_failure.h"

namespace boxproxy {

// The number of a client connection, unique for the life of the process (SPEC §12 `id=`): the
// ok, refusal and done lines of one client carry the same one, so a reader can join them.
using ConnectionId = std::uint64_t;

// One decision, as it is logged. `host` is what the client named; nullopt when unknown or not to
// be logged (an unauthenticated peer never puts a host into the log), written `host=-` (JSON
// null). `ip` is the address judged or dialled, or "-".
struct DecisionEntry {
  ConnectionId id = 0;
  ClientKind kind = ClientKind::connect;
  std::optional<std::string_view> host;
  std::uint16_t port = 0;
  std::string_view ip = "-";
  std::optional<Reason> refusal;  // nullopt: class=ok
  // SPEC §15: the supervisor's verdict when it was asked (once, always, deny, timeout): asked=.
  std::optional<std::string_view> asked = std::nullopt;
  // SPEC §19: secret misdirected's secret name (secret=), never its value.
  std::optional<std::string_view> secret = std::nullopt;
  // An inspected connection's upstream tls: why the origin's handshake failed (tls=).
  std::optional<TlsFailure> tls = std::nullopt;
};

struct DoneEntry {
  ConnectionId id = 0;
  ClientKind kind = ClientKind::connect;
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view ip;
  std::uint64_t up = 0;    // bytes client to upstream
  std::uint64_t down = 0;  // bytes upstream to client
  std::uint64_t ms = 0;
  TunnelEnd end = TunnelEnd::error;  // why it ended (SPEC §12 `end=`)
  // An inspected connection whose box's handshake failed: why (tls=, after end=).
  std::optional<TlsFailure> tls = std::nullopt;
};

// One request of an inspected endpoint (SPEC §18), logged when it ends or is refused. `method`,
// `rule` and `path` are what the request inspection reported (checked: printable, bounded); the
// path only with --log-paths, never its query.
struct RequestEntry {
  ConnectionId id = 0;
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view method;
  std::string_view rule = "-";
  std::optional<Reason> refusal;  // nullopt: class=ok
  std::uint16_t status = 0;
  std::uint64_t up = 0;
  std::uint64_t down = 0;
  std::uint64_t ms = 0;
  // Report mode: a request the rules deny, logged and let through: report=1 would=deny (the
  // class stays request denied, SPEC §18), with its path whatever --log-paths says.
  bool report = false;
  std::optional<std::string_view> path;
  std::optional<std::string_view> secret = std::nullopt;  // secret misdirected: the name (secret=)
  // SPEC §20's trace, each "a,b" (checked items, never a value): swap=, inject=, sign=, scrub=; and
  // asked= (once, always, deny, timeout, none), empty when the request was not held for the supervisor.
  std::string_view swap = {};
  std::string_view inject = {};
  std::string_view sign = {};  // "aws-sigv4", or empty
  std::string_view asked = {};
  std::string_view scrub = {};
};

// The longest --label (SPEC §12): it goes into every line, so it is kept short enough that a
// labelled line stays within the size kLogQueueBytes was derived for (about 150 to 250 bytes
// without it).
inline constexpr std::size_t kMaxLabelChars = 128;

// Escapes `text` as a JSON string (with quotes), cut first at `max_chars` bytes, ASCII only.
[[nodiscard]] std::string json_quote(std::string_view text, std::size_t max_chars = 255);

// How a refusal's audit line reaches the disk before the refusal is answered (SPEC §2 --audit).
enum class AuditSync : std::uint8_t {
  now,        // fdatasync before decision() returns: the caller answers at once
  with_turn,  // one fdatasync for every such line when this loop iteration's callbacks are done
              // (group commit): the caller answers only after the loop polls again, or after
              // sync_audit_now() (see audit_sync_owed())
};

class DecisionLog {
 public:
  // `log_fd` is written to (standard error, or the --log-file this object then owns when
  // `owns_log_fd`); `audit` is the --audit file opened for appending, or invalid.
  DecisionLog(event_base* base, bool json, int log_fd, bool owns_log_fd, UniqueFd audit);
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  // --label: printable ASCII of at most kMaxLabelChars (the caller checked it), added to every
  // line from now on: `label=<TEXT>` last on a text line, "label" in a JSON one. Empty: none.
  void set_label(std::string_view label);

  // Receives the JSON form of every decision and done line, as the audit has it (the control
  // channel's subscribers, SPEC §15); empty: none. It must not block (it queues).
  using Observer = std::function<void(std::string_view json_line)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }

  void decision(const DecisionEntry& entry, AuditSync sync = AuditSync::now);
  void done(const DoneEntry& entry);
  // `egress request ...` (SPEC §18): to the log, the audit (synced as a refusal's when it is one)
  // and the control channel's subscribers.
  void request(const RequestEntry& entry);
  // An operational message ("sighup: kept the old host list: ..."): a text line, or a JSON
  // object {"ts":..,"event":"message","text":..}.
  void message(std::string_view text);
  // A JSON object the caller built (the stats object, `{"event":"stats",...}`), written with the
  // label added as its last key, whatever the format.
  void raw_line(std::string_view line);
  // Writes what the log's reader takes now without blocking (at exit, and once per loop
  // iteration), and syncs the audit if a line is owed a sync.
  void flush() noexcept;

  // True while an audit line written with AuditSync::with_turn is not yet synced. The sync runs
  // from an event made active when the line was written: libevent runs every event made active
  // during an iteration in that same iteration (one priority, no dispatch limit), before it polls
  // again; so an answer that waits for a write event (which only a poll can fire) goes out after
  // the sync.
  [[nodiscard]] bool audit_sync_owed() const noexcept { return audit_sync_owed_; }
  // The owed sync, now: for a caller whose write event may already be due in this iteration.
  void sync_audit_now() noexcept;

 private:
  // How lines reach the log without ever blocking the loop.
  enum class WriteMode : std::uint8_t {
    regular_file,  // a file: writes do not wait for a reader; whole lines or nothing
    nonblocking,   // a pipe, FIFO or terminal opened anew with O_NONBLOCK (not the shared one)
    socket,        // a socket: send with MSG_DONTWAIT, never changing the shared descriptor
    poll_guarded,  // a pipe we could not open anew: poll for room, then at most PIPE_BUF bytes
  };

  void append(std::string_view line);
  void schedule_flush() noexcept;
  void write_queue() noexcept;
  void drop_queue() noexcept;
  void release_queue() noexcept;
  // Appends a line to the audit; `sync` for a refusal (an ok or done line is not synced).
  void audit(std::string_view json_line, std::optional<AuditSync> sync);
  void audit_result(bool ok);
  static void on_flush(evutil_socket_t, short, void* self) noexcept;
  static void on_log_writable(evutil_socket_t, short, void* self) noexcept;

  // The JSON object `object` with "label" added as its last key (unchanged without a label).
  [[nodiscard]] std::string with_label(std::string_view object) const;
  // `,"label":"<TEXT>"` for the end of a JSON object, or nothing.
  [[nodiscard]] std::string_view json_label() const noexcept { return json_label_; }
  // " label=<TEXT>" for the end of a text line, or nothing.
  [[nodiscard]] std::string_view text_label() const noexcept { return text_label_; }
  // `{"event":"log-dropped","n":N}` (labelled) and its newline, for the lines dropped so far.
  [[nodiscard]] std::string log_dropped_line() const;

  bool json_;
  Observer observer_;
  std::string json_label_;       // --label as `,"label":"<TEXT>"`, made once; or empty
  std::string text_label_;       // --label as ` label=<TEXT>`, made once; or empty
  int log_fd_;
  bool owns_log_fd_;
  UniqueFd reopened_log_;        // the log opened anew with O_NONBLOCK (nonblocking mode)
  WriteMode mode_ = WriteMode::regular_file;
  UniqueFd audit_;
  std::string pending_;          // whole lines not yet written (a written prefix is erased)
  std::uint64_t dropped_ = 0;    // lines dropped since the last log-dropped line
  EventPtr flush_event_;
  EventPtr writable_event_;      // EV_WRITE on the log, added while the reader is behind
  bool flush_scheduled_ = false;
  bool audit_sync_owed_ = false;
  bool audit_failing_ = false;
};

// Routes libevent's own messages (event_set_log_callback: "[msg] Nameserver ... has failed") into
// `log` as message lines in its format, for as long as this object lives; outside that lifetime
// (teardown, before start) they are dropped rather than written raw among the log's lines.
class LibeventLogRoute {
 public:
  explicit LibeventLogRoute(DecisionLog& log) noexcept;
  ~LibeventLogRoute();
  LibeventLogRoute(const LibeventLogRoute&) = delete;
  LibeventLogRoute& operator=(const LibeventLogRoute&) = delete;
};

}  // namespace boxproxy
