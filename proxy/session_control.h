// SPDX-License-Identifier: Apache-2.0
// What the supervisor's channel (SPEC §15) may do to a running session, and nothing more: read
// and replace the host list and the inspected endpoints, read the stats, reach the asks, start a
// drain. The control code
// (control_hub, control_ops) sees the session only through this port, never the whole server, so
// neither side includes the other and control_ops can be tested and fuzzed against a fake.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "table/host_list.h"
#include "table/inspect_table.h"
#include "table/secret_value.h"

namespace boxproxy {

class AskRegistry;

// Why a session refuses a secret when it has no inspector.
inline constexpr std::string_view kNoInspectorForSecrets =
    "no request inspector runs in this session (serve starts one only when an endpoint is inspected at "
    "start), so no secret can be injected";

// The session's counters at one moment: the §12 stats object's fields, in its order.
struct SessionStats {
  std::uint64_t open = 0;     // upstream connections open now
  std::uint64_t used = 0;     // upstream connections used in all
  std::uint64_t lookups = 0;  // names looked up in DNS in all
  std::uint64_t clients = 0;  // client connections open now
  std::map<std::string, std::uint64_t, std::less<>> refused;  // by log class, in order
  std::uint64_t reported = 0;  // report mode's would-be denials, let through
  std::uint64_t up = 0;       // bytes client to origin
  std::uint64_t down = 0;     // bytes origin to client
};

class SessionControl {
 public:
  virtual ~SessionControl() = default;

  // The host list in force (nullopt: none, everything public is reachable).
  [[nodiscard]] virtual const std::optional<HostList>& host_list() const = 0;
  // Replaces it: tunnels already open are untouched, every later decision reads the new one.
  virtual void replace_host_list(std::optional<HostList> list) = 0;
  // The endpoints inspected now (SPEC §18).
  [[nodiscard]] virtual const InspectTable& inspect_table() const = 0;
  // Replaces them, for serve's decisions and its inspector at once: every later connection is
  // judged by the new table, and a connection already inspected by its endpoint's new rules from
  // its next request (closed before it when its endpoint is gone). Tunnels already open stay as
  // they are. nullopt when done; else why not, with nothing changed.
  [[nodiscard]] virtual std::optional<std::string> replace_inspect_table(InspectTable table) = 0;
  [[nodiscard]] virtual SessionStats stats() const = 0;
  // The asks, or null when serve runs without --ask.
  [[nodiscard]] virtual AskRegistry* asks() = 0;
  // Stops accepting clients, lets the open ones end, then exits. Returns at once: the drain ends
  // from the event loop, so a reply queued after this still goes out.
  virtual void drain() = 0;
  // Request inspection's CA certificate (PEM), for hello's "ca" (SPEC §18); empty without one.
  [[nodiscard]] virtual std::string_view inspection_ca() const { return {}; }
  // SPEC §19: sets NAME (checked) to `value` (checked), or revokes it (null), for every
  // connection's next request. nullopt when done; else why not (no inspector runs in this session,
  // it has stopped, too many secrets), with nothing changed. The words never hold the value.
  [[nodiscard]] virtual std::optional<std::string> set_secret(std::string_view /*name*/, const SecretText* /*value*/) {
    return std::string(kNoInspectorForSecrets);
  }

 protected:
  SessionControl() = default;
  SessionControl(const SessionControl&) = default;
  SessionControl& operator=(const SessionControl&) = default;
};

}  // namespace boxproxy
