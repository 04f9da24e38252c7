// SPDX-License-Identifier: Apache-2.0
// The asks of SPEC §15: with --ask, a name off the host list waits for the supervisor's verdict;
// and SPEC §20's: a request an "ask" rule allows waits likewise (kind "request"), its ask shared by
// every request of the same endpoint, method and path pending at once.
//
// An ask is for one host and port; every client that wants that host and port while it is
// pending waits on the same ask (one question for a burst of connections). It ends with the first
// answer (once, always, deny), with its timeout (--ask-timeout, counted from when it was asked),
// or when no control client is left to answer it; every client waiting on it is then told. An ask
// that every waiting client has left is forgotten: asks pending are never more than the clients
// waiting, which count against the undecided cap (kMaxHandshakingClients).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/decision_log.h"
#include "proxy/timer.h"

namespace boxproxy {

enum class AskVerdict : std::uint8_t {
  once,     // go on with this decision (the address rule still applies)
  always,   // the same, and host:port is added to the host list
  deny,     // refused as not-listed
  timeout,  // no answer within --ask-timeout: refused as not-listed
  closed,   // no control client is left to answer: refused as not-listed
};

// "once", "always" or "deny" as a supervisor writes them; nullopt for anything else.
[[nodiscard]] std::optional<AskVerdict> parse_verdict(std::string_view text) noexcept;
// What a decision line's asked= says: once, always, deny, or timeout (for timeout and closed:
// no answer came).
[[nodiscard]] std::string_view asked_name(AskVerdict verdict) noexcept;
[[nodiscard]] inline bool approves(AskVerdict verdict) noexcept {
  return verdict == AskVerdict::once || verdict == AskVerdict::always;
}

// SPEC §20: what a request ask says of the request held.
struct RequestQuestion {
  std::string_view host;  // the decided host and port (the endpoint)
  std::uint16_t port = 0;
  std::string_view method;  // as sent
  std::string_view path;    // as sent, without its query
  bool query = false;       // it had one
  std::string_view rule;    // the request line's rule=
  ConnectionId id = 0;
};

// The most (method, path) pairs one session remembers `always` for: past it an answer still lets
// its own requests go, and later ones are asked about again (a supervisor answering `always` to
// a box that varies its paths cannot grow serve without end).
inline constexpr std::size_t kMaxAlwaysRequests = 4096;

class AskRegistry {
 public:
  // Tells a waiting client its verdict. The registry has forgotten the client by then, so the
  // callee may end (delete) the waiter.
  using OnVerdict = void (*)(void* waiter, AskVerdict verdict) noexcept;
  // Sends an ask event to every open control client; returns how many there are.
  using Publish = std::function<std::size_t(std::string_view event_line)>;
  // How many control clients are open now (none: nothing can be asked).
  using Audience = std::function<std::size_t()>;
  // `always`: adds the entry ("host:port") to the host list.
  using AddToList = std::function<void(std::string_view entry)>;

  // A client's place in an ask, given back when it leaves (the client closed, or was answered).
  class Ticket {
   public:
    Ticket() noexcept = default;
    Ticket(AskRegistry* registry, std::uint64_t ask, void* waiter) noexcept
        : registry_(registry), ask_(ask), waiter_(waiter) {}
    Ticket(Ticket&& other) noexcept
        : registry_(std::exchange(other.registry_, nullptr)), ask_(other.ask_), waiter_(other.waiter_) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        release();
        registry_ = std::exchange(other.registry_, nullptr);
        ask_ = other.ask_;
        waiter_ = other.waiter_;
      }
      return *this;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }

    [[nodiscard]] bool held() const noexcept { return registry_ != nullptr; }
    void release() noexcept {
      if (registry_ != nullptr) std::exchange(registry_, nullptr)->leave(ask_, waiter_);
    }

   private:
    AskRegistry* registry_ = nullptr;
    std::uint64_t ask_ = 0;
    void* waiter_ = nullptr;
  };

  AskRegistry(event_base* base, double timeout_seconds, AddToList add_to_list);
  ~AskRegistry();
  AskRegistry(const AskRegistry&) = delete;
  AskRegistry& operator=(const AskRegistry&) = delete;

  // Where ask events go (the control hub); none set, or none open: nothing is asked.
  void set_publisher(Publish publish, Audience audience) {
    publish_ = std::move(publish);
    audience_ = std::move(audience);
  }

  // Whether an ask made now would reach someone (a control client is open), without asking.
  [[nodiscard]] bool can_ask() const { return publish_ && audience_ && audience_() > 0; }

  // Asks about `host` (a name) and `port`, or joins the ask pending for them. Not held when
  // nothing can be asked (no control client open, or no memory): the caller refuses at once.
  [[nodiscard]] Ticket ask(std::string_view host, std::uint16_t port, ClientKind kind, ConnectionId id, void* waiter,
                           OnVerdict on_verdict);

  // SPEC §20: asks about a held request, or joins the ask pending for the same endpoint, method
  // and path. Not held when nothing can be asked (as ask()).
  [[nodiscard]] Ticket ask_request(const RequestQuestion& question, void* waiter, OnVerdict on_verdict);
  // Whether `always` was answered this session for the question's endpoint, method and path.
  [[nodiscard]] bool always_allows(const RequestQuestion& question) const;

  // A supervisor's answer. nullopt when it was taken, else the words of why not (no such ask, or
  // it has ended already); then nothing changes.
  [[nodiscard]] std::optional<std::string> answer(std::uint64_t ask, AskVerdict verdict);

  // No control client is open any more: every pending ask ends, refused.
  void channels_closed();

  // The event line of every pending ask, for a control client that has just connected.
  [[nodiscard]] std::vector<std::string> pending_events() const;

 private:
  struct Waiter {
    void* waiter;
    OnVerdict on_verdict;
  };
  struct Ask {
    AskRegistry* registry = nullptr;
    std::uint64_t number = 0;
    std::string key;  // what identical asks share (ask_key, request_key)
    std::string list_entry;  // a name's ask: "host:port", for `always`; empty for a request's
    std::string event_line;
    std::optional<Timer> timer;  // made with the ask, which never moves (it is held by pointer)
    std::vector<Waiter> waiters;
  };

  // Joins the ask pending under `key`, or makes one with the event line `event(number)`.
  template <class Event>
  [[nodiscard]] Ticket join_or_ask(std::string key, std::string list_entry, const Event& event, void* waiter,
                                   OnVerdict on_verdict);
  void leave(std::uint64_t ask, void* waiter) noexcept;
  // Ends ask `number` with `verdict`: forgets it, then tells every client that waited.
  void finish(std::uint64_t number, AskVerdict verdict) noexcept;
  static void on_timeout(void* ask) noexcept;

  event_base* base_;
  double timeout_seconds_;
  AddToList add_to_list_;
  Publish publish_;
  Audience audience_;
  std::uint64_t last_number_ = 0;  // asks are numbered from 1, never reused
  std::map<std::uint64_t, std::unique_ptr<Ask>> asks_;
  std::map<std::string, std::uint64_t> by_key_;
  std::set<std::string> always_requests_;  // request keys answered `always` (at most kMaxAlwaysRequests)
};

}  // namespace boxproxy
