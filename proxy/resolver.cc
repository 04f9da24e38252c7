#include "proxy/resolver.h"

#include <event2/util.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <stdexcept>
#include <utility>

namespace boxproxy {

struct Resolver::Lookup {
  Callback callback = nullptr;
  void* owner = nullptr;                        // nullptr once cancelled
  evdns_getaddrinfo_request* request = nullptr;  // nullptr while starting or once answered
  bool starting = true;                         // inside start(): evdns may answer synchronously
  bool answered = false;
  std::vector<IpAddress> answers;
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

Resolver::Resolver(event_base* base, const std::vector<std::string>& nameservers, double timeout_seconds) {
  // Never EVDNS_BASE_INITIALIZE_NAMESERVERS: it reads resolv.conf's `search` and `ndots` (or,
  // without a search line, the host name's domain), and evdns then asks for a listed name with a
  // suffix first (api.example.com.corp.test under ndots:5) and dials what that off-list name
  // answers. Every name is absolute (SPEC §5): only the servers and timing options are read.
  dns_.reset(evdns_base_new(base, 0));
  if (!dns_) throw std::runtime_error("cannot create the DNS resolver");
  if (nameservers.empty()) {
    // DNS_OPTION_SEARCH is left out, so neither `search`, `domain`, `ndots` nor the host name's
    // domain is taken. A missing file means 127.0.0.1 (evdns' default, as the C library's);
    // other failures leave no server: names then fail as "name not resolved", and --resolve
    // and IP literals still work.
    (void)evdns_base_resolv_conf_parse(dns_.get(), DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC | DNS_OPTION_HOSTSFILE,
                                       "/etc/resolv.conf");
  } else {
    evdns_base_load_hosts(dns_.get(), nullptr);
    for (const auto& server : nameservers) {
      if (evdns_base_nameserver_ip_add(dns_.get(), server.c_str()) != 0) {
        throw std::runtime_error(fmt::format("--nameserver: cannot use {}", server));
      }
    }
  }
  // And no search list whatever was read: a name is asked exactly as the client wrote it.
  evdns_base_search_clear(dns_.get());
  // evdns retries within its own timeout; the whole lookup is also bounded by the connection's
  // --dns-timeout timer, which cancels it.
  const std::string timeout = fmt::format("{}", timeout_seconds > 1 ? timeout_seconds / 2 : timeout_seconds);
  evdns_base_set_option(dns_.get(), "timeout:", timeout.c_str());
  evdns_base_set_option(dns_.get(), "attempts:", "2");
}

Resolver::Lookup* Resolver::start(const std::string& name, Callback callback, void* owner,
                                  std::optional<std::vector<IpAddress>>& immediate) {
  auto* token = new Lookup{};
  token->callback = callback;
  token->owner = owner;
  evutil_addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  // EVUTIL_AI_ADDRCONFIG would drop AAAA on a host without IPv6; we want every answer judged.
  token->request = evdns_getaddrinfo(dns_.get(), name.c_str(), nullptr, &hints, &Resolver::on_answer, token);
  token->starting = false;
  if (token->answered) {
    // evdns answered synchronously (a hosts-file entry, or a failure): the request is gone.
    immediate = std::move(token->answers);
    delete token;
    return nullptr;
  }
  return token;
}

void Resolver::cancel(Lookup* lookup) noexcept {
  if (lookup == nullptr) return;
  lookup->owner = nullptr;
  // The callback still runs (EVUTIL_EAI_CANCEL) and frees the token.
  if (lookup->request != nullptr) evdns_getaddrinfo_cancel(lookup->request);
}

void Resolver::on_answer(int result, evutil_addrinfo* answers, void* raw) noexcept {
  auto* token = static_cast<Lookup*>(raw);
  std::vector<IpAddress> found = result == 0 ? collect(answers) : std::vector<IpAddress>{};
  if (answers != nullptr) evutil_freeaddrinfo(answers);
  if (token->starting) {
    token->answered = true;
    token->answers = std::move(found);
    return;
  }
  void* owner = token->owner;
  Callback callback = token->callback;
  delete token;
  if (owner != nullptr) callback(owner, std::move(found));
}

}  // namespace boxproxy
