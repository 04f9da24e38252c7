#include "proxy/bridge.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace boxproxy {
namespace {

// A client we cannot serve is reset rather than closed cleanly, so it sees a failure (curl:
// "Connection reset by peer") and never an empty answer it could take for a complete one.
void close_with_reset(int fd) noexcept {
  const linger hard{1, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BridgeConnection

BridgeConnection* BridgeConnection::open(BridgeServer& server, int client_fd) {
  auto* connection = new BridgeConnection(server, client_fd);
  event_base* base = server.base();
  connection->client_.read_event = make_event(base, client_fd, EV_READ | EV_PERSIST, &on_client_read, connection);
  connection->client_.write_event = make_event(base, client_fd, EV_WRITE | EV_PERSIST, &on_client_write, connection);
  connection->retry_timer_ = make_event(base, -1, 0, &on_retry, connection);
  if (!connection->client_.read_event || !connection->client_.write_event || !connection->retry_timer_ ||
      connection->try_connect() == Next::close) {
    delete connection;
    return nullptr;
  }
  return connection;
}

BridgeConnection::BridgeConnection(BridgeServer& server, int client_fd) : server_(server) {
  client_.fd.reset(client_fd);
  // Nothing is read from the client until the socket has taken us: its bytes (and its FIN) wait
  // in the kernel, so there is nothing to hold and nothing to pass on early.
  client_.pause = pause_no_more_wanted;
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
  retry_timer_.reset();
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
  finish(c, after(c->tunnel_.readable(c->upstream_)));
}

void BridgeConnection::on_upstream_write(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, c->phase_ == Phase::connecting ? c->connect_finished() : after(c->tunnel_.writable(c->upstream_)));
}

void BridgeConnection::on_retry(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<BridgeConnection*>(self);
  finish(c, c->try_connect());
}

BridgeConnection::Next BridgeConnection::try_connect() {
  upstream_.reset();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd == -1) return give_up(errno);
  upstream_.fd.reset(fd);
  event_base* base = server_.base();
  upstream_.read_event = make_event(base, fd, EV_READ | EV_PERSIST, &on_upstream_read, this);
  upstream_.write_event = make_event(base, fd, EV_WRITE | EV_PERSIST, &on_upstream_write, this);
  if (!upstream_.read_event || !upstream_.write_event) return Next::close;
  upstream_.pause = pause_no_more_wanted;

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string& path = server_.socket_path();
  // The length was checked at start-up (bridge_command); a path that does not fit is no socket.
  if (path.size() >= sizeof address.sun_path) return give_up(ENAMETOOLONG);
  std::memcpy(address.sun_path, path.data(), path.size());
  int result = -1;
  do {
    result = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  } while (result == -1 && errno == EINTR);
  if (result == 0) return start_relaying();
  if (errno == EINPROGRESS) {
    event_add(upstream_.write_event.get(), nullptr);  // writable: the connect has finished
    return Next::keep;
  }
  if (errno == EAGAIN) {
    // The proxy's backlog is full: a Unix socket does not queue us, so try again shortly.
    if (waited_ >= kBridgeConnectSeconds) return give_up(ETIMEDOUT);
    waited_ += kBridgeRetrySeconds;
    upstream_.reset();
    const timeval tv = to_timeval(kBridgeRetrySeconds);
    event_add(retry_timer_.get(), &tv);
    return Next::keep;
  }
  return give_up(errno);
}

BridgeConnection::Next BridgeConnection::connect_finished() {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(upstream_.fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) == -1) error = errno;
  if (error != 0) return give_up(error);
  return start_relaying();
}

BridgeConnection::Next BridgeConnection::start_relaying() {
  phase_ = Phase::relaying;
  event_del(upstream_.write_event.get());
  return after(tunnel_.start());
}

BridgeConnection::Next BridgeConnection::give_up(int error) {
  if (is_resource_shortage(error)) {
    server_.back_off(error);
  } else {
    server_.report_unreachable(error);
  }
  ++server_.stats().failed;
  close_with_reset(client_.fd.get());
  return Next::close;
}

// ---------------------------------------------------------------------------------------------
// BridgeServer

BridgeServer::BridgeServer(event_base* base, std::string socket_path)
    : base_(base),
      socket_path_(std::move(socket_path)),
      acceptor_(base, this, &BridgeServer::on_client, &BridgeServer::on_accept_paused) {}

BridgeServer::~BridgeServer() { stop(); }

void BridgeServer::add_listener(int listen_fd) { acceptor_.add(listen_fd); }

void BridgeServer::stop() noexcept {
  stopping_ = true;
  acceptor_.stop();
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
      fmt::format("boxproxy bridge: cannot reach {}: {}; client reset{}\n", socket_path_, std::strerror(error), more);
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
  BridgeConnection* connection = BridgeConnection::open(*server, fd);
  if (connection == nullptr) return;  // closed by its destructor
  server->connections_.add(connection);
}

void BridgeServer::back_off(int error) noexcept {
  if (!stopping_) acceptor_.back_off(error);
}

void BridgeServer::on_accept_paused(void*, int error) noexcept {
  const std::string line = fmt::format("boxproxy bridge: {}; pausing accepts for {} ms\n", std::strerror(error),
                                       static_cast<int>(kAcceptBackoffSeconds * 1000));
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace boxproxy
