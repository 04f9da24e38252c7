// SPDX-License-Identifier: Apache-2.0
// proxy/origin_ledger: a kept origin connection's slot stays counted until it is taken, evicted
// or dropped, and is only ever taken for the same host, port and a checked address.
#include "proxy/origin_ledger.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace boxproxy {
namespace {

IpAddress address(const char* text) { return *parse_strict_address(text); }

}  // namespace

TEST_CASE("a filed slot stays counted until taken, and moves to its taker") {
  std::uint64_t open = 0;
  OriginLedger ledger;
  CHECK_FALSE(ledger.file(1, "API.Test", 443, address("127.0.0.2"), TunnelSlot(open)));
  CHECK(open == 1);
  const std::vector<IpAddress> answers{address("127.0.0.3"), address("127.0.0.2")};
  // Another port, another host, or an address the new decision did not check: not taken.
  CHECK_FALSE(ledger.take_match("api.test", 8443, answers));
  CHECK_FALSE(ledger.take_match("other.test", 443, answers));
  CHECK_FALSE(ledger.take_match("api.test", 443, std::vector<IpAddress>{address("127.0.0.3")}));
  auto taken = ledger.take_match("api.test", 443, answers);
  REQUIRE(taken);
  CHECK((taken->id == 1 && taken->answer == 1 && taken->slot.held()));
  CHECK((open == 1 && ledger.empty()));
  taken->slot.release();
  CHECK(open == 0);
}

TEST_CASE("a host, port and address keep at most kMaxLedgerEntriesPerKey: the oldest of them goes") {
  std::uint64_t open = 0;
  OriginLedger ledger;
  for (std::uint64_t id = 1; id <= kMaxLedgerEntriesPerKey; ++id) {
    CHECK_FALSE(ledger.file(id, "a.test", 443, address("127.0.0.2"), TunnelSlot(open)));
  }
  CHECK_FALSE(ledger.file(50, "b.test", 443, address("127.0.0.2"), TunnelSlot(open)));  // another host
  CHECK(ledger.file(9, "A.TEST", 443, address("127.0.0.2"), TunnelSlot(open)) == std::optional<std::uint64_t>(1));
  CHECK((open == kMaxLedgerEntriesPerKey + 2 && ledger.size() == kMaxLedgerEntriesPerKey + 1));
  CHECK(ledger.drop(1));  // the inspector said it closed it
  CHECK(open == kMaxLedgerEntriesPerKey + 1);
  // A slot held while closing, taken by a connection that waited for it (the tunnel cap).
  auto oldest = ledger.take_oldest();
  REQUIRE(oldest);
  ledger.closing(oldest->id, std::move(oldest->slot));
  auto waited = ledger.take_closing(oldest->id);
  REQUIRE(waited);
  CHECK((waited->held() && !ledger.take_closing(oldest->id) && !ledger.drop(oldest->id)));
  CHECK(open == kMaxLedgerEntriesPerKey + 1);
}

TEST_CASE("dropped (unpooled) or pushed out past the bound: the slot is freed; the oldest goes first") {
  std::uint64_t open = 0;
  OriginLedger ledger;
  for (std::uint64_t id = 1; id <= kMaxLedgerEntries; ++id) {
    // Each its own address (a key keeps at most kMaxLedgerEntriesPerKey): 127.0.1.N.
    const std::string text = "127.0.1." + std::to_string(id);
    CHECK_FALSE(ledger.file(id, "a.test", 443, address(text.c_str()), TunnelSlot(open)));
  }
  CHECK(ledger.file(100, "a.test", 443, address("127.0.0.2"), TunnelSlot(open)) == std::optional<std::uint64_t>(1));
  // The one pushed out keeps its slot until the inspector says it closed it.
  CHECK((open == kMaxLedgerEntries + 1 && ledger.size() == kMaxLedgerEntries));
  CHECK(ledger.drop(1));
  CHECK(ledger.drop(2));
  CHECK_FALSE(ledger.drop(2));  // already gone: an unpooled that crossed a take is ignored
  CHECK(open == kMaxLedgerEntries - 1);
  auto oldest = ledger.take_oldest();
  REQUIRE(oldest);
  CHECK(oldest->id == 3);
  // The most recently filed one is taken for a match (ids 3.. have 127.0.1.N; 100 has 127.0.0.2).
  CHECK(ledger.take_match("a.test", 443, std::vector<IpAddress>{address("127.0.0.2")})->id == 100);
  const auto dropped = ledger.drop_if([](const std::string& host, std::uint16_t) { return host == "a.test"; });
  CHECK(dropped.size() == kMaxLedgerEntries - 3);
  CHECK(ledger.empty());
  CHECK(open == kMaxLedgerEntries - 3 + 1);  // the endpoint's are closing: held until said closed
  for (const std::uint64_t id : dropped) CHECK(ledger.drop(id));
  oldest->slot.release();
  CHECK(open == 0);
}

}  // namespace boxproxy
