// SPDX-License-Identifier: Apache-2.0
// socketd/option_table: the one command-line toolkit. One table drives the parser and the help.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "socketd/option_table.h"

namespace {

using boxproxy::HelpRequested;
using boxproxy::OptionKind;
using boxproxy::OptionSpec;
using boxproxy::OptionTable;
using boxproxy::Operands;
using boxproxy::ParsedArguments;
using boxproxy::RawValue;
using boxproxy::UsageError;

const OptionTable& demo_table() {
  static const OptionTable table(
      "demo", {
                  OptionSpec{.name = "path", .kind = OptionKind::value, .value_name = "PATH", .help = "a path"},
                  OptionSpec{.name = "item", .kind = OptionKind::list, .value_name = "X", .help = "an item",
                             .default_text = "none"},
                  OptionSpec{.name = "count", .kind = OptionKind::number, .value_name = "N", .help = "a count",
                             .default_text = "7", .min = 2, .max = 10},
                  OptionSpec{.name = "wait", .kind = OptionKind::seconds, .value_name = "S", .help = "a wait",
                             .default_text = "5", .max_seconds = 60},
                  OptionSpec{.name = "pause", .kind = OptionKind::seconds, .value_name = "S", .help = "a pause",
                             .max_seconds = 60, .zero_allowed = true},
                  OptionSpec{.name = "quiet", .kind = OptionKind::flag, .value_name = "", .help = "say less"},
                  OptionSpec{.name = "hidden", .kind = OptionKind::flag, .value_name = "", .help = "not listed",
                             .in_help = false},
              });
  return table;
}

ParsedArguments parse(std::vector<std::string> args, Operands operands = Operands::none) {
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  return boxproxy::parse_arguments(demo_table(), static_cast<int>(argv.size()), argv.data(), operands);
}

std::string usage_error(std::vector<std::string> args, Operands operands = Operands::none) {
  try {
    (void)parse(std::move(args), operands);
  } catch (const UsageError& error) {
    return error.message;
  }
  FAIL("no usage error");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("both forms of a value, lists adding up in order, flags") {
  const auto parsed = parse({"--path", "/a", "--item=x", "--item", "y", "--quiet", "--count=3", "--quiet"});
  CHECK(parsed.options.at("path").values == std::vector<std::string>{"/a"});
  CHECK(parsed.options.at("path").label == "--path");
  CHECK(parsed.options.at("item").values == std::vector<std::string>{"x", "y"});
  CHECK(parsed.options.at("quiet").flag);
  CHECK(parsed.options.at("count").values == std::vector<std::string>{"3"});
  CHECK(parsed.operands.empty());
}

TEST_CASE("a value is taken as given, even when it reads like an option") {
  const auto parsed = parse({"--path", "--", "--item", "--quiet", "--count", "-h"}, Operands::after_dashes);
  CHECK(parsed.options.at("path").values.front() == "--");
  CHECK(parsed.options.at("item").values.front() == "--quiet");
  CHECK(parsed.options.at("count").values.front() == "-h");
  CHECK_FALSE(parsed.dashes);
  CHECK(parse({"--path="}).options.at("path").values.front().empty());
  CHECK(parse({"--path=a=b"}).options.at("path").values.front() == "a=b");
}

TEST_CASE("operands: where each kind of command starts them") {
  SUBCASE("after_options: the first non-option, or --") {
    auto parsed = parse({"--quiet", "t1", "--path", "t2"}, Operands::after_options);
    CHECK(parsed.operands == std::vector<std::string>{"t1", "--path", "t2"});
    CHECK_FALSE(parsed.options.contains("path"));
    parsed = parse({"--quiet", "--", "-t1", "--"}, Operands::after_options);
    CHECK(parsed.operands == std::vector<std::string>{"-t1", "--"});
    CHECK(parsed.dashes);
    CHECK(parse({"-"}, Operands::after_options).operands == std::vector<std::string>{"-"});
  }
  SUBCASE("after_dashes: only after --") {
    const auto parsed = parse({"--quiet", "--", "cmd", "--path", "x"}, Operands::after_dashes);
    CHECK(parsed.operands == std::vector<std::string>{"cmd", "--path", "x"});
    CHECK(parsed.dashes);
    CHECK(contains(usage_error({"cmd", "--", "x"}, Operands::after_dashes), "unexpected argument \"cmd\" before --"));
    // No "--" at all: the reading stops there, and the caller names the missing "--".
    const auto without = parse({"--quiet", "cmd", "arg"}, Operands::after_dashes);
    CHECK_FALSE(without.dashes);
    CHECK(without.options.contains("quiet"));
  }
  SUBCASE("none: every argument is an option") {
    CHECK(contains(usage_error({"--"}), "unexpected argument \"--\""));
    CHECK(contains(usage_error({"stray"}), "unexpected argument \"stray\""));
    CHECK(contains(usage_error({"-x"}), "unexpected argument \"-x\""));
  }
}

TEST_CASE("-h and --help among the options, not as a value or an operand") {
  CHECK_THROWS_AS((void)parse({"--quiet", "--help"}), HelpRequested);
  CHECK_THROWS_AS((void)parse({"-h", "stray"}), HelpRequested);
  CHECK(parse({"t", "--help"}, Operands::after_options).operands == std::vector<std::string>{"t", "--help"});
}

TEST_CASE("every usage error names the command, the option and the value") {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--path", "/a", "--path", "/b"}, "--path: \"/b\" given, but --path was already given as \"/a\" (it may be given once)"},
      {{"--count=1", "--count=2"}, "--count: \"2\" given, but --count was already given as \"1\""},
      {{"--quiet=yes"}, "--quiet: \"yes\" given, but this option takes no value"},
      {{"--path"}, "--path: a value is needed"},
      {{"--nope"}, "unknown option \"--nope\" (see boxproxy demo --help)"},
      {{"--nope=1"}, "unknown option \"--nope\""},
      {{"--\x1b[31m"}, "unknown option \"--\\x1b[31m\""},
  };
  for (const auto& c : cases) {
    const std::string message = usage_error(c.args);
    CAPTURE(message);
    CHECK(message.rfind("boxproxy demo: ", 0) == 0);
    CHECK(contains(message, c.expected));
  }
}

TEST_CASE("numbers and seconds are checked against their row") {
  const auto& table = demo_table();
  auto raw = [](std::string text) { return RawValue{"--x", {std::move(text)}, false, std::nullopt, {}}; };
  CHECK(boxproxy::number_value("demo", table.at("count"), raw("2")) == 2);
  CHECK(boxproxy::number_value("demo", table.at("count"), raw("10")) == 10);
  for (const char* bad : {"1", "11", "", "-3", "+3", " 3", "3 ", "0x3", "99999999999999999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)boxproxy::number_value("demo", table.at("count"), raw(bad)), UsageError);
  }
  try {
    (void)boxproxy::number_value("demo", table.at("count"), raw("11"));
  } catch (const UsageError& error) {
    CHECK(error.message == "boxproxy demo: --x: \"11\" is not a number from 2 to 10");
    CHECK(error.detail == "--x: \"11\" is not a number from 2 to 10");
    CHECK(error.for_command("other").message == "boxproxy other: --x: \"11\" is not a number from 2 to 10");
  }
  CHECK(boxproxy::seconds_value("demo", table.at("wait"), raw("0.5")) == 0.5);
  CHECK(boxproxy::seconds_value("demo", table.at("wait"), raw("60")) == 60);
  CHECK(boxproxy::seconds_value("demo", table.at("pause"), raw("0")) == 0);
  for (const char* bad : {"0", "0.0", "60.5", "-1", "1e1", "inf", "nan", ".5", "5.", "1.2.3", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)boxproxy::seconds_value("demo", table.at("wait"), raw(bad)), UsageError);
  }
  RawValue json_number{"--config \"c\": key \"wait\"", {"1.5"}, false, 1.5, {}};
  CHECK(boxproxy::seconds_value("demo", table.at("wait"), json_number) == 1.5);
}

TEST_CASE("the help is made from the table: every listed row, its range, repetition and default") {
  const std::string help = demo_table().options_help();
  CAPTURE(help);
  CHECK(contains(help, "  --path PATH              a path\n"));
  CHECK(contains(help, "  --item X                 an item; repeatable (default: none)\n"));
  CHECK(contains(help, "  --count N                a count, 2 to 10 (default: 7)\n"));
  CHECK(contains(help, "  --wait S                 a wait, more than 0, at most 60 (default: 5)\n"));
  CHECK(contains(help, "  --pause S                a pause, 0 to 60\n"));
  CHECK(contains(help, "  --quiet                  say less\n"));
  CHECK(contains(help, "  -h, --help               show this text\n"));
  CHECK_FALSE(contains(help, "hidden"));
  // No line is wider than a terminal, and a default is never split across lines.
  const OptionTable wide("wide", {OptionSpec{.name = "long-option-name-here", .kind = OptionKind::value,
                                             .value_name = "SOME=VALUE[,VALUE]...",
                                             .help = "wwwwwwwwwwwwwwwwwwwwwwwwwwwwww vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv tail",
                                             .default_text = "the system's choice"}});
  const std::string wide_help = wide.options_help();
  CAPTURE(wide_help);
  std::size_t line_start = 0;
  while (line_start < wide_help.size()) {
    const std::size_t end = wide_help.find('\n', line_start);
    CHECK(end - line_start <= 79);
    line_start = end + 1;
  }
  CHECK(contains(wide_help, "(default: the system's choice)"));
  CHECK(contains(wide_help, "  --long-option-name-here SOME=VALUE[,VALUE]...\n                           www"));
}
