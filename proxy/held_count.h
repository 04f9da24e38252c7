// SPDX-License-Identifier: Apache-2.0
// One unit of a shared count, held by one owner and given back exactly once: when the owner lets
// go of it, or when the owner dies. Replaces the hand-kept "do I hold one?" booleans beside the
// tunnel slot (ProxyStats::open) and the undecided clients (ProxyStats::undecided): a count that
// a forgotten path never gives back would, over a long session, shut every client out.
#pragma once

#include <cstdint>
#include <utility>

namespace boxproxy {

class HeldCount {
 public:
  // Holds nothing.
  HeldCount() noexcept = default;
  // Adds one to `count` and holds it. `count` must outlive this token (the server's stats outlive
  // every connection).
  explicit HeldCount(std::uint64_t& count) noexcept : count_(&count) { ++*count_; }
  HeldCount(HeldCount&& other) noexcept : count_(std::exchange(other.count_, nullptr)) {}
  HeldCount& operator=(HeldCount&& other) noexcept {
    if (this != &other) {
      release();
      count_ = std::exchange(other.count_, nullptr);
    }
    return *this;
  }
  HeldCount(const HeldCount&) = delete;
  HeldCount& operator=(const HeldCount&) = delete;
  ~HeldCount() { release(); }

  [[nodiscard]] bool held() const noexcept { return count_ != nullptr; }
  // Gives the unit back now (nothing when none is held).
  void release() noexcept {
    if (count_ != nullptr) --*std::exchange(count_, nullptr);
  }

 private:
  std::uint64_t* count_ = nullptr;
};

// A tunnel slot (SPEC §5 step 5): one of --max-tunnels (ProxyStats::open), held from admission
// until the upstream connection closes (or at once, when the client has left before the dial
// finished). Taken only through ProxyServer::take_slot, which also spends the budget.
using TunnelSlot = HeldCount;
// A client counted against kMaxHandshakingClients (ProxyStats::undecided), from its accept until
// it is allowed or refused.
using UndecidedMark = HeldCount;

}  // namespace boxproxy
