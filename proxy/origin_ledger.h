// SPDX-License-Identifier: Apache-2.0
// serve's record of the idle origin connections its inspector keeps across the box's connections
// (proxy/inspect/origin_pool.h, proxy/inspect/DESIGN.md "Idle origin connections across the box's
// connections"), each with the tunnel slot it still holds.
//
// SPEC §5 counts --max-tunnels as upstream connections open at once, a slot given back when the
// upstream connection closes. A kept origin connection is still open, so its slot stays taken:
// filed here under the id of the connection that made it, with the decided host, port and the
// address §5 checked and serve dialled. It leaves in exactly one way each: taken by a new
// connection to that host, port and one of its checked answers (the slot moves with it: no new
// upstream connection, so no budget spent); taken as the oldest when the tunnel cap is reached
// (the caller asks the inspector to close it before the new connection dials); dropped when the
// inspector says it closed ("unpooled"), or when its endpoint is removed.
//
// What it stops: an idle pool holding the count above the cap (its slots are counted), a box
// reaching an address its decision did not check through a connection kept for another (the
// address must be among the new decision's checked answers), and an inspector growing serve's
// memory (kMaxLedgerEntries; past it the oldest is given back to be evicted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/held_count.h"
#include "table/address.h"

namespace boxproxy {

// The inspector's own bound on what it keeps (proxy/inspect/origin_pool.h's kMaxPooled): serve
// files no more.
inline constexpr std::size_t kMaxLedgerEntries = 32;
// A host, port and address keep at most this many: a box opening many connections to one host does
// not keep that host's origin connections open past what its next burst takes. 16: a box's client
// opening 16 connections at once (bench/tlsload's, a parallel downloader's) finds one for each of
// the next 16 (at 4, most of them dialled new: bench/README's figures, new connections).
// Each counts against --max-tunnels, but is the first closed at the cap, so none refuses work.
inline constexpr std::size_t kMaxLedgerEntriesPerKey = 16;

class OriginLedger {
 public:
  struct Taken {
    std::uint64_t id = 0;     // the kept origin connection's (the connection that made it)
    TunnelSlot slot;          // its slot, now the taker's
    std::size_t answer = 0;   // for take_match: the index of its address among the answers
  };

  // Files `id`'s kept connection. Returns the id of an entry pushed out past kMaxLedgerEntriesPerKey
  // (the oldest of the same host, port and address) or kMaxLedgerEntries (the oldest), its slot
  // held as closing, which the caller asks the inspector to close.
  [[nodiscard]] std::optional<std::uint64_t> file(std::uint64_t id, std::string_view host, std::uint16_t port,
                                                  const IpAddress& address, TunnelSlot slot);
  // The most recently filed entry for `host` (without case) and `port` whose address is one of
  // `answers`, taken out; nullopt when none matches.
  [[nodiscard]] std::optional<Taken> take_match(std::string_view host, std::uint16_t port,
                                                std::span<const IpAddress> answers);
  // The oldest entry, taken out (the tunnel cap); nullopt when empty.
  [[nodiscard]] std::optional<Taken> take_oldest();
  // `id`'s slot held until the inspector says it closed `id` (drop): for a kept connection serve
  // asked it to close (evict) without giving the slot to a new connection, so that the count
  // holds it until it is closed.
  void closing(std::uint64_t id, TunnelSlot slot);
  // The slot held for `id` while closing, taken out (for a connection waiting for it); nullopt when
  // none is.
  [[nodiscard]] std::optional<TunnelSlot> take_closing(std::uint64_t id) noexcept;
  // The inspector says `id` closed ("unpooled"): its entry, or its slot held while closing,
  // dropped and the slot freed; false when it is not here (taken, or its slot moved on).
  bool drop(std::uint64_t id) noexcept;
  // Every entry whose host `gone` says is no longer inspected, moved to closing; their ids.
  [[nodiscard]] std::vector<std::uint64_t> drop_if(const std::function<bool(const std::string&, std::uint16_t)>& gone);
  void clear() noexcept {
    entries_.clear();
    closing_.clear();
  }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

 private:
  struct Entry {
    std::uint64_t id = 0;
    std::string host;  // lower case
    std::uint16_t port = 0;
    IpAddress address;
    TunnelSlot slot;
  };
  std::deque<Entry> entries_;  // front: the oldest
  // Slots of kept connections the inspector was asked to close and has not yet said it closed.
  // At most --max-tunnels (each is counted in ProxyStats::open, which stops admissions at the cap).
  std::vector<std::pair<std::uint64_t, TunnelSlot>> closing_;
};

}  // namespace boxproxy
