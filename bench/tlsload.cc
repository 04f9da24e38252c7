// SPDX-License-Identifier: Apache-2.0
// tlsload: the HTTPS load client of bench/inspect, lighter than curl.
//
//   tlsload --via V --host NAME --port P --cafile F [--path /small] [--conns 16] [--requests N] [--close]
//           [--resume] [--max-seconds S]
//
// --conns threads, each with one connection at a time, share --requests GETs of https://NAME:P/PATH. V is
// "direct:ADDR" (a TCP connection to ADDR:P), "unix:PATH" (SOCKS5 by name on a unix socket: boxproxy) or
// "tcp:ADDR:PORT" (an HTTP CONNECT proxy: squid, mitmproxy). TLS 1.2 or 1.3 as the server picks, the certificate
// verified against F with the name checked, HTTP/1.1. Keep-alive by default: a connection carries requests until
// the run ends; with --close each request asks "Connection: close" and a new connection (a new TLS session toward
// the proxy, and through an inspecting one toward the origin) is made for the next. With --resume a thread offers
// the TLS session its last connection got (what curl does within one process, and browsers do): the proxy may then
// resume instead of making a full handshake. Every response must be 200 with the Content-Length's body.
//
// Why not curl: through a TLS-inspecting proxy curl spends 59-92 µs of CPU a request (bench/README.md), as much as
// the cheapest proxy, on the same two cores; this client about a third of that, so what the proxy costs decides
// more of what a run measures. Prints one JSON line: {"requests":N,"ok":K,"seconds":S,"errors":E,"resumed":R,"first_error":".."}
// (R: the connections whose session the proxy resumed).
//
// Only OpenSSL, the C++ standard library and POSIX. Every wait is bounded (socket time-outs, --max-seconds).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string via, host, cafile, path = "/small";
  int port = 0, conns = 16;
  long requests = 10000;
  bool close = false, resume = false;
  double max_seconds = 300;
};

Options opt;
SSL_CTX* ctx = nullptr;
std::atomic<long> issued{0}, ok{0}, errors{0}, resumed{0};
std::chrono::steady_clock::time_point deadline;
std::mutex error_mutex;
std::string first_error;

void fail(const std::string& what) {
  errors.fetch_add(1);
  const std::lock_guard<std::mutex> lock(error_mutex);
  if (first_error.empty()) first_error = what;
}

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_exact(int fd, unsigned char* out, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, out, n);
    if (r <= 0) return false;
    out += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A stream socket to the origin through the proxy the options name (its handshake done), or -1.
int open_tunnel() {
  int fd = -1;
  const bool unix_socket = opt.via.rfind("unix:", 0) == 0;
  fd = ::socket(unix_socket ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc = -1;
  if (unix_socket) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", opt.via.c_str() + 5);
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    const bool direct = opt.via.rfind("direct:", 0) == 0;
    std::string rest = opt.via.substr(direct ? 7 : 4);
    int port = opt.port;
    if (!direct) {
      const size_t colon = rest.rfind(':');
      port = std::atoi(rest.c_str() + colon + 1);
      rest.resize(colon);
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, rest.c_str(), &sa.sin_addr);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc == 0 && !direct) {
      const std::string connect = "CONNECT " + opt.host + ":" + std::to_string(opt.port) + " HTTP/1.1\r\nHost: " +
                                  opt.host + ":" + std::to_string(opt.port) + "\r\n\r\n";
      std::string head;
      char c;
      rc = write_all(fd, connect.data(), connect.size()) ? 0 : -1;
      while (rc == 0 && head.size() < 4096 && head.find("\r\n\r\n") == std::string::npos) {
        if (::read(fd, &c, 1) != 1) rc = -1;
        head += c;
      }
      if (rc == 0 && head.find(" 200") == std::string::npos) rc = -1;
    }
  }
  if (rc == 0 && unix_socket) {  // SOCKS5, no authentication, CONNECT by name
    unsigned char reply[10];
    std::string req("\x05\x01\x00", 3);
    rc = write_all(fd, req.data(), req.size()) && read_exact(fd, reply, 2) && reply[1] == 0 ? 0 : -1;
    req = std::string("\x05\x01\x00\x03", 4) + static_cast<char>(opt.host.size()) + opt.host +
          static_cast<char>(opt.port >> 8) + static_cast<char>(opt.port & 0xff);
    if (rc == 0) rc = write_all(fd, req.data(), req.size()) && read_exact(fd, reply, 10) && reply[1] == 0 ? 0 : -1;
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads one response on `ssl` into `buf` (which may hold bytes read ahead); true when it is a 200 with its body.
bool read_response(SSL* ssl, std::string& buf) {
  char chunk[16384];
  size_t head_end;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    const int n = SSL_read(ssl, chunk, sizeof chunk);
    if (n <= 0 || buf.size() > 65536) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  if (buf.compare(0, 12, "HTTP/1.1 200") != 0) return false;
  size_t length = 0;
  for (size_t at = 0; at < head_end;) {
    const size_t eol = buf.find("\r\n", at);
    if (strncasecmp(buf.c_str() + at, "content-length:", 15) == 0) length = std::strtoul(buf.c_str() + at + 15, nullptr, 10);
    at = eol + 2;
  }
  const size_t whole = head_end + 4 + length;
  while (buf.size() < whole) {
    const int n = SSL_read(ssl, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  buf.erase(0, whole);
  return true;
}

void worker() {
  const std::string request = "GET " + opt.path + " HTTP/1.1\r\nHost: " + opt.host + ":" + std::to_string(opt.port) +
                              "\r\nUser-Agent: tlsload\r\nAccept: */*\r\n" +
                              (opt.close ? "Connection: close\r\n" : "") + "\r\n";
  SSL_SESSION* session = nullptr;
  SSL* ssl = nullptr;
  int fd = -1;
  std::string buf;
  auto drop = [&] {
    if (ssl) {
      if (opt.resume) {
        if (SSL_SESSION* s = SSL_get1_session(ssl)) {
          if (session) SSL_SESSION_free(session);
          session = s;
        }
      }
      SSL_free(ssl);
      ssl = nullptr;
    }
    if (fd >= 0) ::close(fd);
    fd = -1;
    buf.clear();
  };
  while (issued.fetch_add(1) < opt.requests) {
    if (std::chrono::steady_clock::now() > deadline) {
      fail("--max-seconds passed");
      break;
    }
    if (!ssl) {
      fd = open_tunnel();
      if (fd < 0) {
        fail("cannot open a tunnel");
        continue;
      }
      ssl = SSL_new(ctx);
      SSL_set_fd(ssl, fd);
      SSL_set_tlsext_host_name(ssl, opt.host.c_str());
      SSL_set1_host(ssl, opt.host.c_str());
      if (session) SSL_set_session(ssl, session);
      if (SSL_connect(ssl) != 1) {
        char e[256];
        ERR_error_string_n(ERR_get_error(), e, sizeof e);
        fail(std::string("handshake: ") + e);
        drop();
        continue;
      }
      if (SSL_session_reused(ssl) == 1) resumed.fetch_add(1);
    }
    if (SSL_write(ssl, request.data(), static_cast<int>(request.size())) <= 0 || !read_response(ssl, buf)) {
      fail("request " + std::to_string(ok.load()) + " had no whole 200 answer");
      drop();
      continue;
    }
    ok.fetch_add(1);
    if (opt.close) {
      // The server closes after the answer; read its close_notify so that the session (a TLS 1.3 ticket comes
      // after the handshake) is complete before it is kept. The connection then counts as shut down both ways
      // (OpenSSL marks the session of a connection freed without that as not resumable), without writing a
      // close_notify to a peer that has closed.
      char c;
      SSL_read(ssl, &c, 1);
      SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
      drop();
    }
  }
  drop();
  if (session) SSL_SESSION_free(session);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc || (i < argc && (!strcmp(argv[i], "--close") || !strcmp(argv[i], "--resume")));
       ++i) {
    const std::string a = argv[i];
    if (a == "--close") opt.close = true;
    else if (a == "--resume") opt.resume = true;
    else if (a == "--via") opt.via = argv[++i];
    else if (a == "--host") opt.host = argv[++i];
    else if (a == "--port") opt.port = std::atoi(argv[++i]);
    else if (a == "--cafile") opt.cafile = argv[++i];
    else if (a == "--path") opt.path = argv[++i];
    else if (a == "--conns") opt.conns = std::atoi(argv[++i]);
    else if (a == "--requests") opt.requests = std::atol(argv[++i]);
    else if (a == "--max-seconds") opt.max_seconds = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "tlsload: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (opt.via.empty() || opt.host.empty() || opt.port <= 0 || opt.cafile.empty() || opt.conns <= 0) {
    std::fprintf(stderr, "tlsload: --via, --host, --port and --cafile are needed\n");
    return 2;
  }
  ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(ctx, opt.cafile.c_str(), nullptr) != 1) {
    std::fprintf(stderr, "tlsload: cannot read %s\n", opt.cafile.c_str());
    return 2;
  }
  // HTTP/1.1 by ALPN, as curl --http1.1 offers it (boxproxy would pick h2 were it offered).
  static const unsigned char alpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
  deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(opt.max_seconds * 1000));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < opt.conns; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string err;
  for (char c : first_error) err += (c == '"' || c == '\\') ? '_' : c;
  std::printf("{\"requests\":%ld,\"ok\":%ld,\"seconds\":%.6f,\"errors\":%ld,\"resumed\":%ld,\"first_error\":\"%s\"}\n",
              opt.requests, ok.load(), seconds, errors.load(), resumed.load(), err.c_str());
  SSL_CTX_free(ctx);
  return ok.load() == opt.requests ? 0 : 1;
}
