// SPDX-License-Identifier: Apache-2.0
// The requests of the supervisor's channel (SPEC §15, proxy/control/control_ops.h) against a fake
// session: every op, every error reply, byte for byte, and that a refused request changes nothing.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "proxy/ask_registry.h"
#include "proxy/control/control_channel.h"
#include "proxy/control/control_ops.h"
#include "proxy/event_owners.h"
#include "proxy/session_control.h"
#include "table/inspect_table.h"

namespace boxproxy {
namespace {

// The port with nothing behind it: a list, counters, an optional ask registry, and a count of
// what was asked of it.
class FakeSession final : public SessionControl {
 public:
  std::optional<HostList> list;
  SessionStats counters;
  std::unique_ptr<AskRegistry> registry;
  int replaced = 0;
  int drains = 0;
  InspectTable inspected;
  int inspect_replaced = 0;
  std::optional<std::string> inspect_refusal;  // set: replace_inspect_table refuses with these words

  [[nodiscard]] const std::optional<HostList>& host_list() const override { return list; }
  void replace_host_list(std::optional<HostList> next) override {
    list = std::move(next);
    ++replaced;
  }
  [[nodiscard]] const InspectTable& inspect_table() const override { return inspected; }
  [[nodiscard]] std::optional<std::string> replace_inspect_table(InspectTable table) override {
    if (inspect_refusal) return inspect_refusal;
    inspected = std::move(table);
    ++inspect_replaced;
    return std::nullopt;
  }
  [[nodiscard]] SessionStats stats() const override { return counters; }
  [[nodiscard]] AskRegistry* asks() override { return registry.get(); }
  void drain() override { ++drains; }
  // "secret": what was set (null: revoked), or the words of a refusal; without `has_inspector`
  // the base class's refusal.
  bool has_inspector = true;
  std::vector<std::pair<std::string, std::optional<std::string>>> secrets_set;
  [[nodiscard]] std::optional<std::string> set_secret(std::string_view name, const SecretText* value) override {
    if (!has_inspector) return SessionControl::set_secret(name, value);
    secrets_set.emplace_back(std::string(name),
                             value ? std::optional<std::string>(std::string(value->view())) : std::nullopt);
    return std::nullopt;
  }
};

std::optional<HostList> list_of(std::initializer_list<const char*> entries) {
  HostList list;
  for (const char* entry : entries) REQUIRE_FALSE(list.add(entry).has_value());
  return list;
}

std::vector<std::string> texts(const std::optional<HostList>& list) {
  std::vector<std::string> out;
  REQUIRE(list.has_value());
  for (const HostEntry& entry : list->entries()) out.push_back(entry_text(entry));
  return out;
}

// The host entries of the endpoints inspected, in order.
std::vector<std::string> hosts(const InspectTable& table) {
  std::vector<std::string> out;
  for (const InspectEndpoint& endpoint : table.endpoints()) out.push_back(entry_text(endpoint.host));
  return out;
}

std::string reply(FakeSession& session, std::string_view line) {
  ControlContext context{session};
  return control_reply(line, context);
}

std::string error(std::string_view id, std::string_view words) {
  return fmt::format(R"({{"id":{},"ok":false,"error":"{}"}})", id, words);
}

TEST_CASE("control_ops: hello names the protocol, the version and the process") {
  FakeSession session;
  CHECK(reply(session, R"({"op":"hello","id":7})") ==
        fmt::format(R"({{"id":7,"ok":true,"v":1,"version":"{}","pid":{}}})", BOXPROXY_VERSION, ::getpid()));
  CHECK(reply(session, R"({"op":"hello"})").starts_with(R"({"id":null,"ok":true,"v":1,)"));
}

TEST_CASE("control_ops: the id is echoed as given, in ASCII") {
  FakeSession session;
  CHECK(reply(session, R"({"op":"subscribe","id":"abc"})") == R"({"id":"abc","ok":true})");
  CHECK(reply(session, R"({"id":[1,{"x":2}],"op":"drain"})") == R"({"id":[1,{"x":2}],"ok":true})");
  CHECK(reply(session, "{\"op\":\"subscribe\",\"id\":\"\xc3\xa9\"}") == R"({"id":"\u00e9","ok":true})");
  // Invalid UTF-8 in a request is not JSON.
  CHECK(reply(session, "{\"op\":\"x\xff\"}") == error("null", "not JSON"));
}

TEST_CASE("control_ops: stats is the §12 object without \"event\", refusals by class in order") {
  FakeSession session;
  CHECK(reply(session, R"({"op":"stats","id":1})") ==
        R"({"id":1,"ok":true,"open":0,"used":0,"lookups":0,"clients":0,"refused":{},"reported":0,"up":0,"down":0})");
  session.counters = SessionStats{.open = 2,
                                  .used = 5,
                                  .lookups = 3,
                                  .clients = 4,
                                  .refused = {{"not-listed", 2}, {"address", 1}},
                                  .reported = 6,
                                  .up = 18446744073709551615ULL,
                                  .down = 10};
  CHECK(reply(session, R"({"op":"stats"})") ==
        R"({"id":null,"ok":true,"open":2,"used":5,"lookups":3,"clients":4,"refused":{"address":1,"not-listed":2},)"
        R"("reported":6,"up":18446744073709551615,"down":10})");
}

TEST_CASE("control_ops: subscribe asks the caller to mark its channel; drain starts a drain") {
  FakeSession session;
  ControlContext context{session};
  CHECK(control_reply(R"({"op":"subscribe","id":2})", context) == R"({"id":2,"ok":true})");
  CHECK(context.subscribe);
  CHECK(session.drains == 0);

  ControlContext other{session};
  CHECK(control_reply(R"({"op":"drain","id":3})", other) == R"({"id":3,"ok":true})");
  CHECK_FALSE(other.subscribe);
  CHECK(session.drains == 1);

  // With a key it does not read, neither happens.
  ControlContext refused{session};
  CHECK(control_reply(R"({"op":"drain","now":true})", refused) == error("null", R"(drain: unknown key \"now\")"));
  CHECK(control_reply(R"({"op":"subscribe","all":1})", refused) ==
        error("null", R"(subscribe: unknown key \"all\")"));
  CHECK_FALSE(refused.subscribe);
  CHECK(session.drains == 1);
}

TEST_CASE("control_ops: lines that are not requests") {
  FakeSession session;
  CHECK(reply(session, "hello") == error("null", "not JSON"));
  CHECK(reply(session, "") == error("null", "not JSON"));
  CHECK(reply(session, R"({"op":"hello")") == error("null", "not JSON"));
  CHECK(reply(session, R"(["hello"])") == error("null", "not a JSON object"));
  CHECK(reply(session, "42") == error("null", "not a JSON object"));
  CHECK(reply(session, std::string(17, '[') + std::string(17, ']')) ==
        error("null", "not a request: nests deeper than 16 levels"));
  CHECK(reply(session, R"({"id":5})") == error("5", R"(no \"op\")"));
  CHECK(reply(session, R"({"id":5,"op":["hello"]})") == error("5", R"(\"op\" is not a string: [\"hello\"])"));
  CHECK(reply(session, R"({"op":"halt"})") ==
        error("null", R"(unknown op \"halt\" (hello, allow, inspect, secret, stats, subscribe, drain, answer))"));
  // A long value is quoted in part.
  const std::string long_op(200, 'x');
  CHECK(reply(session, fmt::format(R"({{"op":"{}"}})", long_op)) ==
        error("null", fmt::format(R"(unknown op \"{}... (hello, allow, inspect, secret, stats, subscribe, drain, answer))",
                                  long_op.substr(0, 79))));
  CHECK(reply(session, R"({"op":"hello","x":1})") == error("null", R"(hello: unknown key \"x\")"));
  CHECK(reply(session, R"({"op":"stats","verbose":true})") == error("null", R"(stats: unknown key \"verbose\")"));
  CHECK(session.replaced == 0);
  CHECK(session.drains == 0);
}

TEST_CASE("control_ops: a line over the bound") {
  CHECK(line_too_long_reply() ==
        error("null", fmt::format("the line is longer than {} bytes; it was discarded up to its newline",
                                  kMaxControlLineBytes)));
  CHECK(kMaxControlLineBytes == 65536);
}

TEST_CASE("control_ops: allow set, add, remove, set null; the list comes back canonical") {
  FakeSession session;
  CHECK(reply(session, R"({"op":"allow","id":1,"set":["Example.COM.","*.pkg.dev:8080","example.com"]})") ==
        R"({"id":1,"ok":true,"list":["example.com","*.pkg.dev:8080"]})");
  CHECK(texts(session.list) == std::vector<std::string>{"example.com", "*.pkg.dev:8080"});
  CHECK(reply(session, R"({"op":"allow","add":["b.org","EXAMPLE.com"]})") ==
        R"({"id":null,"ok":true,"list":["example.com","*.pkg.dev:8080","b.org"]})");
  CHECK(reply(session, R"({"op":"allow","remove":["*.PKG.dev:8080"]})") ==
        R"({"id":null,"ok":true,"list":["example.com","b.org"]})");
  CHECK(reply(session, R"({"op":"allow","set":[]})") == R"({"id":null,"ok":true,"list":[]})");
  REQUIRE(session.list.has_value());
  CHECK(session.list->entries().empty());
  CHECK(reply(session, R"({"op":"allow","set":null})") == R"({"id":null,"ok":true,"list":null})");
  CHECK_FALSE(session.list.has_value());
  CHECK(session.replaced == 5);
}

TEST_CASE("control_ops: a refused allow names why and changes nothing") {
  FakeSession session;
  session.list = list_of({"example.com", "b.org:8443"});
  const std::string words_one = R"(allow: give exactly one of \"add\", \"remove\" or \"set\")";
  struct Row {
    const char* line;
    std::string words;
  };
  const Row rows[] = {
      {R"({"op":"allow"})", words_one},
      {R"({"op":"allow","add":["a.org"],"set":null})", words_one},
      {R"({"op":"allow","sett":["a.org"]})", R"(allow: unknown key \"sett\")"},
      {R"({"op":"allow","set":"a.org"})", "allow: set is not an array of host-list entries"},
      {R"({"op":"allow","add":{"a":1}})", "allow: add is not an array of host-list entries"},
      {R"({"op":"allow","add":["a.org",5]})", "allow: add[1] is not a string: 5"},
      {R"({"op":"allow","set":["a.org","10.0.0.1"]})",
       "allow: set[1] is not a host-list entry: 10.0.0.1: is an IP address; the list holds names only"},
      {R"({"op":"allow","remove":["localhost"]})",
       "allow: remove[0] is not a host-list entry: localhost: a single label; an entry names two labels or more "
       "(example.com)"},
      {R"({"op":"allow","remove":["example.com","c.org"]})", R"(allow: remove: \"c.org\" is not on the list)"},
      {R"({"op":"allow","remove":["b.org"]})", R"(allow: remove: \"b.org\" is not on the list)"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.line);
    CHECK(reply(session, row.line) == error("null", row.words));
  }
  CHECK(session.replaced == 0);
  CHECK(texts(session.list) == std::vector<std::string>{"example.com", "b.org:8443"});

  // With no list in force, add and remove are refused: they would mean "set".
  session.list.reset();
  CHECK(reply(session, R"({"op":"allow","add":["a.org"]})") ==
        error("null", R"(allow: add: no host list is in force (everything public is reachable); use \"set\")"));
  CHECK(reply(session, R"({"op":"allow","remove":["a.org"]})") ==
        error("null", R"(allow: remove: no host list is in force (everything public is reachable); use \"set\")"));
  CHECK(session.replaced == 0);
  CHECK_FALSE(session.list.has_value());
}

TEST_CASE("control_ops: answer") {
  FakeSession session;
  CHECK(reply(session, R"({"op":"answer","ask":3,"verdict":"once"})") ==
        error("null", "answer: no ask 3: serve was started without --ask"));

  EventBasePtr base{event_base_new()};
  REQUIRE(base);
  session.list = list_of({"example.com"});
  session.registry = std::make_unique<AskRegistry>(base.get(), 30.0, [&session](std::string_view entry) {
    REQUIRE(session.list.has_value());
    HostList next = *session.list;
    REQUIRE_FALSE(next.add(entry).has_value());
    session.replace_host_list(std::move(next));
  });
  session.registry->set_publisher([](std::string_view) { return std::size_t{1}; }, [] { return std::size_t{1}; });
  // A client waiting on the ask: what it was told. Its ticket outlives the verdict harmlessly.
  std::vector<AskVerdict> told;
  const auto tell = [](void* self, AskVerdict verdict) noexcept {
    static_cast<std::vector<AskVerdict>*>(self)->push_back(verdict);
  };
  const AskRegistry::Ticket ticket = session.registry->ask("New.Example.org", 443, ClientKind::connect, 9, &told, tell);
  REQUIRE(ticket.held());

  const std::string verdict_words = R"(answer: \"verdict\" must be \"once\", \"always\" or \"deny\")";
  const std::string ask_words = R"(answer: \"ask\" must be the number of an ask)";
  struct Row {
    const char* line;
    std::string words;
  };
  const Row rows[] = {
      {R"({"op":"answer","verdict":"once"})", ask_words},
      {R"({"op":"answer","ask":"1","verdict":"once"})", ask_words},
      {R"({"op":"answer","ask":-1,"verdict":"once"})", ask_words},
      {R"({"op":"answer","ask":1.5,"verdict":"once"})", ask_words},
      {R"({"op":"answer","ask":1})", verdict_words},
      {R"({"op":"answer","ask":1,"verdict":true})", verdict_words},
      {R"({"op":"answer","ask":1,"verdict":"timeout"})",
       R"(answer: verdict \"timeout\" is not \"once\", \"always\" or \"deny\")"},
      {R"({"op":"answer","ask":1,"verdict":"once","why":"x"})", R"(answer: unknown key \"why\")"},
      {R"({"op":"answer","ask":2,"verdict":"once"})", "answer: no ask 2"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.line);
    CHECK(reply(session, row.line) == error("null", row.words));
  }
  CHECK(told.empty());
  CHECK(session.replaced == 0);

  CHECK(reply(session, R"({"op":"answer","id":"a","ask":1,"verdict":"always"})") == R"({"id":"a","ok":true})");
  CHECK(told == std::vector{AskVerdict::always});
  CHECK(texts(session.list) == std::vector<std::string>{"example.com", "new.example.org:443"});
  const std::string again = reply(session, R"({"op":"answer","ask":1,"verdict":"deny"})");
  CHECK(again.starts_with(R"({"id":null,"ok":false,"error":"answer: )"));
  CHECK(again.find("no longer pending") != std::string::npos);
}

TEST_CASE("control_ops: inspect set, add, remove; the endpoints come back as --check-config writes them") {
  FakeSession session;
  CHECK(reply(session, R"({"op":"inspect","id":1,"set":[{"host":"API.Example.com.","deny":[{"method":"delete",)"
                       R"("path":"/repos/**"}]},{"host":"*.pkg.dev:8443","access":"read-only","mode":"report"}]})") ==
        R"({"id":1,"ok":true,"inspect":[{"host":"api.example.com:443","deny":[{"method":"DELETE","path":"/repos/**"}],)"
        R"("mode":"enforce"},{"host":"*.pkg.dev:8443","access":"read-only","mode":"report"}]})");
  CHECK(hosts(session.inspected) == std::vector<std::string>{"api.example.com:443", "*.pkg.dev:8443"});
  REQUIRE(session.inspected.find("api.example.com", 443) != nullptr);
  CHECK(session.inspected.find("api.example.com", 443)->deny.size() == 1);

  CHECK(reply(session, R"({"op":"inspect","add":[{"host":"b.org","name":"bee","rules":[]}]})") ==
        R"({"id":null,"ok":true,"inspect":[{"host":"api.example.com:443","deny":[{"method":"DELETE",)"
        R"("path":"/repos/**"}],"mode":"enforce"},{"host":"*.pkg.dev:8443","access":"read-only","mode":"report"},)"
        R"({"host":"b.org:443","name":"bee","rules":[],"mode":"enforce"}]})");
  // A host entry as --inspect takes it: its port is 443 when absent, in any case.
  CHECK(reply(session, R"({"op":"inspect","remove":["API.example.com","*.pkg.dev:8443"]})") ==
        R"({"id":null,"ok":true,"inspect":[{"host":"b.org:443","name":"bee","rules":[],"mode":"enforce"}]})");
  // "set" replaces the rules of a host in force.
  CHECK(reply(session, R"({"op":"inspect","set":[{"host":"b.org","access":"read-write"}]})") ==
        R"({"id":null,"ok":true,"inspect":[{"host":"b.org:443","access":"read-write","mode":"enforce"}]})");
  CHECK(reply(session, R"({"op":"inspect","set":[]})") == R"({"id":null,"ok":true,"inspect":[]})");
  CHECK(session.inspected.empty());
  CHECK(session.inspect_replaced == 5);
}

TEST_CASE("control_ops: a refused inspect names why and changes nothing") {
  FakeSession session;
  session.inspected = InspectTable{};
  REQUIRE(session.inspected.add(std::get<InspectEndpoint>(parse_inspect_entry("a.org"))));
  REQUIRE(session.inspected.add(std::get<InspectEndpoint>(parse_inspect_entry("b.org:8443"))));
  const std::string words_one = R"(inspect: give exactly one of \"add\", \"remove\" or \"set\")";
  struct Row {
    const char* line;
    std::string words;
  };
  const Row rows[] = {
      {R"({"op":"inspect"})", words_one},
      {R"({"op":"inspect","add":[],"remove":[]})", words_one},
      {R"({"op":"inspect","sett":[]})", R"(inspect: unknown key \"sett\")"},
      {R"({"op":"inspect","set":null})", R"(inspect: set: \"null\" is not a JSON array of objects)"},
      // Objects only, as in the config file: a bare entry is --inspect's.
      {R"({"op":"inspect","add":["c.org"]})",
       R"(inspect: add[0]: \"\\\"c.org\\\"\" is not a JSON object ({\"host\": ENTRY, ...}; a bare entry is )"
       R"(--inspect's))"},
      // One bad endpoint among good ones: none is taken.
      {R"({"op":"inspect","add":[{"host":"c.org"},{"host":"d.org","rules":[{"method":"GET","path":"x"}]}]})",
       R"(inspect: add[1].rules[0].path: \"x\": a glob starts with '/')"},
      {R"({"op":"inspect","set":[{"host":"c.org","access":"read-only","rules":[]}]})",
       R"(inspect: set[0]: has both \"access\" and \"rules\"; give one (or neither, for every method and path))"},
      {R"({"op":"inspect","set":[{"host":"c.org"},{"host":"C.org:443","access":"read-only"}]})",
       R"(inspect: set[1].host: \"c.org:443\" is named twice (each host is named once))"},
      {R"({"op":"inspect","add":[{"host":"c.org"},{"host":"c.org"}]})",
       R"(inspect: add[1].host: \"c.org:443\" is named twice (each host is named once))"},
      {R"({"op":"inspect","add":[{"host":"c.org"},{"host":"A.org."}]})",
       R"(inspect: add[1].host: \"a.org:443\" is inspected already (\"set\" changes its rules))"},
      // SPEC §19a: no credential on a wildcard, live as at start.
      {R"({"op":"inspect","add":[{"host":"*.c.org","inject":{"x-key":"{k}"}}]})",
       R"(inspect: add[0]: \"*.c.org:443\" is a wildcard endpoint and cannot carry \"inject\" (any name under it, )"
       R"(one a tenant of that domain registers included, would get the credential); name each host instead)"},
      {R"({"op":"inspect","set":[{"host":"c.org","secrets":["k"]},{"host":"*.c.org","secrets":["k"]}]})",
       R"(inspect: set[1]: \"*.c.org:443\" is a wildcard endpoint and cannot carry \"secrets\" (any name under it, )"
       R"(one a tenant of that domain registers included, would get the credential); name each host instead)"},
      {R"({"op":"inspect","remove":"a.org"})", "inspect: remove is not an array of host entries"},
      {R"({"op":"inspect","remove":["a.org",7]})", "inspect: remove[1] is not a string: 7"},
      {R"({"op":"inspect","remove":["a.org","b.org"]})", R"(inspect: remove[1]: \"b.org:443\" is not inspected)"},
      {R"({"op":"inspect","remove":["a.org","a.org:443"]})", R"(inspect: remove[1]: \"a.org:443\" is named twice)"},
      {R"({"op":"inspect","remove":["https://a.org"]})",
       "inspect: remove[0] is not a host entry: https://a.org: is a URL; an entry is a name such as example.com or "
       "*.example.com"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.line);
    CHECK(reply(session, row.line) == error("null", row.words));
  }
  CHECK(session.inspect_replaced == 0);
  CHECK(hosts(session.inspected) == std::vector<std::string>{"a.org:443", "b.org:8443"});

  // The session's own refusal (serve started without an inspector) is the reply's words.
  session.inspect_refusal = "inspection was not enabled at start";
  CHECK(reply(session, R"({"op":"inspect","id":4,"add":[{"host":"c.org"}]})") ==
        error("4", "inspect: inspection was not enabled at start"));
  CHECK(hosts(session.inspected) == std::vector<std::string>{"a.org:443", "b.org:8443"});
}

}  // namespace
}  // namespace boxproxy

namespace boxproxy {

TEST_CASE("control_ops: secret sets, replaces and revokes; a refusal never echoes the value") {
  FakeSession session;
  CHECK(reply(session, R"({"id":1,"op":"secret","name":"github","value":"ghp_x1-0123456789"})") == R"({"id":1,"ok":true})");
  CHECK(reply(session, R"({"id":2,"op":"secret","name":"github","value":null})") == R"({"id":2,"ok":true})");
  REQUIRE(session.secrets_set.size() == 2);
  CHECK(session.secrets_set[0] == std::pair<std::string, std::optional<std::string>>{"github", "ghp_x1-0123456789"});
  CHECK(session.secrets_set[1] == std::pair<std::string, std::optional<std::string>>{"github", std::nullopt});

  for (const char* line : {R"({"op":"secret","name":"github","value":"sp ace-VALUE9"})",
                           R"({"op":"secret","name":"github","value":"crlf\r\nVALUE9"})",
                           R"({"op":"secret","name":"github","value":""})",
                           R"({"op":"secret","name":"github","value":"VALUE9-abcd"})",  // 11 bytes: too short
                           R"({"op":"secret","name":"github","value":7})",
                           R"({"op":"secret","name":"github"})",
                           R"({"op":"secret","name":"GitHub","value":"VALUE9"})",
                           R"({"op":"secret","value":"VALUE9"})",
                           R"({"op":"secret","name":"github","value":"VALUE9","extra":1})"}) {
    CAPTURE(line);
    const std::string answer = reply(session, line);
    CHECK(answer.find(R"("ok":false)") != std::string::npos);
    CHECK(answer.find("VALUE9") == std::string::npos);
  }
  CHECK(session.secrets_set.size() == 2);  // nothing refused reached the session
  // SPEC §19a: 12 bytes at least, said without the value.
  CHECK(reply(session, R"({"id":5,"op":"secret","name":"github","value":"VALUE9-abcd"})") ==
        error("5", "secret: \\\"value\\\" is shorter than 12 bytes (a short value would match at random in the "
                   "responses searched for it)"));
  CHECK(reply(session, R"({"id":6,"op":"secret","name":"github","value":"VALUE9-abcde"})") == R"({"id":6,"ok":true})");
  CHECK(session.secrets_set.size() == 3);

  session.has_inspector = false;
  const std::string refused = reply(session, R"({"id":3,"op":"secret","name":"github","value":"VALUE9-abcdef"})");
  CHECK(refused == error("3", std::string("secret: ") + std::string(kNoInspectorForSecrets)));
}

}  // namespace boxproxy
