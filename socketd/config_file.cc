// SPDX-License-Identifier: Apache-2.0
#include "socketd/config_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proxy/defaults.h"
#include "proxy/inspect_array.h"
#include "proxy/wire/json_nesting.h"
#include "proxy/unique_fd.h"
#include "table/message_text.h"

namespace boxproxy {
namespace {

// The deepest a config file's arrays and objects may nest (a legal one nests five deep: the file,
// "inspect", an endpoint, its "rules", a rule).
constexpr std::size_t kMaxConfigNesting = 32;

// "line L, column C" of byte `offset` (0-based) of `text`; columns count bytes.
std::string position_words(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const auto line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const auto line_start = before.rfind('\n');
  const std::size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  return fmt::format("line {}, column {}", line, column);
}

// Why `text` is not JSON, in our words: "line L, column C: REASON". The parser's own message is
// only looked at to pick the reason, never shown: it names the library's classes and quotes the
// bytes it read as they are.
std::string json_error_words(std::string_view text, const nlohmann::json::exception& error) {
  const std::string_view library = error.what();
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return "the file is empty";
  // The parser's words, most particular first, and ours for each.
  static constexpr std::pair<std::string_view, std::string_view> kReasons[] = {
      {"; expected end of input", "more text after the JSON value"},
      {"unexpected end of input", "the text ends before the JSON does"},
      {"missing closing quote", "a string is not closed"},
      {"control character", "a control character inside a string (write it as \\u00XX)"},
      {"ill-formed UTF-8", "a byte that is not UTF-8 text"},
      {"must be followed by 4 hex digits", "\\u not followed by four hex digits"},
      {"surrogate", "a \\u escape that is half of a character"},
      {"forbidden character after backslash", "an unknown escape after a backslash"},
      {"invalid number", "not a JSON number"},
      {"invalid literal",
       "not a JSON value (a string needs double quotes; true, false and null are lower case)"},
      {"invalid BOM", "a byte order mark that is not UTF-8's"},
      {"number overflow", "a number too large for a double"},
  };
  std::string_view reason = "not JSON here";
  for (const auto& [marker, words] : kReasons) {
    if (library.find(marker) != std::string_view::npos) {
      reason = words;
      break;
    }
  }
  std::optional<std::size_t> offset;
  if (const auto* parse_error = dynamic_cast<const nlohmann::json::parse_error*>(&error)) {
    // `byte` counts the bytes read, the bad one last.
    offset = parse_error->byte == 0 ? 0 : parse_error->byte - 1;
  } else if (const auto quote_start = library.find('\''); quote_start != std::string_view::npos) {
    // A number too large has no position: the parser names the number, found here in the text.
    const auto quote_end = library.find('\'', quote_start + 1);
    const auto number = library.substr(quote_start + 1, quote_end - quote_start - 1);
    if (const auto at = text.find(number); quote_end != std::string_view::npos && !number.empty() &&
                                           at != std::string_view::npos) {
      offset = at;
    }
  }
  if (!offset) return std::string(reason);
  return fmt::format("{}: {}", position_words(text, *offset), reason);
}

// The config's text as a JSON document, its keys watched: the parser keeps the last of two
// equal keys without a word, but a key given twice is a mistake (which value did the operator
// mean?), so it is an error, as an option given twice is. Throws UsageError.
nlohmann::json parse_document(std::string_view command, const std::string& path, const std::string& text) {
  // A config nested thousands deep would overflow the stack while the document is built or
  // destroyed (a crash, on SIGHUP too): the deepest legal config is five levels.
  if (json_nesting_depth(text, kMaxConfigNesting) > kMaxConfigNesting) {
    fail_value(command, "--config", path, fmt::format("nests arrays or objects more than {} deep", kMaxConfigNesting));
  }
  std::vector<std::set<std::string, std::less<>>> keys_by_object;  // one set per open object
  std::optional<std::string> repeated_key;
  const auto watch_keys = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      keys_by_object.emplace_back();
    } else if (event == Event::object_end && !keys_by_object.empty()) {
      keys_by_object.pop_back();
    } else if (event == Event::key && !keys_by_object.empty() && parsed.is_string()) {
      if (!keys_by_object.back().insert(parsed.get<std::string>()).second && !repeated_key) {
        repeated_key = parsed.get<std::string>();
      }
    }
    return true;
  };
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text, watch_keys);
  } catch (const nlohmann::json::exception& e) {
    // Any parse failure (a syntax error, a number out of range such as 1e999) is a usage error,
    // said in our words: the library's own names its exception classes and its internals.
    fail_value(command, "--config", path, fmt::format("is not JSON: {}", json_error_words(text, e)));
  }
  if (repeated_key) {
    throw usage_error(command, fmt::format("--config {}: key {} given twice (a key may be given once, as an option "
                                           "may)",
                                           quote(path), quote(*repeated_key)));
  }
  if (!document.is_object()) fail_value(command, "--config", path, "is not a JSON object");
  return document;
}

// One key's value as a raw value of its row's kind, labelled `label`. Throws UsageError when its
// JSON type is not the kind's.
RawValue raw_value(std::string_view command, const OptionSpec& spec, const std::string& label,
                   const nlohmann::json& value) {
  const std::string shown = value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  const auto fail = [&](std::string_view what) { fail_value(command, label, shown, what); };
  RawValue slot;
  slot.label = label;
  switch (spec.kind) {
    case OptionKind::value:
      if (!value.is_string()) fail("is not a JSON string");
      slot.values.push_back(value.get<std::string>());
      break;
    case OptionKind::number:
      // Whole numbers only: 64.0 or "64" is a wrong type rather than a guess.
      if (!value.is_number_integer()) fail("is not a JSON whole number");
      slot.values.push_back(value.dump());
      break;
    case OptionKind::seconds:
      if (!value.is_number()) fail("is not a JSON number");
      slot.seconds = value.get<double>();
      slot.values.push_back(shown);
      break;
    case OptionKind::flag:
      if (!value.is_boolean()) fail("is not a JSON boolean");
      slot.flag = value.get<bool>();
      break;
    case OptionKind::list:
      if (!value.is_array()) fail("is not a JSON array of strings");
      for (const auto& item : value) {
        if (!item.is_string()) fail("is not a JSON array of strings");
        slot.values.push_back(item.get<std::string>());
      }
      break;
    case OptionKind::endpoints: {
      auto endpoints = read_inspect_array(label, value);
      if (auto* error = std::get_if<std::string>(&endpoints)) throw usage_error(command, *error);
      slot.endpoints = std::get<std::vector<InspectEndpoint>>(std::move(endpoints));
      break;
    }
  }
  return slot;
}

// Why an option may not be a config key, as the manual gives it (boxproxy(1), CONFIGURATION FILE).
std::string_view command_line_only_reason(std::string_view key) {
  // Confinement is what stands between a parser bug reached from the box and the host: turning
  // it off must be seen on the command line, never hidden in a file that someone else may edit.
  if (key == "no-confine") {
    return "a configuration file cannot turn confinement off (give --no-confine on the command line)";
  }
  if (key == "config") return "a configuration file cannot name another";
  // A configuration file is read by more people than a secret's file should be, and what it
  // names is a file opened once at start and held: each is the operator's act, on the command line.
  if (key == "secret") return "give each --secret NAME=FILE on the command line";
  if (key == "placeholder") return "a placeholder is made for the session that starts, on its command line";
  return "it is a question for the command line, not a setting";
}

}  // namespace

std::optional<std::string> read_file_capped(const std::string& path, std::size_t cap, std::string& error) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n == -1) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > cap) {
      error = fmt::format("larger than {} bytes", cap);
      return std::nullopt;
    }
  }
  return text;
}

RawOptions read_config_file(const std::string& path, const OptionTable& table) {
  const std::string_view command = table.command();
  std::string error;
  const auto text = read_file_capped(path, defaults::kMaxConfigBytes, error);
  if (!text) fail_value(command, "--config", path, fmt::format("cannot be read: {}", error));
  const nlohmann::json document = parse_document(command, path, *text);
  const std::string where = fmt::format("--config {}", quote(path));
  RawOptions raw;
  for (const auto& [key, value] : document.items()) {
    const OptionSpec* spec = table.find(key);
    if (spec == nullptr) {
      throw usage_error(command, fmt::format("{}: unknown key {} (keys are serve's long option names without \"--\")",
                                             where, quote(key)));
    }
    if (!spec->config_key) {
      throw usage_error(command, fmt::format("{}: key {} is command line only: {}", where, quote(key),
                                             command_line_only_reason(key)));
    }
    raw[key] = raw_value(command, *spec, fmt::format("{}: key {}", where, quote(key)), value);
  }
  return raw;
}

}  // namespace boxproxy
