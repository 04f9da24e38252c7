// SPDX-License-Identifier: Apache-2.0
// A plain-HTTP request allowed (SPEC §8): its head, rewritten for the origin, goes upstream, and
// one exchange (proxy/http_exchange.h) moves the request body up and the response back. When the
// response is all read the upstream is given back at once; when it is all written to the client
// the done line follows, and a keep-alive client's next request is a new decision (next_request).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proxy/clock.h"
#include "proxy/wire/handshake.h"
#include "proxy/http_exchange.h"
#include "proxy/session.h"

namespace boxproxy {

class PlainHttpSession final : public Session {
 public:
  PlainHttpSession(Endpoint& client, Endpoint& upstream, const PlainRequest& request)
      : Session(client, upstream), exchange_(client, upstream, request) {}

  // Sends `upstream_head` (the request's head rewritten for the origin), then `early` (what the
  // client sent after its head: the body, and perhaps its next request).
  [[nodiscard]] SessionNext start(std::string_view upstream_head, std::string_view early);

  [[nodiscard]] SessionNext client_readable() override { return after(exchange_.client_readable()); }
  [[nodiscard]] SessionNext upstream_readable() override { return after(exchange_.upstream_readable()); }
  [[nodiscard]] SessionNext writable(Endpoint& end) override;
  [[nodiscard]] SessionNext upstream_released() override;
  [[nodiscard]] std::optional<std::string> next_request() override;
  [[nodiscard]] std::uint16_t response_status() const noexcept override { return exchange_.response_status(); }
  [[nodiscard]] Clock::time_point last_activity() const noexcept override {
    return exchange_.last_activity();
  }
  void end_by(TunnelEnd cause) noexcept override {
    if (!end_) end_ = cause;
  }
  [[nodiscard]] TunnelEnd end() const noexcept override;

 private:
  [[nodiscard]] SessionNext after(HttpExchange::Step step);
  [[nodiscard]] SessionNext response_delivered();

  HttpExchange exchange_;
  // Why the exchange ended, once something outside its own steps decided it (the response
  // delivered whole, the idle timer, shutdown, a refusal midway); otherwise end() reads it from
  // the sides.
  std::optional<TunnelEnd> end_;
};

}  // namespace boxproxy
