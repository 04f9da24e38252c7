// SPDX-License-Identifier: Apache-2.0
// The inspector process (boxproxy-inspect, proxy/inspect/DESIGN.md): serve's channel in, the
// session's CA, its leaves and the origin-side TLS context, and one InspectedConnection per
// connection serve hands over. What it learns goes back to serve as messages
// (proxy/inspector_messages.h); it writes no log of its own, opens no socket and resolves no name.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy/fd_channel.h"
#include "proxy/inspect/inspected_connection.h"
#include "proxy/inspect/leaf_cache.h"
#include "proxy/inspect/origin_pool.h"
#include "proxy/inspect/origin_sessions.h"
#include "proxy/inspect/scrub_source.h"
#include "proxy/inspect/secret_store.h"
#include "proxy/inspect/session_ca.h"
#include "proxy/inspect/tls_contexts.h"
#include "proxy/inspector_messages.h"
#include "proxy/loop_pass_closer.h"
#include "table/inspect_endpoint.h"

namespace boxproxy {

// What the start message and its descriptors set up, before the loop runs.
struct InspectorSetup {
  SessionCa ca;
  SslCtxPtr client_ctx;  // the box-facing side's
  SslCtxPtr origin_ctx;  // the origin-facing side's, with the trust store
  bool log_paths = false;
  std::vector<std::shared_ptr<const InspectEndpoint>> endpoints;
  // serve's --head-timeout, --idle-timeout and --max-head-bytes, for every connection.
  double head_timeout = defaults::kHeadTimeoutSeconds;
  double idle_timeout = defaults::kIdleTimeoutSeconds;
  std::size_t max_head_bytes = defaults::kMaxHeadBytes;
  std::size_t max_held_body = defaults::kMaxHeldBody;  // --max-held-body (SPEC §20)
};

// Reads the start message and its descriptors from `channel` (blocking, at start), and builds the
// CA (made, or the operator's), the trust store and the endpoints. Throws std::runtime_error
// naming what is wrong (serve reports it and does not start).
[[nodiscard]] InspectorSetup read_start(int channel);

// The endpoints of a start or endpoints message's JSON (the config's "inspect" array).
[[nodiscard]] std::vector<std::shared_ptr<const InspectEndpoint>> read_endpoints(const std::string& json_text);

class Inspector {
 public:
  // `channel`: serve's socketpair end (the start message already read from it).
  Inspector(event_base* base, UniqueFd channel, InspectorSetup setup);
  ~Inspector();
  Inspector(const Inspector&) = delete;
  Inspector& operator=(const Inspector&) = delete;

  // Tells serve the CA (the "ready" message). False when the channel cannot take it.
  [[nodiscard]] bool send_ready();
  // True once serve closed the channel (or it failed): the loop ends, and the process with it.
  [[nodiscard]] bool finished() const noexcept { return finished_; }

 private:
  struct Held;  // a connection and its hooks' context

  static void on_message(void* self, ChannelMessage message) noexcept;
  static void on_closed(void* self) noexcept;
  static void on_request(void* held, const InspectorRequest& record);
  static void on_need_upstream(void* held);
  static void on_ended(void* held, const InspectorEnded& record);
  static void on_ask(void* held, const InspectorAsk& ask);
  static void on_unpooled(void* self, std::uint64_t id) noexcept;

  void order(ChannelMessage message);
  void start_connection(const InspectorConnection& what, ChannelMessage& message);
  void endpoints_changed(const std::string& json_text);
  void secret_changed(const InspectorSecret& secret);
  void placeholder_made(const InspectorPlaceholder& placeholder);
  [[nodiscard]] std::shared_ptr<const InspectEndpoint> endpoint_for(const std::string& entry) const;
  void report(const InspectorReport& report);
  void report(const InspectorRequest& request);  // one a request: written as it is, not copied into a report
  void send(std::string_view message);
  void say_leaf_failure(const std::string& error);

  event_base* base_;
  InspectorSetup setup_;
  LeafCache leaves_;
  LoopPassCloser closer_;  // the connections' sockets, one loop pass late; declared before them: outlives them
  OriginSessions origin_sessions_;  // origins' TLS sessions to resume; declared before the connections
  // Idle origin connections kept across box connections (origin_pool.h); after the sessions and the
  // closer (its connections use both), before the connections (which put into it as they end).
  OriginPool pool_;
  SecretStore secrets_;  // SPEC §19: read by every request that injects, set and revoked by serve
  Placeholders placeholders_;  // SPEC §19: the session's stand-ins, made by serve at start
  ScrubSource scrub_source_{secrets_, placeholders_};  // SPEC §19a: what every response is scrubbed for
  FdChannel channel_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Held>> held_;
  bool finished_ = false;
  std::string last_leaf_error_;  // said on standard error once, until another error comes
};

}  // namespace boxproxy
