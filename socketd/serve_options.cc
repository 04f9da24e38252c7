// `boxproxy serve`'s options (SPEC §2): the command line, --config, and the files they name.
//
// Reading happens in three passes so that precedence and validation each live in one place:
//   1. collect: the command line and the config are each turned into raw text values by option
//      name, remembering where each came from (for the error message);
//   2. merge: an option given on the command line replaces the config's value (for a repeatable
//      list option the command line's whole list replaces the config's list);
//   3. validate and convert: every value goes through one checker for its option, and any bad
//      value is a UsageError naming the option (or config key) and the value.
// Nothing here runs once the event loop has started except reload_host_list (SIGHUP), whose
// UsageError the caller catches and logs while keeping the list it had.
#include "socketd/serve_options.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proxy/decision_log.h"
#include "proxy/json_nesting.h"
#include "socketd/message_text.h"
#include "table/ascii.h"
#include "table/cidr.h"
#include "table/host_list.h"
#include "table/policy.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "serve";

OptionTable make_serve_table() {
  using defaults::kMaxSeconds;
  const auto number = [](std::string name, std::string value_name, std::string help, std::string default_text,
                         std::uint64_t min, std::uint64_t max) {
    return OptionSpec{.name = std::move(name), .kind = OptionKind::number, .value_name = std::move(value_name),
                      .help = std::move(help), .default_text = std::move(default_text), .min = min, .max = max};
  };
  const auto seconds = [](std::string name, std::string help, double default_value, bool zero_allowed) {
    return OptionSpec{.name = std::move(name), .kind = OptionKind::seconds, .value_name = "S", .help = std::move(help),
                      .default_text = fmt::format("{:g}", default_value), .max_seconds = kMaxSeconds,
                      .zero_allowed = zero_allowed};
  };
  const auto value = [](std::string name, std::string value_name, std::string help, std::string default_text) {
    return OptionSpec{.name = std::move(name), .kind = OptionKind::value, .value_name = std::move(value_name),
                      .help = std::move(help), .default_text = std::move(default_text)};
  };
  const auto list = [](std::string name, std::string value_name, std::string help, std::string default_text) {
    return OptionSpec{.name = std::move(name), .kind = OptionKind::list, .value_name = std::move(value_name),
                      .help = std::move(help), .default_text = std::move(default_text)};
  };
  OptionSpec config = value("config", "FILE",
                            "a JSON object of these options' long names without \"--\" (\"max-tunnels\": 64, "
                            "\"allow\": [\"a.com\"], \"die-with-parent\": true); command-line options win, a list "
                            "given on the command line replaces the config's; an unknown or repeated key is an error",
                            "none");
  // A config naming another config would make precedence a puzzle: command line only.
  config.config_key = false;
  OptionSpec check_config{.name = "check-config", .kind = OptionKind::flag, .value_name = "",
                          .help = "read and check everything serve would read (the options, --config, "
                                  "--allow-file, --auth-token-file), print what is in force as one JSON "
                                  "object, and exit 0, or 2 on a usage error; nothing is bound or created",
                          .default_text = "off"};
  check_config.config_key = false;  // a question for the command line, never a setting
  // One row at a time: a braced list would hold every row on the stack at once, and a stack page
  // touched at start stays resident in every session, of which a host runs thousands.
  std::vector<OptionSpec> rows;
  rows.reserve(31);
  rows.push_back(
      value("socket", "PATH", "the Unix socket to create, mode 0600; its directory must exist. Required.", ""));
  rows.push_back(list("allow", "LIST",
                      "turn on the host list: names separated by commas or white space (example.com, "
                      "*.example.com, example.com:8080)",
                      "no list"));
  rows.push_back(
      value("allow-file", "FILE", "host-list entries, one a line, '#' starts a comment; re-read on SIGHUP", "none"));
  rows.push_back(
      value("allow-hint", "TEXT", "printable ASCII (0x20-0x7e) appended to a not-listed refusal's words", "none"));
  rows.push_back(list("permit", "CIDR", "a range let through although the address table refuses it", "none"));
  rows.push_back(list("deny", "CIDR", "an extra range refused as \"denied\", checked first", "none"));
  rows.push_back(list("resolve", "NAME=ADDR[,ADDR]...", "fixed answers for NAME instead of DNS", "none"));
  rows.push_back(list("nameserver", "ADDR[:PORT]", "a DNS server instead of /etc/resolv.conf's (IPv4, or [IPv6]:PORT)",
                      "the system's"));
  rows.push_back(number("max-tunnels", "N", "upstream connections open at once",
                        fmt::format("{}", defaults::kMaxTunnels), 1, defaults::kMaxTunnelsMax));
  rows.push_back(number("max-connections", "N", "upstream connections in all",
                        fmt::format("{}", defaults::kMaxConnections), 1, defaults::kMaxConnectionsMax));
  rows.push_back(number("max-lookups", "N",
                        "names looked up in DNS in all (an answer reused within its TTL, --resolve, /etc/hosts "
                        "and addresses cost none)",
                        fmt::format("{}", defaults::kMaxLookups), 1, defaults::kMaxLookupsMax));
  rows.push_back(seconds("head-timeout", "seconds to finish the request head or SOCKS handshake",
                         defaults::kHeadTimeoutSeconds, false));
  rows.push_back(seconds("dns-timeout", "seconds a lookup may take", defaults::kDnsTimeoutSeconds, false));
  rows.push_back(seconds("connect-timeout", "seconds a dial may take", defaults::kConnectTimeoutSeconds, false));
  rows.push_back(
      seconds("idle-timeout", "seconds a tunnel may stay silent (0 is never)", defaults::kIdleTimeoutSeconds, true));
  rows.push_back(number("max-head-bytes", "N", "largest HTTP request head", fmt::format("{}", defaults::kMaxHeadBytes),
                        defaults::kMaxHeadBytesMin, defaults::kMaxHeadBytesMax));
  rows.push_back(value("log", "text|json", "the format of decision lines", "text"));
  rows.push_back(value("label", "TEXT",
                       "printable ASCII (0x20-0x7e), at most 128 characters, added to every log line as label=TEXT",
                       "none"));
  rows.push_back(value("log-file", "PATH", "where decision lines go", "standard error"));
  rows.push_back(value("audit", "PATH", "append every decision as a JSON line", "none"));
  rows.push_back(value("auth-token-file", "FILE",
                       "require a session token: the file's contents, one trailing newline dropped; read at start",
                       "none"));
  // 0 to 2 are the standard streams: writing READY there (and closing it) would put a
  // second line on standard output or lose the log, so the descriptor must be 3 or more.
  rows.push_back(number("ready-fd", "N", "write READY=1 to descriptor N (open) once listening, then close it", "none",
                        defaults::kReadyFdMin, defaults::kReadyFdMax));
  rows.push_back(OptionSpec{.name = "die-with-parent",
                            .kind = OptionKind::flag,
                            .value_name = "",
                            .help = "exit as on SIGTERM when the starting process dies",
                            .default_text = "off"});
  rows.push_back(OptionSpec{.name = "no-sni-check",
                            .kind = OptionKind::flag,
                            .value_name = "",
                            .help = "with a host list, do not close a tunnel whose TLS ClientHello or first HTTP "
                                    "request's Host names another host",
                            .default_text = "checked"});
  // The supervisor's channel (SPEC §15): from 3 up, as --ready-fd.
  rows.push_back(number("control-fd", "N",
                        "a connected stream socket (a socketpair end) for the supervisor's JSON-line channel; "
                        "its EOF is a SIGTERM",
                        "none", defaults::kReadyFdMin, defaults::kReadyFdMax));
  rows.push_back(value("control-socket", "PATH",
                       "a second Unix socket, mode 0600, for the supervisor's channel (never for a box)", "none"));
  rows.push_back(OptionSpec{.name = "ask",
                            .kind = OptionKind::flag,
                            .value_name = "",
                            .help = "ask the supervisor about a name off the host list (needs --control-fd or "
                                    "--control-socket)",
                            .default_text = "off"});
  rows.push_back(seconds("ask-timeout", "seconds a client waits for the supervisor's answer",
                         defaults::kAskTimeoutSeconds, false));
  // Command line only: a config file must never turn confinement off unseen (SPEC §17).
  rows.push_back(OptionSpec{.name = "no-confine",
                            .kind = OptionKind::flag,
                            .value_name = "",
                            .help = "do not confine the process after setup (no seccomp filter, no Landlock): "
                                    "for debugging only",
                            .default_text = "confined",
                            .config_key = false});
  rows.push_back(std::move(config));
  rows.push_back(std::move(check_config));
  return OptionTable(std::string(kCommand), std::move(rows));
}

const OptionTable& table() { return serve_option_table(); }

// The deepest a config file's arrays and objects may nest (a legal one nests two deep).
constexpr std::size_t kMaxConfigNesting = 32;

// Every usage error is built here or in fail_plain (through usage_error()): the value is quoted,
// and the whole message made printable, since `what` may repeat a piece a table/ parser quoted
// raw ('\xc6\xbf1' is not an address), and it goes to a terminal.
[[noreturn]] void fail(std::string_view label, std::string_view value, std::string_view what) {
  fail_value(kCommand, label, value, what);
}

// A table/ parser's message usually starts by naming the text ("x=1: '1' is not ..."); the
// usage error names the value itself already, so that prefix is dropped rather than repeated.
std::string_view reason_of(std::string_view message, std::string_view value) {
  if (message.size() > value.size() + 2 && message.substr(0, value.size()) == value &&
      message.substr(value.size(), 2) == ": ") {
    message.remove_prefix(value.size() + 2);
  }
  return message;
}

[[noreturn]] void fail_plain(std::string_view text) { throw usage_error(kCommand, text); }

// Reads a whole file (following symlinks, as any path argument would), at most `cap` bytes.
// nullopt with `error` set when it cannot be opened or read or is larger than `cap`.
std::optional<std::string> read_file_capped(const std::string& path, std::size_t cap, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd == -1) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == -1) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > cap) {
      error = fmt::format("larger than {} bytes", cap);
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return text;
}

// ---- pass 1: collect ----------------------------------------------------------------------
// The command line is read by parse_arguments() against serve's table; the config here.

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

RawOptions collect_config(const std::string& path) {
  const std::string where = fmt::format("--config {}", quote(path));
  std::string error;
  const auto text = read_file_capped(path, defaults::kMaxConfigBytes, error);
  if (!text) fail("--config", path, fmt::format("cannot be read: {}", error));
  // A config nested thousands deep would overflow the stack while the document is built or
  // destroyed (a crash, on SIGHUP too): the deepest legal config is two levels.
  if (json_nesting_depth(*text, kMaxConfigNesting) > kMaxConfigNesting) {
    fail("--config", path, fmt::format("nests arrays or objects more than {} deep", kMaxConfigNesting));
  }
  // The parser keeps the last of two equal keys without a word; a key given twice is a mistake
  // (which value did the operator mean?), so it is an error, as an option given twice is.
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
    document = nlohmann::json::parse(*text, watch_keys);
  } catch (const nlohmann::json::exception& e) {
    // Any parse failure (a syntax error, a number out of range such as 1e999) is a usage error,
    // said in our words: the library's own names its exception classes and its internals.
    fail("--config", path, fmt::format("is not JSON: {}", json_error_words(*text, e)));
  }
  if (repeated_key) {
    fail_plain(fmt::format("{}: key {} given twice (a key may be given once, as an option may)", where,
                           quote(*repeated_key)));
  }
  if (!document.is_object()) fail("--config", path, "is not a JSON object");

  RawOptions raw;
  for (const auto& [key, value] : document.items()) {
    const OptionSpec* spec = table().find(key);
    const std::string label = fmt::format("{}: key {}", where, quote(key));
    if (spec == nullptr || !spec->config_key) {
      fail_plain(fmt::format("{}: unknown key {} (keys are serve's long option names without \"--\")", where,
                             quote(key)));
    }
    const std::string shown = value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    RawValue slot;
    slot.label = label;
    switch (spec->kind) {
      case OptionKind::value:
        if (!value.is_string()) fail(label, shown, "is not a JSON string");
        slot.values.push_back(value.get<std::string>());
        break;
      case OptionKind::number:
        // Whole numbers only: 64.0 or "64" is a wrong type rather than a guess.
        if (!value.is_number_integer()) fail(label, shown, "is not a JSON whole number");
        slot.values.push_back(value.dump());
        break;
      case OptionKind::seconds:
        if (!value.is_number()) fail(label, shown, "is not a JSON number");
        slot.seconds = value.get<double>();
        slot.values.push_back(shown);
        break;
      case OptionKind::flag:
        if (!value.is_boolean()) fail(label, shown, "is not a JSON boolean");
        slot.flag = value.get<bool>();
        break;
      case OptionKind::list:
        if (!value.is_array()) fail(label, shown, "is not a JSON array of strings");
        for (const auto& item : value) {
          if (!item.is_string()) fail(label, shown, "is not a JSON array of strings");
          slot.values.push_back(item.get<std::string>());
        }
        break;
    }
    raw[key] = std::move(slot);
  }
  return raw;
}

// ---- pass 3: validators --------------------------------------------------------------------

// A number option's value, by its row's range.
std::uint64_t check_number(std::string_view name, const RawValue& raw) {
  return number_value(kCommand, table().at(name), raw);
}

// A seconds option's value, by its row's range.
double check_seconds(std::string_view name, const RawValue& raw) { return seconds_value(kCommand, table().at(name), raw); }

// "ADDR", "ADDR:PORT", "[V6]", "[V6]:PORT", or a bare IPv6 "V6". Strict addresses (inet_pton).
bool valid_nameserver(std::string_view text) {
  auto port_ok = [](std::string_view port) {
    const auto value = parse_unsigned(port, 65535);
    return port.size() <= 5 && value && *value >= 1;
  };
  // parse_strict_address: inet_pton forms, and an embedded NUL ends no address.
  auto is_v4 = [](std::string_view address) {
    const auto parsed = parse_strict_address(address);
    return parsed && parsed->is_v4();
  };
  auto is_v6 = [](std::string_view address) {
    const auto parsed = parse_strict_address(address);
    return parsed && !parsed->is_v4();
  };
  if (text.empty()) return false;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || !is_v6(text.substr(1, close - 1))) return false;
    const auto rest = text.substr(close + 1);
    return rest.empty() || (rest.front() == ':' && port_ok(rest.substr(1)));
  }
  if (std::count(text.begin(), text.end(), ':') >= 2) return is_v6(text);
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    return is_v4(text.substr(0, colon)) && port_ok(text.substr(colon + 1));
  }
  return is_v4(text);
}

std::string lower_without_trailing_dot(std::string name) {
  if (!name.empty() && name.back() == '.') name.pop_back();
  return ascii_lower(name);
}

// 1-based line of `item` inside `text` when the item is a view into it, else 0.
std::size_t line_of(std::string_view text, std::string_view item) {
  if (item.data() < text.data() || item.data() > text.data() + text.size()) return 0;
  const auto offset = static_cast<std::size_t>(item.data() - text.data());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

void add_allow_items(HostList& list, const std::string& label, const std::vector<std::string>& values) {
  for (const auto& value : values) {
    for (const auto item : split_host_items(value)) {
      if (const auto error = list.add(item)) fail(label, item, fmt::format("is not a host-list entry: {}", reason_of(*error, item)));
    }
  }
}

// Reads an --allow-file into `list`. Unreadable, or any bad entry, is a UsageError naming the
// file (and the line and entry).
void add_allow_file(HostList& list, const std::string& label, const std::string& path) {
  std::string error;
  const auto text = read_file_capped(path, defaults::kMaxAllowFileBytes, error);
  if (!text) fail(label, path, fmt::format("cannot be read: {}", error));
  for (const auto item : split_host_file(*text)) {
    if (const auto message = list.add(item)) {
      const std::size_t line = line_of(*text, item);
      const std::string where = line == 0 ? fmt::format("{} {}", label, quote(path))
                                          : fmt::format("{} {} line {}", label, quote(path), line);
      fail(where, item, fmt::format("is not a host-list entry: {}", reason_of(*message, item)));
    }
  }
}

std::string read_token(const std::string& label, const std::string& path) {
  std::string error;
  auto text = read_file_capped(path, defaults::kMaxTokenBytes, error);
  if (!text) fail(label, path, fmt::format("cannot be read: {}", error));
  // One trailing line end is what an editor or `echo` adds; it is not part of the token.
  if (!text->empty() && text->back() == '\n') {
    text->pop_back();
    if (!text->empty() && text->back() == '\r') text->pop_back();
  }
  // The token itself is never put into a message: only the file is named.
  if (text->empty()) fail(label, path, "holds an empty token");
  for (char c : *text) {
    const auto byte = static_cast<unsigned char>(c);
    // A control character could never arrive intact in a Proxy-Authorization header, so no
    // client could ever authenticate: refuse it at start rather than fail every client.
    if (byte < 0x20 || byte == 0x7f) fail(label, path, "holds a control character or a line break inside the token");
  }
  return std::move(*text);
}

std::string check_path(const RawValue& raw) {
  const std::string& text = raw.values.front();
  if (text.empty()) fail(raw.label, text, "is not a path (it is empty)");
  if (text.find('\0') != std::string::npos) fail(raw.label, text, "is not a path (it holds a NUL)");
  return text;
}

// The host list from its three sources, each by its own precedence; nullopt when none is given.
std::optional<HostList> build_host_list(const RawValue* allow, const RawValue* allow_file) {
  if (allow == nullptr && allow_file == nullptr) return std::nullopt;
  HostList list;
  if (allow != nullptr) add_allow_items(list, allow->label, allow->values);
  if (allow_file != nullptr) add_allow_file(list, allow_file->label, check_path(*allow_file));
  return list;
}

RawOptions merge(RawOptions command_line, RawOptions config) {
  // Command-line values win whole: a list given on the command line replaces the config's list.
  for (auto& [name, value] : command_line) config[name] = std::move(value);
  return config;
}

const RawValue* get(const RawOptions& raw, std::string_view name) {
  const auto it = raw.find(name);
  return it == raw.end() ? nullptr : &it->second;
}

// Who reads serve's options: serve itself, or check (which judges but never listens).
enum class Reader { serve, check };

// Passes 2 and 3: merges the config under `command_line` and validates every value.
ServeOptions read_options(const RawOptions& command_line, Reader reader) {
  ServeOptions options;

  RawOptions config;
  if (const RawValue* config_arg = get(command_line, "config")) {
    options.config_path = check_path(*config_arg);
    config = collect_config(*options.config_path);
  }
  options.allow_on_command_line = get(command_line, "allow") != nullptr;
  options.allow_file_on_command_line = get(command_line, "allow-file") != nullptr;
  if (const RawValue* allow = get(command_line, "allow")) options.allow_items = allow->values;

  const RawOptions raw = merge(command_line, std::move(config));

  if (const RawValue* value = get(command_line, "check-config")) options.check_config = value->flag;
  const RawValue* socket = get(raw, "socket");
  if (socket == nullptr && reader == Reader::serve && !options.check_config) {
    fail_plain("--socket PATH is required (see boxproxy serve --help)");
  }
  if (socket != nullptr) options.socket_path = check_path(*socket);

  // Host list: --allow and --allow-file together; either turns it on.
  if (const RawValue* allow_file = get(raw, "allow-file")) options.allow_file = check_path(*allow_file);
  options.policy.allow = build_host_list(get(raw, "allow"), get(raw, "allow-file"));

  if (const RawValue* hint = get(raw, "allow-hint")) {
    const std::string& text = hint->values.front();
    // The hint goes into an HTTP status line: only printable ASCII may ever go there.
    const bool printable = std::all_of(text.begin(), text.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte >= 0x20 && byte <= 0x7e;
    });
    if (!printable) fail(hint->label, text, "holds a character outside printable ASCII (0x20 to 0x7e)");
    options.allow_hint = text;
  }

  if (const RawValue* label = get(raw, "label")) {
    const std::string& text = label->values.front();
    // The label goes into every log line: printable ASCII only, so it can neither break a line
    // nor carry an escape sequence to a terminal; bounded, so every line stays short.
    const bool printable = std::all_of(text.begin(), text.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte >= 0x20 && byte <= 0x7e;
    });
    if (!printable) fail(label->label, text, "holds a character outside printable ASCII (0x20 to 0x7e)");
    if (text.size() > kMaxLabelChars) {
      fail(label->label, text, fmt::format("is longer than {} characters", kMaxLabelChars));
    }
    options.label = text;
  }

  for (const auto& [name, target] : {std::pair{"permit", &options.policy.rule.permit},
                                     std::pair{"deny", &options.policy.rule.deny}}) {
    if (const RawValue* ranges = get(raw, name)) {
      for (const auto& text : ranges->values) {
        auto parsed = parse_cidr(text);
        if (auto* error = std::get_if<std::string>(&parsed)) fail(ranges->label, text, fmt::format("is not a CIDR: {}", reason_of(*error, text)));
        target->push_back(std::get<Cidr>(std::move(parsed)));
      }
    }
  }

  if (const RawValue* resolves = get(raw, "resolve")) {
    for (const auto& text : resolves->values) {
      auto parsed = parse_resolve_entry(text);
      if (auto* error = std::get_if<std::string>(&parsed)) {
        fail(resolves->label, text, fmt::format("is not NAME=ADDR[,ADDR]...: {}", reason_of(*error, text)));
      }
      auto entry = std::get<ResolveEntry>(std::move(parsed));
      // A name given twice gets the answers of both, each once.
      auto& answers = options.policy.fixed_answers[lower_without_trailing_dot(std::move(entry.name))];
      for (auto& address : entry.addresses) {
        if (std::find(answers.begin(), answers.end(), address) == answers.end()) answers.push_back(std::move(address));
      }
    }
  }

  if (const RawValue* nameservers = get(raw, "nameserver")) {
    for (const auto& text : nameservers->values) {
      if (!valid_nameserver(text)) fail(nameservers->label, text, "is not ADDR[:PORT] (an IPv4 address, or [IPv6]:PORT)");
      options.nameservers.push_back(text);
    }
  }

  if (const RawValue* value = get(raw, "max-tunnels")) {
    options.max_tunnels = static_cast<std::uint32_t>(check_number("max-tunnels", *value));
  }
  if (const RawValue* value = get(raw, "max-connections")) {
    options.max_connections = check_number("max-connections", *value);
  }
  if (const RawValue* value = get(raw, "max-lookups")) options.max_lookups = check_number("max-lookups", *value);
  if (const RawValue* value = get(raw, "head-timeout")) options.head_timeout = check_seconds("head-timeout", *value);
  if (const RawValue* value = get(raw, "dns-timeout")) options.dns_timeout = check_seconds("dns-timeout", *value);
  if (const RawValue* value = get(raw, "connect-timeout")) options.connect_timeout = check_seconds("connect-timeout", *value);
  if (const RawValue* value = get(raw, "idle-timeout")) options.idle_timeout = check_seconds("idle-timeout", *value);
  if (const RawValue* value = get(raw, "max-head-bytes")) {
    options.max_head_bytes = static_cast<std::size_t>(check_number("max-head-bytes", *value));
  }

  if (const RawValue* value = get(raw, "log")) {
    const std::string& text = value->values.front();
    if (text == "text") {
      options.log_format = LogFormat::text;
    } else if (text == "json") {
      options.log_format = LogFormat::json;
    } else {
      fail(value->label, text, "is not \"text\" or \"json\"");
    }
  }
  if (const RawValue* value = get(raw, "log-file")) options.log_file = check_path(*value);
  if (const RawValue* value = get(raw, "audit")) options.audit_path = check_path(*value);

  if (const RawValue* value = get(raw, "auth-token-file")) {
    options.auth_token_file = check_path(*value);
    // check never needs the token, and must not fail for a file only serve's user may read.
    if (reader == Reader::serve) options.auth_token = read_token(value->label, *options.auth_token_file);
  }

  if (const RawValue* value = get(raw, "ready-fd")) {
    // From 3 up (the table's row says why).
    const auto fd = check_number("ready-fd", *value);
    // Fail closed at start: a supervisor waiting on a descriptor we never received would hang.
    // (check never writes it: its own descriptors say nothing of serve's.)
    if (reader == Reader::serve && ::fcntl(static_cast<int>(fd), F_GETFD) == -1) {
      fail(value->label, value->values.front(), "is not an open file descriptor");
    }
    options.ready_fd = static_cast<int>(fd);
  }

  if (const RawValue* value = get(raw, "die-with-parent")) options.die_with_parent = value->flag;
  if (const RawValue* value = get(command_line, "no-confine")) options.confine = !value->flag;
  if (const RawValue* value = get(raw, "no-sni-check")) options.sni_check = !value->flag;

  if (const RawValue* value = get(raw, "control-fd")) {
    const auto fd = static_cast<int>(check_number("control-fd", *value));
    // Fail closed at start: the supervisor's channel must be the socket it handed over, or the
    // proxy would run unsupervised (and its EOF could never stop it).
    if (reader == Reader::serve) {
      int type = 0;
      socklen_t length = sizeof type;
      if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == -1 || type != SOCK_STREAM) {
        fail(value->label, value->values.front(), "is not an open stream socket (one end of a socketpair)");
      }
    }
    if (options.ready_fd && *options.ready_fd == fd) {
      fail(value->label, value->values.front(), "is --ready-fd too (which is closed once ready)");
    }
    options.control_fd = fd;
  }
  if (const RawValue* value = get(raw, "control-socket")) {
    options.control_socket = check_path(*value);
    if (*options.control_socket == options.socket_path) {
      fail(value->label, *options.control_socket, "is --socket too (the box must never reach the control channel)");
    }
  }
  if (const RawValue* value = get(raw, "ask")) options.ask = value->flag;
  if (const RawValue* value = get(raw, "ask-timeout")) options.ask_timeout = check_seconds("ask-timeout", *value);
  // Nobody could answer: every name off the list would wait for nothing.
  if (options.ask && !options.control_fd && !options.control_socket) {
    fail_plain("--ask needs --control-fd or --control-socket (someone to ask)");
  }

  return options;
}

}  // namespace

const OptionTable& serve_option_table() {
  static const OptionTable serve_table = make_serve_table();
  return serve_table;
}

ServeOptions parse_serve_options(int argc, char** argv) {
  // Accept argv either starting at the first option or at the word "serve" itself.
  if (argc > 0 && argv[0] != nullptr && std::string_view(argv[0]) == kCommand) {
    --argc;
    ++argv;
  }
  return read_options(parse_arguments(table(), argc, argv, Operands::none).options, Reader::serve);
}

ServeOptions read_options_for_check(const RawOptions& command_line) { return read_options(command_line, Reader::check); }

std::string options_in_force(const ServeOptions& options) {
  using nlohmann::json;
  const auto or_null = [](const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); };
  const auto ranges = [](const std::vector<Cidr>& cidrs) {
    json out = json::array();
    for (const Cidr& cidr : cidrs) out.push_back(cidr.to_string());
    return out;
  };
  json allow = nullptr;
  if (options.policy.allow) {
    allow = json::array();
    for (const HostEntry& entry : options.policy.allow->entries()) {
      std::string text = (entry.wildcard ? "*." : "") + entry.name;
      if (entry.port) text += fmt::format(":{}", *entry.port);
      allow.push_back(std::move(text));
    }
  }
  json resolve = json::array();
  for (const auto& [name, answers] : options.policy.fixed_answers) {
    std::string text = name + "=";
    for (std::size_t i = 0; i < answers.size(); ++i) text += (i == 0 ? "" : ",") + answers[i].to_string();
    resolve.push_back(std::move(text));
  }
  // The keys are the config file's, so what is printed reads back as a --config (but for
  // "allow", which holds the --allow-file's entries too, and "socket", which may be absent).
  json out = {
      {"socket", options.socket_path.empty() ? json(nullptr) : json(options.socket_path)},
      {"allow", std::move(allow)},
      {"allow-file", or_null(options.allow_file)},
      {"allow-hint", options.allow_hint},
      {"permit", ranges(options.policy.rule.permit)},
      {"deny", ranges(options.policy.rule.deny)},
      {"resolve", std::move(resolve)},
      {"nameserver", options.nameservers},
      {"max-tunnels", options.max_tunnels},
      {"max-connections", options.max_connections},
      {"max-lookups", options.max_lookups},
      {"head-timeout", options.head_timeout},
      {"dns-timeout", options.dns_timeout},
      {"connect-timeout", options.connect_timeout},
      {"idle-timeout", options.idle_timeout},
      {"max-head-bytes", options.max_head_bytes},
      {"log", options.log_format == LogFormat::json ? "json" : "text"},
      {"label", options.label},
      {"log-file", or_null(options.log_file)},
      {"audit", or_null(options.audit_path)},
      // The token is never shown: only whether one is required, and its file.
      {"auth-token-file", or_null(options.auth_token_file)},
      {"ready-fd", options.ready_fd ? json(*options.ready_fd) : json(nullptr)},
      {"die-with-parent", options.die_with_parent},
      {"no-sni-check", !options.sni_check},
      {"control-fd", options.control_fd ? json(*options.control_fd) : json(nullptr)},
      {"control-socket", or_null(options.control_socket)},
      {"ask", options.ask},
      {"ask-timeout", options.ask_timeout},
      {"config", or_null(options.config_path)},
  };
  // ASCII only (a path or hint may hold other bytes): nothing but printable text reaches stdout.
  return out.dump(-1, ' ', true, json::error_handler_t::replace);
}

std::optional<HostList> reload_host_list(const ServeOptions& options) {
  RawOptions config;
  if (options.config_path) config = collect_config(*options.config_path);

  // Same precedence as at start: a source given on the command line replaces the config's.
  std::optional<RawValue> allow;
  if (options.allow_on_command_line) {
    allow = RawValue{"--allow", options.allow_items, false, std::nullopt};
  } else if (const RawValue* from_config = get(config, "allow")) {
    allow = *from_config;
  }
  std::optional<RawValue> allow_file;
  if (options.allow_file_on_command_line && options.allow_file) {
    allow_file = RawValue{"--allow-file", {*options.allow_file}, false, std::nullopt};
  } else if (const RawValue* from_config = get(config, "allow-file")) {
    allow_file = *from_config;
  }
  return build_host_list(allow ? &*allow : nullptr, allow_file ? &*allow_file : nullptr);
}

std::string read_auth_token_file(const std::string& label, const std::string& path) { return read_token(label, path); }

std::string serve_help_text() {
  return fmt::format(R"(Usage: boxproxy serve --socket PATH [OPTION]...

Run the egress proxy for one session on a Unix socket. SOCKS5, SOCKS4/4a and HTTP
(CONNECT and absolute-form http://) are told apart by the first byte a client sends.

Options (--name VALUE or --name=VALUE):
{}
Seconds are plain decimals ("0.5"). Exit: 0 clean shutdown, 1 runtime failure,
2 usage error, 3 the socket path is taken.
Signals: SIGTERM/SIGINT stop, SIGHUP re-reads the host list, SIGUSR1 logs stats.
)",
                     table().options_help());
}

}  // namespace boxproxy
