// SPDX-License-Identifier: Apache-2.0
// `boxproxy serve`'s options (SPEC §2): their values once read from the command line and --config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/defaults.h"
#include "proxy/proxy_server.h"
#include "socketd/option_table.h"
#include "socketd/secret_files.h"
#include "socketd/usage_error.h"
#include "table/policy.h"

namespace boxproxy {

enum class LogFormat { text, json };

struct ServeOptions {
  std::string socket_path;                  // --socket, required
  // The proxy's own settings: its Policy (--allow, --allow-file, --permit, --deny, --resolve),
  // --allow-hint, the limits and time-outs, the token read from --auth-token-file, and
  // --no-sni-check. Their defaults are ProxyConfig's (proxy/defaults.h).
  ProxyConfig proxy;
  std::vector<std::string> allow_items;     // --allow values from the command line, as given
  // How many of the host list's first entries --allow gave (the command line's, else the
  // config's; the --allow-file's follow them); nullopt when --allow was not given.
  std::optional<std::size_t> allow_option_entries;
  std::optional<std::string> allow_file;    // --allow-file, re-read on SIGHUP
  std::vector<std::string> nameservers;     // --nameserver ADDR[:PORT]
  std::uint64_t max_lookups = defaults::kMaxLookups;  // --max-lookups
  LogFormat log_format = LogFormat::text;   // --log
  std::string label;                        // --label, printable ASCII, at most kMaxLabelChars
  std::optional<std::string> log_file;      // --log-file
  std::optional<std::string> audit_path;    // --audit
  std::optional<std::string> auth_token_file;  // --auth-token-file (the token is in `proxy`)
  std::optional<int> ready_fd;              // --ready-fd
  bool die_with_parent = false;             // --die-with-parent
  bool confine = true;                      // off with --no-confine (SPEC §17)
  // Request inspection (SPEC §18): the origins' trust store, where the CA goes, the operator's CA.
  std::optional<std::string> upstream_ca;
  std::optional<std::string> ca_out;
  std::optional<std::string> ca_cert;
  std::optional<std::string> ca_key;
  // Credentials (SPEC §19): --secret NAME=FILE, each file open (re-read on SIGHUP by descriptor).
  std::vector<SecretFile> secrets;
  std::vector<std::string> placeholders;  // --placeholder NAME: a stand-in made for each at start
  std::optional<int> control_fd;            // --control-fd: the supervisor's channel (SPEC §15)
  std::optional<std::string> control_socket;  // --control-socket PATH
  bool ask = false;                         // --ask: names off the list are asked about
  double ask_timeout = defaults::kAskTimeoutSeconds;  // --ask-timeout
  bool check_config = false;                // --check-config: print what is in force, bind nothing
  std::optional<std::string> config_path;   // --config
  // Where the host list's sources came from, so SIGHUP rebuilds it by the same precedence:
  // a list option given on the command line replaces the config's.
  bool allow_on_command_line = false;       // --allow was given on the command line
  bool allow_file_on_command_line = false;  // --allow-file was given on the command line
};

// serve's options, one row each: kind, help, range and default (proxy/defaults.h), taken from the
// rows that also check and store each value (serve_options.cc). The parser, the config file's
// keys and serve_help_text() are all made from it; `run` reads it to know which serve options
// take a value, and `check` takes its rows for kDecisionOptions.
[[nodiscard]] const OptionTable& serve_option_table();

// The serve options that shape a decision (SPEC §1): `check` takes these on its command line.
inline constexpr std::string_view kDecisionOptions[] = {"config",     "allow",       "allow-file", "permit", "deny",
                                                        "resolve",    "nameserver",  "dns-timeout", "inspect"};

// Parses `serve`'s arguments (argv after "serve"), reading --config, --allow-file and
// --auth-token-file. Throws UsageError (its message is complete, "boxproxy serve: --OPTION: ...",
// ready to print), or HelpRequested. Start-up only: exceptions never reach the event loop.
// Request inspection (SPEC §18) is not built yet: an inspected endpoint is a usage error here
// unless --check-config is given (`run`, which reads serve's options through this, refuses too),
// so that no connection the operator expects to be judged per request is ever let through
// opaque. check and --check-config read and show the endpoints.
[[nodiscard]] ServeOptions parse_serve_options(int argc, char** argv);

// `check`'s reading of serve's options: `command_line` (check's, already parsed against rows of
// serve's table) and its --config, merged and validated by exactly serve's code, so the Policy,
// nameservers and dns timeout are the ones serve would use. Every key of a config is read and
// checked as serve checks it, except what only a listening serve needs: --socket is not
// required, the --auth-token-file is not read and the --ready-fd descriptor is not looked at.
// Throws UsageError under serve's name (the caller re-labels it with for_command).
[[nodiscard]] ServeOptions read_options_for_check(const RawOptions& command_line);

// `serve --check-config`: every value in force as one JSON object (ASCII) that --config reads
// back to the same options: keyed like a config file, in the table's order, an option with no
// value (no path, an empty list) left out, and no "config" key. "allow" holds --allow's entries
// alone, canonical: the --allow-file's stay in their file, which SIGHUP re-reads. The token
// itself is never in it, only its file.
[[nodiscard]] std::string options_in_force(const ServeOptions& options);

// Builds the host list afresh for SIGHUP: --allow from the command line, "allow" and
// "allow-file" from --config (re-read now), and the --allow-file (re-read now). nullopt when no
// list was configured. Throws UsageError naming the file and the bad entry; the caller keeps the
// list it had and logs why.
[[nodiscard]] std::optional<HostList> reload_host_list(const ServeOptions& options);

// Reads a session token file by --auth-token-file's rules (one trailing line end dropped; empty,
// or a control character inside, refused; the token never quoted). `label` names the option in
// the UsageError. For `run --socket PATH --auth-token-file FILE`, which reads it as serve does.
[[nodiscard]] std::string read_auth_token_file(const std::string& label, const std::string& path);

// The text of `boxproxy serve --help`: every option with its default.
[[nodiscard]] std::string serve_help_text();

}  // namespace boxproxy
