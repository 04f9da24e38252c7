// SPDX-License-Identifier: Apache-2.0
// One client of the session socket, from its first byte to its close: the handshake of whichever
// protocol it speaks, the decision (SPEC §5), the dial, and then one session at a time (a tunnel,
// or plain-HTTP exchanges: proxy/session.h). A CONNECT can be followed through
// proxy/client_connection.cc (its life and handshake), client_decision.cc (the decision and the
// dial), client_sessions.cc and tunnel_session.cc; client_resolve.cc answers a RESOLVE, and
// client_inspected.cc hands an inspected endpoint's tunnel to the inspector.
//
// One owner, one way to die: the ProxyServer creates it; every libevent callback is a static
// trampoline that calls a member, and only the trampoline deletes the object, when the member
// returns Next::close. Members never delete `this` and never unwind an exception into libevent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/ask_registry.h"
#include "proxy/request_asks.h"
#include "proxy/wire/client_kind.h"
#include "proxy/connection_list.h"
#include "proxy/decision_log.h"
#include "proxy/dialer.h"
#include "proxy/event_owners.h"
#include "proxy/wire/handshake.h"
#include "proxy/held_count.h"
#include "proxy/relay.h"
#include "proxy/resolver.h"
#include "proxy/session.h"
#include "proxy/timer.h"
#include "table/decision.h"
#include "proxy/inspector_messages.h"
#include "table/inspect_endpoint.h"
#include "table/target.h"

namespace boxproxy {

class ProxyServer;

// The client's request, from its handshake to the end of its session: a keep-alive connection
// makes a new one for each request.
struct ClientRequest {
  ClientProtocol protocol = ClientProtocol::unknown;
  ClientKind kind = ClientKind::connect;
  Target target;
  // The port the log names. A RESOLVE is judged at a port of the host list's (resolve_judged_port)
  // but logs the one it asked with, usually 0 (none): its line says what the box asked, not 443.
  std::uint16_t logged_port = 0;
  std::optional<AskVerdict> asked;  // this decision's ask, once answered (asked= on its line)
  // Client bytes read after the request and before its session starts (early data, or the start
  // of a body), at most kMaxEarlyBytes with plain->upstream_head.
  std::string early;
  // A plain-HTTP request (its head rewritten for the origin is plain->upstream_head).
  std::optional<PlainRequest> plain;
  // A plain request to an inspected endpoint's port that its rules let through (SPEC §18): what
  // its request line, written when it ends, says decided.
  struct Inspected {
    std::string rule;
    bool report = false;
    std::optional<std::string> path;
    std::string_view asked;  // SPEC §20: asked= (a constant word), empty when not asked
  };
  std::optional<Inspected> inspected;
  // SPEC §19: a plain request carrying a secret's placeholder: that secret's name (secret= on its
  // refusal's line).
  std::optional<std::string> misdirected_secret;
};

class ClientConnection : public ListLink<ClientConnection> {
 public:
  // Takes ownership of `client_fd` (non-blocking). Returns null when libevent cannot allocate.
  static ClientConnection* open(ProxyServer& server, int client_fd);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // From the inspector (proxy/inspector_link.h), for a connection handed over to it: a request's
  // line; a new upstream connection wanted (the origin closed the kept one); the end, after which
  // the connection is deleted (its slot given back).
  static void inspected_request(ClientConnection* connection, const InspectorRequest& line) noexcept;
  static void inspected_dial(ClientConnection* connection) noexcept;
  static void inspected_ask(ClientConnection* connection, const InspectorAsk& ask) noexcept;
  static void inspected_ended(ClientConnection* connection, const InspectorEnded& ended) noexcept;
  // The kept origin connection it waited for closed (wait_for_eviction): its slot, to dial with.
  // May delete the connection.
  static void evicted(ClientConnection* connection, TunnelSlot slot) noexcept;

 private:
  // What a member asks its trampoline to do next.
  enum class Next { keep, close };

  enum class Phase : std::uint8_t {
    sniffing,   // waiting for the first byte, which picks the protocol
    handshake,  // reading the HTTP head or the SOCKS handshake (bounded bytes and time)
    asking,     // a name off the list, waiting for the supervisor (bounded by --ask-timeout)
    resolving,  // waiting for DNS answers (bounded by --dns-timeout)
    dialling,   // a non-blocking connect in flight (bounded by --connect-timeout)
    replying,   // a final reply (a refusal, a RESOLVE's answer) is being flushed; then close
    session,    // allowed: session_ has the sockets (bounded by --idle-timeout)
    inspected,    // allowed to an inspected endpoint: its answer is flushed (--head-timeout)
    handed_over,  // then the inspector has the sockets; this holds the slot until it ends
  };

  ClientConnection(ProxyServer& server, int client_fd);
  bool init_events();

  // Trampolines: the only places that delete a connection. on_event<&member> calls the member
  // for a socket's event.
  template <Next (ClientConnection::*kMember)()>
  static void on_event(evutil_socket_t, short, void* self) noexcept;
  static void on_timer(void* self) noexcept;
  static void on_resolved(void* self, std::vector<IpAddress> answers) noexcept;
  static void on_ask_verdict(void* self, AskVerdict verdict) noexcept;

  static void finish(ClientConnection* connection, Next next) noexcept;

  // Reading, writing, the timer.
  Next client_readable();
  Next read_before_session();
  Next client_read_ended();
  Next upstream_readable();
  Next client_writable();
  Next upstream_writable();
  Next timer_fired();
  Next idle_check();

  // The handshake (proxy/wire/handshake.h decides what the bytes say; these act on it).
  [[nodiscard]] std::unique_ptr<Handshake> new_handshake() const noexcept;  // null when out of memory
  Next handshake_answered(Handshake::Outcome outcome);
  Next refused_before_target();
  Next handshake_decided();

  // The decision (SPEC §5): table/decision.h decides, these get it what it asks for.
  Next decide(Target target);
  // The refusal, if any, and what its body names (proxy/stages/refusal_detail.h).
  std::optional<Reason> judge_inspected_plain(std::string& detail);
  void log_request_line(std::optional<Reason> refusal, std::uint16_t status, const Session::Traffic& traffic);
  Next answers_known(std::vector<IpAddress> answers);  // the lookup's answers
  Next ask_verdict(AskVerdict verdict);                // the supervisor's answer (SPEC §15)
  [[nodiscard]] std::optional<std::string_view> asked_text() noexcept;  // asked=, given once
  Next follow(Decision::Step step);
  Next look_up();
  Next ask_supervisor();
  Next refuse_decided();
  Next admit_and_dial();
  Next after(Dialer::Result result);
  // `detail`: the body line's tail after the words (a plain request to an inspected endpoint's hint).
  Next refuse(Reason reason, std::string_view ip = "-", std::string words = {}, std::string_view detail = {});
  Next send_refusal(std::string reply);

  // A RESOLVE (SPEC §16): a decision answered, never dialled.
  Next resolved();
  Next resolve_by_name();
  Next answer_and_close(std::string_view reply);

  // Allowed: a session.
  Next allowed();
  Next start_tunnel();
  Next start_plain_exchange();
  Next after(SessionNext next);
  Next close_mismatch(Reason reason);
  Next next_request();
  void log_done();

  // Request inspection (SPEC §18): a tunnel to an inspected endpoint goes to the inspector.
  [[nodiscard]] const InspectEndpoint* inspected_endpoint() const;
  Next start_inspected(const InspectEndpoint& endpoint);
  Next hand_over();
  void log_inspected_end(const InspectorEnded& ended);
  // §5 step 5 for a connection to an inspected endpoint when a kept origin connection can serve it
  // (proxy/origin_ledger.h): its slot taken over, or at the tunnel cap the oldest's slot taken.
  // nullopt when neither applies (admission as usual), else what follows.
  [[nodiscard]] std::optional<Next> admit_from_pool();
  // At the tunnel cap, a connection that dials itself waits for the oldest kept origin connection's
  // close and takes its slot then (InspectorLink::evict_for). False when none is kept.
  [[nodiscard]] bool wait_for_eviction();

  ProxyServer& server_;
  const ConnectionId id_;    // on every line of this client (SPEC §12), keep-alive requests too
  HeldCount client_count_;   // stats().clients, for as long as this connection lives
  Endpoint client_;
  Dialer dialer_;            // the upstream socket, its slot, and the dial that makes it
  Timer timer_;  // one per phase: head, DNS, connect, idle timeout (on the Clock)
  Phase phase_ = Phase::sniffing;
  // Counted in stats().undecided (kMaxHandshakingClients) from the accept (and from each further
  // request on a keep-alive connection) until allowed or refused.
  UndecidedMark undecided_;
  ClientRequest request_;
  Decision decision_;  // steps 2-4 for request_.target; its answers are then dialled in order
  Resolver::Lookup* lookup_ = nullptr;  // while resolving (a token: see Resolver)
  AskRegistry::Ticket ask_ticket_;      // while asking: this client's place in the ask (SPEC §15)
  std::unique_ptr<RequestAsks> request_asks_;  // handed over: its requests' asks (SPEC §20), made at the first
  // The handshake under way (sniffing, handshake): it holds the bytes read so far. Made for each
  // request and freed once it has answered, so a session does not carry it.
  std::unique_ptr<Handshake> handshake_;
  // Allowed: the session that has the sockets; a done line is owed while it lives. Declared after
  // the Endpoints it refers to, so it dies first.
  std::unique_ptr<Session> session_;
  // The kept origin connection whose close this one waits for, to take its slot and dial.
  std::optional<std::uint64_t> evicting_;
  // The kept origin connection this one takes over (an earlier connection's id), named in the
  // hand-over; none: its own upstream socket, or none yet (a dial follows).
  std::optional<std::uint64_t> pooled_from_;
  // Handed over to the inspector: since when (the done line's ms=).
  Clock::time_point handed_over_at_{};
};

}  // namespace boxproxy
