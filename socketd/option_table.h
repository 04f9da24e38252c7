// SPDX-License-Identifier: Apache-2.0
// One command-line toolkit for every command: a table of options, the parser and the --help text
// both made from it.
//
// Each command declares one OptionTable (serve, check, bridge, run). parse_arguments() reads
// argv against it: `--name VALUE` and `--name=VALUE`, a single-valued option given twice is an
// error, a flag takes no value, `-h`/`--help` throws HelpRequested, and where the command takes
// operands (check's targets, run's COMMAND) `--` ends the options. options_help() writes the
// options' part of the command's --help from the same rows: each with its value's range, whether
// it repeats, and its default (the figures come from proxy/defaults.h). Every error is a
// UsageError (socketd/usage_error.h) naming the option and the value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "socketd/usage_error.h"
#include "table/inspect_endpoint.h"

namespace boxproxy {

enum class OptionKind {
  flag,     // no value (--die-with-parent); may repeat; a JSON boolean in a config file
  value,    // one value (a path, a word); given twice is an error; a JSON string
  list,     // repeatable, the values add up in the order given; a JSON array of strings
  number,   // one whole number from `min` to `max`, plain ASCII digits; a JSON integer
  seconds,  // one decimal number of seconds, at most `max_seconds` (more than 0 unless
            // `zero_allowed`); any JSON number
  endpoints,  // repeatable like a list on the command line (--inspect ENTRY); in a config file a
              // JSON array of objects, read into InspectEndpoints (proxy/inspect_array.h)
};

// A row's name, value name or help: a string literal, kept as a view. Copies of them were most
// of serve's heap after start, in every session (bench/README.md, bench/density); only a
// literal converts (consteval), so no row can keep a view of a temporary std::string.
class OptionText {
 public:
  constexpr OptionText() noexcept = default;
  template <std::size_t N>
  consteval OptionText(const char (&literal)[N]) noexcept : text_(literal, N - 1) {}  // implicit: "name"
  constexpr operator std::string_view() const noexcept { return text_; }
  [[nodiscard]] constexpr std::string_view view() const noexcept { return text_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return text_.empty(); }

 private:
  std::string_view text_;
};

// One row of a command's table.
struct OptionSpec {
  OptionText name{};          // the long name without "--": "max-tunnels"
  OptionKind kind = OptionKind::value;
  OptionText value_name{};    // what the help calls the value ("N", "PATH"); empty for a flag
  OptionText help{};          // what it does; the help text wraps it and adds range and default
  std::string default_text{}; // the default as --help shows it; empty when there is none to say
  std::uint64_t min = 0;      // number: the smallest value
  std::uint64_t max = 0;      // number: the largest value
  double max_seconds = 0;     // seconds: the largest value
  bool zero_allowed = false;  // seconds: 0 is a value (otherwise it must be more than 0)
  bool config_key = true;     // serve: may be a key of a --config file
  bool in_help = true;        // listed by options_help() (run lists its own, not serve's)
};

class OptionTable {
 public:
  // `command` names the command in messages ("boxproxy serve: ...") and in the help's hints.
  OptionTable(std::string command, std::vector<OptionSpec> options);

  [[nodiscard]] const std::string& command() const noexcept { return command_; }
  [[nodiscard]] const std::vector<OptionSpec>& options() const noexcept { return options_; }
  // The row named `name` (without "--"), or nullptr.
  [[nodiscard]] const OptionSpec* find(std::string_view name) const noexcept;
  // The row named `name`; the name must be in the table (a programming error otherwise).
  [[nodiscard]] const OptionSpec& at(std::string_view name) const;

  // "  --name VALUE   help, range; repeatable (default: X)" for every row with in_help, in the
  // table's order, wrapped to 80 columns, then "  -h, --help".
  [[nodiscard]] std::string options_help() const;

 private:
  std::string command_;
  std::vector<OptionSpec> options_;
};

// A value as given, with the words that name where it came from, for the error message:
// "--max-tunnels", or "--config \"c.json\": key \"max-tunnels\"".
struct RawValue {
  std::string label;
  std::vector<std::string> values;  // one for a single-valued option, any number for a list
  bool flag = false;                // for a flag
  std::optional<double> seconds;    // a JSON number given for a seconds option, taken as is
  std::vector<InspectEndpoint> endpoints;  // an endpoints option's config objects, read and checked
};
using RawOptions = std::map<std::string, RawValue, std::less<>>;

// Where a command's operands start.
enum class Operands {
  none,           // every argument is an option (serve, bridge)
  after_options,  // the first argument that is not an option, or "--", starts them (check)
  after_dashes,   // "--" starts them and is required; no operand before it (run). Without any
                  // "--", the first argument that is not an option ends the reading, dashes false.
};

struct ParsedArguments {
  RawOptions options;                 // by name, without "--"
  std::vector<std::string> operands;  // as given
  bool dashes = false;                // "--" was given
};

// Reads `argv[0..argc)` (the arguments after the command's name) against `table`. A value is
// taken as given even when it reads "--" or "--socket": it belongs to its option. Throws
// UsageError, or HelpRequested for -h/--help among the options.
[[nodiscard]] ParsedArguments parse_arguments(const OptionTable& table, int argc, char* const* argv,
                                              Operands operands);

// The value of a number option, checked against its row's range. Throws UsageError under
// `command`'s name naming raw.label and the value.
[[nodiscard]] std::uint64_t number_value(std::string_view command, const OptionSpec& spec, const RawValue& raw);

// The value of a seconds option: plain decimals ("30", "0.5"; no sign, exponent, inf or nan)
// or a JSON number, checked against its row's range. Throws UsageError as number_value does.
[[nodiscard]] double seconds_value(std::string_view command, const OptionSpec& spec, const RawValue& raw);

// The usage error "LABEL: "VALUE" WHAT" under `command`'s name, the value quoted.
[[noreturn]] void fail_value(std::string_view command, std::string_view label, std::string_view value,
                             std::string_view what);

// Plain ASCII digits only (no sign, no space, no 0x), at most `max`; nullopt otherwise.
[[nodiscard]] std::optional<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max) noexcept;

}  // namespace boxproxy
