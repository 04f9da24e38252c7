// Name lookups on evdns, never blocking the loop (SPEC §5 step 3).
//
// A lookup is held through a token, not by the connection (STYLE 4): evdns_getaddrinfo may call
// back before it returns, and a cancelled request still calls back later with EVUTIL_EAI_CANCEL.
// So the connection holds a Lookup*, and on leaving calls cancel(), which clears the owner and
// cancels; the callback, whenever it runs, frees the token and tells the owner only if it is
// still there.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proxy/event_owners.h"
#include "table/address.h"

namespace boxproxy {

class Resolver {
 public:
  // Called with the answers (empty: no answer or a failed lookup). Never called after cancel().
  using Callback = void (*)(void* owner, std::vector<IpAddress> answers) noexcept;
  struct Lookup;

  // `nameservers` ("ADDR" or "ADDR:PORT", "[v6]:PORT"): ask these instead of /etc/resolv.conf's
  // (/etc/hosts is read first either way). Of resolv.conf only the nameserver lines and the
  // timing options are read: never `search`, `domain` or `ndots`, so every name is asked as it
  // was given, never with a suffix. Throws std::runtime_error at start-up on failure.
  Resolver(event_base* base, const std::vector<std::string>& nameservers, double timeout_seconds);

  // Starts an A+AAAA lookup of `name`. When evdns answers at once (a hosts-file entry, a
  // failure), the answers are put in `immediate`, the callback never runs, and the result is
  // nullptr: so the callback never runs inside the caller's own frame. Otherwise the token to
  // cancel() with.
  [[nodiscard]] Lookup* start(const std::string& name, Callback callback, void* owner,
                              std::optional<std::vector<IpAddress>>& immediate);

  // The owner no longer wants the answer: the callback will not reach it.
  static void cancel(Lookup* lookup) noexcept;

 private:
  static void on_answer(int result, evutil_addrinfo* answers, void* token) noexcept;
  DnsBasePtr dns_;
};

}  // namespace boxproxy
