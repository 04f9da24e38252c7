// SPDX-License-Identifier: Apache-2.0
// serve's request inspector (SPEC §18, proxy/inspect/DESIGN.md): the boxproxy-inspect process,
// started before serve confines itself, told the endpoints, the trust store and the CA, and
// waited for until it is ready. Only a session that names an endpoint starts one, so a session
// that inspects nothing never maps OpenSSL.
#pragma once

#include <sys/types.h>

#include <string>

#include "proxy/unique_fd.h"
#include "socketd/serve_options.h"

namespace boxproxy {

struct StartedInspector {
  UniqueFd channel;    // serve's end of the channel (non-blocking)
  std::string ca_pem;  // the session CA's certificate, for --ca-out and the control channel
  pid_t pid = -1;
};

// Starts boxproxy-inspect and waits (bounded) for its "ready". Throws StartupError naming what
// failed: the executable not found, a trust store or CA file that cannot be read, the inspector's
// own refusal (on standard error, which it shares with serve).
[[nodiscard]] StartedInspector start_inspector(const ServeOptions& options, const std::string& label,
                                               const std::string& endpoints_json);

// --ca-out: the certificate, mode 0644, written whole or not at all (a temporary file renamed).
// Throws StartupError.
void write_ca_out(const std::string& path, const std::string& pem);

}  // namespace boxproxy
