// SPDX-License-Identifier: Apache-2.0
#include "socketd/run_options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "proxy/defaults.h"
#include "socketd/box_hidden_files.h"
#include "socketd/config_file.h"
#include "socketd/option_table.h"
#include "socketd/serve_options.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "run";

// run's own options, then serve's (not listed in run's help: serve --help lists them). run
// knows from serve's rows which of serve's options take a value, so a value that reads "--" or
// "--socket" stays with its option and is never taken for run's.
const OptionTable& run_table() {
  static const OptionTable table = [] {
    std::vector<OptionSpec> rows = {
        OptionSpec{.name = "socket", .kind = OptionKind::value, .value_name = "PATH",
                   .help = "use the running proxy at PATH instead of starting one"},
        OptionSpec{.name = "auth-token-file", .kind = OptionKind::value, .value_name = "FILE",
                   .help = "with --socket: the token that proxy wants, for the variables (without --socket it "
                           "is a serve option, read by both)"},
        OptionSpec{.name = "ca", .kind = OptionKind::value, .value_name = "FILE",
                   .help = "with --socket: the running proxy's session CA (PEM: its --ca-out file, or the \"ca\" of "
                           "the control channel's hello reply), which the box then trusts as a box of run's own "
                           "inspecting proxy does (the bundle, the variables, Java's store)"},
        OptionSpec{.name = "clearenv", .kind = OptionKind::flag,
                   .help = "give COMMAND none of the caller's environment: only --setenv's variables and run's own "
                           "(by default the box gets the caller's whole environment)"},
        OptionSpec{.name = "setenv", .kind = OptionKind::list, .value_name = "NAME=VALUE",
                   .help = "give COMMAND the variable NAME=VALUE (repeatable; run's own variables are set over it, "
                           "and JAVA_TOOL_OPTIONS is added to)"},
        OptionSpec{.name = "transparent", .kind = OptionKind::flag,
                   .help = "also capture every TCP connection COMMAND opens to any address but the box's loopback "
                           "(nftables in the box), for programs that ignore the proxy variables"},
        OptionSpec{.name = "allow-unix-sockets", .kind = OptionKind::flag,
                   .help = "let COMMAND make Unix sockets: by default socket(AF_UNIX, ...) and datagram "
                           "socketpairs fail with EPERM in the box, so that the host's pathname sockets (another "
                           "session's proxy, an ssh agent, journald) are out of reach"},
        OptionSpec{.name = "secret-env", .kind = OptionKind::list, .value_name = "VAR=NAME",
                   .help = "give COMMAND VAR=bxp_NAME_<32 hex digits>, the stand-in of the secret NAME (new each "
                           "session), which the proxy swaps for the value in requests to an endpoint whose "
                           "\"secrets\" lists NAME, and refuses anywhere else (serve's --placeholder)"},
        OptionSpec{.name = "allow-nested-namespaces", .kind = OptionKind::flag,
                   .help = "let COMMAND make namespaces of its own (unshare, clone, setns) and mounts (mount, "
                           "umount2, pivot_root, the fsopen family; for a box that runs containers): by default they "
                           "fail with EPERM in the box, since a network namespace or a mount of its own gives it the "
                           "kernel's network configuration or file systems to attack"},
    };
    for (const OptionSpec& spec : serve_option_table().options()) {
      const bool own = std::any_of(rows.begin(), rows.end(), [&](const OptionSpec& row) { return row.name.view() == spec.name.view(); });
      if (own) continue;
      OptionSpec serve_row = spec;
      serve_row.in_help = false;
      rows.push_back(std::move(serve_row));
    }
    return OptionTable(std::string(kCommand), std::move(rows));
  }();
  return table;
}

}  // namespace

std::string run_help_text() {
  return fmt::format(
      "usage: boxproxy run [SERVE OPTION]... [RUN OPTION]... -- COMMAND [ARG]...\n"
      "       boxproxy run --socket PATH [--auth-token-file FILE] [--ca FILE] [RUN OPTION]...\n"
      "                    -- COMMAND [ARG]...\n"
      "\n"
      "Runs COMMAND in a box whose only way out is boxproxy: its own user namespace (root inside,\n"
      "the caller outside, also when run is root), network namespace (only its own loopback), mount\n"
      "namespace and PID namespace (a /proc of its own processes), with no new privileges and no\n"
      "capability outside. run starts `boxproxy serve` with the SERVE OPTIONs on a socket in a fresh\n"
      "private directory (or, with --socket, uses a running proxy's socket), starts `boxproxy bridge`\n"
      "on 127.0.0.1:{1} (and [::1]:{1}) inside, and sets for COMMAND:\n"
      "  HTTP_PROXY, HTTPS_PROXY  http://127.0.0.1:{1} (http://box:TOKEN@... when the proxy wants\n"
      "                           a token)\n"
      "  ALL_PROXY                http://127.0.0.1:{1} too (a SOCKS5 client may use\n"
      "                           socks5h://127.0.0.1:{1}: the same port, the proxy sniffs)\n"
      "  NO_PROXY                 localhost,127.0.0.1,::1\n"
      "  (and their lower-case forms); for clients that read none of these:\n"
      "  JAVA_TOOL_OPTIONS        -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={1} and the same for\n"
      "                           https, after the caller's own value\n"
      "  NODE_USE_ENV_PROXY       1 (Node 24 and later then read the variables above)\n"
      "and BOXPROXY_SOCKET, the proxy's socket path, over the caller's whole environment (the box\n"
      "gets it unless --clearenv; run refuses to start when a variable holds a --secret's value).\n"
      "With an endpoint for inspection (--inspect, or --config's \"inspect\"), the box trusts the\n"
      "session's CA: a bundle of the system's CAs and it\n"
      "is bound read-only over /etc/ssl/certs/ca-certificates.crt in the box only, and SSL_CERT_FILE,\n"
      "REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO and PIP_CERT name it;\n"
      "with a JDK, JAVA_TOOL_OPTIONS also names a JKS trust store holding the same. With --socket,\n"
      "--ca FILE names the running proxy's CA for the same.\n"
      "NOTIFY_SOCKET, LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES are removed for the proxy and for\n"
      "COMMAND.\n"
      "The proxy's decision lines go to standard error unless --log-file says otherwise.\n"
      "\n"
      "Options of run itself (the SERVE OPTIONs are in boxproxy serve --help):\n"
      "{0}"
      "\n"
      "Exit status: COMMAND's, or 128+N when signal N ended it; 2 a usage error; 125 the box could\n"
      "not be set up (say, no user namespaces here: run never makes a weaker box); 126 COMMAND\n"
      "cannot be executed; 127 COMMAND was not found.\n"
      "SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 are passed on to COMMAND; SIGINT and SIGQUIT are left to\n"
      "the terminal, which sends them to COMMAND itself.\n",
      run_table().options_help(), defaults::kBridgePort);
}

namespace {

// serve's options as `boxproxy serve` arguments, each value as --name=VALUE so that nothing a
// value reads can change how serve splits them.
std::vector<std::string> serve_arguments(const RawOptions& serve_options) {
  std::vector<std::string> args;
  for (const auto& [name, raw] : serve_options) {
    if (raw.flag) {
      args.push_back("--" + name);
      continue;
    }
    for (const std::string& value : raw.values) args.push_back(fmt::format("--{}={}", name, value));
  }
  return args;
}

// A variable's name as a shell writes one: a letter or '_', then letters, digits, '_'.
bool is_variable_name(std::string_view name) {
  return !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_') &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

// --setenv NAME=VALUE, each NAME once (which value it holds would be a guess).
void read_setenv(const std::vector<std::string>& values, RunOptions& options) {
  for (const std::string& value : values) {
    const std::size_t equals = value.find('=');
    const std::string name = value.substr(0, equals);
    if (equals == std::string::npos || !is_variable_name(name)) {
      fail_value(kCommand, "--setenv", value, "is not NAME=VALUE (NAME a variable's name)");
    }
    for (const auto& [seen, unused] : options.setenv) {
      if (seen == name) fail_value(kCommand, "--setenv", value, "names a variable given already");
    }
    options.setenv.emplace_back(name, value.substr(equals + 1));
  }
}

// --secret-env VAR=NAME: VAR a variable name, NAME a secret's name; a VAR given twice is an error
// (which stand-in it holds would be a guess).
void read_secret_env(const std::vector<std::string>& values, RunOptions& options) {
  for (const std::string& value : values) {
    const std::size_t equals = value.find('=');
    const std::string variable = value.substr(0, equals);
    if (equals == std::string::npos || !is_variable_name(variable)) {
      fail_value(kCommand, "--secret-env", value, "is not VAR=NAME (VAR a variable's name)");
    }
    const std::string name = value.substr(equals + 1);
    if (auto error = check_secret_name(name)) fail_value(kCommand, "--secret-env", value, "NAME " + *error);
    for (const auto& [seen, unused] : options.secret_env) {
      if (seen == variable) fail_value(kCommand, "--secret-env", value, "names a variable given already");
    }
    options.secret_env.emplace_back(variable, name);
  }
}

// --ca FILE: a PEM certificate run can read (at most 64 KiB, as a CA is), checked before anything
// starts, so that a wrong path is a usage error naming it rather than a box that trusts nothing.
void check_ca_file(const std::string& path) {
  if (path.empty()) fail_value(kCommand, "--ca", path, "is not a path (it is empty)");
  // Read with read(2), not std::ifstream: one ifstream links libstdc++'s locale and iostreams,
  // whose vtables static-pie relocates at every start of every serve (20 KiB of each session).
  std::string error;
  const std::optional<std::string> text = read_file_capped(path, 64 * 1024, error);
  if (!text && error.starts_with("larger than")) {
    fail_value(kCommand, "--ca", path, "is not a CA certificate in PEM (the proxy's --ca-out file, or hello's \"ca\")");
  }
  if (!text) fail_value(kCommand, "--ca", path, fmt::format("cannot be read: {}", error));
  if (text->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    fail_value(kCommand, "--ca", path, "is not a CA certificate in PEM (the proxy's --ca-out file, or hello's \"ca\")");
  }
}

RunOptions parse_run_options(int argc, char** argv) {
  ParsedArguments parsed = parse_arguments(run_table(), argc, argv, Operands::after_dashes);
  if (!parsed.dashes) {
    throw usage_error(kCommand, "-- COMMAND is needed: boxproxy run [SERVE OPTION]... -- COMMAND [ARG]...");
  }
  if (parsed.operands.empty()) throw usage_error(kCommand, "a COMMAND is needed after --");
  RunOptions options;
  options.command = std::move(parsed.operands);
  RawOptions& given = parsed.options;
  if (const auto socket = given.find("socket"); socket != given.end()) {
    const std::string& path = socket->second.values.front();
    if (path.empty()) fail_value(kCommand, "--socket", path, "is not a path (it is empty)");
    options.socket_path = path;
    given.erase(socket);
  }
  if (const auto ca = given.find("ca"); ca != given.end()) {
    if (!options.socket_path) {
      fail_value(kCommand, "--ca", ca->second.values.front(),
                 "is for --socket: a proxy run starts gives the box its own CA (--ca-out says where)");
    }
    check_ca_file(ca->second.values.front());
    options.ca_file = ca->second.values.front();
    given.erase(ca);
  }
  if (given.erase("allow-unix-sockets") != 0) options.box_lifts.unix_sockets = true;
  if (given.erase("allow-nested-namespaces") != 0) options.box_lifts.nested_namespaces = true;
  if (given.erase("transparent") != 0) options.transparent = true;
  if (given.erase("clearenv") != 0) options.clearenv = true;
  if (const auto env = given.find("setenv"); env != given.end()) {
    read_setenv(env->second.values, options);
    given.erase(env);
  }
  if (const auto env = given.find("secret-env"); env != given.end()) {
    read_secret_env(env->second.values, options);
    given.erase(env);
  }
  if (options.socket_path) {
    // With --socket the only option besides run's own is --auth-token-file (run reads it to put
    // the token in the variables); every other serve option belongs to a proxy run starts.
    if (const auto token = given.find("auth-token-file"); token != given.end()) {
      options.auth_token_file = token->second.values.front();
      given.erase(token);
    }
    if (!given.empty()) {
      throw usage_error(kCommand, fmt::format("--{}: serve options are for a proxy run starts; with --socket the "
                                              "running proxy keeps its own",
                                              given.begin()->first));
    }
  }
  options.serve_args = serve_arguments(given);
  // Each NAME once to serve, which makes its stand-in and prints it before it listens.
  std::vector<std::string> names;
  for (const auto& [variable, name] : options.secret_env) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    names.push_back(name);
    options.serve_args.push_back("--placeholder=" + name);
  }
  if (!names.empty() && options.socket_path) {
    throw usage_error(kCommand, "--secret-env is for a proxy run starts (with --socket, the running proxy's "
                                "--placeholder lines say its stand-ins)");
  }
  return options;
}

// The box gets the caller's environment (unless --clearenv) and --setenv's variables: one that
// holds a --secret's value would hand COMMAND the very value the proxy keeps from it. Throws
// UsageError naming the variable and the secret, never the value.
void refuse_secrets_in_environment(const std::vector<SecretFile>& secrets, const RunOptions& options) {
  for (const SecretFile& secret : secrets) {
    const SecretOrError read = read_secret_file(secret);
    if (!read.value) continue;  // serve says why, naming the option
    const std::string_view value = read.value->view();
    for (char** entry = options.clearenv ? nullptr : environ; entry != nullptr && *entry != nullptr; ++entry) {
      const std::string_view variable(*entry);
      const std::size_t equals = variable.find('=');
      if (equals == std::string_view::npos || variable.find(value, equals + 1) == std::string_view::npos) continue;
      throw usage_error(kCommand, fmt::format("the variable {} holds the value of --secret {}, and the box gets the "
                                              "caller's environment: unset it, or give --clearenv",
                                              variable.substr(0, equals), secret.name));
    }
    for (const auto& [name, given] : options.setenv) {
      if (given.find(value) == std::string::npos) continue;
      throw usage_error(kCommand, fmt::format("--setenv {}: holds the value of --secret {}", name, secret.name));
    }
  }
}

// The serve options parsed here as serve will parse them. Throws UsageError as serve would, so a
// bad option is reported before anything starts.
ServeFacts facts_of_serve_args(const RunOptions& options, const std::string& socket) {
  const std::vector<std::string>& serve_args = options.serve_args;
  std::vector<std::string> args = {"--socket", socket};
  args.insert(args.end(), serve_args.begin(), serve_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  ServeOptions parsed = parse_serve_options(static_cast<int>(args.size()), argv.data());
  refuse_secrets_in_environment(parsed.secrets, options);
  std::vector<std::string> files;
  for (const std::optional<std::string>* file : {&parsed.log_file, &parsed.audit_path, &parsed.config_path,
                                                 &parsed.allow_file, &parsed.control_socket}) {
    if (*file) files.push_back(**file);
  }
  // The files the box must not read (SPEC §19a): the box shares the host's file system, and must
  // not read the value it is kept from, the operator's CA key (with it, the box could make
  // certificates every box of that CA trusts), or the token (masked, not made read-only as the
  // files above are). Each where it really is, whatever name it was given by.
  std::vector<std::string> hidden_files;
  const auto hide = [&hidden_files](std::string_view option, const std::string& path) {
    if (auto where = path_to_hide(option, path)) hidden_files.push_back(std::move(*where));
  };
  for (const SecretFile& secret : parsed.secrets) hide("--secret", secret.path);
  if (parsed.ca_key) hide("--ca-key", *parsed.ca_key);
  if (parsed.auth_token_file) hide("--auth-token-file", *parsed.auth_token_file);
  return {.token = std::move(parsed.proxy.auth_token), .ready_fd = parsed.ready_fd, .control_fd = parsed.control_fd,
          .files = std::move(files), .hidden_files = std::move(hidden_files),
          .inspect = !parsed.proxy.policy.inspect.empty(), .ca_out = parsed.ca_out};
}

// The token of `run --socket PATH --auth-token-file FILE`, read by serve's rules. Throws
// UsageError (the message is run's).
std::string token_of_file(const std::string& path) {
  try {
    return read_auth_token_file("--auth-token-file", path);
  } catch (const UsageError& error) {
    throw error.for_command(kCommand);
  }
}

}  // namespace

RunOptions read_run_options(int argc, char** argv) {
  RunOptions options = parse_run_options(argc, argv);
  if (options.auth_token_file) {
    options.serve_facts.token = token_of_file(*options.auth_token_file);
    if (auto where = path_to_hide("--auth-token-file", *options.auth_token_file)) {
      options.serve_facts.hidden_files.push_back(std::move(*where));
    }
  } else if (!options.socket_path) {
    // Parsing looks at no socket path: the real one is made only once the options are good.
    options.serve_facts = facts_of_serve_args(options, "egress.sock");
  }
  if (options.transparent && options.serve_facts.token) {
    // A captured connection carries no credentials, and the bridge holds no token to add.
    throw usage_error(kCommand, "--transparent cannot be used with a proxy that wants a token (--auth-token-file)");
  }
  return options;
}

}  // namespace boxproxy
