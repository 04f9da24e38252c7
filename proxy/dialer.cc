// SPDX-License-Identifier: Apache-2.0
// The dial (proxy/dialer.h).
#include "proxy/dialer.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "proxy/local_addresses.h"

namespace boxproxy {

Dialer::Result Dialer::start(TunnelSlot slot, std::span<const IpAddress> answers, std::uint16_t port) {
  slot_ = std::move(slot);
  answers_ = answers;
  next_answer_ = 0;
  port_ = port;
  return dial_next();
}

void Dialer::hold(TunnelSlot slot, std::span<const IpAddress> answers, std::uint16_t port, std::size_t answer) {
  slot_ = std::move(slot);
  answers_ = answers;
  port_ = port;
  upstream_.reset();
  next_answer_ = answer + 1;
  address_text_ = answers_[answer].to_string();
}

Dialer::Result Dialer::dial_next() {
  while (next_answer_ < answers_.size()) {
    const IpAddress& address = answers_[next_answer_++];
    address_text_ = address.to_string();
    upstream_.reset();
    if (connect_to(address)) return Result::pending;
  }
  // Nothing left to try: the last socket closes now, so its write event cannot wake the owner
  // again (nor a later connect_finished() take the refused socket, its error read, for made).
  upstream_.reset();
  return Result::failed;
}

// A non-blocking connect to `address` in flight, with the socket's events made and its write event
// added (writable: the connect has finished). False when this address cannot be tried.
bool Dialer::connect_to(const IpAddress& address) {
  UniqueFd fd = start_connect(address);
  if (!fd.valid()) return false;
  upstream_.adopt(fd.release());
  if (!upstream_.watch(events_.base, events_.on_read, events_.on_write, events_.arg)) return false;
  upstream_.watch_writable();
  return true;
}

// A socket with a non-blocking connect to `address` at port_ in flight (or made), or none.
UniqueFd Dialer::start_connect(const IpAddress& address) const {
  UniqueFd fd(::socket(address.is_v4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  const int one = 1;
  (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A zone ("fe80::1%eth0") picks the interface; one that names none gives 0, and the kernel
  // refuses a link-local dial without it. Looked up over netlink, which the confinement allows
  // (interface_index says why not if_nametoindex).
  const std::uint32_t scope_id = address.zone.empty() ? 0 : interface_index(address.zone);
  const SocketAddress peer = address.to_sockaddr(port_, scope_id);
  if (::connect(fd.get(), peer.get(), peer.length) == -1 && errno != EINPROGRESS) fd.reset();
  return fd;
}

UniqueFd Dialer::connect_again() const {
  if (next_answer_ == 0 || next_answer_ > answers_.size()) return UniqueFd();
  return start_connect(answers_[next_answer_ - 1]);
}

Dialer::Result Dialer::connect_finished() {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(upstream_.fd(), SOL_SOCKET, SO_ERROR, &error, &length) == -1) error = errno;
  if (error != 0) return dial_next();
  upstream_.unwatch_writable();
  return Result::connected;
}

void Dialer::release() noexcept {
  upstream_.reset();
  slot_.release();
}

void Dialer::reset() noexcept {
  release();
  answers_ = {};
  address_text_.assign(1, '-');  // (not = "-": GCC 12 warns falsely there, bug 105329)
}

}  // namespace boxproxy
