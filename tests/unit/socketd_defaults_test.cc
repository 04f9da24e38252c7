// SPDX-License-Identifier: Apache-2.0
// One set of defaults (proxy/defaults.h): serve's option table, its --help, ProxyConfig and the
// manual all state the same figures. The manual's OPTIONS section is read here (man/boxproxy.1,
// found beside this file's source) and every "Default:" figure and every range it states for an
// option is compared with the header's value, so a change on either side without the other fails.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "proxy/defaults.h"
#include "proxy/proxy_server.h"
#include "socketd/serve_options.h"

namespace {

using boxproxy::OptionKind;
using boxproxy::OptionSpec;
namespace defaults = boxproxy::defaults;

// The manual beside the sources, or the one BOXPROXY_MANUAL names (to try the test on an
// altered copy).
std::string read_manual() {
  const char* override_path = std::getenv("BOXPROXY_MANUAL");
  const auto path = override_path != nullptr
                        ? std::filesystem::path(override_path)
                        : std::filesystem::path(BOXPROXY_SOURCE_DIR) / "man" / "boxproxy.1";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The arguments of a macro line, split as groff splits them (double quotes group).
std::vector<std::string> macro_arguments(const std::string& rest) {
  std::vector<std::string> out;
  std::string current;
  bool quoted = false;
  bool any = false;
  for (const char c : rest) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) out.push_back(current);
      current.clear();
      any = false;
    } else {
      current += c;
      any = true;
    }
  }
  if (any) out.push_back(current);
  return out;
}

// One line of groff as the reader sees it: font macros resolved (.B/.I join their arguments
// with spaces, .BR/.BI/.IR/... alternate fonts and join them without), escapes for a hyphen and
// fonts removed.
std::string plain_line(const std::string& line) {
  std::string text = line;
  if (!line.empty() && line.front() == '.') {
    const auto space = line.find(' ');
    const std::string macro = line.substr(1, space == std::string::npos ? std::string::npos : space - 1);
    const auto arguments = macro_arguments(space == std::string::npos ? "" : line.substr(space + 1));
    text.clear();
    const bool alternating = macro.size() == 2 && std::string("BIR").find(macro[0]) != std::string::npos &&
                             std::string("BIR").find(macro[1]) != std::string::npos;
    for (std::size_t i = 0; i < arguments.size(); ++i) {
      if (i > 0 && !alternating) text += ' ';
      text += arguments[i];
    }
  }
  text = std::regex_replace(text, std::regex(R"(\\f[BIRP])"), "");
  text = std::regex_replace(text, std::regex(R"(\\-)"), "-");
  text = std::regex_replace(text, std::regex(R"(\\&)"), "");
  return text;
}

// The OPTIONS section: each option's long name (without "--") to the text of its paragraph.
std::map<std::string, std::string, std::less<>> manual_options(const std::string& manual) {
  const auto start = manual.find("\n.SH OPTIONS\n");
  REQUIRE(start != std::string::npos);
  const auto end = manual.find("\n.SH ", start + 1);
  std::istringstream section(manual.substr(start + 1, end - start - 1));
  std::map<std::string, std::string, std::less<>> out;
  std::string line;
  std::string* current = nullptr;
  bool head_next = false;
  while (std::getline(section, line)) {
    if (line == ".TP") {
      head_next = true;
      continue;
    }
    if (line == ".PP") {
      current = nullptr;
      continue;
    }
    const std::string text = plain_line(line);
    if (head_next) {
      head_next = false;
      std::smatch match;
      current = nullptr;
      if (std::regex_search(text, match, std::regex(R"(^--([a-z-]+))"))) current = &out[match[1]];
      continue;
    }
    if (current != nullptr) *current += text + " ";
  }
  return out;
}

// "Default: X." as the manual states it; empty when it states none.
std::string stated_default(const std::string& paragraph) {
  std::smatch match;
  if (!std::regex_search(paragraph, match, std::regex(R"(Default: (.*?)\.( |$))"))) return {};
  return std::regex_replace(std::string(match[1]), std::regex(" +"), " ");
}

std::string range_number(std::uint64_t value) {
  return value == (std::uint64_t{1} << 63) ? std::string("2^63") : fmt::format("{}", value);
}

}  // namespace

TEST_CASE("the manual states every serve option, and only those") {
  const auto manual = manual_options(read_manual());
  for (const OptionSpec& spec : boxproxy::serve_option_table().options()) {
    CAPTURE(spec.name.view());
    CHECK(manual.count(spec.name.view()) == 1);
  }
  for (const auto& [name, paragraph] : manual) {
    CAPTURE(name);
    CHECK((name == "help" || boxproxy::serve_option_table().find(name) != nullptr));
  }
}

TEST_CASE("every default the manual states is the header's (through serve's table)") {
  const auto manual = manual_options(read_manual());
  for (const OptionSpec& spec : boxproxy::serve_option_table().options()) {
    CAPTURE(spec.name.view());
    const auto it = manual.find(spec.name.view());
    if (it == manual.end()) continue;
    const std::string stated = stated_default(it->second);
    CAPTURE(stated);
    if (spec.default_text.empty()) {
      CHECK(stated.empty());
    } else if (spec.kind == OptionKind::number || spec.kind == OptionKind::seconds) {
      CHECK(stated == spec.default_text);
    } else {
      // A word default may go on to explain itself: "the system's: the nameserver lines ...".
      CHECK(stated.rfind(spec.default_text, 0) == 0);
    }
  }
}

TEST_CASE("the numbers themselves: manual, header, ProxyConfig and ServeOptions agree") {
  const auto manual = manual_options(read_manual());
  const std::map<std::string, std::string> header = {
      {"max-tunnels", fmt::format("{}", defaults::kMaxTunnels)},
      {"max-connections", fmt::format("{}", defaults::kMaxConnections)},
      {"max-lookups", fmt::format("{}", defaults::kMaxLookups)},
      {"head-timeout", fmt::format("{:g}", defaults::kHeadTimeoutSeconds)},
      {"dns-timeout", fmt::format("{:g}", defaults::kDnsTimeoutSeconds)},
      {"connect-timeout", fmt::format("{:g}", defaults::kConnectTimeoutSeconds)},
      {"idle-timeout", fmt::format("{:g}", defaults::kIdleTimeoutSeconds)},
      {"max-head-bytes", fmt::format("{}", defaults::kMaxHeadBytes)},
  };
  for (const auto& [name, figure] : header) {
    CAPTURE(name);
    REQUIRE(manual.count(name) == 1);
    CHECK(stated_default(manual.at(name)) == figure);
  }
  // ServeOptions holds a ProxyConfig: its defaults are the proxy's, and only its own are checked.
  const boxproxy::ProxyConfig config;
  const boxproxy::ServeOptions options;
  CHECK(config.max_tunnels == defaults::kMaxTunnels);
  CHECK(config.max_connections == defaults::kMaxConnections);
  CHECK(options.max_lookups == defaults::kMaxLookups);
  CHECK(config.head_timeout == defaults::kHeadTimeoutSeconds);
  CHECK(config.dns_timeout == defaults::kDnsTimeoutSeconds);
  CHECK(config.connect_timeout == defaults::kConnectTimeoutSeconds);
  CHECK(config.idle_timeout == defaults::kIdleTimeoutSeconds);
  CHECK(config.max_head_bytes == defaults::kMaxHeadBytes);
}

TEST_CASE("every range the manual states is the table's") {
  const auto manual = manual_options(read_manual());
  for (const OptionSpec& spec : boxproxy::serve_option_table().options()) {
    CAPTURE(spec.name.view());
    const auto it = manual.find(spec.name.view());
    if (it == manual.end()) continue;
    const std::string& paragraph = it->second;
    if (spec.kind == OptionKind::number) {
      const std::string range = fmt::format("{} to {}", spec.min, range_number(spec.max));
      const std::string open_ended = fmt::format("{} or more", spec.min);
      CAPTURE(range);
      CHECK((paragraph.find(range) != std::string::npos || paragraph.find(open_ended) != std::string::npos));
    } else if (spec.kind == OptionKind::seconds) {
      const std::string range = spec.zero_allowed ? fmt::format("0 to {:g}", spec.max_seconds)
                                                  : fmt::format("more than 0 and at most {:g}", spec.max_seconds);
      CAPTURE(range);
      CHECK(paragraph.find(range) != std::string::npos);
    }
  }
  CHECK(stated_default(manual.at("max-tunnels")).size() > 0);
  // The files' caps: "At most 16 MiB." for --allow-file.
  std::smatch match;
  REQUIRE(std::regex_search(manual.at("allow-file"), match, std::regex(R"(At most (\d+) MiB)")));
  CHECK(std::stoul(match[1]) * 1024 * 1024 == defaults::kMaxAllowFileBytes);
  const std::string whole = read_manual();
  REQUIRE(std::regex_search(whole, match, std::regex(R"(The file may be at most (\d+) MiB)")));
  CHECK(std::stoul(match[1]) * 1024 * 1024 == defaults::kMaxConfigBytes);
}

TEST_CASE("--help shows each default from the header") {
  const std::string help = boxproxy::serve_help_text();
  for (const OptionSpec& spec : boxproxy::serve_option_table().options()) {
    if (spec.default_text.empty()) continue;
    CAPTURE(spec.name.view());
    CHECK(help.find(fmt::format("(default: {})", spec.default_text)) != std::string::npos);
  }
  CHECK(help.find(fmt::format("(default: {})", defaults::kMaxTunnels)) != std::string::npos);
  CHECK(help.find(fmt::format("(default: {})", defaults::kMaxHeadBytes)) != std::string::npos);
  CHECK(help.find(fmt::format("1 to {}", defaults::kMaxTunnelsMax)) != std::string::npos);
}
