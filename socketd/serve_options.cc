// SPDX-License-Identifier: Apache-2.0
// `boxproxy serve`'s options (SPEC §2): the command line, --config, and the files they name.
//
// Every option is one row below: its line of the table (kind, help, range, default) and the
// function that checks its value and stores it. Reading is then:
//   1. collect: the command line (parse_arguments) and the config (config_file.h) are each turned
//      into raw text values by option name, remembering where each came from (for the message);
//   2. merge: an option given on the command line replaces the config's value (for a repeatable
//      list option the command line's whole list replaces the config's list);
//   3. store: every value given goes through its row, in the table's order (so a row may check
//      the rows above it), and any bad value is a UsageError naming the option (or config key)
//      and the value; then the checks across options.
// Nothing here runs once the event loop has started except reload_host_list (SIGHUP), whose
// UsageError the caller catches and logs while keeping the list it had.
#include "socketd/serve_options.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proxy/decision_log.h"
#include "proxy/inspect_array.h"
#include "socketd/config_file.h"
#include "table/message_text.h"
#include "socketd/serve_values.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "serve";
constexpr std::size_t kServeRowsReserved = 40;

[[noreturn]] void fail_plain(std::string_view text) { throw usage_error(kCommand, text); }

RawOptions merge(RawOptions command_line, RawOptions config) {
  // Command-line values win whole: a list given on the command line replaces the config's list.
  for (auto& [name, value] : command_line) config[name] = std::move(value);
  return config;
}

const RawValue* get(const RawOptions& raw, std::string_view name) {
  const auto it = raw.find(name);
  return it == raw.end() ? nullptr : &it->second;
}

// The host list being built: either of --allow and --allow-file turns it on.
HostList& host_list(ServeOptions& options) {
  std::optional<HostList>& list = options.proxy.policy.allow;
  return list ? *list : list.emplace();
}

// ---- the rows --------------------------------------------------------------------------------

// Who reads serve's options: serve itself, or check (which judges but never listens).
enum class Reader { serve, check };

// What a row's store is given: its value as given (on the command line or in --config), its
// row, and who reads.
struct Given {
  const OptionSpec& spec;
  const RawValue& raw;
  Reader reader;

  [[nodiscard]] const std::string& text() const { return raw.values.front(); }
  [[nodiscard]] std::uint64_t number() const { return number_value(kCommand, spec, raw); }
  [[nodiscard]] double seconds() const { return seconds_value(kCommand, spec, raw); }
  [[nodiscard]] std::string path() const { return check_path(raw); }
  [[noreturn]] void fail(std::string_view what) const { fail_value(kCommand, raw.label, text(), what); }
};

// Checks a value and stores it in the options; throws UsageError naming the option (or config
// key) and the value.
using Store = void (*)(const Given& given, ServeOptions& options);

// One serve option. A row without a store is read by read_options itself, before the others.
struct ServeRow {
  OptionSpec spec;
  Store store = nullptr;
};

// The rows as serve keeps them: the specs go into the option table and the stores beside them,
// by index, so that no spec is held twice (each copy stayed on the heap of every session).
struct ServeRows {
  std::vector<OptionSpec> specs;
  std::vector<Store> stores;

  void push_back(ServeRow row) {
    specs.push_back(std::move(row.spec));
    stores.push_back(row.store);
  }
};

ServeRow number(OptionText name, OptionText help, std::string default_text, std::uint64_t min, std::uint64_t max,
                Store store) {
  return {{.name = name, .kind = OptionKind::number, .value_name = "N", .help = help,
           .default_text = std::move(default_text), .min = min, .max = max},
          store};
}

// A seconds default as --help shows it. A whole number (every default today) is written as an
// integer: "{:g}" of a double runs fmt's Dragon4, whose big integers on the stack reach 1.7 KiB
// deeper than anything else in serve's start, a page more of stack in many sessions.
std::string seconds_text(double value) {
  if (value >= 0 && value <= defaults::kMaxSeconds && value == std::floor(value)) {
    return fmt::format("{}", static_cast<std::uint64_t>(value));
  }
  return fmt::format("{:g}", value);
}

ServeRow seconds(OptionText name, OptionText help, double default_value, bool zero_allowed, Store store) {
  return {{.name = name, .kind = OptionKind::seconds, .value_name = "S", .help = help,
           .default_text = seconds_text(default_value), .max_seconds = defaults::kMaxSeconds,
           .zero_allowed = zero_allowed},
          store};
}

ServeRow value(OptionText name, OptionText value_name, OptionText help, std::string default_text, Store store) {
  return {{.name = name, .kind = OptionKind::value, .value_name = value_name,
           .help = help, .default_text = std::move(default_text)},
          store};
}

ServeRow list(OptionText name, OptionText value_name, OptionText help, std::string default_text, Store store) {
  return {{.name = name, .kind = OptionKind::list, .value_name = value_name,
           .help = help, .default_text = std::move(default_text)},
          store};
}

ServeRow flag(OptionText name, OptionText help, std::string default_text, Store store) {
  return {{.name = name, .kind = OptionKind::flag, .help = help,
           .default_text = std::move(default_text)},
          store};
}

// Options that are command-line only.
ServeRow command_line_only(ServeRow row) {
  row.spec.config_key = false;
  return row;
}

// The socket and the policy's rows: what may be reached.
void add_policy_rows(ServeRows& rows) {
  rows.push_back(value("socket", "PATH", "the Unix socket to create, mode 0600; its directory must exist. Required.", "",
                       [](const Given& given, ServeOptions& options) { options.socket_path = given.path(); }));
  rows.push_back(list("allow", "LIST",
                      "turn on the host list: names separated by commas or white space (example.com, "
                      "*.example.com, example.com:8080)",
                      "no list", [](const Given& given, ServeOptions& options) {
                        // The first list row: the list holds --allow's entries alone until
                        // --allow-file's row appends the file's.
                        add_allow_items(host_list(options), given.raw.label, given.raw.values);
                        options.allow_option_entries = host_list(options).entries().size();
                      }));
  rows.push_back(value("allow-file", "FILE", "host-list entries, one a line, '#' starts a comment; re-read on SIGHUP",
                       "none", [](const Given& given, ServeOptions& options) {
                         options.allow_file = given.path();
                         add_allow_file(host_list(options), given.raw.label, *options.allow_file);
                       }));
  rows.push_back(value("allow-hint", "TEXT", "printable ASCII (0x20-0x7e) appended to a not-listed refusal's words",
                       "none", [](const Given& given, ServeOptions& options) {
                         options.proxy.allow_hint = printable_ascii(given.raw);
                       }));
  rows.push_back(list("permit", "CIDR", "a range let through although the address table refuses it", "none",
                      [](const Given& given, ServeOptions& options) {
                        add_ranges(given.raw, options.proxy.policy.rule.permit);
                      }));
  rows.push_back(list("deny", "CIDR", "an extra range refused as \"denied\", checked first", "none",
                      [](const Given& given, ServeOptions& options) {
                        add_ranges(given.raw, options.proxy.policy.rule.deny);
                      }));
  rows.push_back(list("resolve", "NAME=ADDR[,ADDR]...", "fixed answers for NAME instead of DNS", "none",
                      [](const Given& given, ServeOptions& options) {
                        add_fixed_answers(given.raw, options.proxy.policy);
                      }));
  rows.push_back(list("nameserver", "ADDR[:PORT]", "a DNS server instead of /etc/resolv.conf's (IPv4, or [IPv6]:PORT)",
                      "the system's", [](const Given& given, ServeOptions& options) {
                        add_nameservers(given.raw, options.nameservers);
                      }));
  // Read by read_options itself (read_inspect): the command line's entries and the config's
  // objects are merged, not one replacing the other (SPEC §18).
  rows.push_back({{.name = "inspect", .kind = OptionKind::endpoints, .value_name = "ENTRY",
                   .help = "judge each request to this host (name[:port] or *.name[:port], port 443 when none) "
                           "inside its TLS session, with no rules; a --config's \"inspect\" array adds endpoints "
                           "with rules. The TLS work runs in boxproxy-inspect, found beside boxproxy or in "
                           "the libexec directory it was installed with",
                   .default_text = "none"},
                  nullptr});
}

// The limits and time-outs: how much a session may use.
void add_limit_rows(ServeRows& rows) {
  rows.push_back(number("max-tunnels", "upstream connections open at once", fmt::format("{}", defaults::kMaxTunnels), 1,
                        defaults::kMaxTunnelsMax, [](const Given& given, ServeOptions& options) {
                          options.proxy.max_tunnels = static_cast<std::uint32_t>(given.number());
                        }));
  rows.push_back(number("max-connections", "upstream connections in all", fmt::format("{}", defaults::kMaxConnections),
                        1, defaults::kMaxConnectionsMax, [](const Given& given, ServeOptions& options) {
                          options.proxy.max_connections = given.number();
                        }));
  rows.push_back(number("max-lookups",
                        "names looked up in DNS in all (an answer reused within its TTL, --resolve, /etc/hosts "
                        "and addresses cost none)",
                        fmt::format("{}", defaults::kMaxLookups), 1, defaults::kMaxLookupsMax,
                        [](const Given& given, ServeOptions& options) { options.max_lookups = given.number(); }));
  rows.push_back(seconds("head-timeout", "seconds to finish the request head or SOCKS handshake",
                         defaults::kHeadTimeoutSeconds, false, [](const Given& given, ServeOptions& options) {
                           options.proxy.head_timeout = given.seconds();
                         }));
  rows.push_back(seconds("dns-timeout", "seconds a lookup may take", defaults::kDnsTimeoutSeconds, false,
                         [](const Given& given, ServeOptions& options) { options.proxy.dns_timeout = given.seconds(); }));
  rows.push_back(seconds("connect-timeout", "seconds a dial may take", defaults::kConnectTimeoutSeconds, false,
                         [](const Given& given, ServeOptions& options) {
                           options.proxy.connect_timeout = given.seconds();
                         }));
  rows.push_back(seconds("idle-timeout", "seconds a tunnel may stay silent (0 is never)", defaults::kIdleTimeoutSeconds,
                         true, [](const Given& given, ServeOptions& options) {
                           options.proxy.idle_timeout = given.seconds();
                         }));
  rows.push_back(number("max-head-bytes", "largest HTTP request head", fmt::format("{}", defaults::kMaxHeadBytes),
                        defaults::kMaxHeadBytesMin, defaults::kMaxHeadBytesMax,
                        [](const Given& given, ServeOptions& options) {
                          options.proxy.max_head_bytes = static_cast<std::size_t>(given.number());
                        }));
  rows.push_back(number("max-held-body", "largest request body held to be signed",
                        fmt::format("{}", defaults::kMaxHeldBody), 0, defaults::kMaxHeldBodyMax,
                        [](const Given& given, ServeOptions& options) {
                          options.proxy.max_held_body = static_cast<std::size_t>(given.number());
                        }));
}

// What the proxy writes, and what it must have to let a client in.
void add_log_rows(ServeRows& rows) {
  rows.push_back(value("log", "text|json", "the format of decision lines", "text",
                       [](const Given& given, ServeOptions& options) {
                         if (given.text() == "text") {
                           options.log_format = LogFormat::text;
                         } else if (given.text() == "json") {
                           options.log_format = LogFormat::json;
                         } else {
                           given.fail("is not \"text\" or \"json\"");
                         }
                       }));
  // The help is a literal (OptionText): the bound is spelled out, and held to the constant.
  static_assert(kMaxLabelChars == 128, "--label's help names the bound");
  rows.push_back(value("label", "TEXT",
                       "printable ASCII (0x20-0x7e), at most 128 characters, added to every log line as label=TEXT",
                       "none", [](const Given& given, ServeOptions& options) {
                         // Bounded, so that every log line stays short.
                         const std::string& text = printable_ascii(given.raw);
                         if (text.size() > kMaxLabelChars) {
                           given.fail(fmt::format("is longer than {} characters", kMaxLabelChars));
                         }
                         options.label = text;
                       }));
  rows.push_back(value("log-file", "PATH", "where decision lines go", "standard error",
                       [](const Given& given, ServeOptions& options) { options.log_file = given.path(); }));
  rows.push_back(value("audit", "PATH", "append every decision as a JSON line", "none",
                       [](const Given& given, ServeOptions& options) { options.audit_path = given.path(); }));
  rows.push_back(value("auth-token-file", "FILE",
                       "require a session token: the file's contents, one trailing newline dropped; read at start",
                       "none", [](const Given& given, ServeOptions& options) {
                         options.auth_token_file = given.path();
                         // check never needs the token, and must not fail for a file only serve's user may read.
                         if (given.reader == Reader::serve) {
                           options.proxy.auth_token = read_token(given.raw.label, *options.auth_token_file);
                         }
                       }));
}

// --control-fd, from 3 up; serve checks that it is the socket the supervisor handed over.
void store_control_fd(const Given& given, ServeOptions& options) {
  const auto fd = static_cast<int>(given.number());
  // Fail closed at start: the supervisor's channel must be the socket it handed over, or the
  // proxy would run unsupervised (and its EOF could never stop it).
  if (given.reader == Reader::serve) {
    int type = 0;
    socklen_t length = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == -1 || type != SOCK_STREAM) {
      given.fail("is not an open stream socket (one end of a socketpair)");
    }
  }
  if (options.ready_fd && *options.ready_fd == fd) given.fail("is --ready-fd too (which is closed once ready)");
  options.control_fd = fd;
}

// Request inspection's (SPEC §18, §19): the TLS of the inspector serve starts when an endpoint is
// named, and the secrets it injects; --help lists them among the supervisor's (a supervisor gives them).
void add_inspection_rows(ServeRows& rows) {
  rows.push_back(value("upstream-ca", "FILE",
                       "inspected endpoints' origins are verified against these PEM certificates instead of the "
                       "system's store; read at start",
                       "/etc/ssl/certs/ca-certificates.crt",
                       [](const Given& given, ServeOptions& options) { options.upstream_ca = given.path(); }));
  rows.push_back(value("ca-out", "PATH", "write the session CA's certificate (PEM, mode 0644) here before listening",
                       "none", [](const Given& given, ServeOptions& options) { options.ca_out = given.path(); }));
  rows.push_back(value("ca-cert", "FILE", "the operator's CA certificate (PEM) for inspected endpoints' leaves, with --ca-key",
                       "a CA made at start", [](const Given& given, ServeOptions& options) { options.ca_cert = given.path(); }));
  rows.push_back(value("ca-key", "FILE", "the private key (PEM, unencrypted) of --ca-cert", "none",
                       [](const Given& given, ServeOptions& options) { options.ca_key = given.path(); }));
  // Command line only (config_file.cc says why). check never injects: it opens no secret's file.
  rows.push_back(command_line_only(list(
      "secret", "NAME=FILE",
      "the secret NAME (a-z, 0-9, _) for inspected endpoints' \"inject\" is FILE's contents (one newline dropped); "
      "read at start, and on SIGHUP through the descriptor opened at start",
      "none", [](const Given& given, ServeOptions& options) {
        if (given.reader == Reader::check) return;
        for (const std::string& value : given.raw.values) {
          options.secrets.push_back(open_secret_file(given.raw.label, value, options.secrets));
        }
      })));
  // Command line only, as --secret. A stand-in is made per session at start, so check makes none.
  rows.push_back(command_line_only(list(
      "placeholder", "NAME",
      "make a stand-in for the secret NAME, bxp_NAME_<32 random hex digits>, and print it as "
      "{\"event\":\"placeholder\",...} on standard output before the listening line",
      "none", [](const Given& given, ServeOptions& options) {
        for (const std::string& name : given.raw.values) {
          if (auto error = check_secret_name(name)) fail_value(kCommand, given.raw.label, name, *error);
          if (std::find(options.placeholders.begin(), options.placeholders.end(), name) != options.placeholders.end()) {
            fail_value(kCommand, given.raw.label, name, "is given already (each once)");
          }
          if (options.placeholders.size() >= kMaxSecrets) {
            fail_value(kCommand, given.raw.label, name,
                       fmt::format("is one more than the {} a session holds", kMaxSecrets));
          }
          options.placeholders.push_back(name);
        }
      })));
}

// How the process lives beside its supervisor: readiness, its death, its channel, its asks.
void add_supervisor_rows(ServeRows& rows) {
  // 0 to 2 are the standard streams: writing READY there (and closing it) would put a
  // second line on standard output or lose the log, so the descriptor must be 3 or more.
  rows.push_back(number("ready-fd", "write READY=1 to descriptor N (open) once listening, then close it", "none",
                        defaults::kReadyFdMin, defaults::kReadyFdMax, [](const Given& given, ServeOptions& options) {
                          const auto fd = static_cast<int>(given.number());
                          // Fail closed at start: a supervisor waiting on a descriptor we never
                          // received would hang. (check never writes it: its own descriptors say
                          // nothing of serve's.)
                          if (given.reader == Reader::serve && ::fcntl(fd, F_GETFD) == -1) {
                            given.fail("is not an open file descriptor");
                          }
                          options.ready_fd = fd;
                        }));
  rows.push_back(flag("die-with-parent", "exit as on SIGTERM when the starting process dies", "off",
                      [](const Given& given, ServeOptions& options) { options.die_with_parent = given.raw.flag; }));
  add_inspection_rows(rows);
  rows.push_back(flag("log-paths", "request lines carry the request's path (never its query)", "off",
                      [](const Given& given, ServeOptions& options) { options.proxy.log_paths = given.raw.flag; }));
  rows.push_back(flag("no-sni-check",
                      "with a host list, do not close a tunnel whose TLS ClientHello or first HTTP request's Host "
                      "names another host",
                      "checked",
                      [](const Given& given, ServeOptions& options) { options.proxy.sni_check = !given.raw.flag; }));
  // The supervisor's channel (SPEC §15): from 3 up, as --ready-fd.
  rows.push_back(number("control-fd",
                        "a connected stream socket (a socketpair end) for the supervisor's JSON-line channel; "
                        "its EOF is a SIGTERM",
                        "none", defaults::kReadyFdMin, defaults::kReadyFdMax, &store_control_fd));
  rows.push_back(value("control-socket", "PATH",
                       "a second Unix socket, mode 0600, for the supervisor's channel (never for a box)", "none",
                       [](const Given& given, ServeOptions& options) {
                         options.control_socket = given.path();
                         if (*options.control_socket == options.socket_path) {
                           given.fail("is --socket too (the box must never reach the control channel)");
                         }
                       }));
  rows.push_back(flag("ask",
                      "ask the supervisor about a name off the host list (needs --control-fd or --control-socket)",
                      "off", [](const Given& given, ServeOptions& options) { options.ask = given.raw.flag; }));
  rows.push_back(seconds("ask-timeout", "seconds a client waits for the supervisor's answer",
                         defaults::kAskTimeoutSeconds, false,
                         [](const Given& given, ServeOptions& options) { options.ask_timeout = given.seconds(); }));
}

// Every row, in the order --help lists them and read_options reads them. One row at a time: a
// braced list would hold every row on the stack at once, and a stack page touched at start stays
// resident in every session, of which a host runs thousands.
ServeRows make_serve_rows() {
  ServeRows rows;
  // Room for every row (39, and one to come): a vector that grows copies itself and leaves the
  // old copy on the heap of every session. A new row raises kServeRowsReserved with it.
  rows.specs.reserve(kServeRowsReserved);
  rows.stores.reserve(kServeRowsReserved);
  add_policy_rows(rows);
  add_limit_rows(rows);
  add_log_rows(rows);
  add_supervisor_rows(rows);
  // Command line only: a config file must never turn confinement off unseen (SPEC §17).
  rows.push_back(command_line_only(flag(
      "no-confine", "do not confine the process after setup (no seccomp filter, no Landlock): for debugging only",
      "confined", [](const Given& given, ServeOptions& options) { options.confine = !given.raw.flag; })));
  // A config naming another config would make precedence a puzzle: command line only.
  rows.push_back(command_line_only(
      value("config", "FILE",
            "a JSON object of these options' long names without \"--\" (\"max-tunnels\": 64, \"allow\": [\"a.com\"], "
            "\"die-with-parent\": true); command-line options win, a list given on the command line replaces the "
            "config's; an unknown or repeated key is an error",
            "none", nullptr)));
  // A question for the command line, never a setting.
  rows.push_back(command_line_only(
      flag("check-config",
           "read and check everything serve would read (the options, --config, --allow-file, --auth-token-file), "
           "print what is in force as one JSON object (a --config file that reads back to the same), and exit 0, or 2 "
           "on a usage error; nothing is bound or created",
           "off", nullptr)));
  return rows;
}

// serve's option table and each row's store, by the row's index in it.
struct ServeTable {
  OptionTable table;
  std::vector<Store> stores;
};

// serve itself makes the table where it reads options and frees it after (at start, and again on
// SIGHUP): made before the event base, its 5 KiB are then reused by what the session keeps,
// where a table kept for the session's life stayed on the heap of every session. run and check,
// which read serve's table beside their own, keep one (serve_table()).
ServeTable make_serve_table() {
  ServeRows rows = make_serve_rows();
  return ServeTable{OptionTable(std::string(kCommand), std::move(rows.specs)), std::move(rows.stores)};
}

const ServeTable& serve_table() {
  static const ServeTable serve_table = make_serve_table();
  return serve_table;
}

// Reads serve's options: the config under `command_line`, every value through its row, then the
// checks across options.
ServeOptions read_options(const ServeTable& rows, const RawOptions& command_line, Reader reader) {
  ServeOptions options;
  RawOptions config;
  if (const RawValue* config_arg = get(command_line, "config")) {
    options.config_path = check_path(*config_arg);
    config = read_config_file(*options.config_path, rows.table);
  }
  // Taken out before the merge: the two sources' endpoints add up.
  std::optional<RawValue> config_inspect;
  if (auto it = config.find("inspect"); it != config.end()) {
    config_inspect = std::move(it->second);
    config.erase(it);
  }
  options.allow_on_command_line = get(command_line, "allow") != nullptr;
  options.allow_file_on_command_line = get(command_line, "allow-file") != nullptr;
  if (const RawValue* allow = get(command_line, "allow")) options.allow_items = allow->values;

  const RawOptions raw = merge(command_line, std::move(config));

  if (const RawValue* value = get(command_line, "check-config")) options.check_config = value->flag;
  if (get(raw, "socket") == nullptr && reader == Reader::serve && !options.check_config) {
    fail_plain("--socket PATH is required (see boxproxy serve --help)");
  }
  for (std::size_t i = 0; i < rows.stores.size(); ++i) {
    const OptionSpec& spec = rows.table.options()[i];
    const RawValue* value = get(raw, spec.name);
    if (value != nullptr && rows.stores[i] != nullptr) rows.stores[i](Given{spec, *value, reader}, options);
  }
  read_inspect(config_inspect ? &*config_inspect : nullptr, get(command_line, "inspect"), options.proxy.policy.inspect);
  // A secret with nowhere to go: nothing would inject it, and the operator would believe it is.
  if (!options.secrets.empty() && options.proxy.policy.inspect.empty()) {
    fail_plain("--secret needs an inspected endpoint (--inspect, or --config's \"inspect\") to inject it");
  }
  if (!options.placeholders.empty() && options.proxy.policy.inspect.empty()) {
    fail_plain("--placeholder needs an inspected endpoint (--inspect, or --config's \"inspect\") to swap it");
  }
  if (options.ca_cert.has_value() != options.ca_key.has_value()) {
    fail_plain(options.ca_cert ? "--ca-cert needs --ca-key (the CA's private key)" : "--ca-key needs --ca-cert");
  }
  // Nobody could answer: every name off the list would wait for nothing.
  if (options.ask && !options.control_fd && !options.control_socket) {
    fail_plain("--ask needs --control-fd or --control-socket (someone to ask)");
  }
  // SPEC §20, likewise: every request such an endpoint allows would be refused, asked=none. (check
  // reads the same options and asks nobody: it says which requests would be asked.)
  if (reader == Reader::serve && !options.control_fd && !options.control_socket) {
    for (const InspectEndpoint& endpoint : options.proxy.policy.inspect.endpoints()) {
      if (asks_about_requests(endpoint)) {
        fail_plain(fmt::format("the inspected endpoint {} has \"ask\": true, which needs --control-fd or "
                               "--control-socket (someone to ask)",
                               entry_text(endpoint.host)));
      }
    }
  }
  return options;
}

}  // namespace

const OptionTable& serve_option_table() { return serve_table().table; }

ServeOptions parse_serve_options(int argc, char** argv) {
  // Accept argv either starting at the first option or at the word "serve" itself.
  if (argc > 0 && argv[0] != nullptr && std::string_view(argv[0]) == kCommand) {
    --argc;
    ++argv;
  }
  const ServeTable rows = make_serve_table();
  return read_options(rows, parse_arguments(rows.table, argc, argv, Operands::none).options, Reader::serve);
}

ServeOptions read_options_for_check(const RawOptions& command_line) {
  return read_options(serve_table(), command_line, Reader::check);
}

std::optional<HostList> reload_host_list(const ServeOptions& options) {
  RawOptions config;
  if (options.config_path) config = read_config_file(*options.config_path, make_serve_table().table);

  // Same precedence as at start: a source given on the command line replaces the config's.
  std::optional<RawValue> allow;
  if (options.allow_on_command_line) {
    allow = RawValue{"--allow", options.allow_items, false, std::nullopt, {}};
  } else if (const RawValue* from_config = get(config, "allow")) {
    allow = *from_config;
  }
  std::optional<RawValue> allow_file;
  if (options.allow_file_on_command_line && options.allow_file) {
    allow_file = RawValue{"--allow-file", {*options.allow_file}, false, std::nullopt, {}};
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
Signals: SIGTERM/SIGINT stop, SIGHUP re-reads the host list and the --secret files,
SIGUSR1 logs stats.
)",
                     serve_option_table().options_help());
}

}  // namespace boxproxy
