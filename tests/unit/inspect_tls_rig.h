// SPDX-License-Identifier: Apache-2.0
// What the inspected connection's tests drive it with: real TLS on both sides, over socketpairs,
// on one thread. A TLS client trusting the session's CA plays the box; a TLS origin with its own
// certificate (signed by a test CA the origin context trusts) records every request it gets and
// answers as the test says. Both are pumped by hand between passes of the engine's event loop,
// so every wait is a bounded loop (kMaxPasses passes of at most kPassMs each).
#pragma once

#include <dirent.h>
#include <doctest/doctest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/event_owners.h"
#include "proxy/http_exchange.h"
#include "proxy/inspect/inspected_connection.h"
#include "proxy/inspect/leaf_cache.h"
#include "proxy/inspect/session_ca.h"
#include "proxy/inspect/tls_contexts.h"
#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"

namespace inspect_rig {

using namespace boxproxy;

inline constexpr int kMaxPasses = 3000;
inline constexpr int kPassMs = 2;
inline constexpr const char* kHost = "api.test";

// Descriptors this process holds now (/proc/self/fd, less the one reading it).
inline int open_descriptors() {
  DIR* dir = opendir("/proc/self/fd");
  REQUIRE(dir != nullptr);
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count - 3;  // ".", ".." and the directory's own descriptor
}

// OpenSSL writes to its sockets with write(2), which raises SIGPIPE on a closed peer: the
// inspecting process ignores it (as serve does), and so do these tests.
inline const bool kSigpipeIgnored = ::signal(SIGPIPE, SIG_IGN) != SIG_ERR;

// Everything libevent logs at warning level or above, counted: a Rig checks that none came while
// it lived (libevent warns, for one, when it is asked to change the events of a closed socket).
inline int libevent_warnings = 0;
inline void count_libevent_log(int severity, const char* message) {
  if (severity >= EVENT_LOG_WARN) {
    ++libevent_warnings;
    MESSAGE("libevent: " << std::string(message));
  }
}
inline const bool kLibeventLogCounted = (event_set_log_callback(&count_libevent_log), true);

// What each test socket's send buffer is set to, so that what the sockets themselves hold on the
// way is known whatever the host's defaults (the kernel doubles it for its bookkeeping).
inline constexpr int kSocketBuffer = 64 * 1024;

// Runs `pass` (one pass of a test's loop and peers) until `done()` holds, at most kMaxPasses
// times; false if it never did in time.
template <typename Done, typename Pass>
bool pass_until(Done done, Pass pass) {
  for (int i = 0; i < kMaxPasses; ++i) {
    if (done()) return true;
    pass();
  }
  return done();
}

// A connected, non-blocking pair of stream sockets.
inline std::pair<UniqueFd, UniqueFd> socket_pair() {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
  for (const int fd : fds) {
    REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBuffer, sizeof kSocketBuffer) == 0);
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// One TLS endpoint of a test over a non-blocking socket: pump() does what can be done now
// (handshake, writes pending, reads available) and never blocks.
class TlsPeer {
 public:
  TlsPeer(UniqueFd fd, SslPtr ssl, bool server) : fd_(std::move(fd)), ssl_(std::move(ssl)) {
    REQUIRE(SSL_set_fd(ssl_.get(), fd_.get()) == 1);
    SSL_set_options(ssl_.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);  // a cut end reads as an end; clean() tells
    if (server) {
      SSL_set_accept_state(ssl_.get());
    } else {
      SSL_set_connect_state(ssl_.get());
    }
  }

  void pump() {
    if (!fd_.valid() || failed_) return;
    if (!handshake_done_) {
      const int r = SSL_do_handshake(ssl_.get());
      if (r == 1) {
        handshake_done_ = true;
      } else {
        const int error = SSL_get_error(ssl_.get(), r);
        if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) failed_ = true;
        ERR_clear_error();
        return;
      }
    }
    while (!pending_.empty()) {
      const int n = SSL_write(ssl_.get(), pending_.data(), static_cast<int>(std::min<std::size_t>(pending_.size(), 16384)));
      if (n <= 0) {
        const int error = SSL_get_error(ssl_.get(), n);
        if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) failed_ = true;
        ERR_clear_error();
        break;
      }
      pending_.erase(0, static_cast<std::size_t>(n));
      written_ += static_cast<std::size_t>(n);
    }
    if (!reading_) return;
    while (!eof_) {
      char buffer[16384];
      const int n = SSL_read(ssl_.get(), buffer, sizeof buffer);
      if (n > 0) {
        received_.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      const int error = SSL_get_error(ssl_.get(), n);
      if (error == SSL_ERROR_ZERO_RETURN) {
        eof_ = true;
      } else if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
        failed_ = true;
      }
      ERR_clear_error();
      break;
    }
    if (close_when_sent_ && pending_.empty()) close();
  }

  void send(std::string_view bytes) { pending_.append(bytes); }
  // Closes (close_notify first) once everything queued is written.
  void close_when_sent() { close_when_sent_ = true; }
  void close() {
    if (!fd_.valid()) return;
    if (handshake_done_ && !failed_) (void)SSL_shutdown(ssl_.get());
    ERR_clear_error();
    fd_.reset();
  }
  // Sends close_notify and keeps reading: a client that shut down its writing after its request.
  void shut_down_writing() {
    REQUIRE(handshake_done_);
    (void)SSL_shutdown(ssl_.get());
    ERR_clear_error();
  }
  // Stops (or resumes) reading, so the other side's writes back up.
  void set_reading(bool reading) { reading_ = reading; }

  [[nodiscard]] std::string& received() { return received_; }
  [[nodiscard]] bool handshake_done() const { return handshake_done_; }
  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] bool eof() const { return eof_; }
  // The peer ended with a close_notify (not just by closing its socket).
  [[nodiscard]] bool clean_end() const { return (SSL_get_shutdown(ssl_.get()) & SSL_RECEIVED_SHUTDOWN) != 0; }
  [[nodiscard]] bool open() const { return fd_.valid(); }
  [[nodiscard]] std::size_t unsent() const { return pending_.size(); }
  [[nodiscard]] std::size_t written() const { return written_; }
  [[nodiscard]] SSL* ssl() const { return ssl_.get(); }

 private:
  UniqueFd fd_;
  SslPtr ssl_;
  std::string pending_;
  std::string received_;
  std::size_t written_ = 0;
  bool handshake_done_ = false;
  bool failed_ = false;
  bool eof_ = false;
  bool reading_ = true;
  bool close_when_sent_ = false;
};

// A whole HTTP message at the front of `buffer` (a request when `method` is empty, else the
// response to a `method` request), taken off it; nothing when it is not all there yet. A body
// read to the close is whole once `closed`.
struct Message {
  std::string head;  // with its blank line
  std::string body;  // as framed on the wire (chunked stays chunked)
  unsigned status = 0;
};

inline std::optional<Message> take_message(std::string& buffer, std::string_view method, bool closed = false) {
  BodyFraming framing;
  std::size_t head_bytes = 0;
  Message message;
  if (method.empty()) {
    const auto parsed = parse_request_head(buffer, 1 << 20);
    if (parsed.status != ParseResult<RequestHead>::Status::complete) return std::nullopt;
    auto f = request_framing(*parsed.value);
    REQUIRE(std::holds_alternative<BodyFraming>(f));
    framing = std::get<BodyFraming>(f);
    head_bytes = parsed.consumed;
  } else {
    const auto parsed = parse_response_head(buffer, 1 << 20);
    if (parsed.status != ParseResult<ResponseHead>::Status::complete) return std::nullopt;
    message.status = parsed.value->status;
    auto f = response_framing(method, *parsed.value);
    REQUIRE(std::holds_alternative<BodyFraming>(f));
    framing = std::get<BodyFraming>(f);
    head_bytes = parsed.consumed;
    if (message.status < 200 && message.status != 101) framing = BodyFraming{};  // interim: no body
  }
  std::size_t body_bytes = 0;
  if (framing.kind == BodyFraming::Kind::until_close) {
    if (!closed) return std::nullopt;
    body_bytes = buffer.size() - head_bytes;
  } else if (framing.kind != BodyFraming::Kind::none) {
    BodyCursor cursor(framing);
    const auto take = cursor.feed(std::string_view(buffer).substr(head_bytes));
    REQUIRE_FALSE(take.malformed);
    if (!take.done) return std::nullopt;
    body_bytes = take.take;
  }
  message.head = buffer.substr(0, head_bytes);
  message.body = buffer.substr(head_bytes, body_bytes);
  buffer.erase(0, head_bytes + body_bytes);
  return message;
}

// The test's certificates: the session's CA (the box trusts it), an origin CA (the origin context
// trusts it) and a stranger CA (nobody trusts it), each with a leaf cache. Made once.
struct Certificates {
  SessionCa session = SessionCa::generate("engine-session", std::chrono::system_clock::now());
  LeafCache session_leaves{session};
  SessionCa origin = SessionCa::generate("engine-origin", std::chrono::system_clock::now());
  LeafCache origin_leaves{origin};
  SessionCa stranger = SessionCa::generate("engine-stranger", std::chrono::system_clock::now());
  LeafCache stranger_leaves{stranger};
};

inline Certificates& certificates() {
  static Certificates made;
  return made;
}

inline std::shared_ptr<const Leaf> leaf_of(LeafCache& cache, std::string_view host) {
  LeafOrError made = cache.leaf_for(host, std::chrono::system_clock::now());
  INFO(made.error);
  REQUIRE(made.leaf);
  return made.leaf;
}

inline X509StorePtr store_of(X509* ca) {
  X509StorePtr store(X509_STORE_new());
  REQUIRE(store);
  REQUIRE(X509_STORE_add_cert(store.get(), ca) == 1);
  return store;
}

// What the origin answers a request with.
struct Reply {
  std::string bytes;
  bool close = false;  // close the connection (close_notify) once it is written
  bool echo = false;   // after it, echo every byte back prefixed "echo:" (a WebSocket's 101)
};

// A TLS origin: every connection it is given, every request it gets, answered by `respond`.
class TestOrigin {
 public:
  explicit TestOrigin(LeafCache& leaves, std::string_view host = kHost) : context_(SSL_CTX_new(TLS_server_method())) {
    REQUIRE(context_);
    REQUIRE(SSL_CTX_use_certificate(context_.get(), leaf_of(leaves, host)->certificate.get()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(context_.get(), leaves.key()) == 1);
    respond = [](const Message&) { return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}; };
  }

  // A new connection to the origin: the engine's end.
  UniqueFd connect() {
    auto [ours, theirs] = socket_pair();
    SslPtr ssl(SSL_new(context_.get()));
    REQUIRE(ssl);
    connections_.push_back(std::make_unique<Connection>(std::move(ours), std::move(ssl)));
    return std::move(theirs);
  }

  void pump() {
    for (auto& c : connections_) {
      c->peer.pump();
      if (c->echo) {
        if (!c->peer.received().empty()) {
          c->peer.send("echo:" + c->peer.received());
          c->peer.received().clear();
          c->peer.pump();
        }
        continue;
      }
      while (auto request = take_message(c->peer.received(), "")) {
        seen.push_back(*request);
        const Reply reply = respond(*request);
        c->peer.send(reply.bytes);
        if (reply.close) c->peer.close_when_sent();
        if (reply.echo) c->echo = true;
        c->peer.pump();
      }
    }
  }

  [[nodiscard]] std::size_t connections() const { return connections_.size(); }
  [[nodiscard]] TlsPeer& peer(std::size_t i) { return connections_.at(i)->peer; }

  std::function<Reply(const Message&)> respond;
  std::vector<Message> seen;

 private:
  struct Connection {
    Connection(UniqueFd fd, SslPtr ssl) : peer(std::move(fd), std::move(ssl), /*server=*/true) {}
    TlsPeer peer;
    bool echo = false;
  };
  SslCtxPtr context_;
  std::vector<std::unique_ptr<Connection>> connections_;
};

// What a test sets up for one connection.
struct Options {
  std::shared_ptr<const InspectEndpoint> endpoint;
  std::string sni = kHost;  // empty: none
  bool log_paths = false;
  double head_timeout = 5;
  double idle_timeout = 0;
  std::size_t max_head_bytes = 32 * 1024;
  bool trusted_origin = true;  // false: the origin's certificate is from a CA nobody trusts
  // How the rig answers need_upstream: a new connection to its origin, upstream_failed, or not at
  // all (the test answers).
  // (in_hook: a new connection given from inside the hook itself).
  enum class Upstream { give, fail, manual, in_hook } upstream = Upstream::give;
  bool delete_on_request = false;  // the owner deletes the connection inside its first request hook
  bool tls12_client = false;       // the box's client speaks TLS 1.2 at most
};

// The engine under test, the box's client, the origin, and what the hooks reported.
class Rig {
 public:
  explicit Rig(Options options)
      : options_(std::move(options)),
        base_(event_base_new()),
        client_context_(make_client_facing_context()),
        origin_context_(make_origin_context(store_of(certificates().origin.certificate()))),
        origin(options_.trusted_origin ? certificates().origin_leaves : certificates().stranger_leaves) {
    REQUIRE(base_);
    auto [box_end, engine_end] = socket_pair();
    box_fd_ = std::move(box_end);
    InspectedSetup setup;
    setup.id = 7;
    setup.host = kHost;
    setup.port = 443;
    setup.endpoint = options_.endpoint;
    setup.leaf = leaf_of(certificates().session_leaves, kHost);
    setup.leaf_key = certificates().session_leaves.key();
    setup.client_ctx = client_context_.get();
    setup.origin_ctx = origin_context_.get();
    setup.log_paths = options_.log_paths;
    setup.max_head_bytes = options_.max_head_bytes;
    setup.head_timeout = options_.head_timeout;
    setup.idle_timeout = options_.idle_timeout;
    connection = InspectedConnection::start(base_.get(), std::move(engine_end), origin.connect(), std::move(setup),
                                            {this, &on_request, &on_need_upstream, &on_ended});
    REQUIRE(connection);
  }

  ~Rig() {
    connection.reset();  // before the contexts and the loop it uses
    for (int i = 0; i < 5; ++i) event_base_loop(base_.get(), EVLOOP_NONBLOCK);  // what libevent finishes late
    CHECK(libevent_warnings == warnings_before_);
  }

  // The box's TLS client, trusting the session's CA and checking the host name.
  TlsPeer& tls_client() {
    if (!client_) {
      SslCtxPtr context(SSL_CTX_new(TLS_client_method()));
      REQUIRE(context);
      SSL_CTX_set_cert_store(context.get(), store_of(certificates().session.certificate()).release());
      SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
      if (options_.tls12_client) REQUIRE(SSL_CTX_set_max_proto_version(context.get(), TLS1_2_VERSION) == 1);
      SslPtr ssl(SSL_new(context.get()));
      REQUIRE(ssl);
      if (!options_.sni.empty()) REQUIRE(SSL_set_tlsext_host_name(ssl.get(), options_.sni.c_str()) == 1);
      REQUIRE(SSL_set1_host(ssl.get(), kHost) == 1);
      REQUIRE(SSL_set_alpn_protos(ssl.get(), reinterpret_cast<const unsigned char*>(kAlpnHttp11.data()),
                                  static_cast<unsigned int>(kAlpnHttp11.size())) == 0);
      client_ = std::make_unique<TlsPeer>(std::move(box_fd_), std::move(ssl), /*server=*/false);
    }
    return *client_;
  }

  // The box's socket itself, for what is not TLS.
  [[nodiscard]] int box_fd() const { return box_fd_.get(); }

  // Runs the loop, the client and the origin until `done()` holds; false if it never did in time.
  template <typename Done>
  bool run_until(Done done) {
    return pass_until(done, [&] { pass(); });
  }

  void pass() {
    event_base_loop(base_.get(), EVLOOP_NONBLOCK);
    if (client_) client_->pump();
    origin.pump();
    if (upstream_asked_ && connection && options_.upstream != Options::Upstream::manual &&
        options_.upstream != Options::Upstream::in_hook) {
      upstream_asked_ = false;
      if (options_.upstream == Options::Upstream::give) {
        connection->give_upstream(origin.connect());
      } else {
        connection->upstream_failed();
      }
    }
    pollfd none{-1, 0, 0};
    (void)::poll(&none, 1, kPassMs);
  }

  // Sends `request` through the box's TLS client and waits for the whole response to `method`.
  Message exchange(const std::string& request, std::string_view method = "GET") {
    TlsPeer& client = tls_client();
    client.send(request);
    std::optional<Message> response;
    REQUIRE(run_until([&] {
      response = take_message(client.received(), method, client.eof());
      return response.has_value() || client.failed() || (client.eof() && client.received().empty());
    }));
    REQUIRE(response);
    return *response;
  }

  [[nodiscard]] bool ended() const { return ended_.has_value(); }
  [[nodiscard]] const InspectorEnded& end_record() const {
    REQUIRE(ended_);
    return *ended_;
  }

 private:
  static void on_request(void* self, const InspectorRequest& record) {
    auto* rig = static_cast<Rig*>(self);
    rig->records.push_back(record);
    if (rig->options_.delete_on_request) rig->connection.reset();
  }
  static void on_need_upstream(void* self) {
    auto* rig = static_cast<Rig*>(self);
    ++rig->upstream_asks;
    rig->upstream_asked_ = true;
    if (rig->options_.upstream == Options::Upstream::in_hook) rig->connection->give_upstream(rig->origin.connect());
  }
  static void on_ended(void* self, const InspectorEnded& record) {
    auto* rig = static_cast<Rig*>(self);
    rig->ended_ = record;
    rig->connection.reset();  // the owner deletes it inside the hook, as serve's inspector will
  }

  Options options_;
  EventBasePtr base_;
  SslCtxPtr client_context_;
  SslCtxPtr origin_context_;
  UniqueFd box_fd_;
  std::unique_ptr<TlsPeer> client_;
  bool upstream_asked_ = false;
  std::optional<InspectorEnded> ended_;
  int warnings_before_ = libevent_warnings;

 public:
  // Declared last: the connection goes first, before the origin and the loop it uses.
  TestOrigin origin;
  std::vector<InspectorRequest> records;
  int upstream_asks = 0;
  std::unique_ptr<InspectedConnection> connection;
};

}  // namespace inspect_rig
