// SPDX-License-Identifier: Apache-2.0
// The asks of SPEC §15 (proxy/ask_registry.h) on a real event_base: one ask per host and port,
// the first answer wins, the timeout, a supervisor that goes away, clients that leave.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/ask_registry.h"
#include "proxy/event_owners.h"

namespace boxproxy {
namespace {

// A client waiting on an ask: what it was told, and how many times.
struct Waiter {
  std::vector<AskVerdict> told;
  AskRegistry::Ticket ticket;

  static void on_verdict(void* self, AskVerdict verdict) noexcept {
    auto* waiter = static_cast<Waiter*>(self);
    waiter->told.push_back(verdict);
    waiter->ticket = {};  // as a connection does: the registry has let go already
  }
};

struct Rig {
  EventBasePtr base{event_base_new()};
  std::vector<std::string> events;       // what the control clients were sent
  std::vector<std::string> added;        // "always" entries
  std::size_t open_clients = 1;          // control clients open
  AskRegistry asks{base.get(), 0.05, [this](std::string_view entry) { added.emplace_back(entry); }};

  Rig() {
    REQUIRE(base);
    asks.set_publisher(
        [this](std::string_view line) {
          if (open_clients > 0) events.emplace_back(line);
          return open_clients;
        },
        [this] { return open_clients; });
  }

  void ask(Waiter& w, std::string_view host, std::uint16_t port, ConnectionId id = 7) {
    w.ticket = asks.ask(host, port, ClientKind::connect, id, &w, &Waiter::on_verdict);
  }
};

TEST_CASE("AskRegistry: one ask per host and port, the first answer counts, always adds host:port") {
  Rig rig;
  Waiter a, b, c;
  rig.ask(a, "Example.COM.", 443, 3);
  rig.ask(b, "example.com", 443, 4);  // joins the pending ask
  rig.ask(c, "example.com", 8443);    // another port: another ask
  REQUIRE(a.ticket.held());
  REQUIRE(b.ticket.held());
  REQUIRE(rig.events.size() == 2);
  CHECK(rig.events[0] == R"({"event":"ask","ask":1,"host":"example.com","port":443,"kind":"connect","id":3})");
  CHECK(rig.events[1].find(R"("ask":2,)") != std::string::npos);

  CHECK_FALSE(rig.asks.answer(1, AskVerdict::always).has_value());
  CHECK(a.told == std::vector{AskVerdict::always});
  CHECK(b.told == std::vector{AskVerdict::always});
  CHECK(rig.added == std::vector<std::string>{"example.com:443"});
  CHECK(c.told.empty());

  // Answered already, and never asked.
  const auto again = rig.asks.answer(1, AskVerdict::once);
  REQUIRE(again.has_value());
  CHECK(again->find("no longer pending") != std::string::npos);
  const auto unknown = rig.asks.answer(99, AskVerdict::once);
  REQUIRE(unknown.has_value());
  CHECK(*unknown == "no ask 99");
  CHECK(rig.asks.answer(0, AskVerdict::deny).has_value());

  CHECK_FALSE(rig.asks.answer(2, AskVerdict::deny).has_value());
  CHECK(c.told == std::vector{AskVerdict::deny});
}

TEST_CASE("AskRegistry: nobody to ask, the timeout, the last control client gone") {
  Rig rig;
  rig.open_clients = 0;
  CHECK_FALSE(rig.asks.can_ask());
  Waiter alone;
  rig.ask(alone, "example.com", 443);
  CHECK_FALSE(alone.ticket.held());  // not-listed at once
  CHECK(rig.events.empty());

  rig.open_clients = 1;
  CHECK(rig.asks.can_ask());
  CHECK(rig.events.empty());  // can_ask() asks nobody
  Waiter slow;
  rig.ask(slow, "example.com", 443);
  REQUIRE(slow.ticket.held());
  CHECK(rig.events.back().find(R"("ask":1,)") != std::string::npos);  // the unused number is not spent
  for (int pass = 0; pass < 200 && slow.told.empty(); ++pass) event_base_loop(rig.base.get(), EVLOOP_ONCE);
  CHECK(slow.told == std::vector{AskVerdict::timeout});
  CHECK(asked_name(AskVerdict::timeout) == "timeout");

  Waiter one, two;
  rig.ask(one, "a.example.com", 443);
  rig.ask(two, "b.example.com", 443);
  CHECK(rig.asks.pending_events().size() == 2);
  rig.asks.channels_closed();
  CHECK(one.told == std::vector{AskVerdict::closed});
  CHECK(two.told == std::vector{AskVerdict::closed});
  CHECK(asked_name(AskVerdict::closed) == "timeout");
  CHECK(rig.asks.pending_events().empty());
}

TEST_CASE("AskRegistry: an ask every client left is forgotten") {
  Rig rig;
  Waiter a, b;
  rig.ask(a, "example.com", 443);
  rig.ask(b, "example.com", 443);
  a.ticket.release();
  CHECK(rig.asks.pending_events().size() == 1);  // b still waits
  b.ticket = {};
  CHECK(rig.asks.pending_events().empty());
  const auto gone = rig.asks.answer(1, AskVerdict::once);
  REQUIRE(gone.has_value());
  CHECK(gone->find("no longer pending") != std::string::npos);
  CHECK(a.told.empty());
  CHECK(b.told.empty());
  CHECK(rig.added.empty());
}

TEST_CASE("AskRegistry: request asks (SPEC §20) shared by endpoint, method and path; always remembered") {
  Rig rig;
  Waiter a, b, c;
  const RequestQuestion first{"Origin.test", 443, "GET", "/asked/x", true, "asked", 3};
  RequestQuestion same = first;
  same.query = false;  // another query, the same ask
  same.id = 4;
  RequestQuestion other_case = first;
  other_case.path = "/asked/X";  // paths compare as sent
  a.ticket = rig.asks.ask_request(first, &a, &Waiter::on_verdict);
  b.ticket = rig.asks.ask_request(same, &b, &Waiter::on_verdict);
  c.ticket = rig.asks.ask_request(other_case, &c, &Waiter::on_verdict);
  REQUIRE(rig.events.size() == 2);
  CHECK(rig.events[0] == R"({"event":"ask","ask":1,"kind":"request","host":"Origin.test","port":443,)"
                         R"("method":"GET","path":"/asked/x","rule":"asked","id":3,"query":true})");
  CHECK_FALSE(rig.asks.always_allows(first));
  CHECK_FALSE(rig.asks.answer(1, AskVerdict::always));
  CHECK(a.told == std::vector{AskVerdict::always});
  CHECK(b.told == std::vector{AskVerdict::always});
  CHECK(c.told.empty());
  CHECK(rig.added.empty());  // a request's always never touches the host list
  CHECK(rig.asks.always_allows(same));
  CHECK_FALSE(rig.asks.always_allows(other_case));
  RequestQuestion post = first;
  post.method = "POST";
  CHECK_FALSE(rig.asks.always_allows(post));
}

TEST_CASE("AskRegistry: verdicts as a supervisor writes them") {
  CHECK(parse_verdict("once") == AskVerdict::once);
  CHECK(parse_verdict("always") == AskVerdict::always);
  CHECK(parse_verdict("deny") == AskVerdict::deny);
  for (const char* bad : {"timeout", "closed", "Once", "", "yes"}) CHECK_FALSE(parse_verdict(bad).has_value());
  CHECK(approves(AskVerdict::once));
  CHECK(approves(AskVerdict::always));
  CHECK_FALSE(approves(AskVerdict::deny));
  CHECK_FALSE(approves(AskVerdict::timeout));
}

}  // namespace
}  // namespace boxproxy
