// SPDX-License-Identifier: Apache-2.0
// proxy/control_ops: the requests of the supervisor's channel (SPEC §15), line by line, against
// a fake session (proxy/control/session_control.h) that holds a host list, inspected endpoints and
// one pending ask.
//
// The input is split at '\n' as the channel splits it, and every line goes to control_reply in
// turn, so that sequences (set, add, remove, answer, inspect) reach states one line cannot. Invariants:
//   - a reply is one line of printable ASCII, a JSON object whose first keys are "id" then "ok";
//   - a refused request ("ok":false) has an "error" string and changes nothing: the list, the
//     endpoints, the drain count and the subscribe mark are as they were;
//   - a reply with "list" shows the list now in force (null: none);
//   - the list holds canonical entries (each reads back to itself) and no entry twice;
//   - a reply with "inspect" shows the endpoints now in force, and reads back (as "set" would
//     read it) to the same endpoints; no host is inspected twice.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "proxy/ask_registry.h"
#include "proxy/control/control_ops.h"
#include "proxy/event_owners.h"
#include "proxy/inspect_array.h"
#include "proxy/session_control.h"
#include "table/inspect_table.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

class FakeSession final : public SessionControl {
 public:
  std::optional<HostList> list;
  InspectTable inspected;
  std::unique_ptr<AskRegistry> registry;
  int drains = 0;

  [[nodiscard]] const std::optional<HostList>& host_list() const override { return list; }
  void replace_host_list(std::optional<HostList> next) override { list = std::move(next); }
  [[nodiscard]] const InspectTable& inspect_table() const override { return inspected; }
  [[nodiscard]] std::optional<std::string> replace_inspect_table(InspectTable table) override {
    inspected = std::move(table);
    return std::nullopt;
  }
  [[nodiscard]] SessionStats stats() const override {
    return SessionStats{.open = 1, .used = 2, .lookups = 3, .clients = 4, .refused = {{"not-listed", 5}}};
  }
  [[nodiscard]] AskRegistry* asks() override { return registry.get(); }
  void drain() override { ++drains; }
};

// The client waiting on the pending ask; its ticket outlives the verdict harmlessly.
void on_verdict(void*, AskVerdict) noexcept {}

std::vector<std::string> texts(const std::optional<HostList>& list) {
  std::vector<std::string> out;
  if (list) {
    for (const HostEntry& entry : list->entries()) out.push_back(entry_text(entry));
  }
  return out;
}

void check_list(const std::optional<HostList>& list) {
  if (!list) return;
  const std::vector<HostEntry>& entries = list->entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto parsed = parse_host_entry(entry_text(entries[i]));
    FUZZ_CHECK(std::holds_alternative<HostEntry>(parsed));
    FUZZ_CHECK(std::get<HostEntry>(parsed) == entries[i]);
    for (std::size_t j = 0; j < i; ++j) FUZZ_CHECK(!(entries[j] == entries[i]));
  }
}

// The endpoints as the reply writes them, as text.
std::string endpoints_text(const InspectTable& table) { return inspect_array(table.endpoints()).dump(); }

void check_endpoints(const InspectTable& table) {
  const std::vector<InspectEndpoint>& endpoints = table.endpoints();
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) FUZZ_CHECK(!(endpoints[j].host == endpoints[i].host));
  }
  auto again = read_inspect_array("set", nlohmann::json::parse(endpoints_text(table)));
  FUZZ_CHECK(std::holds_alternative<std::vector<InspectEndpoint>>(again));
  FUZZ_CHECK(inspect_array(std::get<std::vector<InspectEndpoint>>(again)).dump() == endpoints_text(table));
}

void check_reply(const std::string& reply) {
  for (const char c : reply) FUZZ_CHECK(c >= 0x20 && c < 0x7f);
  const auto object = nlohmann::ordered_json::parse(reply, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(object.is_object());
  FUZZ_CHECK(object.size() >= 2);
  FUZZ_CHECK(object.begin().key() == "id");
  FUZZ_CHECK(std::next(object.begin()).key() == "ok");
  FUZZ_CHECK(object["ok"].is_boolean());
}

void run_line(FakeSession& session, std::string_view line) {
  const std::vector<std::string> before = texts(session.list);
  const bool had_list = session.list.has_value();
  const std::string endpoints_before = endpoints_text(session.inspected);
  const int drains = session.drains;
  ControlContext context{session};
  const std::string reply = control_reply(line, context);
  check_reply(reply);
  check_list(session.list);
  check_endpoints(session.inspected);
  const auto object = nlohmann::json::parse(reply);
  if (!object["ok"].get<bool>()) {
    FUZZ_CHECK(object.contains("error") && object["error"].is_string());
    FUZZ_CHECK(texts(session.list) == before);
    FUZZ_CHECK(session.list.has_value() == had_list);
    FUZZ_CHECK(endpoints_text(session.inspected) == endpoints_before);
    FUZZ_CHECK(session.drains == drains);
    FUZZ_CHECK(!context.subscribe);
    return;
  }
  if (const auto shown = object.find("list"); shown != object.end()) {
    FUZZ_CHECK(shown->is_null() == !session.list.has_value());
    if (!shown->is_null()) FUZZ_CHECK(shown->get<std::vector<std::string>>() == texts(session.list));
  }
  if (const auto shown = object.find("inspect"); shown != object.end()) {
    // As values: the reply is read back here without its key order (nlohmann::json sorts keys).
    FUZZ_CHECK(*shown == nlohmann::json::parse(endpoints_text(session.inspected)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static event_base* const base = event_base_new();
  FUZZ_CHECK(base != nullptr);
  FakeSession session;
  session.list.emplace();
  (void)session.list->add("example.com");
  (void)session.list->add("*.pkg.dev:8080");
  (void)session.inspected.add(std::get<InspectEndpoint>(parse_inspect_entry("api.example.com")));
  session.registry = std::make_unique<AskRegistry>(base, 30.0, [&session](std::string_view entry) {
    // "always", as the server does it: host:port joins a list in force.
    if (!session.list) return;
    HostList next = *session.list;
    if (!next.add(entry)) session.replace_host_list(std::move(next));
  });
  session.registry->set_publisher([](std::string_view) { return std::size_t{1}; }, [] { return std::size_t{1}; });
  int waiter = 0;
  AskRegistry::Ticket ticket =
      session.registry->ask("new.example.org", 443, ClientKind::connect, 1, &waiter, &on_verdict);
  FUZZ_CHECK(ticket.held());

  std::string_view text = fuzz::as_text(data, size);
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    run_line(session, text.substr(0, newline));
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
  }
  ticket.release();  // before the registry it points into
  return 0;
}
