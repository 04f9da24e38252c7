// SPDX-License-Identifier: Apache-2.0
// The upstream side of a client connection: the dial (SPEC §5 step 6) and the socket it makes,
// with the tunnel slot (step 5) it holds until that socket closes. The decision's answers, all
// checked, are tried in order: a non-blocking connect to each until one is in flight; when it
// finishes, the connection is made or the next answer is tried.
//
// The upstream Endpoint lives here for the whole client connection (a keep-alive connection dials
// again for each request); its events call the owner's trampolines. The Dialer never deletes its
// owner and never blocks: the owner's timer bounds the whole dial (--connect-timeout).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proxy/held_count.h"
#include "proxy/relay.h"
#include "table/address.h"

namespace boxproxy {

// Where the upstream socket's events go: the owner's trampolines, with `arg` as their argument.
struct UpstreamEvents {
  event_base* base = nullptr;
  event_callback_fn on_read = nullptr;
  event_callback_fn on_write = nullptr;  // also fires once when a connect in flight finishes
  void* arg = nullptr;
};

class Dialer {
 public:
  enum class Result : std::uint8_t {
    pending,    // a connect is in flight: wait for the write event, then call connect_finished()
    connected,  // the upstream socket is connected; its write event is no longer added
    failed,     // every answer failed (address_text() names the last one tried); no socket is left
  };

  explicit Dialer(UpstreamEvents events) noexcept : events_(events) {}
  Dialer(const Dialer&) = delete;
  Dialer& operator=(const Dialer&) = delete;

  // Holds `slot` (SPEC §5 step 5) and dials the first of `answers` at `port`. `answers` must stay
  // valid until the dial has ended (the owner's Decision keeps them).
  [[nodiscard]] Result start(TunnelSlot slot, std::span<const IpAddress> answers, std::uint16_t port);
  // The write event fired while pending: connected, or the next answer (pending or failed).
  [[nodiscard]] Result connect_finished();
  // After connected: a new socket to the same checked address and port, its non-blocking connect
  // in flight, for a connection whose origin closed the first one (request inspection keeps the
  // client connection and needs another upstream); invalid when none can be made. No second slot
  // is taken and no budget spent: it is the same connection's upstream, made again.
  [[nodiscard]] UniqueFd connect_again() const;
  // Holds `slot` with `answers` at `port` as if answers[answer] had been dialled and connected, with
  // no socket: the connection takes over an origin connection the inspector kept (the slot moved
  // with it, proxy/origin_ledger.h), or will ask for one (connect_again) under a slot taken from a
  // kept one at the tunnel cap. `answers` as for start; `answer` < answers.size().
  void hold(TunnelSlot slot, std::span<const IpAddress> answers, std::uint16_t port, std::size_t answer);
  // The address dialled (connected), or null before any.
  [[nodiscard]] const IpAddress* address() const noexcept {
    return next_answer_ == 0 || next_answer_ > answers_.size() ? nullptr : &answers_[next_answer_ - 1];
  }
  // The slot, taken out (the inspector keeps the upstream connection it counts: proxy/origin_ledger.h).
  [[nodiscard]] TunnelSlot give_slot() noexcept { return std::move(slot_); }
  // Closes the upstream socket and gives the slot back (the response was read; the client left).
  void release() noexcept;
  // Forgets the address too: a keep-alive connection's next request starts afresh.
  void reset() noexcept;

  [[nodiscard]] Endpoint& upstream() noexcept { return upstream_; }
  // The address dialled (or tried last), as the log writes it; "-" before any.
  [[nodiscard]] const std::string& address_text() const noexcept { return address_text_; }

 private:
  [[nodiscard]] Result dial_next();
  [[nodiscard]] bool connect_to(const IpAddress& address);
  [[nodiscard]] UniqueFd start_connect(const IpAddress& address) const;

  UpstreamEvents events_;
  Endpoint upstream_;
  TunnelSlot slot_;
  std::span<const IpAddress> answers_;
  std::size_t next_answer_ = 0;
  std::uint16_t port_ = 0;
  std::string address_text_ = "-";
};

}  // namespace boxproxy
