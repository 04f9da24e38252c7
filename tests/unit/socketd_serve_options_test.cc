// SPDX-License-Identifier: Apache-2.0
// `boxproxy serve`'s options (SPEC §2): defaults, every option, --config precedence, and that
// every usage error names the option (or config key) and the value.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "socketd/serve_options.h"

namespace {

using boxproxy::HelpRequested;
using boxproxy::LogFormat;
using boxproxy::ServeOptions;
using boxproxy::UsageError;

// A private temporary directory, removed (with the files tests put in it) at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/boxproxy-options-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    REQUIRE(made != nullptr);
    path = made;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
};

ServeOptions parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  return boxproxy::parse_serve_options(static_cast<int>(argv.size()), argv.data());
}

// The message of the UsageError `args` must raise; fails the test when none is raised.
std::string usage_error(std::vector<std::string> args) {
  try {
    (void)parse(std::move(args));
  } catch (const UsageError& error) {
    return error.message;
  }
  FAIL("no usage error");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("defaults: only --socket given") {
  const ServeOptions options = parse({"--socket", "/run/x.sock"});
  CHECK(options.socket_path == "/run/x.sock");
  CHECK_FALSE(options.proxy.policy.allow.has_value());
  CHECK(options.proxy.policy.rule.permit.empty());
  CHECK(options.proxy.policy.rule.deny.empty());
  CHECK(options.proxy.policy.fixed_answers.empty());
  CHECK(options.allow_items.empty());
  CHECK_FALSE(options.allow_file.has_value());
  CHECK(options.proxy.allow_hint.empty());
  CHECK(options.nameservers.empty());
  CHECK(options.proxy.max_tunnels == 256);
  CHECK(options.proxy.max_connections == 65536);
  CHECK(options.max_lookups == 65536);
  CHECK(options.proxy.head_timeout == 30);
  CHECK(options.proxy.dns_timeout == 5);
  CHECK(options.proxy.connect_timeout == 20);
  CHECK(options.proxy.idle_timeout == 0);
  CHECK(options.proxy.max_head_bytes == 32768);
  CHECK(options.log_format == LogFormat::text);
  CHECK_FALSE(options.log_file.has_value());
  CHECK_FALSE(options.audit_path.has_value());
  CHECK_FALSE(options.proxy.auth_token.has_value());
  CHECK_FALSE(options.ready_fd.has_value());
  CHECK_FALSE(options.die_with_parent);
  CHECK_FALSE(options.config_path.has_value());
}

TEST_CASE("argv may start at the word serve") {
  CHECK(parse({"serve", "--socket", "/s"}).socket_path == "/s");
}

TEST_CASE("every option, as --name VALUE and --name=VALUE") {
  TempDir dir;
  const std::string token_file = dir.write("token", "s3cret\n");
  const std::string allow_file = dir.write("allow", "# comment\nfile.example.com\n\n*.wild.example:8443\n");
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) != -1);
  const ServeOptions options = parse({
      "--socket=/run/a.sock",
      "--allow", "a.example.com, b.example.com",
      "--allow=c.example.com",
      "--allow-file", allow_file,
      "--allow-hint", "ask ops: #egress",
      "--permit", "10.1.0.0/16",
      "--deny=1.1.1.0/24",
      "--deny", "2001:4860::/32",
      "--resolve", "Mirror.Example.=10.1.2.3,10.1.2.4",
      "--nameserver", "127.0.0.1:5353",
      "--nameserver=[::1]:53",
      "--nameserver", "192.0.2.1",
      "--max-tunnels", "64",
      "--max-connections=9223372036854775808",
      "--max-lookups", "3",
      "--head-timeout", "0.5",
      "--dns-timeout=2",
      "--connect-timeout", "86400",
      "--idle-timeout", "0",
      "--max-head-bytes", "1024",
      "--log", "json",
      "--log-file", "/tmp/log",
      "--audit=/tmp/audit",
      "--auth-token-file", token_file,
      "--ready-fd", std::to_string(pipe_fds[1]),
      "--die-with-parent",
  });
  CHECK(options.socket_path == "/run/a.sock");
  REQUIRE(options.proxy.policy.allow.has_value());
  CHECK(options.proxy.policy.allow->entries().size() == 5);
  CHECK(options.allow_items == std::vector<std::string>{"a.example.com, b.example.com", "c.example.com"});
  CHECK(options.allow_on_command_line);
  CHECK(options.allow_file_on_command_line);
  CHECK(options.allow_file == allow_file);
  CHECK(options.proxy.allow_hint == "ask ops: #egress");
  CHECK(options.proxy.policy.rule.permit.size() == 1);
  CHECK(options.proxy.policy.rule.deny.size() == 2);
  REQUIRE(options.proxy.policy.fixed_answers.count("mirror.example") == 1);
  CHECK(options.proxy.policy.fixed_answers.at("mirror.example").size() == 2);
  CHECK(options.nameservers == std::vector<std::string>{"127.0.0.1:5353", "[::1]:53", "192.0.2.1"});
  CHECK(options.proxy.max_tunnels == 64);
  CHECK(options.proxy.max_connections == (std::uint64_t{1} << 63));
  CHECK(options.max_lookups == 3);
  CHECK(options.proxy.head_timeout == 0.5);
  CHECK(options.proxy.dns_timeout == 2);
  CHECK(options.proxy.connect_timeout == 86400);
  CHECK(options.proxy.idle_timeout == 0);
  CHECK(options.proxy.max_head_bytes == 1024);
  CHECK(options.log_format == LogFormat::json);
  CHECK(options.log_file == "/tmp/log");
  CHECK(options.audit_path == "/tmp/audit");
  CHECK(options.proxy.auth_token == "s3cret");
  CHECK(options.auth_token_file == token_file);
  CHECK(options.ready_fd == pipe_fds[1]);
  CHECK(options.die_with_parent);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST_CASE("--help and -h") {
  CHECK_THROWS_AS(parse({"--socket", "/s", "--help"}), HelpRequested);
  CHECK_THROWS_AS(parse({"-h"}), HelpRequested);
  const std::string help = boxproxy::serve_help_text();
  for (const char* option : {"--socket", "--allow", "--allow-file", "--allow-hint", "--permit", "--deny", "--resolve",
                             "--nameserver", "--max-tunnels", "--max-connections", "--max-lookups", "--head-timeout", "--dns-timeout",
                             "--connect-timeout", "--idle-timeout", "--max-head-bytes", "--log", "--log-file", "--audit",
                             "--auth-token-file", "--ready-fd", "--die-with-parent", "--config"}) {
    CAPTURE(option);
    CHECK(contains(help, option));
  }
}

TEST_CASE("the token file: one trailing newline or CRLF dropped, never more") {
  TempDir dir;
  CHECK(parse({"--socket", "/s", "--auth-token-file", dir.write("a", "tok")}).proxy.auth_token == "tok");
  CHECK(parse({"--socket", "/s", "--auth-token-file", dir.write("b", "tok\r\n")}).proxy.auth_token == "tok");
  CHECK(parse({"--socket", "/s", "--auth-token-file", dir.write("c", "tok en\n")}).proxy.auth_token == "tok en");
  // Two newlines: the second is inside the token, a control character: refused, token not shown.
  const std::string message = usage_error({"--socket", "/s", "--auth-token-file", dir.write("d", "secret-tok\n\n")});
  CHECK(contains(message, "--auth-token-file"));
  CHECK_FALSE(contains(message, "secret-tok"));
}

// Each bad value: the message starts with "boxproxy serve: ", names the option and the value.
TEST_CASE("every usage error names the option and the value") {
  TempDir dir;
  const std::string missing = dir.path + "/missing";
  const std::string empty_token = dir.write("empty", "\n");
  struct Case {
    std::vector<std::string> args;
    std::string option;
    std::string value;
  };
  const std::vector<Case> cases = {
      {{"--max-tunnels", "0"}, "--max-tunnels", "\"0\""},
      {{"--max-tunnels", "1000001"}, "--max-tunnels", "\"1000001\""},
      {{"--max-tunnels", "-1"}, "--max-tunnels", "\"-1\""},
      {{"--max-tunnels", "12abc"}, "--max-tunnels", "\"12abc\""},
      {{"--max-tunnels", " 5"}, "--max-tunnels", "\" 5\""},
      {{"--max-tunnels", "0x10"}, "--max-tunnels", "\"0x10\""},
      {{"--max-connections", "0"}, "--max-connections", "\"0\""},
      {{"--max-connections", "9223372036854775809"}, "--max-connections", "\"9223372036854775809\""},
      {{"--max-connections", "99999999999999999999999"}, "--max-connections", "\"99999999999999999999999\""},
      {{"--max-lookups", "0"}, "--max-lookups", "\"0\""},
      {{"--max-lookups", "9223372036854775809"}, "--max-lookups", "\"9223372036854775809\""},
      {{"--max-lookups", "-3"}, "--max-lookups", "\"-3\""},
      {{"--head-timeout", "0"}, "--head-timeout", "\"0\""},
      {{"--head-timeout", "-1"}, "--head-timeout", "\"-1\""},
      {{"--head-timeout", "86401"}, "--head-timeout", "\"86401\""},
      {{"--head-timeout", "nan"}, "--head-timeout", "\"nan\""},
      {{"--head-timeout", "1e3"}, "--head-timeout", "\"1e3\""},
      {{"--dns-timeout", "0.0"}, "--dns-timeout", "\"0.0\""},
      {{"--dns-timeout", "inf"}, "--dns-timeout", "\"inf\""},
      {{"--connect-timeout", ""}, "--connect-timeout", "\"\""},
      {{"--connect-timeout", "1."}, "--connect-timeout", "\"1.\""},
      {{"--idle-timeout", "-0.5"}, "--idle-timeout", "\"-0.5\""},
      {{"--idle-timeout", "86400.5"}, "--idle-timeout", "\"86400.5\""},
      {{"--max-head-bytes", "1023"}, "--max-head-bytes", "\"1023\""},
      {{"--max-head-bytes", "1048577"}, "--max-head-bytes", "\"1048577\""},
      {{"--log", "xml"}, "--log", "\"xml\""},
      {{"--log", "JSON"}, "--log", "\"JSON\""},
      {{"--ready-fd", "-1"}, "--ready-fd", "\"-1\""},
      {{"--ready-fd", "1"}, "--ready-fd", "\"1\""},
      {{"--ready-fd", "987654"}, "--ready-fd", "\"987654\""},
      {{"--allow-hint", "tab\there"}, "--allow-hint", "\"tab\\x09here\""},
      {{"--allow-hint", "caf\xc3\xa9"}, "--allow-hint", "\"caf\\xc3\\xa9\""},
      {{"--nameserver", "dns.example.com"}, "--nameserver", "\"dns.example.com\""},
      {{"--nameserver", "127.0.0.1:0"}, "--nameserver", "\"127.0.0.1:0\""},
      {{"--nameserver", "127.0.0.1:65536"}, "--nameserver", "\"127.0.0.1:65536\""},
      {{"--nameserver", "[::1"}, "--nameserver", "\"[::1\""},
      {{"--nameserver", "[127.0.0.1]:53"}, "--nameserver", "\"[127.0.0.1]:53\""},
      {{"--nameserver", "127.1"}, "--nameserver", "\"127.1\""},
      {{"--socket", ""}, "--socket", "\"\""},
      {{"--log-file", ""}, "--log-file", "\"\""},
      {{"--audit", ""}, "--audit", "\"\""},
      {{"--auth-token-file", missing}, "--auth-token-file", "\"" + missing + "\""},
      {{"--auth-token-file", empty_token}, "--auth-token-file", "\"" + empty_token + "\""},
      {{"--allow-file", missing}, "--allow-file", "\"" + missing + "\""},
      {{"--config", missing}, "--config", "\"" + missing + "\""},
      {{"--die-with-parent=yes"}, "--die-with-parent", "\"yes\""},
      {{"--max-tunnels", "1", "--max-tunnels", "2"}, "--max-tunnels", "\"2\""},
      {{"--bogus", "1"}, "unknown option", "\"--bogus\""},
      {{"--bogus=1"}, "unknown option", "\"--bogus\""},
      {{"stray"}, "unexpected argument", "\"stray\""},
      {{"--max-tunnels"}, "--max-tunnels", "a value is needed"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--socket", "/s"};
    if (!c.args.empty() && c.args.front() == "--socket") args.clear();
    args.insert(args.end(), c.args.begin(), c.args.end());
    const std::string message = usage_error(args);
    CAPTURE(message);
    CHECK(message.rfind("boxproxy serve: ", 0) == 0);
    CHECK(contains(message, c.option));
    CHECK(contains(message, c.value));
  }
  CHECK(usage_error({"--socket", "/s", "--max-tunnels", "0"}) ==
        "boxproxy serve: --max-tunnels: \"0\" is not a number from 1 to 1000000");
}

TEST_CASE("values the table's parsers refuse are usage errors naming option and value") {
  TempDir dir;
  const std::string allow_file = dir.write("allow", "good.example.com\n# fine\nhttp://bad.example.com/\n");
  struct Case {
    std::vector<std::string> args;
    std::string option;
    std::string value;
  };
  const std::vector<Case> cases = {
      {{"--permit", "10.0.0.0/33"}, "--permit", "\"10.0.0.0/33\""},
      {{"--permit", "not-a-cidr"}, "--permit", "\"not-a-cidr\""},
      {{"--deny", "10.0.0.1/8"}, "--deny", "\"10.0.0.1/8\""},
      {{"--resolve", "name-without-addresses"}, "--resolve", "\"name-without-addresses\""},
      {{"--resolve", "x.example=not-an-ip"}, "--resolve", "\"x.example=not-an-ip\""},
      {{"--allow", "good.example.com, 1.2.3.4"}, "--allow", "\"1.2.3.4\""},
      {{"--allow", "localhost"}, "--allow", "\"localhost\""},
      {{"--allow-file", allow_file}, "line 3", "\"http://bad.example.com/\""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--socket", "/s"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const std::string message = usage_error(args);
    CAPTURE(message);
    CHECK(contains(message, c.option));
    CHECK(contains(message, c.value));
  }
}

TEST_CASE("missing --socket") {
  CHECK(contains(usage_error({"--max-tunnels", "5"}), "--socket"));
  CHECK(contains(usage_error({}), "--socket"));
}

TEST_CASE("--ready-fd must be open") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) != -1);
  ::close(pipe_fds[1]);
  const std::string closed = std::to_string(pipe_fds[1]);
  CHECK(contains(usage_error({"--socket", "/s", "--ready-fd", closed}), "\"" + closed + "\" is not an open"));
  ::close(pipe_fds[0]);
}

TEST_CASE("--config: values, lists, flags, and command-line precedence") {
  TempDir dir;
  const std::string config = dir.write("config.json", R"({
    "socket": "/run/from-config.sock",
    "allow": ["config.example.com"],
    "permit": ["10.9.0.0/16"],
    "deny": ["1.1.1.1"],
    "resolve": ["r.example=10.1.1.1"],
    "nameserver": ["127.0.0.1:53"],
    "max-tunnels": 64,
    "max-connections": 100,
    "head-timeout": 1.5,
    "dns-timeout": 3,
    "connect-timeout": 4,
    "idle-timeout": 0,
    "max-head-bytes": 2048,
    "log": "json",
    "log-file": "/tmp/l",
    "audit": "/tmp/a",
    "allow-hint": "hint",
    "die-with-parent": true
  })");
  const ServeOptions from_config = parse({"--config", config});
  CHECK(from_config.config_path == config);
  CHECK(from_config.socket_path == "/run/from-config.sock");
  REQUIRE(from_config.proxy.policy.allow.has_value());
  CHECK(from_config.proxy.policy.allow->entries().size() == 1);
  CHECK(from_config.allow_items.empty());
  CHECK_FALSE(from_config.allow_on_command_line);
  CHECK(from_config.proxy.policy.rule.permit.size() == 1);
  CHECK(from_config.proxy.policy.rule.deny.size() == 1);
  CHECK(from_config.proxy.policy.fixed_answers.count("r.example") == 1);
  CHECK(from_config.nameservers == std::vector<std::string>{"127.0.0.1:53"});
  CHECK(from_config.proxy.max_tunnels == 64);
  CHECK(from_config.proxy.max_connections == 100);
  CHECK(from_config.proxy.head_timeout == 1.5);
  CHECK(from_config.proxy.dns_timeout == 3);
  CHECK(from_config.proxy.connect_timeout == 4);
  CHECK(from_config.proxy.max_head_bytes == 2048);
  CHECK(from_config.log_format == LogFormat::json);
  CHECK(from_config.log_file == "/tmp/l");
  CHECK(from_config.audit_path == "/tmp/a");
  CHECK(from_config.proxy.allow_hint == "hint");
  CHECK(from_config.die_with_parent);

  // The command line wins; its list replaces the config's list rather than adding to it.
  const ServeOptions overridden = parse({"--config", config, "--socket", "/run/cli.sock", "--max-tunnels", "8",
                                         "--permit", "10.7.0.0/16", "--permit", "10.8.0.0/16", "--allow", "cli.example.com",
                                         "--log", "text"});
  CHECK(overridden.socket_path == "/run/cli.sock");
  CHECK(overridden.proxy.max_tunnels == 8);
  CHECK(overridden.log_format == LogFormat::text);
  REQUIRE(overridden.proxy.policy.rule.permit.size() == 2);
  REQUIRE(overridden.proxy.policy.allow.has_value());
  REQUIRE(overridden.proxy.policy.allow->entries().size() == 1);
  CHECK(overridden.proxy.policy.allow->entries().front().name == "cli.example.com");
  CHECK(overridden.allow_on_command_line);
  CHECK(overridden.proxy.max_connections == 100);  // not on the command line: the config's stays
  CHECK(overridden.proxy.policy.rule.deny.size() == 1);
}

TEST_CASE("--config errors name the key and the value") {
  TempDir dir;
  struct Case {
    std::string json;
    std::string key;
    std::string value;
  };
  const std::vector<Case> cases = {
      {R"({"socket": "/s", "max-tunnel": 5})", "\"max-tunnel\"", "unknown key"},
      {R"({"socket": "/s", "config": "/other.json"})", "\"config\"", "command line only: a configuration file cannot name"},
      {R"({"socket": "/s", "max-tunnels": "64"})", "\"max-tunnels\"", "\"\\\"64\\\"\""},
      {R"({"socket": "/s", "max-tunnels": 64.5})", "\"max-tunnels\"", "64.5"},
      {R"({"socket": "/s", "max-tunnels": 0})", "\"max-tunnels\"", "\"0\" is not a number from 1 to 1000000"},
      {R"({"socket": "/s", "max-tunnels": -3})", "\"max-tunnels\"", "\"-3\""},
      {R"({"socket": "/s", "head-timeout": 0})", "\"head-timeout\"", "\"0\""},
      {R"({"socket": "/s", "head-timeout": "5"})", "\"head-timeout\"", "is not a JSON number"},
      {R"({"socket": "/s", "allow": "a.example.com"})", "\"allow\"", "is not a JSON array of strings"},
      {R"({"socket": "/s", "allow": ["a.example.com", 5]})", "\"allow\"", "is not a JSON array of strings"},
      {R"({"socket": "/s", "die-with-parent": "yes"})", "\"die-with-parent\"", "is not a JSON boolean"},
      {R"({"socket": 5})", "\"socket\"", "is not a JSON string"},
      {R"({"socket": "/s", "log": "xml"})", "\"log\"", "\"xml\""},
      {R"({"socket": "/s", "permit": ["300.0.0.0/8"]})", "\"permit\"", "\"300.0.0.0/8\""},
      {R"(["socket"])", "--config", "is not a JSON object"},
      {R"({"socket": )", "--config", "is not JSON"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string config = dir.write("c" + std::to_string(n++) + ".json", c.json);
    const std::string message = usage_error({"--config", config});
    CAPTURE(c.json);
    CAPTURE(message);
    CHECK(message.rfind("boxproxy serve: ", 0) == 0);
    CHECK(contains(message, c.key));
    CHECK(contains(message, c.value));
  }
}

TEST_CASE("--config: a key given twice is a usage error, as an option given twice is") {
  TempDir dir;
  const std::vector<std::string> repeated = {
      R"({"socket": "/s", "max-tunnels": 5, "max-tunnels": 6})",
      R"({"socket": "/s", "allow": ["a.example.com"], "allow": ["b.example.com"]})",
      R"({"socket": "/s", "die-with-parent": true, "die-with-parent": false})",
      R"({"socket": "/s", "socket": "/s"})",
  };
  int n = 0;
  for (const auto& json : repeated) {
    const std::string config = dir.write("r" + std::to_string(n++) + ".json", json);
    const std::string message = usage_error({"--config", config});
    CAPTURE(message);
    CHECK(contains(message, "given twice"));
    CHECK(message.rfind("boxproxy serve: --config \"" + config + "\": key \"", 0) == 0);
  }
  CHECK(usage_error({"--config", dir.write("t.json", R"({"socket": "/s", "log": "json", "log": "text"})")}) ==
        "boxproxy serve: --config \"" + dir.path + "/t.json\": key \"log\" given twice (a key may be given once, "
        "as an option may)");
  // Equal keys in different objects are not repeated (and a nested object is a type error anyway).
  const std::string nested = dir.write("n.json", R"({"socket": "/s", "permit": [{"a": 1}, {"a": 2}]})");
  CHECK(contains(usage_error({"--config", nested}), "is not a JSON array of strings"));
}

TEST_CASE("--config that is not JSON: line, column and a reason in our words, never the library's") {
  TempDir dir;
  struct Case {
    std::string text;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"", "is not JSON: the file is empty"},
      {"{\"socket\": ", "is not JSON: line 1, column 12: the text ends before the JSON does"},
      {"{\n  \"socket\": \"/s\",\n  \"log\": \"te\x1bxt\"\n}", "is not JSON: line 3, column 13: a control character"},
      {"{} x", "is not JSON: line 1, column 4: more text after the JSON value"},
      {"{\"max-tunnels\": 1e999}", "is not JSON: line 1, column 17: a number too large for a double"},
      {"{\"a\": \"\xc3(\"}", "is not JSON: line 1, column 9: a byte that is not UTF-8 text"},
      {"{\"a\": \"b", "is not JSON: line 1, column"},
      {"{not json", "is not JSON: line 1, column"},
      {"{'socket': '/s'}", "is not JSON: line 1, column"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string config = dir.write("j" + std::to_string(n++) + ".json", c.text);
    const std::string message = usage_error({"--socket", "/s", "--config", config});
    CAPTURE(c.text);
    CAPTURE(message);
    CHECK(contains(message, c.words));
    CHECK_FALSE(contains(message, "json.exception"));
    CHECK_FALSE(contains(message, "parse error"));
    CHECK_FALSE(contains(message, "last read"));
  }
}

TEST_CASE("reload_host_list re-reads the files, by the start's precedence") {
  TempDir dir;
  const std::string allow_file = dir.write("allow", "one.example.com\n");
  ServeOptions options = parse({"--socket", "/s", "--allow", "cli.example.com", "--allow-file", allow_file});
  REQUIRE(options.proxy.policy.allow.has_value());
  CHECK(options.proxy.policy.allow->entries().size() == 2);

  dir.write("allow", "two.example.com\nthree.example.com\n");
  auto reloaded = boxproxy::reload_host_list(options);
  REQUIRE(reloaded.has_value());
  CHECK(reloaded->entries().size() == 3);

  // A broken file: an error naming the file and the entry; the caller keeps its list.
  dir.write("allow", "two.example.com\n10.0.0.1\n");
  try {
    (void)boxproxy::reload_host_list(options);
    FAIL("no error");
  } catch (const UsageError& error) {
    CHECK(contains(error.message, allow_file));
    CHECK(contains(error.message, "\"10.0.0.1\""));
  }
  ::unlink(allow_file.c_str());
  CHECK_THROWS_AS((void)boxproxy::reload_host_list(options), UsageError);

  // No list configured: nullopt.
  CHECK_FALSE(boxproxy::reload_host_list(parse({"--socket", "/s"})).has_value());

  // From the config: its "allow" and "allow-file" are re-read.
  const std::string config_allow = dir.write("config-allow", "c1.example.com\n");
  const std::string config = dir.write("config.json", R"({"socket": "/s", "allow-file": ")" + config_allow + R"("})");
  const ServeOptions from_config = parse({"--config", config});
  CHECK(from_config.allow_file == config_allow);
  CHECK_FALSE(from_config.allow_file_on_command_line);
  dir.write("config.json", R"({"socket": "/s", "allow": ["c2.example.com", "c3.example.com"], "allow-file": ")" +
                               config_allow + R"("})");
  auto from_new_config = boxproxy::reload_host_list(from_config);
  REQUIRE(from_new_config.has_value());
  CHECK(from_new_config->entries().size() == 3);
}

TEST_CASE("a hostile config is a usage error, never a crash (fuzz findings 3 to 6)") {
  TempDir dir;
  SUBCASE("a number too large for a double") {
    const std::string config = dir.write("huge.json", R"({"max-tunnels": 1e999})");
    const std::string message = usage_error({"--socket", "/tmp/x.sock", "--config", config});
    CHECK(contains(message, "is not JSON"));
  }
  SUBCASE("nesting deeper than any legal config") {
    const std::string config =
        dir.write("deep.json", "{\"permit\": " + std::string(200000, '[') + std::string(200000, ']') + "}");
    CHECK(contains(usage_error({"--socket", "/tmp/x.sock", "--config", config}), "more than 32 deep"));
  }
  SUBCASE("brackets inside strings do not count toward the depth") {
    const std::string config = dir.write("strings.json", R"({"allow-hint": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})");
    CHECK(parse({"--socket", "/tmp/x.sock", "--config", config}).proxy.allow_hint.size() == 39);
  }
  SUBCASE("bytes outside printable ASCII in a parse error are escaped") {
    const std::string config = dir.write("del.json", "{\"m\x7f\xc3x");
    const std::string message = usage_error({"--socket", "/tmp/x.sock", "--config", config});
    for (const char c : message) {
      const auto byte = static_cast<unsigned char>(c);
      CHECK((byte >= 0x20 && byte <= 0x7e));
    }
  }
  SUBCASE("an embedded NUL ends no nameserver address (a JSON string can hold one)") {
    const std::string config = dir.write("nul.json", R"({"nameserver": ["127.0.0.1\u0000junk"]})");
    CHECK(contains(usage_error({"--socket", "/tmp/x.sock", "--config", config}), "nameserver"));
  }
}
