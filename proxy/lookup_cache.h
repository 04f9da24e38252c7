// SPDX-License-Identifier: Apache-2.0
// Answers looked up in DNS, kept for their TTL (SPEC §14): the same name asked again within it
// costs no second lookup, so the bridge's DNS answer (a RESOLVE) and the connection to that name
// that follows it spend one of --max-lookups, not two.
//
// Raw answers only, never verdicts: every decision still checks each answer by the address rule
// (SPEC §5 step 4, which reads the host's own addresses fresh), so an answer taken from here is
// judged exactly as a fresh one would be, and a --permit or --deny that changed meanwhile, or an
// address the host has taken since, is seen. Pure: no I/O, the time is the caller's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/clock.h"
#include "table/address.h"

namespace boxproxy {

// Names kept at most. A session's working set of names is a few hundred at most; past this the
// one that expires first makes room (it costs a lookup again, nothing more).
inline constexpr std::size_t kLookupCacheEntries = 1024;
// Addresses kept at most, across all names: evdns gives at most 32 A and 32 AAAA answers for a
// name, so without this 1024 names could hold 64 Ki addresses. Each costs about 56 bytes, each
// name under 500 bytes with its key and tree nodes: the cache holds under 1 MiB at worst
// (2 * 4096 * 56 B, a vector's spare capacity counted, + 1024 * 500 B), as RESOURCE BOUNDS says.
inline constexpr std::size_t kLookupCacheAddresses = 4096;
// The longest an answer is kept, whatever its TTL: so that a change in DNS (a moved service)
// reaches a long session within minutes even behind a day-long TTL. Shorter than a TTL only
// ever costs another lookup.
inline constexpr std::uint32_t kLookupCacheMaxSeconds = 300;

class LookupCache {
 public:
  using Clock = boxproxy::Clock;  // the proxy's (proxy/clock.h): tests can advance it

  explicit LookupCache(std::size_t max_entries = kLookupCacheEntries,
                       std::size_t max_addresses = kLookupCacheAddresses) noexcept
      : max_entries_(max_entries), max_addresses_(max_addresses) {}

  // The answers of `name` (compared without regard to case) while its TTL lasts, else nullopt.
  // An answer is never given at or after its expiry: it is dropped then.
  [[nodiscard]] std::optional<std::vector<IpAddress>> find(std::string_view name, Clock::time_point now);

  // Keeps `answers` for `ttl_seconds` (cut to kLookupCacheMaxSeconds) from `now`, replacing what
  // `name` had. Nothing is kept for no answer (a failed lookup is never cached: it costs a lookup
  // each time), a TTL of 0, or more answers than the cache may hold at all. Makes room by
  // dropping the names that expire first.
  void store(std::string_view name, std::vector<IpAddress> answers, std::uint32_t ttl_seconds,
             Clock::time_point now);

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] std::size_t addresses() const noexcept { return addresses_; }

 private:
  struct Entry {
    std::vector<IpAddress> answers;
    Clock::time_point expires;
  };
  using Entries = std::map<std::string, Entry, std::less<>>;

  void erase(Entries::iterator it) noexcept;

  std::size_t max_entries_;
  std::size_t max_addresses_;
  std::size_t addresses_ = 0;  // across all entries
  Entries entries_;            // by the name in lower case
  // The entries by expiry, soonest first (what to drop to make room); the views point into
  // entries_' keys, which a std::map never moves.
  std::multimap<Clock::time_point, std::string_view> by_expiry_;
};

}  // namespace boxproxy
