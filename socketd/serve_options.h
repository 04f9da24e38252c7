// `boxproxy serve`'s options (SPEC §2): their values once read from the command line and --config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "table/policy.h"

namespace boxproxy {

enum class LogFormat { text, json };

struct ServeOptions {
  std::string socket_path;                  // --socket, required
  Policy policy;                            // --allow, --allow-file, --permit, --deny, --resolve
  std::vector<std::string> allow_items;     // --allow values from the command line, as given
  std::optional<std::string> allow_file;    // --allow-file, re-read on SIGHUP
  std::string allow_hint;                   // --allow-hint, printable ASCII
  std::vector<std::string> nameservers;     // --nameserver ADDR[:PORT]
  std::uint32_t max_tunnels = 256;          // --max-tunnels
  std::uint64_t max_connections = 65536;    // --max-connections
  double head_timeout = 30;                 // --head-timeout, seconds
  double dns_timeout = 5;                   // --dns-timeout
  double connect_timeout = 20;              // --connect-timeout
  double idle_timeout = 0;                  // --idle-timeout, 0 is never
  std::size_t max_head_bytes = 32768;       // --max-head-bytes
  LogFormat log_format = LogFormat::text;   // --log
  std::optional<std::string> log_file;      // --log-file
  std::optional<std::string> audit_path;    // --audit
  std::optional<std::string> auth_token;    // the token read from --auth-token-file
  std::optional<std::string> auth_token_file;
  std::optional<int> ready_fd;              // --ready-fd
  bool die_with_parent = false;             // --die-with-parent
  std::optional<std::string> config_path;   // --config
  // Where the host list's sources came from, so SIGHUP rebuilds it by the same precedence:
  // a list option given on the command line replaces the config's.
  bool allow_on_command_line = false;       // --allow was given on the command line
  bool allow_file_on_command_line = false;  // --allow-file was given on the command line
};

// A usage error: the message names the option (or config key) and the value. Exit 2.
struct UsageError {
  std::string message;
};

// `--help` (or `-h`) was among the arguments: the caller prints serve_help_text() and exits 0.
struct HelpRequested {};

// Parses `serve`'s arguments (argv after "serve"), reading --config, --allow-file and
// --auth-token-file. Throws UsageError (its message is complete, "boxproxy serve: --OPTION: ...",
// ready to print), or HelpRequested. Start-up only: exceptions never reach the event loop.
[[nodiscard]] ServeOptions parse_serve_options(int argc, char** argv);

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
