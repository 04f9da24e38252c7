// SPDX-License-Identifier: Apache-2.0
// SPEC §20 "Ask per request", serve's side: the asks one inspected connection's requests wait on.
// The inspector holds a request an "ask" rule allows and says so ({"op":"ask"}); serve, which alone
// holds the control channel, answers it: `always` already said this session for the same endpoint,
// method and path, at once (no round trip to the supervisor); no control client open, `none` at
// once; else the supervisor is asked (AskRegistry, shared with every identical ask pending) and
// the answer, the timeout or the channel's close goes back to the inspector.
//
// One per inspected connection, owned by it: when it goes, its tickets leave their asks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/ask_registry.h"
#include "proxy/inspector_messages.h"

namespace boxproxy {

// The most asks one connection may have pending: an HTTP/2 box holds at most 32 streams open
// (proxy/inspect/h2_front.h), so this is never reached by a box; an inspector that names more is
// answered `none` for the rest rather than grow serve.
inline constexpr std::size_t kMaxAsksPerConnection = 64;

class RequestAsks {
 public:
  // Sends the answer to ask `n` back to the inspector.
  using Answer = std::function<void(std::uint64_t n, RequestAsked asked)>;

  // `registry`: null when serve has no control channel (every ask is `none`). `host` and `port`:
  // the connection's decided endpoint.
  RequestAsks(AskRegistry* registry, std::string host, std::uint16_t port, Answer answer)
      : registry_(registry), host_(std::move(host)), port_(port), answer_(std::move(answer)) {}
  RequestAsks(const RequestAsks&) = delete;
  RequestAsks& operator=(const RequestAsks&) = delete;

  // The inspector's ask; answered now or later (through `answer`), never twice.
  void ask(const InspectorAsk& ask);

 private:
  struct Held {
    RequestAsks* owner = nullptr;
    std::uint64_t n = 0;
    AskRegistry::Ticket ticket;
  };
  static void on_verdict(void* held, AskVerdict verdict) noexcept;

  AskRegistry* registry_;
  std::string host_;
  std::uint16_t port_;
  Answer answer_;
  std::vector<std::unique_ptr<Held>> held_;
};

}  // namespace boxproxy
