// SPDX-License-Identifier: Apache-2.0
// Name lookups on evdns, never blocking the loop (SPEC §5 step 3), with the lookup budget and the
// answer cache of SPEC §14.
//
// A name's answers come from the first of: /etc/hosts; the cache of answers still within their
// TTL (proxy/lookup_cache.h); a lookup of the same name already on its way (shared: however many
// clients wait on it, it is one lookup); else a new DNS lookup, A and AAAA at once, which spends
// one of the budget. Only that last leaves the machine, and only it is counted: so a box that
// floods names is stopped after --max-lookups of them, while the bridge's DNS answer and the
// connection that follows it to the same name cost one. evdns_getaddrinfo gives no TTL, so the
// A and AAAA queries are made with evdns_base_resolve_ipv4/ipv6, which do, and /etc/hosts is read
// through an evdns base of its own that has no server at all.
//
// A lookup is held through a token, not by the connection (STYLE 4): a cancelled request still
// calls back later. So the connection holds a Lookup*, and on leaving calls cancel(), which
// detaches it at once; the DNS query it shared is cancelled when its last waiter leaves, and is
// freed by evdns' callbacks, whenever they run.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/event_owners.h"
#include "proxy/lookup_cache.h"
#include "table/address.h"

namespace boxproxy {

// With one of A and AAAA answered, how long the other is waited for before the name is answered
// without it: what evdns_getaddrinfo waits (its getaddrinfo-allow-skew), so a server that drops
// AAAA questions costs 3 s, not --dns-timeout.
inline constexpr double kAnswerSkewSeconds = 3;

class Resolver {
 public:
  // Called with the answers (empty: no answer or a failed lookup). Never called after cancel().
  using Callback = void (*)(void* owner, std::vector<IpAddress> answers) noexcept;
  struct Lookup;
  // No budget (check, which judges a handful of names once).
  static constexpr std::uint64_t kNoBudget = std::numeric_limits<std::uint64_t>::max();

  // `nameservers` ("ADDR" or "ADDR:PORT", "[v6]:PORT"): ask these instead of /etc/resolv.conf's
  // (/etc/hosts is read first either way). Of resolv.conf only the nameserver lines and the
  // timing options are read: never `search`, `domain` or `ndots`, so every name is asked as it
  // was given, never with a suffix. `max_lookups`: names looked up in DNS at most, for the life
  // of the resolver. Throws std::runtime_error at start-up on failure.
  Resolver(event_base* base, const std::vector<std::string>& nameservers, double timeout_seconds,
           std::uint64_t max_lookups = kNoBudget);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Finds `name`'s A and AAAA answers. Answered at once (/etc/hosts, the cache, or a lookup that
  // could not even start): the answers are put in `immediate`, the callback never runs, and the
  // result is nullptr. The budget spent and none of those: nullptr with `immediate` left empty,
  // and no query leaves. Otherwise the token to cancel() with; the callback runs from the loop,
  // never inside the caller's own frame.
  [[nodiscard]] Lookup* start(const std::string& name, Callback callback, void* owner,
                              std::optional<std::vector<IpAddress>>& immediate);

  // The owner no longer wants the answer: the callback will not reach it.
  static void cancel(Lookup* lookup) noexcept;

  // Names looked up in DNS so far (the budget spent).
  [[nodiscard]] std::uint64_t lookups() const noexcept { return lookups_; }

 private:
  struct Query;
  struct Half;
  struct HostsProbe {
    bool active = false;    // inside from_hosts(): a later (cancelled) callback writes nothing
    bool answered = false;
    std::vector<IpAddress> answers;
  };

  std::optional<std::vector<IpAddress>> from_hosts(const std::string& name);
  Query* begin_query(const std::string& key, const std::string& name);
  void half_answered(Query& query) noexcept;
  void finish(Query& query) noexcept;
  void abandon(Query& query) noexcept;
  void cancel_halves(Query& query) noexcept;
  void forget_if_idle(Query& query) noexcept;
  static void on_hosts(int result, evutil_addrinfo* answers, void* probe) noexcept;
  static void on_half(int result, char type, int count, int ttl, void* addresses, void* half) noexcept;
  static void on_skew(void* query) noexcept;

  event_base* base_;
  std::uint64_t max_lookups_;
  std::uint64_t lookups_ = 0;
  LookupCache cache_;
  HostsProbe probe_;
  // Every query alive (in flight, or given up and waiting for evdns' cancelled callbacks).
  std::map<Query*, std::unique_ptr<Query>> queries_;
  // The queries a new waiter may join, by the name in lower case.
  std::map<std::string, Query*, std::less<>> in_flight_;
  DnsBasePtr dns_;    // the servers
  DnsBasePtr hosts_;  // /etc/hosts alone: it has no server, so nothing asked of it leaves
};

}  // namespace boxproxy
