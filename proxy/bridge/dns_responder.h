// SPDX-License-Identifier: Apache-2.0
// The in-box bridge's DNS responder (`bridge --dns ADDR:PORT`, SPEC §16): answers A and AAAA
// over UDP and TCP itself, asking the proxy about each name with a resolve-only request (SOCKS5
// RESOLVE over the proxy's Unix socket, proxy/client_resolve.cc). The proxy runs its decision
// (host list, lookup, address rule):
//   - a name it would let through is answered with an address of the bridge's own for that name
//     (proxy/bridge/name_addresses.h), never the real one: a connection the box then makes to it is
//     captured and asked for by that name (`--transparent`);
//   - so is a name the proxy would ask its supervisor about (--ask, SPEC §15), which it answers
//     "by name" at once without asking (the question has no port): the connection that follows
//     is asked about, with its port, and waits for the verdict in the proxy (--ask-timeout), not
//     here; a `deny` refuses that connection;
//   - a name it refuses is answered NXDOMAIN: the box never learns a refused name's address, and
//     a name off the host list is never looked up (the proxy refuses it before any DNS);
//   - the proxy unreachable, busy or slow: SERVFAIL;
//   - other types: an empty answer (NOERROR, no records), without asking; other opcodes and
//     classes NOTIMP; a malformed query FORMERR; a response, or less than a header, nothing.
//
// Questions about one name at once (A and AAAA, sent together by a box's resolver) share one
// RESOLVE: the proxy decides and logs the name once, and both are answered with its verdict.
//
// Bounds (what a box that floods it can hold): at most kMaxDnsInFlight questions waiting on the
// proxy at once (each one Unix socket and about 1 KiB), past which a question is answered
// SERVFAIL at once; at most kMaxDnsTcpClients TCP clients, each holding one query and one answer
// at a time and closed after kDnsTcpIdleSeconds without a query; UDP datagrams are read at most
// kMaxDnsDatagramsPerWake a wake-up, so UDP cannot starve the rest of the loop.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy/acceptor.h"
#include "proxy/wire/dns_message.h"
#include "proxy/event_owners.h"
#include "proxy/bridge/name_addresses.h"
#include "proxy/bridge/proxy_socket.h"
#include "proxy/bridge/socks5_client.h"
#include "proxy/timer.h"

namespace boxproxy {

// Questions waiting on the proxy at once: far above what a box's resolver keeps in flight (glibc
// sends A and AAAA together, a browser a few dozen), and 256 Unix sockets stay far inside the
// descriptor limit the bridge raises for itself.
inline constexpr std::size_t kMaxDnsInFlight = 256;
// TCP clients at once (DNS over TCP is the fallback for truncated answers, which this responder
// never gives, and for the few resolvers configured to use it).
inline constexpr std::size_t kMaxDnsTcpClients = 32;
// A TCP client that sends no query for this long is closed; so is a question the proxy has not
// answered in kDnsAskSeconds (its --dns-timeout is 5 s by default: the proxy answers first). No
// question waits on a supervisor's ask, whatever --ask-timeout says: the proxy answers a name it
// would ask about at once, and asks when the box connects (the bridge's handshake has no bound
// of its own, so that ask runs its whole --ask-timeout).
inline constexpr double kDnsTcpIdleSeconds = 10;
inline constexpr double kDnsAskSeconds = 10;
inline constexpr std::size_t kMaxDnsDatagramsPerWake = 64;
// The TTL of an answer: short, so a box does not keep an address the bridge may give to another
// name once it has given out NameAddresses::kMaxNames of them.
inline constexpr std::uint32_t kDnsAnswerTtlSeconds = 60;

struct DnsResponderStats {
  std::uint64_t queries = 0;   // questions answered, in all
  std::uint64_t refused = 0;   // answered NXDOMAIN because the proxy refused the name
  std::uint64_t busy = 0;      // answered SERVFAIL because kMaxDnsInFlight were waiting
};

class DnsResponder {
 public:
  // `proxy`: the proxy's Unix socket, pinned (proxy/bridge/proxy_socket.h); `names`: the addresses given
  // out, shared with the bridge's transparent listeners (which look names up in it); both outlive
  // the responder.
  DnsResponder(event_base* base, const ProxySocket& proxy, NameAddresses& names);
  ~DnsResponder();
  DnsResponder(const DnsResponder&) = delete;
  DnsResponder& operator=(const DnsResponder&) = delete;

  // A bound, non-blocking UDP socket; taken over. Throws std::runtime_error at start-up.
  void add_udp(int fd);
  // A listening, non-blocking TCP socket; taken over. Throws std::runtime_error at start-up.
  // Accepting pauses for kAcceptBackoffSeconds when descriptors or memory run out (proxy/acceptor.h).
  void add_tcp(int fd);
  // Closes every socket and forgets every question (SIGTERM).
  void stop() noexcept;

  [[nodiscard]] const DnsResponderStats& stats() const noexcept { return stats_; }

  // --- for its questions and TCP clients ---
  class Question;
  class TcpClient;
  [[nodiscard]] event_base* base() const noexcept { return base_; }
  [[nodiscard]] const ProxySocket& proxy() const noexcept { return proxy_; }
  // The answer to a question the proxy has judged (or could not judge).
  [[nodiscard]] std::string answer(const DnsQuestion& question, Socks5ReplyReader::State verdict);
  // What to send for `message`, or "" when nothing is: a question of A or AAAA that must be asked
  // sets `ask` instead, and its answer comes later.
  [[nodiscard]] std::string immediate_answer(std::string_view message, DnsQuestion& ask, bool& must_ask);
  // Makes a question asking the proxy; null when kMaxDnsInFlight are waiting (or out of memory).
  [[nodiscard]] std::unique_ptr<Question> ask(DnsQuestion question, void (*done)(void*, Question&), void* owner);
  void question_finished() noexcept { --in_flight_; }
  void forget(TcpClient* client) noexcept;

 private:
  struct UdpSocket {
    DnsResponder* responder = nullptr;
    UniqueFd fd;
    EventPtr read_event;
  };
  struct UdpQuestion;

  static void on_udp_readable(evutil_socket_t, short, void* self) noexcept;
  static void on_tcp_client(void* self, int fd) noexcept;
  static void on_tcp_paused(void* self, int error) noexcept;
  static void on_udp_answered(void* self, Question& question) noexcept;
  void read_datagrams(UdpSocket& socket) noexcept;

  event_base* base_;
  const ProxySocket& proxy_;
  NameAddresses& names_;
  DnsResponderStats stats_;
  std::size_t in_flight_ = 0;
  std::vector<std::unique_ptr<UdpSocket>> udp_;
  Acceptor tcp_;  // the TCP listeners, paused for a moment when descriptors run out
  std::vector<std::unique_ptr<UdpQuestion>> udp_questions_;  // questions from UDP, waiting
  std::vector<TcpClient*> tcp_clients_;                       // owned: deleted by forget/stop
  // The question asking the proxy about each name (lower case) now; others about it follow it.
  std::unordered_map<std::string, Question*> asking_;
  bool stopping_ = false;
};

}  // namespace boxproxy
