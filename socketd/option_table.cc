// SPDX-License-Identifier: Apache-2.0
#include "socketd/option_table.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "table/message_text.h"

namespace boxproxy {

UsageError usage_error(std::string_view command, std::string_view detail) {
  // printable_lines: a piece of `detail` may repeat what a table/ parser quoted raw.
  std::string printable_detail = printable_lines(detail);
  return UsageError{fmt::format("boxproxy {}: {}", command, printable_detail), std::move(printable_detail)};
}

UsageError UsageError::for_command(std::string_view command) const { return usage_error(command, detail); }

void fail_value(std::string_view command, std::string_view label, std::string_view value, std::string_view what) {
  throw usage_error(command, fmt::format("{}: {} {}", label, quote(value), what));
}

namespace {

// The help text's layout: options start at column 2, their words at kHelpColumn, and no line
// passes kHelpWidth (an 80-column terminal).
constexpr std::size_t kHelpColumn = 27;
constexpr std::size_t kHelpWidth = 79;
// Joins words the help never breaks apart ("(default: 256)"); written out as a space.
constexpr char kNoBreak = '\x01';

// 2^63 reads better than its nineteen digits.
std::string number_text(std::uint64_t value) {
  if (value >= (std::uint64_t{1} << 32) && std::has_single_bit(value)) return fmt::format("2^{}", std::countr_zero(value));
  return fmt::format("{}", value);
}

// What --help says of a row after its own words: the range, "repeatable", the default.
std::string help_words(const OptionSpec& spec) {
  std::string words(spec.help);
  switch (spec.kind) {
    case OptionKind::number:
      words += fmt::format(", {} to {}", number_text(spec.min), number_text(spec.max));
      break;
    case OptionKind::seconds:
      words += spec.zero_allowed ? fmt::format(", 0 to {:g}", spec.max_seconds)
                                 : fmt::format(", more than 0, at most {:g}", spec.max_seconds);
      break;
    case OptionKind::list:
    case OptionKind::endpoints:
      words += "; repeatable";
      break;
    case OptionKind::flag:
    case OptionKind::value:
      break;
  }
  if (!spec.default_text.empty()) {
    std::string shown = fmt::format("(default: {})", spec.default_text);
    std::replace(shown.begin(), shown.end(), ' ', kNoBreak);
    words += " " + shown;
  }
  return words;
}

// `words` filled into lines from kHelpColumn to kHelpWidth, after `head` ("  --name VALUE"):
// on the head's line when it leaves room, else from the next.
std::string help_entry(const std::string& head, const std::string& words) {
  std::string out = head;
  std::size_t column = head.size();
  if (column + 1 >= kHelpColumn) {
    out += '\n';
    column = 0;
  }
  bool line_has_words = false;
  std::size_t start = 0;
  while (start < words.size()) {
    std::size_t end = words.find(' ', start);
    if (end == std::string::npos) end = words.size();
    const std::string_view word(words.data() + start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (line_has_words && std::max(column, kHelpColumn) + 1 + word.size() > kHelpWidth) {
      out += '\n';
      column = 0;
      line_has_words = false;
    }
    if (column < kHelpColumn) {
      out.append(kHelpColumn - column, ' ');
      column = kHelpColumn;
    } else if (line_has_words) {
      out += ' ';
      ++column;
    }
    for (const char c : word) out += c == kNoBreak ? ' ' : c;
    column += word.size();
    line_has_words = true;
  }
  out += '\n';
  return out;
}

}  // namespace

OptionTable::OptionTable(std::string command, std::vector<OptionSpec> options)
    : command_(std::move(command)), options_(std::move(options)) {}

const OptionSpec* OptionTable::find(std::string_view name) const noexcept {
  for (const OptionSpec& spec : options_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const OptionSpec& OptionTable::at(std::string_view name) const {
  const OptionSpec* spec = find(name);
  if (spec == nullptr) throw std::logic_error(fmt::format("no option --{} in {}'s table", name, command_));
  return *spec;
}

std::string OptionTable::options_help() const {
  std::string out;
  for (const OptionSpec& spec : options_) {
    if (!spec.in_help) continue;
    std::string head = fmt::format("  --{}", spec.name);
    if (!spec.value_name.empty()) head += fmt::format(" {}", spec.value_name);
    out += help_entry(head, help_words(spec));
  }
  out += help_entry("  -h, --help", "show this text");
  return out;
}

namespace {

bool is_help(std::string_view arg) noexcept { return arg == "--help" || arg == "-h"; }

// Takes one option (argv[i], and its value from argv[i + 1] when it needs one) into `raw`.
// Returns the index of the last argument used.
int take_option(const OptionTable& table, int argc, char* const* argv, int i, RawOptions& raw) {
  const std::string& command = table.command();
  const std::string_view arg = argv[i];
  std::string_view name = arg.substr(2);
  std::optional<std::string_view> inline_value;
  if (const auto eq = name.find('='); eq != std::string_view::npos) {
    inline_value = name.substr(eq + 1);
    name = name.substr(0, eq);
  }
  const OptionSpec* spec = table.find(name);
  if (spec == nullptr) {
    throw usage_error(command, fmt::format("unknown option {} (see boxproxy {} --help)", quote(arg.substr(0, 2 + name.size())),
                                           command));
  }
  const std::string label = fmt::format("--{}", name);
  RawValue& slot = raw[std::string(name)];
  const bool seen_before = !slot.label.empty();
  slot.label = label;
  if (spec->kind == OptionKind::flag) {
    if (inline_value) fail_value(command, label, *inline_value, "given, but this option takes no value");
    slot.flag = true;
    return i;
  }
  std::string value;
  if (inline_value) {
    value = std::string(*inline_value);
  } else {
    // The next argument is the value whatever it reads ("--", "--socket"): an option's value is
    // never taken for an option, so nothing a value says can change how the rest is read.
    if (i + 1 >= argc) throw usage_error(command, fmt::format("{}: a value is needed", label));
    value = argv[++i];
  }
  const bool repeatable = spec->kind == OptionKind::list || spec->kind == OptionKind::endpoints;
  if (!repeatable && seen_before) {
    fail_value(command, label, value,
               fmt::format("given, but {} was already given as {} (it may be given once)", label, quote(slot.values.front())));
  }
  slot.values.push_back(std::move(value));
  return i;
}

}  // namespace

ParsedArguments parse_arguments(const OptionTable& table, int argc, char* const* argv, Operands operands) {
  ParsedArguments parsed;
  const std::string& command = table.command();
  int i = 0;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--" && operands != Operands::none) {
      parsed.dashes = true;
      ++i;
      break;
    }
    if (is_help(arg)) throw HelpRequested{};
    if (arg.size() > 2 && arg.starts_with("--")) {
      i = take_option(table, argc, argv, i, parsed.options);
      continue;
    }
    // "-" alone is an operand (a file's usual name for standard input), "-x" is no option here.
    const bool looks_like_option = arg.size() > 1 && arg.front() == '-';
    if (operands == Operands::after_options && !looks_like_option) break;
    // No "--" anywhere: the operands' missing "--" is the mistake to name (the caller does).
    if (operands == Operands::after_dashes && !looks_like_option &&
        std::none_of(argv + i, argv + argc, [](const char* rest) { return std::string_view(rest) == "--"; })) {
      return parsed;
    }
    if (looks_like_option && operands != Operands::none) {
      throw usage_error(command, fmt::format("unknown option {} (see boxproxy {} --help)", quote(arg), command));
    }
    const std::string_view where = operands == Operands::after_dashes ? " before --" : "";
    throw usage_error(command, fmt::format("unexpected argument {}{} (see boxproxy {} --help)", quote(arg), where, command));
  }
  for (; i < argc; ++i) parsed.operands.emplace_back(argv[i]);
  return parsed;
}

std::optional<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max) noexcept {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (max - digit) / 10) return std::nullopt;  // value * 10 + digit > max
    value = value * 10 + digit;
  }
  return value;
}

std::uint64_t number_value(std::string_view command, const OptionSpec& spec, const RawValue& raw) {
  const std::string& text = raw.values.front();
  const auto value = parse_unsigned(text, spec.max);
  if (!value || *value < spec.min) {
    fail_value(command, raw.label, text, fmt::format("is not a number from {} to {}", spec.min, spec.max));
  }
  return *value;
}

double seconds_value(std::string_view command, const OptionSpec& spec, const RawValue& raw) {
  const std::string& text = raw.values.front();
  const std::string range = spec.zero_allowed ? fmt::format("from 0 to {:g}", spec.max_seconds)
                                              : fmt::format("greater than 0 and at most {:g}", spec.max_seconds);
  const std::string what = fmt::format("is not a number of seconds {}", range);
  double value = 0;
  if (raw.seconds) {
    value = *raw.seconds;
  } else {
    const bool shape_ok = !text.empty() && text.front() != '.' && text.back() != '.' &&
                          std::count(text.begin(), text.end(), '.') <= 1 &&
                          std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
    if (!shape_ok) fail_value(command, raw.label, text, what);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) fail_value(command, raw.label, text, what);
  }
  if (!std::isfinite(value) || value < 0 || value > spec.max_seconds || (!spec.zero_allowed && value <= 0)) {
    fail_value(command, raw.label, text, what);
  }
  return value;
}

}  // namespace boxproxy
