// SPDX-License-Identifier: Apache-2.0
#include "proxy/bridge/bridge.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "proxy/transient_error.h"

namespace boxproxy {
namespace {

// A client we cannot serve is reset rather than closed cleanly, so it sees a failure (curl:
// "Connection reset by peer") and never an empty answer it could take for a complete one.
void close_with_reset(int fd) noexcept {
  const linger hard{1, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
}

// The getsockopt names of netfilter's original destination: SO_ORIGINAL_DST (linux/
// netfilter_ipv4.h) and IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/ip6_tables.h), both 80; the
// kernel headers themselves clash with glibc's, so the numbers are spelled here.
constexpr int kOriginalDestination = 80;

// Where a connection redirected by nftables was going; nullopt for one that was not redirected
// (a program in the box that connects to the transparent port itself: its destination is the
// bridge, which the proxy would refuse anyway, so it is reset at once).
std::optional<IpAddressAndPort> original_destination(int fd) {
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == -1) return std::nullopt;
  bool v4 = local.ss_family == AF_INET;
  if (local.ss_family == AF_INET6) {
    const auto& local6 = reinterpret_cast<const sockaddr_in6&>(local);
    v4 = IN6_IS_ADDR_V4MAPPED(&local6.sin6_addr);
  }
  sockaddr_storage original{};
  socklen_t size = v4 ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::getsockopt(fd, v4 ? SOL_IP : SOL_IPV6, kOriginalDestination, &original, &size) == -1) return std::nullopt;
  const auto destination = IpAddress::from_sockaddr(reinterpret_cast<const sockaddr&>(original));
  if (!destination) return std::nullopt;
  // The bridge's own listener, reached without a redirect, is no destination: conntrack's
  // original destination of such a connection is the listener's address itself.
  const auto own = IpAddress::from_sockaddr(reinterpret_cast<const sockaddr&>(local));
  if (own && own->port == destination->port && own->address == destination->address) {
    return std::nullopt;
  }
  return destination;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BridgeConnection

BridgeConnection* BridgeConnection::open(BridgeServer& server, int client_fd, std::string request) {
  auto* connection = new BridgeConnection(server, client_fd, std::move(request));
  event_base* base = server.base();
  const bool watched = connection->client_.watch(base, &on_client_read, &on_client_write, connection);
  if (!watched || !connection->retry_timer_.valid() ||
      connection->try_connect() == Next::close) {
    delete connection;
    return nullptr;
  }
  return connection;
}

BridgeConnection::BridgeConnection(BridgeServer& server, int client_fd, std::string request)
    : server_(server), retry_timer_(server.base(), &on_retry, this), request_(std::move(request)) {
  client_.adopt(client_fd);
  // Nothing is read from the client until the socket has taken us: its bytes (and its FIN) wait
  // in the kernel, so there is nothing to hold and nothing to pass on early.
  client_.pause(pause_no_more_wanted);
  const int one = 1;
  // The client already chose its segments; the relay must not delay them further.
  (void)::setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ++server_.stats().open;
  ++server_.stats().accepted;
}

BridgeConnection::~BridgeConnection() {
  --server_.stats().open;
  server_.forget(this);
  // Events are freed (and so deleted from the base) before the descriptors they watch close.
  retry_timer_.disarm();
  upstream_.reset();
  client_.reset();
}

void BridgeConnection::finish(BridgeConnection* connection, Next next) noexcept {
  if (next == Next::close) delete connection;
}

void BridgeConnection::on_client_read(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, after(c->tunnel_.readable(c->client_)));
}

void BridgeConnection::on_client_write(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, after(c->tunnel_.writable(c->client_)));
}

void BridgeConnection::on_upstream_read(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, c->phase_ == Phase::handshaking ? c->read_reply() : after(c->tunnel_.readable(c->upstream_)));
}

void BridgeConnection::on_upstream_write(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, c->phase_ == Phase::connecting ? c->connect_finished() : after(c->tunnel_.writable(c->upstream_)));
}

void BridgeConnection::on_retry(void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, c->try_connect());
}

BridgeConnection::Next BridgeConnection::try_connect() {
  upstream_.reset();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd == -1) return give_up(errno);
  if (!upstream_.open(server_.base(), fd, &on_upstream_read, &on_upstream_write, this)) return Next::close;
  upstream_.pause(pause_no_more_wanted);

  // The socket pinned at start, never its name (proxy/bridge/proxy_socket.h says what that stops).
  const int result = server_.proxy().connect(fd);
  if (result == 0) return connected();
  if (result == EINPROGRESS) {
    upstream_.watch_writable();  // writable: the connect has finished
    return Next::keep;
  }
  if (result == EAGAIN) {
    // The proxy's backlog is full: a Unix socket does not queue us, so try again shortly.
    if (waited_ >= kBridgeConnectSeconds) return give_up(ETIMEDOUT);
    waited_ += kBridgeRetrySeconds;
    upstream_.reset();
    retry_timer_.arm(kBridgeRetrySeconds);
    return Next::keep;
  }
  return give_up(result);
}

BridgeConnection::Next BridgeConnection::connect_finished() {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(upstream_.fd(), SOL_SOCKET, SO_ERROR, &error, &length) == -1) error = errno;
  if (error != 0) return give_up(error);
  return connected();
}

BridgeConnection::Next BridgeConnection::connected() {
  upstream_.unwatch_writable();
  if (request_.empty()) return start_relaying();
  // A captured connection: the handshake goes first, whole (the proxy takes it pipelined); the
  // client's bytes wait in the kernel until the proxy has said yes.
  phase_ = Phase::handshaking;
  if (!send_or_queue(upstream_, request_)) return give_up(EPIPE);
  std::string().swap(request_);
  resume_reading(upstream_, pause_no_more_wanted);
  return Next::keep;
}

BridgeConnection::Next BridgeConnection::read_reply() {
  // Exactly the answers' bytes (wanted() of them at most): what the origin sends after them
  // (an SSH or SMTP banner) stays in the socket for the relay.
  char buffer[2 + 4 + 1 + 255 + 2];
  const ssize_t n = ::recv(upstream_.fd(), buffer, std::min(sizeof buffer, reply_.wanted()), 0);
  if (n == -1 && transient_error(errno)) return Next::keep;
  const auto state = n <= 0 ? Socks5ReplyReader::State::malformed
                            : reply_.feed({buffer, static_cast<std::size_t>(n)});
  switch (state) {
    case Socks5ReplyReader::State::need_more: return Next::keep;
    case Socks5ReplyReader::State::granted:
      pause_reading(upstream_, pause_no_more_wanted);
      return start_relaying();
    case Socks5ReplyReader::State::refused:
    case Socks5ReplyReader::State::malformed: break;
  }
  // Refused by the proxy (its decision line says why) or the proxy went away: the box's program
  // sees a reset, the nearest a connection already accepted can come to "refused".
  ++server_.stats().refused;
  close_with_reset(client_.fd());
  return Next::close;
}

BridgeConnection::Next BridgeConnection::start_relaying() {
  phase_ = Phase::relaying;
  return after(tunnel_.start());
}

BridgeConnection::Next BridgeConnection::give_up(int error) {
  if (is_resource_shortage(error)) {
    server_.back_off(error);
  } else {
    server_.report_unreachable(error);
  }
  ++server_.stats().failed;
  close_with_reset(client_.fd());
  return Next::close;
}

// ---------------------------------------------------------------------------------------------
// BridgeServer

BridgeServer::BridgeServer(event_base* base, const ProxySocket& proxy)
    : base_(base),
      proxy_(proxy),
      acceptor_(base, this, &BridgeServer::on_client, &BridgeServer::on_accept_paused),
      transparent_acceptor_(base, this, &BridgeServer::on_captured_client, &BridgeServer::on_accept_paused) {}

BridgeServer::~BridgeServer() { stop(); }

void BridgeServer::add_listener(int listen_fd) { acceptor_.add(listen_fd); }

void BridgeServer::add_transparent_listener(int listen_fd) { transparent_acceptor_.add(listen_fd); }

void BridgeServer::stop() noexcept {
  stopping_ = true;
  acceptor_.stop();
  transparent_acceptor_.stop();
  connections_.delete_all();
}

void BridgeServer::forget(BridgeConnection* connection) noexcept {
  connections_.remove(connection);
}

void BridgeServer::report_unreachable(int error) noexcept {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  if (last_report_ != 0 && now == last_report_) {
    ++unreported_;
    return;
  }
  const std::string more = unreported_ > 0 ? fmt::format(" ({} more since the last line)", unreported_) : "";
  const std::string line =
      fmt::format("boxproxy bridge: cannot reach {}: {}; client reset{}\n", proxy_.path(), std::strerror(error), more);
  std::fwrite(line.data(), 1, line.size(), stderr);
  last_report_ = now;
  unreported_ = 0;
}

void BridgeServer::on_client(void* self, int fd) noexcept {
  auto* server = static_cast<BridgeServer*>(self);
  if (server->stopping_) {
    ::close(fd);
    return;
  }
  server->adopt(BridgeConnection::open(*server, fd));
}

void BridgeServer::on_captured_client(void* self, int fd) noexcept {
  auto* server = static_cast<BridgeServer*>(self);
  if (server->stopping_) {
    ::close(fd);
    return;
  }
  ++server->stats_.captured;
  const auto destination = original_destination(fd);
  if (!destination) {
    ++server->stats_.refused;
    close_with_reset(fd);
    ::close(fd);
    return;
  }
  server->adopt(BridgeConnection::open(*server, fd, server->request_for(*destination)));
}

std::string BridgeServer::request_for(const IpAddressAndPort& destination) const {
  if (name_lookup_) {
    // By the name the box was given for this address: the proxy judges the name (host list,
    // SNI check), and resolves it itself.
    const std::optional<std::string> name = name_lookup_(destination.address);
    if (name && !name->empty() && name->size() <= 255) return socks5_connect_request(*name, destination.port);
  }
  return socks5_connect_request(destination.address, destination.port);
}

void BridgeServer::adopt(BridgeConnection* connection) noexcept {
  if (connection == nullptr) return;  // already over: closed by its destructor
  connections_.add(connection);
}

void BridgeServer::back_off(int error) noexcept {
  if (stopping_) return;
  acceptor_.back_off(error);
  transparent_acceptor_.back_off(error);
}

void BridgeServer::on_accept_paused(void*, int error) noexcept {
  const std::string line = fmt::format("boxproxy bridge: {}\n", accept_pause_words(error));
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace boxproxy
