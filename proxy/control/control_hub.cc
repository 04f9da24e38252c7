// SPDX-License-Identifier: Apache-2.0
#include "proxy/control/control_hub.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "proxy/ask_registry.h"
#include "proxy/control/control_ops.h"
#include "proxy/decision_log.h"

namespace boxproxy {

ControlHub::ControlHub(event_base* base, std::unique_ptr<SessionControl> session, DecisionLog& log,
                       ShutDown shut_down)
    : base_(base), session_(std::move(session)), log_(log), shut_down_(std::move(shut_down)) {
  if (AskRegistry* asks = session_->asks()) {
    asks->set_publisher([this](std::string_view line) { return publish_to_all(line); },
                        [this] { return channels_.size(); });
  }
}

ControlHub::~ControlHub() {
  log_.set_observer(nullptr);
  if (AskRegistry* asks = session_->asks()) asks->set_publisher(nullptr, nullptr);
  acceptor_.reset();
  channels_.clear();
}

void ControlHub::adopt(int fd) {
  if (add_channel(fd, ControlChannel::Origin::control_fd) == nullptr) {
    throw std::runtime_error("cannot watch --control-fd");
  }
}

void ControlHub::listen(int listen_fd) {
  acceptor_ = std::make_unique<Acceptor>(base_, this, &ControlHub::on_client, &ControlHub::on_accept_paused);
  acceptor_->add(listen_fd, "the control socket");
}

ControlChannel* ControlHub::add_channel(int fd, ControlChannel::Origin origin) {
  UniqueFd owned(fd);  // closed here unless a channel takes it
  try {
    auto channel = std::make_unique<ControlChannel>(*this, std::move(owned), origin);
    if (!channel->start()) return nullptr;  // the channel closes the descriptor
    ControlChannel* added = channel.get();
    channels_.push_back(std::move(channel));
    if (origin == ControlChannel::Origin::control_socket) ++socket_clients_;
    // A supervisor that connects while asks are pending is asked too: it may be the one that
    // answers (the first one may have gone).
    if (AskRegistry* asks = session_->asks()) {
      for (const std::string& line : asks->pending_events()) added->event(line);
    }
    return added;
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void ControlHub::flush_all() noexcept {
  for (auto& channel : channels_) channel->flush_now();
}

void ControlHub::publish_decision(std::string_view json_line) {
  if (json_line.empty() || json_line.front() != '{') return;
  std::string event;
  for (auto& channel : channels_) {
    if (!channel->subscribed()) continue;
    if (event.empty()) {
      // The same object with "event":"decision" first: the §12 keys as the log writes them.
      json_line.remove_prefix(1);
      event.reserve(json_line.size() + 20);
      event.append(R"({"event":"decision",)").append(json_line);
    }
    channel->event(event);
  }
}

std::size_t ControlHub::publish_to_all(std::string_view event_line) {
  for (auto& channel : channels_) channel->event(event_line);
  return channels_.size();
}

void ControlHub::handle_line(ControlChannel& channel, std::string_view line) {
  ControlContext context{*session_};
  std::string reply = control_reply(line, context);
  if (context.subscribe) channel.subscribe();
  channel.reply(reply);
  if (channel.subscribed()) watch_decisions();
}

void ControlHub::watch_decisions() {
  if (watching_decisions_) return;
  // Only while someone subscribes: the log then builds each line's JSON form for it, a cost a
  // session without a subscriber does not pay.
  log_.set_observer([this](std::string_view line) { publish_decision(line); });
  watching_decisions_ = true;
}

void ControlHub::stop_watching_decisions_if_unwanted() noexcept {
  if (!watching_decisions_) return;
  for (const auto& channel : channels_) {
    if (channel->subscribed()) return;
  }
  log_.set_observer(nullptr);
  watching_decisions_ = false;
}

void ControlHub::line_too_long(ControlChannel& channel) { channel.reply(line_too_long_reply()); }

void ControlHub::channel_ended(ControlChannel* channel) noexcept {
  const bool supervisor_gone = channel->origin() == ControlChannel::Origin::control_fd;
  if (!supervisor_gone) --socket_clients_;
  channels_.remove_if([channel](const std::unique_ptr<ControlChannel>& owned) { return owned.get() == channel; });
  stop_watching_decisions_if_unwanted();
  if (supervisor_gone && shut_down_) {
    // The supervisor's end of the pair is gone: it died or let go, and a proxy nobody supervises
    // must not go on (SPEC §15: as on SIGTERM; clients waiting on an ask close unanswered).
    try {
      shut_down_();
    } catch (...) {
    }
    return;
  }
  // Nobody is left to answer: every pending ask is refused now rather than at its timeout.
  if (channels_.empty()) {
    if (AskRegistry* asks = session_->asks()) asks->channels_closed();
  }
}

void ControlHub::on_client(void* self, int fd) noexcept {
  auto* hub = static_cast<ControlHub*>(self);
  if (hub->socket_clients_ >= kMaxControlClients) {
    // Told why in one write that cannot block (a new socket's buffer is empty), then closed.
    const std::string words = fmt::format(
        R"j({{"id":null,"ok":false,"error":"too many control clients (at most {} at once)"}})j" "\n", kMaxControlClients);
    (void)::send(fd, words.data(), words.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::close(fd);
    return;
  }
  (void)hub->add_channel(fd, ControlChannel::Origin::control_socket);  // closed by it on failure
}

void ControlHub::on_accept_paused(void*, int) noexcept {}

}  // namespace boxproxy
