// SPDX-License-Identifier: Apache-2.0
#include "proxy/control/control_ops.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <algorithm>
#include <variant>

#include <nlohmann/json.hpp>

#include "proxy/ask_registry.h"
#include "proxy/clock.h"
#include "proxy/control/control_channel.h"
#include "proxy/inspect_array.h"
#include "proxy/wire/json_nesting.h"
#include "table/host_list.h"
#include "table/inspect_table.h"
#include "table/secret_value.h"

namespace boxproxy {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The deepest a request's arrays and objects may nest. A real request nests two deep ("add" in
// the object); a line of 64 KiB of '[' would otherwise be 65,536 levels for the parser's stack and
// the document's destructor.
constexpr std::size_t kMaxRequestNesting = 16;

// A reply to a request that was done, or the words of why it was not. Requests are answered on
// the event loop, so a refusal is a value, never an exception (STYLE 11).
struct Failure {
  std::string words;
};
template <typename T>
using Result = std::variant<T, Failure>;

template <typename T>
const Failure* failed(const Result<T>& result) noexcept {
  return std::get_if<Failure>(&result);
}

// ASCII only, whatever a request's strings held: the reply goes to a supervisor's terminal too.
std::string dump(const OrderedJson& reply) { return reply.dump(-1, ' ', true, Json::error_handler_t::replace); }

OrderedJson reply_head(const Json& id, bool ok) {
  OrderedJson reply;
  reply["id"] = id;
  reply["ok"] = ok;
  return reply;
}

std::string error_reply(const Json& id, std::string_view words) {
  OrderedJson reply = reply_head(id, false);
  reply["error"] = words;
  return dump(reply);
}

// A value quoted for an error's words, short: a request's text is echoed only in part.
std::string shown(const Json& value) {
  constexpr std::size_t kShownChars = 80;
  std::string text = value.dump(-1, ' ', true, Json::error_handler_t::replace);
  if (text.size() > kShownChars) text = text.substr(0, kShownChars) + "...";
  return text;
}

Result<Json> parse_request(std::string_view line) {
  if (json_nesting_depth(line, kMaxRequestNesting) > kMaxRequestNesting) {
    return Failure{fmt::format("not a request: nests deeper than {} levels", kMaxRequestNesting)};
  }
  Json request = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return Failure{"not JSON"};
  return request;
}

// Every key of `request` must be one the op reads: a misspelt key ("sett") would otherwise be
// ignored and the request do something other than what was meant.
std::optional<Failure> only_keys(const Json& request, std::string_view op,
                                 std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : request.items()) {
    if (key == "op" || key == "id") continue;
    bool known = false;
    for (const std::string_view name : allowed) known = known || key == name;
    if (!known) return Failure{fmt::format("{}: unknown key {}", op, shown(key))};
  }
  return std::nullopt;
}

// ---- hello, stats ---------------------------------------------------------------------------

OrderedJson hello(const Json& id, const SessionControl& session) {
  OrderedJson reply = reply_head(id, true);
  reply["v"] = kControlProtocolVersion;
  reply["version"] = BOXPROXY_VERSION;
  reply["pid"] = static_cast<std::int64_t>(::getpid());
  // Request inspection's CA (SPEC §18), for a supervisor that puts it in the box's trust store.
  if (const std::string_view ca = session.inspection_ca(); !ca.empty()) reply["ca"] = std::string(ca);
  return reply;
}

// The SIGUSR1 stats object (SPEC §12) as a reply: its keys, in its order, after "id" and "ok",
// without "event" (a reply is not an event).
OrderedJson stats(const Json& id, const SessionStats& counters) {
  OrderedJson reply = reply_head(id, true);
  reply["open"] = counters.open;
  reply["used"] = counters.used;
  reply["lookups"] = counters.lookups;
  reply["clients"] = counters.clients;
  OrderedJson refused = OrderedJson::object();
  for (const auto& [cls, count] : counters.refused) refused[cls] = count;
  reply["refused"] = std::move(refused);
  reply["reported"] = counters.reported;
  reply["up"] = counters.up;
  reply["down"] = counters.down;
  return reply;
}

// ---- allow -----------------------------------------------------------------------------------

std::vector<std::string> entry_texts(const HostList& list) {
  std::vector<std::string> texts;
  texts.reserve(list.entries().size());
  for (const HostEntry& entry : list.entries()) texts.push_back(entry_text(entry));
  return texts;
}

// The entries of `value` (an array of strings), each checked and canonical; or the first bad
// one, named: nothing has been changed yet.
Result<std::vector<HostEntry>> entries_of(const Json& value, std::string_view key) {
  if (!value.is_array()) return Failure{fmt::format("allow: {} is not an array of host-list entries", key)};
  std::vector<HostEntry> entries;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const Json& item = value[i];
    if (!item.is_string()) return Failure{fmt::format("allow: {}[{}] is not a string: {}", key, i, shown(item))};
    auto parsed = parse_host_entry(item.get<std::string>());
    if (const auto* error = std::get_if<std::string>(&parsed)) {
      return Failure{fmt::format("allow: {}[{}] is not a host-list entry: {}", key, i, *error)};
    }
    entries.push_back(std::get<HostEntry>(std::move(parsed)));
  }
  return entries;
}

HostList list_of(const std::vector<HostEntry>& entries) {
  HostList list;
  for (const HostEntry& entry : entries) {
    list.add(entry);  // repeats are dropped
  }
  return list;
}

// The new list (nullopt: none), or why not, with nothing changed.
Result<std::optional<HostList>> edited_list(const Json& request, const std::optional<HostList>& current) {
  const int given = static_cast<int>(request.contains("add")) + static_cast<int>(request.contains("remove")) +
                    static_cast<int>(request.contains("set"));
  if (given != 1) return Failure{"allow: give exactly one of \"add\", \"remove\" or \"set\""};
  if (request.contains("set")) {
    const Json& set = request["set"];
    if (set.is_null()) return std::optional<HostList>();  // no list: everything public (SPEC §15)
    auto entries = entries_of(set, "set");
    if (const Failure* failure = failed(entries)) return *failure;
    return std::optional<HostList>(list_of(std::get<0>(entries)));
  }
  const bool adding = request.contains("add");
  const std::string key = adding ? "add" : "remove";
  auto parsed = entries_of(request[key], key);
  if (const Failure* failure = failed(parsed)) return *failure;
  const std::vector<HostEntry>& entries = std::get<0>(parsed);
  // With no list in force everything public is reachable: adding a name would turn the list on
  // and shut out everything else, and removing one means nothing. Both ask for "set".
  if (!current) {
    return Failure{fmt::format("allow: {}: no host list is in force (everything public is reachable); use \"set\"", key)};
  }
  std::vector<HostEntry> result = current->entries();
  if (adding) {
    result.insert(result.end(), entries.begin(), entries.end());
    return std::optional<HostList>(list_of(result));
  }
  for (const HostEntry& entry : entries) {
    const auto at = std::find(result.begin(), result.end(), entry);
    if (at == result.end()) return Failure{fmt::format("allow: remove: {} is not on the list", shown(entry_text(entry)))};
    result.erase(at);
  }
  return std::optional<HostList>(list_of(result));
}

Result<OrderedJson> allow(const Json& id, const Json& request, SessionControl& session) {
  if (auto failure = only_keys(request, "allow", {"add", "remove", "set"})) return *failure;
  auto edited = edited_list(request, session.host_list());
  if (const Failure* failure = failed(edited)) return *failure;
  std::optional<HostList>& list = std::get<0>(edited);
  OrderedJson reply = reply_head(id, true);
  reply["list"] = list ? OrderedJson(entry_texts(*list)) : OrderedJson(nullptr);
  // As SIGHUP does: tunnels already open are not touched, and every later decision reads the new
  // list (a decision reads the list once, at its start).
  session.replace_host_list(std::move(list));
  return reply;
}

// ---- inspect ---------------------------------------------------------------------------------

// The endpoints of `value` (the config's "inspect" objects, SPEC §18), each checked; or the first
// bad one, named: nothing has been changed yet.
Result<std::vector<InspectEndpoint>> endpoints_of(const Json& value, std::string_view key) {
  auto read = read_inspect_array(key, value);
  if (const auto* error = std::get_if<std::string>(&read)) return Failure{fmt::format("inspect: {}", *error)};
  return std::get<std::vector<InspectEndpoint>>(std::move(read));
}

// `table` with `endpoints` added, or the first whose host is in it already. Two rule sets for
// one host would leave which of them decides to the order they came in (SPEC §18 refuses the
// same host twice): an "add" names a new host, and a change to one in force is a "set".
std::optional<Failure> add_each(InspectTable& table, std::vector<InspectEndpoint> endpoints, std::string_view key,
                                const InspectTable& in_force) {
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const std::string host = entry_text(endpoints[i].host);
    if (key == "add" && in_force.same_host(endpoints[i].host) != nullptr) {
      return Failure{fmt::format("inspect: add[{}].host: {} is inspected already (\"set\" changes its rules)", i,
                                 shown(host))};
    }
    if (!table.add(std::move(endpoints[i]))) {
      return Failure{fmt::format("inspect: {}[{}].host: {} is named twice (each host is named once)", key, i,
                                 shown(host))};
    }
  }
  return std::nullopt;
}

// The host entries of "remove" (as --inspect takes them, port 443 when absent), each inspected
// now and named once; or why not.
Result<std::vector<HostEntry>> hosts_to_remove(const Json& value, const InspectTable& in_force) {
  if (!value.is_array()) return Failure{"inspect: remove is not an array of host entries"};
  std::vector<HostEntry> hosts;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const Json& item = value[i];
    if (!item.is_string()) return Failure{fmt::format("inspect: remove[{}] is not a string: {}", i, shown(item))};
    auto parsed = parse_inspect_host(item.get<std::string>());
    if (const auto* error = std::get_if<std::string>(&parsed)) {
      return Failure{fmt::format("inspect: remove[{}] is not a host entry: {}", i, *error)};
    }
    HostEntry& host = std::get<HostEntry>(parsed);
    if (in_force.same_host(host) == nullptr) {
      return Failure{fmt::format("inspect: remove[{}]: {} is not inspected", i, shown(entry_text(host)))};
    }
    if (std::find(hosts.begin(), hosts.end(), host) != hosts.end()) {
      return Failure{fmt::format("inspect: remove[{}]: {} is named twice", i, shown(entry_text(host)))};
    }
    hosts.push_back(std::move(host));
  }
  return hosts;
}

// The new table, or why not, with nothing changed.
Result<InspectTable> edited_table(const Json& request, const InspectTable& in_force) {
  const int given = static_cast<int>(request.contains("add")) + static_cast<int>(request.contains("remove")) +
                    static_cast<int>(request.contains("set"));
  if (given != 1) return Failure{"inspect: give exactly one of \"add\", \"remove\" or \"set\""};
  InspectTable table;
  if (request.contains("remove")) {
    auto removed = hosts_to_remove(request["remove"], in_force);
    if (const Failure* failure = failed(removed)) return *failure;
    const std::vector<HostEntry>& hosts = std::get<0>(removed);
    for (const InspectEndpoint& endpoint : in_force.endpoints()) {
      if (std::find(hosts.begin(), hosts.end(), endpoint.host) == hosts.end()) (void)table.add(endpoint);
    }
    return table;
  }
  const std::string key = request.contains("add") ? "add" : "set";
  auto endpoints = endpoints_of(request[key], key);
  if (const Failure* failure = failed(endpoints)) return *failure;
  if (key == "add") {
    for (const InspectEndpoint& endpoint : in_force.endpoints()) (void)table.add(endpoint);
  }
  if (auto failure = add_each(table, std::move(std::get<0>(endpoints)), key, in_force)) return *failure;
  return table;
}

// Atomic as "allow" is: every endpoint is read and checked, and the new table made whole, before
// anything changes; then serve and its inspector take it together.
Result<OrderedJson> inspect(const Json& id, const Json& request, SessionControl& session) {
  if (auto failure = only_keys(request, "inspect", {"add", "remove", "set"})) return *failure;
  auto edited = edited_table(request, session.inspect_table());
  if (const Failure* failure = failed(edited)) return *failure;
  InspectTable& table = std::get<0>(edited);
  OrderedJson reply = reply_head(id, true);
  reply["inspect"] = inspect_array(table.endpoints());
  if (auto error = session.replace_inspect_table(std::move(table))) return Failure{fmt::format("inspect: {}", *error)};
  return reply;
}

// ---- answer ----------------------------------------------------------------------------------

Result<OrderedJson> answer(const Json& id, const Json& request, SessionControl& session) {
  if (auto failure = only_keys(request, "answer", {"ask", "verdict"})) return *failure;
  if (!request.contains("ask") || !request["ask"].is_number_unsigned()) {
    return Failure{"answer: \"ask\" must be the number of an ask"};
  }
  if (!request.contains("verdict") || !request["verdict"].is_string()) {
    return Failure{"answer: \"verdict\" must be \"once\", \"always\" or \"deny\""};
  }
  const std::optional<AskVerdict> verdict = parse_verdict(request["verdict"].get<std::string>());
  if (!verdict) {
    return Failure{fmt::format("answer: verdict {} is not \"once\", \"always\" or \"deny\"", shown(request["verdict"]))};
  }
  AskRegistry* asks = session.asks();
  const auto ask = request["ask"].get<std::uint64_t>();
  if (asks == nullptr) return Failure{fmt::format("answer: no ask {}: serve was started without --ask", ask)};
  if (const auto error = asks->answer(ask, *verdict)) return Failure{fmt::format("answer: {}", *error)};
  return reply_head(id, true);
}

// ---- secret ----------------------------------------------------------------------------------

// SPEC §19: {"op":"secret","name":NAME,"value":"..."|null}. Every error names the key, never the
// value: a reply goes to whoever holds the channel's other end, and may be logged there.
Result<OrderedJson> secret(const Json& id, const Json& request, SessionControl& session) {
  if (auto failure = only_keys(request, "secret", {"name", "value"})) return *failure;
  if (!request.contains("name") || !request["name"].is_string()) {
    return Failure{"secret: \"name\" must be a secret's name (1 to 32 of a-z, 0-9 and _)"};
  }
  const std::string& name = request["name"].get_ref<const std::string&>();
  if (auto error = check_secret_name(name)) return Failure{fmt::format("secret: name {} {}", shown(name), *error)};
  if (!request.contains("value")) return Failure{"secret: \"value\" must be given: the value, or null to revoke"};
  const Json& value = request["value"];
  if (!value.is_null() && !value.is_string()) return Failure{"secret: \"value\" must be a string, or null to revoke"};
  std::optional<SecretText> text;
  if (value.is_string()) {
    const std::string& given = value.get_ref<const std::string&>();
    if (auto error = check_secret_value(given)) {
      // An empty value would be a credential of nothing: revoking is said with null.
      return Failure{fmt::format("secret: \"value\" {}{}", *error, given.empty() ? " (null revokes a secret)" : "")};
    }
    text.emplace(given);
  }
  if (auto error = session.set_secret(name, text ? &*text : nullptr)) return Failure{fmt::format("secret: {}", *error)};
  return reply_head(id, true);
}

// ---- one request -----------------------------------------------------------------------------

Result<OrderedJson> run(const Json& id, const Json& request, ControlContext& context) {
  if (!request.contains("op")) return Failure{"no \"op\""};
  if (!request["op"].is_string()) return Failure{fmt::format("\"op\" is not a string: {}", shown(request["op"]))};
  const std::string op = request["op"].get<std::string>();
  if (op == "allow") return allow(id, request, context.session);
  if (op == "answer") return answer(id, request, context.session);
  if (op == "inspect") return inspect(id, request, context.session);
  if (op == "secret") return secret(id, request, context.session);
#if defined(BOXPROXY_TEST_HOOKS)
  // Test builds only: {"op":"advance-clock","seconds":N} moves the proxy's clock (proxy/clock.h).
  if (op == "advance-clock" && request.value("seconds", Json()).is_number() && !only_keys(request, op, {"seconds"})) {
    Clock::advance(request["seconds"].get<double>());
    return reply_head(id, true);
  }
#endif
  const bool known = op == "hello" || op == "stats" || op == "subscribe" || op == "drain";
  if (!known) {
    return Failure{
        fmt::format("unknown op {} (hello, allow, inspect, secret, stats, subscribe, drain, answer)", shown(op))};
  }
  if (auto failure = only_keys(request, op, {})) return *failure;
  if (op == "hello") return hello(id, context.session);
  if (op == "stats") return stats(id, context.session.stats());
  if (op == "subscribe") {
    context.subscribe = true;
  } else {
    context.session.drain();  // the reply goes out before the drain can end the process
  }
  return reply_head(id, true);
}

}  // namespace

std::string control_reply(std::string_view line, ControlContext& context) {
  auto parsed = parse_request(line);
  if (const Failure* failure = failed(parsed)) return error_reply(nullptr, failure->words);
  Json& request = std::get<0>(parsed);
  if (!request.is_object()) return error_reply(nullptr, "not a JSON object");
  Json id = nullptr;
  if (const auto it = request.find("id"); it != request.end()) id = *it;
  auto reply = run(id, request, context);
  // A "secret" request's value, as the parser copied it: overwritten before the document frees it
  // (the line it came from is the channel's, which overwrites it: control_channel.cc).
  if (const auto value = request.find("value"); value != request.end() && value->is_string()) {
    scrub(value->get_ref<std::string&>());
  }
  if (const Failure* failure = failed(reply)) return error_reply(id, failure->words);
  return dump(std::get<0>(reply));
}

std::string line_too_long_reply() {
  return error_reply(nullptr, fmt::format("the line is longer than {} bytes; it was discarded up to its newline",
                                          kMaxControlLineBytes));
}

}  // namespace boxproxy
