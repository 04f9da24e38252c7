// SPDX-License-Identifier: Apache-2.0
#include "proxy/clock.h"
#include "proxy/resolver.h"

#include <event2/util.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "proxy/timer.h"
#include "table/ascii.h"

namespace boxproxy {

// One of a query's two DNS questions: A (index 0) or AAAA (index 1).
struct Resolver::Half {
  Query* query = nullptr;
  evdns_request* request = nullptr;  // nullptr once it has called back (or never started)
  std::vector<IpAddress> answers;
  // It answered for certain (addresses, NXDOMAIN or no data), not a time-out, a server failure or
  // a cancel: only an answer whose two halves both are settled is kept for its TTL.
  bool settled = false;
};

// One name on its way through DNS, shared by every client that asks for it meanwhile.
struct Resolver::Query {
  Resolver* resolver = nullptr;
  std::string key;  // the name in lower case: its place in in_flight_ and the cache
  Half halves[2];
  std::uint32_t ttl = std::numeric_limits<std::uint32_t>::max();  // the least TTL of the answers
  std::vector<Lookup*> waiters;
  std::optional<Timer> skew;  // made and armed once one half has answered (or failed)
  bool done = false;  // answered or given up: out of in_flight_, no waiters left
  // Memory ran out while answers were gathered: the name is answered with none, never with a
  // part of them (a part could leave out the one answer the address rule would refuse).
  bool broken = false;

  [[nodiscard]] bool pending() const noexcept {
    return halves[0].request != nullptr || halves[1].request != nullptr;
  }
};

struct Resolver::Lookup {
  Callback callback = nullptr;
  void* owner = nullptr;   // nullptr once cancelled while its answer is being handed out
  Query* query = nullptr;  // nullptr once its answer is being handed out
};

namespace {

// Every address evdns answered, in its order. Repeats are left to the decision (table/decision.h),
// which drops them for every source of answers alike.
std::vector<IpAddress> collect(const evutil_addrinfo* list) {
  std::vector<IpAddress> out;
  for (const evutil_addrinfo* it = list; it != nullptr; it = it->ai_next) {
    if (it->ai_addr == nullptr) continue;
    if (auto found = IpAddress::from_sockaddr(*it->ai_addr, static_cast<socklen_t>(it->ai_addrlen))) {
      out.push_back(std::move(found->address));
    }
  }
  return out;
}

}  // namespace

Resolver::Resolver(event_base* base, const std::vector<std::string>& nameservers, double timeout_seconds,
                   std::uint64_t max_lookups)
    : base_(base), max_lookups_(max_lookups) {
  // Never EVDNS_BASE_INITIALIZE_NAMESERVERS: it reads resolv.conf's `search` and `ndots` (or,
  // without a search line, the host name's domain), and evdns then asks for a listed name with a
  // suffix first (api.example.com.corp.test under ndots:5) and dials what that off-list name
  // answers. Every name is absolute (SPEC §5): only the servers and timing options are read.
  dns_.reset(evdns_base_new(base, 0));
  hosts_.reset(evdns_base_new(base, 0));
  if (!dns_ || !hosts_) throw std::runtime_error("cannot create the DNS resolver");
  if (nameservers.empty()) {
    // DNS_OPTION_SEARCH is left out, so neither `search`, `domain`, `ndots` nor the host name's
    // domain is taken. A missing file means 127.0.0.1 (evdns' default, as the C library's);
    // other failures leave no server: names then fail as "name not resolved", and --resolve
    // and IP literals still work.
    (void)evdns_base_resolv_conf_parse(dns_.get(), DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC, "/etc/resolv.conf");
  } else {
    for (const auto& server : nameservers) {
      if (evdns_base_nameserver_ip_add(dns_.get(), server.c_str()) != 0) {
        throw std::runtime_error(fmt::format("--nameserver: cannot use {}", server));
      }
    }
  }
  // /etc/hosts, read first either way (SPEC §2), into the base that has no server. Named: a null
  // file name loads only evdns' own localhost entries. A missing or unreadable file leaves those.
  (void)evdns_base_load_hosts(hosts_.get(), "/etc/hosts");
  // And no search list whatever was read: a name is asked exactly as the client wrote it.
  evdns_base_search_clear(dns_.get());
  evdns_base_search_clear(hosts_.get());
  // evdns retries within its own timeout; the whole lookup is also bounded by the connection's
  // --dns-timeout timer, which cancels it.
  const std::string timeout = fmt::format("{}", timeout_seconds > 1 ? timeout_seconds / 2 : timeout_seconds);
  evdns_base_set_option(dns_.get(), "timeout:", timeout.c_str());
  evdns_base_set_option(dns_.get(), "attempts:", "2");
}

// Members go in reverse order: the evdns bases first (evdns_base_free with its requests failed,
// whose callbacks, like those of cancelled ones, are scheduled on the loop, not run here), then the
// queries those callbacks point into. So the loop must not run again once the Resolver is gone:
// serve and check run their finishing turns while it lives, and never run the loop after.
Resolver::~Resolver() = default;

// /etc/hosts' answers for `name`, or nullopt. The hosts base answers a name it holds at once; a
// name it does not hold becomes a request that waits for a server it will never have, cancelled
// here before anything could be sent (its callback, later, writes nothing).
std::optional<std::vector<IpAddress>> Resolver::from_hosts(const std::string& name) {
  evutil_addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  probe_ = HostsProbe{};
  probe_.active = true;
  evdns_getaddrinfo_request* request =
      evdns_getaddrinfo(hosts_.get(), name.c_str(), nullptr, &hints, &Resolver::on_hosts, &probe_);
  probe_.active = false;
  if (request != nullptr) {
    evdns_getaddrinfo_cancel(request);
    return std::nullopt;
  }
  if (!probe_.answered || probe_.answers.empty()) return std::nullopt;
  return std::move(probe_.answers);
}

void Resolver::on_hosts(int result, evutil_addrinfo* answers, void* raw) noexcept {
  auto* probe = static_cast<HostsProbe*>(raw);
  if (probe->active) {
    probe->answered = true;
    if (result == 0) probe->answers = collect(answers);
  }
  if (answers != nullptr) evutil_freeaddrinfo(answers);
}

Resolver::Lookup* Resolver::start(const std::string& name, Callback callback, void* owner,
                                  std::optional<std::vector<IpAddress>>& immediate) {
  // What never leaves the machine costs nothing: /etc/hosts, then an answer within its TTL.
  if (auto hosts = from_hosts(name)) {
    immediate = std::move(*hosts);
    return nullptr;
  }
  std::string key = ascii_lower(name);
  if (auto cached = cache_.find(key, Clock::now())) {
    immediate = std::move(*cached);
    return nullptr;
  }
  Query* query = nullptr;
  if (const auto it = in_flight_.find(key); it != in_flight_.end()) {
    query = it->second;  // on its way already: paid for once
  } else {
    // The budget (SPEC §14): spent, and no query leaves for this name. What stops a box
    // flooding the host's resolver, or spelling data out in names under a listed wildcard.
    if (lookups_ >= max_lookups_) return nullptr;
    query = begin_query(key, name);
    if (query == nullptr) {
      immediate = std::vector<IpAddress>{};  // could not be asked (a label over 63 bytes): failed
      return nullptr;
    }
    ++lookups_;
  }
  auto* lookup = new Lookup{callback, owner, query};
  query->waiters.push_back(lookup);
  return lookup;
}

// Asks A and AAAA of `name`, exactly as the client wrote it (SPEC §5: never rewritten), at once.
// nullptr when neither could be asked.
Resolver::Query* Resolver::begin_query(const std::string& key, const std::string& name) {
  auto owned = std::make_unique<Query>();
  Query* query = owned.get();
  query->resolver = this;
  query->key = key;
  for (Half& half : query->halves) half.query = query;
  // DNS_QUERY_NO_SEARCH: asked exactly as given, whatever search list evdns might hold.
  query->halves[0].request =
      evdns_base_resolve_ipv4(dns_.get(), name.c_str(), DNS_QUERY_NO_SEARCH, &Resolver::on_half, &query->halves[0]);
  query->halves[1].request =
      evdns_base_resolve_ipv6(dns_.get(), name.c_str(), DNS_QUERY_NO_SEARCH, &Resolver::on_half, &query->halves[1]);
  if (!query->pending()) return nullptr;  // neither started: no callback will come
  queries_.emplace(query, std::move(owned));
  in_flight_.emplace(key, query);
  return query;
}

void Resolver::on_half(int result, char, int count, int ttl, void* addresses, void* raw) noexcept {
  auto* half = static_cast<Half*>(raw);
  Query& query = *half->query;
  half->request = nullptr;  // evdns frees it after this callback
  if (!query.done) {
    half->settled = result == DNS_ERR_NONE || result == DNS_ERR_NOTEXIST || result == DNS_ERR_NODATA;
  }
  if (result == DNS_ERR_NONE && addresses != nullptr && count > 0 && !query.done) {
    try {
      const bool v4 = half == &query.halves[0];
      for (int i = 0; i < count; ++i) {
        if (v4) {
          std::uint32_t network_order = 0;
          std::memcpy(&network_order, static_cast<const char*>(addresses) + 4 * i, 4);
          half->answers.push_back(IpAddress::v4(ntohl(network_order)));
        } else {
          std::array<std::uint8_t, 16> bytes{};
          std::memcpy(bytes.data(), static_cast<const char*>(addresses) + 16 * i, 16);
          half->answers.push_back(IpAddress::v6(bytes));
        }
      }
      query.ttl = std::min(query.ttl, static_cast<std::uint32_t>(std::max(ttl, 0)));
    } catch (...) {
      query.broken = true;
    }
  }
  query.resolver->half_answered(query);
}

void Resolver::half_answered(Query& query) noexcept {
  if (query.done) {
    forget_if_idle(query);  // a cancelled half's callback: nobody waits any more
    return;
  }
  if (query.pending()) {
    // One family has answered, or failed: the other gets kAnswerSkewSeconds more, as
    // evdns_getaddrinfo gives it (it starts the same timer on a failure of the first).
    if (!query.skew) {
      query.skew.emplace(base_, &Resolver::on_skew, &query);
      query.skew->arm(kAnswerSkewSeconds);
    }
    return;
  }
  finish(query);
}

void Resolver::on_skew(void* raw) noexcept {
  auto& query = *static_cast<Query*>(raw);
  query.resolver->finish(query);
}

// The answers are known (or the other half's time is up): cached, and handed to every waiter.
void Resolver::finish(Query& query) noexcept {
  query.done = true;
  query.skew.reset();
  in_flight_.erase(query.key);
  cancel_halves(query);  // the half the skew gave up on
  std::vector<IpAddress> answers;
  std::vector<Lookup*> waiters;
  try {
    if (!query.broken) {
      answers = std::move(query.halves[0].answers);
      answers.insert(answers.end(), query.halves[1].answers.begin(), query.halves[1].answers.end());
      // Kept only when both families answered for certain. A half the skew gave up on, or one
      // lost to a time-out or a server failure, may have held an answer the address rule would
      // refuse: reused for a whole TTL, the partial answer would keep it out of every later
      // decision, where one lost packet should cost one decision at most.
      if (query.halves[0].settled && query.halves[1].settled) {
        cache_.store(query.key, answers, query.ttl, Clock::now());
      }
    }
  } catch (...) {
    answers.clear();  // out of memory: no answer rather than a part of them
  }
  waiters.swap(query.waiters);
  for (Lookup* waiter : waiters) waiter->query = nullptr;
  // A callback may cancel a waiter not yet called (its owner left meanwhile): cancel() then
  // clears its owner, and it is skipped here and freed.
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    Lookup* waiter = waiters[i];
    void* owner = waiter->owner;
    const Callback callback = waiter->callback;
    delete waiter;
    if (owner == nullptr) continue;
    if (i + 1 == waiters.size()) {
      callback(owner, std::move(answers));
      continue;
    }
    std::vector<IpAddress> copy;
    try {
      copy = answers;
    } catch (...) {
      // Out of memory: this one is told "no answer" (name not resolved), never a part of them.
    }
    callback(owner, std::move(copy));
  }
  forget_if_idle(query);
}

// The last waiter has left: the query is cancelled (the budget it spent stays spent).
void Resolver::abandon(Query& query) noexcept {
  query.done = true;
  query.skew.reset();
  in_flight_.erase(query.key);
  cancel_halves(query);
  forget_if_idle(query);
}

void Resolver::cancel_halves(Query& query) noexcept {
  for (Half& half : query.halves) {
    // Its callback still runs (DNS_ERR_CANCEL) and finds the query done.
    if (half.request != nullptr) evdns_cancel_request(dns_.get(), half.request);
  }
}

void Resolver::forget_if_idle(Query& query) noexcept {
  if (query.pending() || !query.done) return;
  queries_.erase(&query);
}

void Resolver::cancel(Lookup* lookup) noexcept {
  if (lookup == nullptr) return;
  Query* query = lookup->query;
  if (query == nullptr) {
    lookup->owner = nullptr;  // its answer is being handed out: finish() frees it
    return;
  }
  auto& waiters = query->waiters;
  waiters.erase(std::remove(waiters.begin(), waiters.end(), lookup), waiters.end());
  delete lookup;
  if (waiters.empty()) query->resolver->abandon(*query);
}

}  // namespace boxproxy
