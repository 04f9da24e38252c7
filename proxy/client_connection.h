// One client of the session socket, from its first byte to its close: the handshake of whichever
// protocol it speaks, the decision (SPEC §5), the dial, and then a tunnel or plain-HTTP exchanges.
//
// One owner, one way to die: the ProxyServer creates it; every libevent callback is a static
// trampoline that calls a member, and only the trampoline deletes the object, when the member
// returns Next::close. Members never delete `this` and never unwind an exception into libevent.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/ask_registry.h"
#include "proxy/decision_log.h"
#include "proxy/handshake.h"
#include "proxy/relay.h"
#include "proxy/event_owners.h"
#include "proxy/held_count.h"
#include "proxy/http_exchange.h"
#include "proxy/resolver.h"
#include "proxy/sni.h"
#include "proxy/tunnel.h"
#include "proxy/tunnel_host.h"
#include "table/decision.h"
#include "table/host_list.h"
#include "table/policy.h"
#include "table/target.h"

namespace boxproxy {

class ProxyServer;

class ClientConnection {
 public:
  // Takes ownership of `client_fd` (non-blocking). Returns null when libevent cannot allocate.
  static ClientConnection* open(ProxyServer& server, int client_fd);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // The server's list of live connections (for shutdown).
  ClientConnection* prev = nullptr;
  ClientConnection* next = nullptr;

 private:
  // What a member asks its trampoline to do next.
  enum class Next { keep, close };

  enum class Phase : std::uint8_t {
    sniffing,      // waiting for the first byte, which picks the protocol
    handshake,     // reading the HTTP head or the SOCKS handshake (bounded bytes and time)
    asking,        // a name off the list, waiting for the supervisor (bounded by --ask-timeout)
    resolving,     // waiting for DNS answers (bounded by --dns-timeout)
    dialling,      // a non-blocking connect in flight (bounded by --connect-timeout)
    replying,      // a final reply (a refusal) is being flushed; then close
    relaying,      // a tunnel (tunnel_): bytes both ways until both sides have closed
    forwarding,    // plain HTTP: request body up, response back; then keep-alive or close
  };

  using Protocol = Handshake::Protocol;

  // One end of the connection: the client, or the upstream.
  using Side = Endpoint;

  ClientConnection(ProxyServer& server, int client_fd);
  bool init_events();

  // Trampolines: the only places that delete a connection.
  static void on_client_read(evutil_socket_t, short, void* self) noexcept;
  static void on_client_write(evutil_socket_t, short, void* self) noexcept;
  static void on_upstream_read(evutil_socket_t, short, void* self) noexcept;
  static void on_upstream_write(evutil_socket_t, short, void* self) noexcept;
  static void on_timer(evutil_socket_t, short, void* self) noexcept;
  static void on_resolved(void* self, std::vector<IpAddress> answers) noexcept;
  static void on_ask_verdict(void* self, AskVerdict verdict) noexcept;
  static void finish(ClientConnection* connection, Next next) noexcept;

  // Reading and writing.
  Next client_readable();
  Next upstream_readable();
  Next side_writable(Side& side);
  // Thin wrappers over proxy/relay.h that speak in Next.
  Next queue(Side& side, std::string_view bytes) { return send_or_queue(side, bytes) ? Next::keep : Next::close; }
  Next flush_out(Side& side) { return flush_queued(side) ? Next::keep : Next::close; }
  static void pause(Side& side, unsigned bit) noexcept { pause_reading(side, bit); }
  static void resume(Side& side, unsigned bit) noexcept { resume_reading(side, bit); }
  void arm_timer(double seconds);
  Next timer_fired();
  Side& other(Side& side) noexcept { return &side == &client_ ? upstream_ : client_; }
  static Next after(Tunnel::Step step) noexcept { return step == Tunnel::Step::over ? Next::close : Next::keep; }

  // The handshake (proxy/handshake.h decides what the bytes say, these act on it).
  std::unique_ptr<Handshake> new_handshake() const noexcept;  // null when out of memory
  Next feed_handshake(std::string_view bytes);
  Next handshake_answered(Handshake::Outcome outcome);
  Next handshake_decided();

  // The decision (SPEC §5): table/decision.h decides, these drive it.
  void give_back_head_buffers();
  Next decide_parsed(Target target);
  Next answers_known(std::vector<IpAddress> answers);  // the lookup's answers
  Next ask_verdict(AskVerdict verdict);                // the supervisor's answer (SPEC §15)
  [[nodiscard]] std::optional<std::string_view> asked_text() noexcept;  // asked=, given once
  Next follow(Decision::Step step);
  Next admit_and_dial();
  Next dial_next();
  Next dial_finished();
  Next refuse(Reason reason, std::string_view ip = "-", std::string words = {});
  Next allowed();
  void widen_resolve_port();  // SOCKS5 RESOLVE (client_resolve.cc, SPEC §16)
  Next resolved();            // RESOLVE allowed: answered with an address, never dialled
  Next resolve_by_name();     // RESOLVE of a name that would be asked about: left to the connection
  Next answer_resolve(std::string_view reply);  // a RESOLVE's answer, then close

  // After the decision.
  Next after(HttpExchange::Step step);
  Next end_exchange();
  Next finish_exchange();
  void log_done();

  // The SNI and Host checks (client_sni.cc, SPEC §16): a tunnel's first client bytes, held until
  // read.
  enum class FirstBytes : std::uint8_t {
    wait,           // not known yet: hold the bytes, read more
    pass,           // neither TLS nor HTTP/1.x, or naming the decided host (or, for TLS, none)
    sni_mismatch,   // a ClientHello naming another host, or that cannot be read
    host_mismatch,  // an HTTP/1.x request naming another host or port, none, or unreadable
  };
  [[nodiscard]] bool tunnel_check_applies() const noexcept;
  Next start_tunnel();
  [[nodiscard]] FirstBytes check_first_bytes(std::string_view fresh);
  [[nodiscard]] FirstBytes judge_sni(SniReader::Verdict verdict) const;
  [[nodiscard]] static FirstBytes judge_host(TunnelHostReader::Verdict verdict) noexcept;
  [[nodiscard]] std::size_t held_bound() const noexcept;
  Next first_bytes_readable();
  Next act_on(FirstBytes check, bool client_sent_fin);
  Next release_held_bytes(bool client_sent_fin);
  Next forward_undecided_bytes();
  Next close_mismatch(Reason reason);
  [[nodiscard]] TunnelEnd exchange_end() const noexcept;  // a plain-HTTP exchange's end= (SPEC §12)
  void release_upstream() noexcept;         // the upstream socket and its slot
  void release_upstream_socket() noexcept;  // the upstream socket only (between dial attempts)

  ProxyServer& server_;
  const ConnectionId id_;   // on every line of this client (SPEC §12), keep-alive requests too
  HeldCount client_count_;  // stats().clients, for as long as this connection lives
  Side client_;
  Side upstream_;
  Tunnel tunnel_{client_, upstream_};  // the relaying phase: knows which side ended it (SPEC §12)
  // Why a plain-HTTP exchange ended, once something outside the exchange's own steps decided it
  // (the response delivered whole, the idle timer, shutdown, a refusal midway); otherwise the
  // done line reads it from the sides (exchange_end()).
  std::optional<TunnelEnd> exchange_end_;
  EventPtr timer_;
  Phase phase_ = Phase::sniffing;
  Protocol protocol_ = Protocol::unknown;
  ClientKind kind_ = ClientKind::connect;
  bool done_owed_ = false;             // allowed: a done line is owed when the tunnel/exchange ends
  // Counted in stats().undecided (kMaxHandshakingClients) from the accept (and from each further
  // request on a keep-alive connection) until allowed or refused.
  UndecidedMark undecided_;
  TunnelSlot slot_;  // held from admission until the upstream connection closes
  // While asking: this client's place in the ask (SPEC §15); it leaves the ask when it dies.
  AskRegistry::Ticket ask_ticket_;
  std::optional<AskVerdict> asked_;  // this decision's ask, once answered (asked= on its line)

  // The handshake under way (sniffing, handshake): it holds the bytes read so far. Made for each
  // request and freed once it has answered, so a tunnel does not carry it.
  std::unique_ptr<Handshake> handshake_;
  // Client bytes read after the request and before the tunnel or exchange starts (early data, or
  // the start of a body), at most kMaxEarlyBytes with upstream_prefix_.
  std::string inbox_;
  Target target_;
  std::string ip_text_ = "-";
  Decision decision_;            // steps 2-4 for target_; after dial, its answers are dialled in order
  std::size_t next_answer_ = 0;  // the next of decision_.answers() to dial
  Resolver::Lookup* lookup_ = nullptr;
  std::string upstream_prefix_;  // what goes upstream before anything else (a rewritten request head)
  // The plain-HTTP exchange in progress: made for each request, so a tunnel does not carry it.
  std::unique_ptr<HttpExchange> exchange_;
  // The SNI check's and the Host check's readers while they wait (the held bytes are in inbox_);
  // null otherwise, so a tunnel that is not checked, or no longer, carries nothing of them.
  std::unique_ptr<SniReader> sni_;
  std::unique_ptr<TunnelHostReader> host_check_;

  std::chrono::steady_clock::time_point started_;
  // Where the done line's counts start: upstream_.written and client_.written (plus what was
  // queued for the client before: the reply to a CONNECT or SOCKS request) when it was allowed.
  // The line counts what was written to the other side since, never what was read or queued.
  std::uint64_t up_mark_ = 0;
  std::uint64_t down_mark_ = 0;
};

}  // namespace boxproxy
