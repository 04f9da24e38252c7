// SPDX-License-Identifier: Apache-2.0
#include "proxy/lookup_cache.h"

#include <algorithm>
#include <utility>

#include "table/ascii.h"

namespace boxproxy {
void LookupCache::erase(Entries::iterator it) noexcept {
  const auto [first, last] = by_expiry_.equal_range(it->second.expires);
  for (auto at = first; at != last; ++at) {
    if (at->second.data() == it->first.data()) {
      by_expiry_.erase(at);
      break;
    }
  }
  addresses_ -= it->second.answers.size();
  entries_.erase(it);
}

std::optional<std::vector<IpAddress>> LookupCache::find(std::string_view name, Clock::time_point now) {
  const auto it = entries_.find(ascii_lower(name));
  if (it == entries_.end()) return std::nullopt;
  // At its expiry the answer is gone: it never outlives its TTL.
  if (now >= it->second.expires) {
    erase(it);
    return std::nullopt;
  }
  return it->second.answers;
}

void LookupCache::store(std::string_view name, std::vector<IpAddress> answers, std::uint32_t ttl_seconds,
                        Clock::time_point now) {
  std::string key = ascii_lower(name);
  if (const auto it = entries_.find(key); it != entries_.end()) erase(it);
  if (answers.empty() || ttl_seconds == 0 || answers.size() > max_addresses_ || max_entries_ == 0) return;
  // Room first: the soonest to expire go (an expired one is always among the first).
  while (!by_expiry_.empty() &&
         (entries_.size() >= max_entries_ || addresses_ + answers.size() > max_addresses_)) {
    erase(entries_.find(by_expiry_.begin()->second));
  }
  const auto expires = now + std::chrono::seconds(std::min(ttl_seconds, kLookupCacheMaxSeconds));
  const std::size_t count = answers.size();
  const auto it = entries_.emplace(std::move(key), Entry{std::move(answers), expires}).first;
  try {
    by_expiry_.emplace(expires, std::string_view(it->first));
  } catch (...) {
    entries_.erase(it);  // never an entry that could not be dropped in its turn
    throw;
  }
  addresses_ += count;
}

}  // namespace boxproxy
