// SPDX-License-Identifier: Apache-2.0
// `boxproxy run`'s command line: its own options, and serve's for the proxy it starts, read as
// serve reads them so that a bad one is reported before anything starts.
#pragma once

#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "socketd/confine_filter_program.h"

namespace boxproxy {

// What run must know of the proxy it starts, read as serve reads it (nothing with --socket but
// the token of --auth-token-file).
struct ServeFacts {
  std::optional<std::string> token;  // --auth-token-file, on the command line or in --config
  std::optional<int> ready_fd;       // --ready-fd: serve's, and nobody else's
  std::optional<int> control_fd;     // --control-fd: serve's and the supervisor's (SPEC §14, §15)
  // The proxy's own files, out of COMMAND's reach in the box (SPEC §14): --log-file, --audit,
  // --config, --allow-file, --control-socket, wherever they were given.
  std::vector<std::string> files;
  // The files the box must not read (SPEC §19a): --secret's, --ca-key, --auth-token-file, each
  // where it really is (box_hidden_files.h); unreadable in the box (files above may be read there).
  std::vector<std::string> hidden_files;
  // Request inspection (SPEC §18): an endpoint is named, so the box must trust the session's CA;
  // and where the operator's --ca-out puts it (else run gives serve a path of its own).
  bool inspect = false;
  std::optional<std::string> ca_out;
};

struct RunOptions {
  std::optional<std::string> socket_path;      // --socket: a running proxy's socket
  std::optional<std::string> auth_token_file;  // --auth-token-file with --socket
  std::optional<std::string> ca_file;          // --ca with --socket: the running proxy's session CA
  BoxLifts box_lifts;                          // --allow-unix-sockets, --allow-nested-namespaces
  bool transparent = false;                    // --transparent (SPEC §16)
  bool clearenv = false;                       // --clearenv: none of the caller's environment
  std::vector<std::pair<std::string, std::string>> setenv;  // --setenv NAME=VALUE, in order
  std::vector<std::string> serve_args;         // passed to `boxproxy serve` as given
  std::vector<std::string> command;
  // --secret-env VAR=NAME (SPEC §19): COMMAND's VAR holds NAME's placeholder, made by serve.
  std::vector<std::pair<std::string, std::string>> secret_env;
  ServeFacts serve_facts;                      // the proxy's, as serve will read them
};

// Reads run's arguments (argv after "run"). Throws UsageError (run's, or a serve option's told
// as run's) or HelpRequested.
[[nodiscard]] RunOptions read_run_options(int argc, char** argv);

// The text of `boxproxy run --help`.
[[nodiscard]] std::string run_help_text();

}  // namespace boxproxy
