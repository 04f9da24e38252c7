// SPDX-License-Identifier: Apache-2.0
#include "proxy/acceptor.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace boxproxy {

bool is_resource_shortage(int error) noexcept {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

std::string accept_pause_words(int error) {
  return fmt::format("{}; pausing accepts for {} ms", std::strerror(error),
                     static_cast<int>(kAcceptBackoffSeconds * 1000));
}

Acceptor::Acceptor(event_base* base, void* owner, OnClient on_client, OnPause on_pause)
    : base_(base), owner_(owner), on_client_(on_client), on_pause_(on_pause), resume_timer_(base, &on_resume, this) {
  if (!resume_timer_.valid()) throw std::runtime_error("cannot create the accept timer");
}

// The listener closes its socket when freed, and every socket it accepts is close-on-exec: no
// client's descriptor can leak into a program started later.
constexpr unsigned kListenerFlags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;

void Acceptor::add(int listen_fd, std::string_view what) {
  ListenerPtr listener(evconnlistener_new(base_, &Acceptor::on_accept, this, kListenerFlags, -1, listen_fd));
  if (!listener) {
    ::close(listen_fd);
    throw std::runtime_error(what.empty() ? std::string("cannot listen") : "cannot listen on " + std::string(what));
  }
  evconnlistener_set_error_cb(listener.get(), &Acceptor::on_accept_error);
  listeners_.push_back(std::move(listener));
}

void Acceptor::stop() noexcept {
  listeners_.clear();
  resume_timer_.disarm();
}

void Acceptor::back_off(int error) noexcept {
  if (!is_resource_shortage(error) || listeners_.empty()) return;
  if (resume_timer_.armed()) return;  // paused already
  for (auto& listener : listeners_) evconnlistener_disable(listener.get());
  resume_timer_.arm(kAcceptBackoffSeconds);
  on_pause_(owner_, error);
}

void Acceptor::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self) noexcept {
  auto* acceptor = static_cast<Acceptor*>(self);
  acceptor->on_client_(acceptor->owner_, fd);
}

void Acceptor::on_accept_error(evconnlistener*, void* self) noexcept {
  static_cast<Acceptor*>(self)->back_off(EVUTIL_SOCKET_ERROR());
}

void Acceptor::on_resume(void* self) noexcept {
  for (auto& listener : static_cast<Acceptor*>(self)->listeners_) evconnlistener_enable(listener.get());
}

}  // namespace boxproxy
