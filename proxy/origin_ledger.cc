// SPDX-License-Identifier: Apache-2.0
// serve's record of the kept origin connections (proxy/origin_ledger.h).
#include "proxy/origin_ledger.h"

#include <algorithm>
#include <utility>

#include "table/ascii.h"

namespace boxproxy {

std::optional<std::uint64_t> OriginLedger::file(std::uint64_t id, std::string_view host, std::uint16_t port,
                                                 const IpAddress& address, TunnelSlot slot) {
  Entry entry{id, ascii_lower(host), port, address, std::move(slot)};
  const auto same = [&](const Entry& e) {
    return e.port == entry.port && e.address == entry.address && e.host == entry.host;
  };
  if (static_cast<std::size_t>(std::ranges::count_if(entries_, same)) >= kMaxLedgerEntriesPerKey) {
    const auto oldest = std::ranges::find_if(entries_, same);
    const std::uint64_t pushed_out = oldest->id;
    closing(pushed_out, std::move(oldest->slot));
    entries_.erase(oldest);
    entries_.push_back(std::move(entry));
    return pushed_out;
  }
  entries_.push_back(std::move(entry));
  if (entries_.size() <= kMaxLedgerEntries) return std::nullopt;
  const std::uint64_t oldest = entries_.front().id;
  closing(oldest, std::move(entries_.front().slot));
  entries_.pop_front();
  return oldest;
}

std::optional<OriginLedger::Taken> OriginLedger::take_match(std::string_view host, std::uint16_t port,
                                                            std::span<const IpAddress> answers) {
  for (auto entry = entries_.rbegin(); entry != entries_.rend(); ++entry) {
    if (entry->port != port || !iequals(entry->host, host)) continue;
    const auto answer = std::ranges::find(answers, entry->address);
    if (answer == answers.end()) continue;
    Taken taken{entry->id, std::move(entry->slot), static_cast<std::size_t>(answer - answers.begin())};
    entries_.erase(std::next(entry).base());
    return taken;
  }
  return std::nullopt;
}

std::optional<OriginLedger::Taken> OriginLedger::take_oldest() {
  if (entries_.empty()) return std::nullopt;
  Taken taken{entries_.front().id, std::move(entries_.front().slot), 0};
  entries_.pop_front();
  return taken;
}

void OriginLedger::closing(std::uint64_t id, TunnelSlot slot) { closing_.emplace_back(id, std::move(slot)); }

std::optional<TunnelSlot> OriginLedger::take_closing(std::uint64_t id) noexcept {
  const auto held = std::ranges::find(closing_, id, &std::pair<std::uint64_t, TunnelSlot>::first);
  if (held == closing_.end()) return std::nullopt;
  TunnelSlot slot = std::move(held->second);
  closing_.erase(held);
  return slot;
}

bool OriginLedger::drop(std::uint64_t id) noexcept {
  const auto entry = std::ranges::find(entries_, id, &Entry::id);
  if (entry != entries_.end()) {
    entries_.erase(entry);
    return true;
  }
  const auto held = std::ranges::find(closing_, id, &std::pair<std::uint64_t, TunnelSlot>::first);
  if (held == closing_.end()) return false;
  closing_.erase(held);
  return true;
}

std::vector<std::uint64_t> OriginLedger::drop_if(const std::function<bool(const std::string&, std::uint16_t)>& gone) {
  std::vector<std::uint64_t> dropped;
  for (auto entry = entries_.begin(); entry != entries_.end();) {
    if (gone(entry->host, entry->port)) {
      dropped.push_back(entry->id);
      closing(entry->id, std::move(entry->slot));
      entry = entries_.erase(entry);
    } else {
      ++entry;
    }
  }
  return dropped;
}

}  // namespace boxproxy
