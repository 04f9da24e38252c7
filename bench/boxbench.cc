// SPDX-License-Identifier: Apache-2.0
// boxbench: the load generator and the origin servers for bench/run.
//
// One binary, six sub-commands (bench/run pins each where its --placement says):
//
//   boxbench origin  --addr A --echo P --sink P --source P --http P [--chunk B] [--sink-io splice|read]
//                    [--max-seconds S]
//       the origins: an echo server, a sink that discards what it gets (spliced to /dev/null), a source that
//       writes B-byte chunks (256 KiB) as fast as it is read, and an HTTP server that answers any request with a
//       512-byte body and closes. One epoll thread. Prints {"event":"ready"} when all four listen.
//   boxbench tunnels --via V --proto P --target A:P [--conc 32] [--seconds S] [--warmup S]
//       each of --conc clients loops: connect, handshake, 64-byte echo, close. Reports tunnels/s and the setup
//       latency (connect() to the echo's last byte) p50/p99. With --keepalive 1 each client keeps its tunnel and
//       loops 64-byte echoes on it (a request on a held connection): echoes/s and each one's round trip.
//   boxbench http    --via V --url-host A --url-port P [--form absolute|origin] [--conc 32] [--seconds S]
//                    [--warmup S]
//       each client loops: connect, one GET (absolute form through a proxy, origin form direct or with --form
//       origin), read the whole response, close. Reports requests/s.
//   boxbench stream  --via V --proto P --target A:P [--dir up|down] [--streams 4] [--chunk B] [--sockbuf B]
//                    [--seconds S] [--warmup S]
//       --streams tunnels, one thread each: up, each written to as fast as it takes B-byte writes (256 KiB; the
//       target is the sink); down, each read with B-byte reads (the target is the source). Reports MB/s (10^6).
//   boxbench idle    --via V --proto P --target A:P --n N [--hold-max S]
//       opens N tunnels (each with one echo, so it is really established), prints {"event":"holding",...}, holds
//       them until standard input closes or has a line (or --hold-max), then closes them.
//   boxbench start   --probe V [--cpu C] [--runs K] [--settle-ms M] [--log FILE] -- ARGV...
//       K times: exec ARGV (pinned to CPU C, in its own process group), connect to V until it succeeds, note the
//       time from execve to that connect, wait M ms, read the VmRSS of the process group, SIGTERM it.
//
// V is "direct" (connect straight to the target), "unix:PATH" or "tcp:ADDR:PORT" (the proxy). P is socks5, connect
// or direct (no handshake: straight to the target, or through the reference relay, which needs none). Every loop is
// bounded in time; every result is one JSON line on standard output.
//
// Only the C++ standard library and POSIX/Linux system calls.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Small helpers.

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "boxbench: %s\n", why.c_str());
  std::exit(2);
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void raise_nofile() {
  rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}


struct Args {
  std::map<std::string, std::string> kv;
  std::vector<std::string> rest;  // after "--"
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    if (it == kv.end()) {
      if (def.empty()) die("missing --" + k);
      return def;
    }
    return it->second;
  }
  double num(const std::string& k, double def) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : std::atof(it->second.c_str());
  }
};

Args parse_args(int argc, char** argv, int from) {
  Args a;
  for (int i = from; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--") {
      for (++i; i < argc; ++i) a.rest.push_back(argv[i]);
      break;
    }
    if (s.rfind("--", 0) != 0 || i + 1 >= argc) die("bad argument: " + s);
    a.kv[s.substr(2)] = argv[++i];
  }
  return a;
}

// `s` as the inside of a JSON string: quotes and backslashes escaped, anything not printable ASCII as '?'.
std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += (ch < 32 || ch > 126) ? '?' : ch;
  }
  return out;
}

sockaddr_in inet_addr_port(const std::string& hostport) {
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) die("want ADDR:PORT: " + hostport);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(uint16_t(std::atoi(hostport.c_str() + colon + 1)));
  if (inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &sin.sin_addr) != 1) die("bad address: " + hostport);
  return sin;
}

// Where a client connects: the proxy (Unix or TCP) or, for "direct", the target itself.
struct Endpoint {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
};

Endpoint endpoint_of(const std::string& via, const std::string& target) {
  Endpoint e;
  if (via == "direct") {
    auto sin = inet_addr_port(target);
    std::memcpy(&e.ss, &sin, sizeof sin);
    e.len = sizeof sin;
  } else if (via.rfind("unix:", 0) == 0) {
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::string path = via.substr(5);
    if (path.size() >= sizeof sun.sun_path) die("socket path too long");
    std::memcpy(sun.sun_path, path.c_str(), path.size() + 1);
    std::memcpy(&e.ss, &sun, sizeof sun);
    e.len = sizeof sun;
    e.family = AF_UNIX;
  } else if (via.rfind("tcp:", 0) == 0) {
    auto sin = inet_addr_port(via.substr(4));
    std::memcpy(&e.ss, &sin, sizeof sin);
    e.len = sizeof sin;
  } else {
    die("bad --via: " + via);
  }
  return e;
}

enum class Proto { direct, socks5, connect };

Proto proto_of(const std::string& s) {
  if (s == "direct") return Proto::direct;
  if (s == "socks5") return Proto::socks5;
  if (s == "connect") return Proto::connect;
  die("bad --proto: " + s);
}

const char kPayload[65] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";

// ---------------------------------------------------------------------------------------------------------------
// origin

int listen_on(const sockaddr_in& sin) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sin), sizeof sin) == -1) die("bind: " + std::string(strerror(errno)));
  if (listen(fd, 4096) == -1) die("listen");
  return fd;
}

// How the sink and the source move bytes. The origins stand for the far end of the path, so they should cost as
// little as the kernel allows, leaving the path itself as the limit. The sink splices what it receives into
// /dev/null through a pipe: nothing is copied to user space (`--sink-io read` reads into a buffer instead, to compare).
// The source writes from a chunk-sized buffer: sendfile() from a memfd was measured slower here (1.5-2.1 against
// 2.7-3.5 GB/s direct; the receiver then copies from page-sized fragments).
struct OriginIo {
  bool sink_splice = true;
  size_t chunk = 256 * 1024;  // a source's write, a sink's read
  int devnull = -1;           // splice target of the sink
};

// Reads and discards what `fd` has, up to 16 chunks a wake-up (bounded: the other connections get their turn).
// True when the peer is gone.
bool sink_some(int fd, const OriginIo& io, int pipe_fd[2], char* buf) {
  for (int j = 0; j < 16; ++j) {
    ssize_t r;
    if (pipe_fd[0] != -1) {
      r = splice(fd, nullptr, pipe_fd[1], nullptr, io.chunk, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (r > 0) {
        // A pipe that /dev/null drains can never stay full, so this always empties it.
        if (splice(pipe_fd[0], nullptr, io.devnull, nullptr, size_t(r), SPLICE_F_MOVE) != r) return true;
        continue;
      }
    } else {
      r = read(fd, buf, io.chunk);
      if (r > 0) continue;
    }
    return r == 0 || errno != EAGAIN;
  }
  return false;
}

// Writes to `fd` until it is full, up to 16 chunks a wake-up. True when the peer is gone.
bool source_some(int fd, const OriginIo& io, const char* buf) {
  for (int j = 0; j < 16; ++j) {
    ssize_t w = write(fd, buf, io.chunk);
    if (w > 0) continue;
    return w == 0 || errno != EAGAIN;
  }
  return false;
}

int cmd_origin(const Args& a) {
  raise_nofile();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  std::string addr = a.get("addr", "127.0.0.2");
  OriginIo io;
  io.sink_splice = a.get("sink-io", "splice") == "splice";
  io.chunk = size_t(a.num("chunk", 256 * 1024));
  if (io.chunk < 4096 || io.chunk > (16u << 20)) die("--chunk: 4096 to 16 MiB");
  std::vector<char> chunk_buf(io.chunk, 'z');
  if (io.sink_splice && (io.devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1) die("origin: /dev/null");
  enum Kind : uint8_t { kEcho, kSink, kHttp, kSource, kListenEcho, kListenSink, kListenHttp, kListenSource };
  int lfd[4] = {listen_on(inet_addr_port(addr + ":" + a.get("echo"))),
                listen_on(inet_addr_port(addr + ":" + a.get("sink"))),
                listen_on(inet_addr_port(addr + ":" + a.get("http"))),
                listen_on(inet_addr_port(addr + ":" + a.get("source")))};
  double deadline = now_s() + a.num("max-seconds", 3600);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  // epoll data: fd in the low 32 bits, kind in the high.
  auto add = [&](int fd, Kind k) {
    epoll_event ev{};
    ev.events = k == kSource ? EPOLLOUT : EPOLLIN;
    ev.data.u64 = (uint64_t(k) << 32) | uint32_t(fd);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  };
  for (int i = 0; i < 4; ++i) add(lfd[i], Kind(kListenEcho + i));
  std::string response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 512\r\nConnection: close\r\n\r\n";
  response += std::string(512, 'x');
  std::vector<std::string> http_head(1 << 16);  // per-fd partial request head (fd numbers stay small)
  // A sink's pipe (for splice), per fd: made on accept, closed with the connection.
  std::vector<std::array<int, 2>> sink_pipe(1 << 16, std::array<int, 2>{-1, -1});
  std::printf("{\"event\":\"ready\"}\n");
  std::fflush(stdout);
  std::vector<char> buf(std::max<size_t>(io.chunk, 1 << 16));
  epoll_event evs[256];
  while (now_s() < deadline) {
    int n = epoll_wait(ep, evs, 256, 1000);
    for (int i = 0; i < n; ++i) {
      int fd = int(uint32_t(evs[i].data.u64));
      Kind k = Kind(evs[i].data.u64 >> 32);
      if (k >= kListenEcho) {
        for (int j = 0; j < 64; ++j) {  // a bounded number per wake-up
          int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c == -1) break;
          int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          if (k == kListenSink && io.sink_splice && size_t(c) < sink_pipe.size()) {
            int p[2];
            if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
              fcntl(p[1], F_SETPIPE_SZ, int(io.chunk));  // one chunk per splice; refused above the limit: fine
              sink_pipe[size_t(c)] = {p[0], p[1]};
            }
          }
          add(c, Kind(k - kListenEcho));
        }
        continue;
      }
      bool done = false;
      if (k == kEcho) {
        ssize_t r = read(fd, buf.data(), buf.size());
        if (r > 0) {
          if (write(fd, buf.data(), size_t(r)) != r) done = true;  // a 64-byte echo always fits; anything else: give up
        } else if (r == 0 || errno != EAGAIN) {
          done = true;
        }
      } else if (k == kSink) {
        int none[2] = {-1, -1};
        int* p = size_t(fd) < sink_pipe.size() ? sink_pipe[size_t(fd)].data() : none;
        done = sink_some(fd, io, p, buf.data());
        if (done && p[0] != -1) {
          close(p[0]);
          close(p[1]);
          p[0] = p[1] = -1;
        }
      } else if (k == kSource) {
        done = (evs[i].events & (EPOLLERR | EPOLLHUP)) || source_some(fd, io, chunk_buf.data());
      } else {
        ssize_t r = read(fd, buf.data(), buf.size());
        if (r > 0 && size_t(fd) < http_head.size()) {
          std::string& h = http_head[size_t(fd)];
          h.append(buf.data(), size_t(r));
          if (h.find("\r\n\r\n") != std::string::npos) {
            (void)!write(fd, response.data(), response.size());
            done = true;
          } else if (h.size() > 65536) {
            done = true;
          }
        } else if (r == 0 || (r == -1 && errno != EAGAIN)) {
          done = true;
        }
        if (done && size_t(fd) < http_head.size()) http_head[size_t(fd)].clear();
      }
      if (done) close(fd);  // close() drops it from the epoll set
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// The client handshakes, as byte strings, and how to tell that a reply is complete.

std::string handshake_request(Proto p, const sockaddr_in& target, int step) {
  if (p == Proto::socks5) {
    if (step == 0) return std::string("\x05\x01\x00", 3);
    std::string r("\x05\x01\x00\x01", 4);
    r.append(reinterpret_cast<const char*>(&target.sin_addr), 4);
    r.append(reinterpret_cast<const char*>(&target.sin_port), 2);
    return r;
  }
  char addr[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &target.sin_addr, addr, sizeof addr);
  std::string hp = std::string(addr) + ":" + std::to_string(ntohs(target.sin_port));
  return "CONNECT " + hp + " HTTP/1.1\r\nHost: " + hp + "\r\n\r\n";
}

// How many bytes of `buf` make the reply to handshake step `step`: 0 if not complete yet, -1 if refused.
long reply_complete(Proto p, int step, const char* buf, size_t n) {
  if (p == Proto::socks5) {
    if (step == 0) return n < 2 ? 0 : (buf[0] == 5 && buf[1] == 0 ? 2 : -1);
    if (n < 5) return 0;
    if (buf[0] != 5 || buf[1] != 0) return -1;
    size_t len = buf[3] == 1 ? 10 : buf[3] == 4 ? 22 : 7 + size_t(uint8_t(buf[4]));
    return n < len ? 0 : long(len);
  }
  std::string_view v(buf, n);
  auto end = v.find("\r\n\r\n");
  if (end == std::string_view::npos) return n > 8192 ? -1 : 0;
  if (v.size() < 12 || v.substr(0, 5) != "HTTP/" || v.substr(9, 3) != "200") return -1;
  return long(end + 4);
}

int steps_of(Proto p) { return p == Proto::socks5 ? 2 : p == Proto::connect ? 1 : 0; }

// Blocking: connect and handshake one tunnel (for stream and idle). Returns the fd or -1 with `err` set.
int open_tunnel_blocking(const Endpoint& e, Proto p, const sockaddr_in& target, std::string& err) {
  int fd = socket(e.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1) {
    err = std::string("socket: ") + strerror(errno);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&e.ss), e.len) == -1) {
    err = std::string("connect: ") + strerror(errno);
    close(fd);
    return -1;
  }
  if (e.family == AF_INET) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  for (int step = 0; step < steps_of(p); ++step) {
    std::string req = handshake_request(p, target, step);
    if (write(fd, req.data(), req.size()) != ssize_t(req.size())) {
      err = "handshake write";
      close(fd);
      return -1;
    }
    char buf[8192];
    size_t have = 0;
    long got = 0;
    // Read byte-wise-enough: a reply never runs into the next one because we wait for each before sending more.
    while ((got = reply_complete(p, step, buf, have)) == 0 && have < sizeof buf) {
      ssize_t r = read(fd, buf + have, sizeof buf - have);
      if (r <= 0) {
        err = "handshake read";
        close(fd);
        return -1;
      }
      have += size_t(r);
    }
    if (got < 0) {
      err = "refused: " + std::string(buf, std::min<size_t>(have, 60));
      close(fd);
      return -1;
    }
  }
  return fd;
}

// ---------------------------------------------------------------------------------------------------------------
// tunnels and http: --conc clients as state machines on one epoll loop.

enum class Phase : uint8_t {
  idle,        // no socket: start one at the next turn of the loop
  connecting,  // non-blocking connect in progress
  handshake,   // waiting for the reply to handshake step `step`
  echo,        // payload sent, waiting for it to come back
  response,    // http: request sent, reading the response
};

struct Client {
  int fd = -1;
  Phase phase = Phase::idle;
  int step = 0;
  uint64_t t0 = 0;
  size_t have = 0;
  long need = -1;  // http: total response bytes once the head is parsed
  char buf[4096];
};

struct LoadResult {
  uint64_t ops = 0, ops_all = 0, errors = 0, retries = 0;  // ops_all: with the warm-up
  std::vector<uint32_t> lat_us;
  std::string first_error;
  double secs = 0;
};

int cmd_load(const Args& a, bool http) {
  raise_nofile();
  std::string via = a.get("via");
  Proto proto = http ? Proto::direct : proto_of(a.get("proto"));
  std::string target_s = http ? a.get("url-host") + ":" + a.get("url-port") : a.get("target");
  sockaddr_in target = inet_addr_port(target_s);
  Endpoint ep_to = endpoint_of(via, target_s);
  int conc = int(a.num("conc", 32));
  double seconds = a.num("seconds", 3), warmup = a.num("warmup", 0.3);
  const bool keepalive = !http && a.num("keepalive", 0) != 0;
  std::string get_req;
  if (http) {
    std::string hp = target_s;
    bool origin_form = via == "direct" || a.get("form", "absolute") == "origin";
    std::string uri = origin_form ? "/" : "http://" + hp + "/";
    get_req = "GET " + uri + " HTTP/1.1\r\nHost: " + hp + "\r\nUser-Agent: boxbench\r\nConnection: close\r\n\r\n";
  }
  std::vector<std::string> hs;
  for (int s = 0; s < steps_of(proto); ++s) hs.push_back(handshake_request(proto, target, s));

  std::vector<Client> clients(static_cast<size_t>(conc));
  LoadResult res;
  res.lat_us.reserve(1 << 20);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  double t_start = now_s(), t_count = t_start + warmup, t_end = t_count + seconds;
  bool counting = false;

  auto fail = [&](Client& c, const std::string& why) {
    if (counting) ++res.errors;
    if (res.first_error.empty()) res.first_error = why;
    if (c.fd != -1) close(c.fd);
    c.fd = -1;
    c.phase = Phase::idle;
  };
  auto finish = [&](Client& c) {
    ++res.ops_all;
    if (counting) {
      ++res.ops;
      if (res.lat_us.size() < res.lat_us.capacity()) res.lat_us.push_back(uint32_t((now_ns() - c.t0) / 1000));
    }
    if (keepalive) {  // the next echo on the same tunnel
      c.t0 = now_ns();
      c.have = 0;
      if (write(c.fd, kPayload, 64) != 64) fail(c, "write payload");
      return;
    }
    close(c.fd);
    c.fd = -1;
    c.phase = Phase::idle;
  };
  auto send_all = [&](Client& c, const std::string& s) -> bool {
    return write(c.fd, s.data(), s.size()) == ssize_t(s.size());
  };
  // After the connection or a handshake step completes: the next thing to send.
  auto advance = [&](Client& c) {
    c.have = 0;
    if (http) {
      c.phase = Phase::response;
      c.need = -1;
      if (!send_all(c, get_req)) fail(c, "write request");
      return;
    }
    if (c.step < int(hs.size())) {
      c.phase = Phase::handshake;
      if (!send_all(c, hs[size_t(c.step)])) fail(c, "write handshake");
      return;
    }
    c.phase = Phase::echo;
    if (!send_all(c, std::string(kPayload, 64))) fail(c, "write payload");
  };
  auto start = [&](Client& c, size_t idx) {
    c.t0 = now_ns();
    c.step = 0;
    c.have = 0;
    c.fd = socket(ep_to.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd == -1) return fail(c, std::string("socket: ") + strerror(errno));
    if (ep_to.family == AF_INET) {
      int one = 1;
      setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = idx;
    int r = connect(c.fd, reinterpret_cast<const sockaddr*>(&ep_to.ss), ep_to.len);
    if (r == -1 && errno == EAGAIN && ep_to.family == AF_UNIX) {  // the listener's backlog is full: try again
      ++res.retries;
      close(c.fd);
      c.fd = -1;
      return;
    }
    if (r == -1 && errno != EINPROGRESS) return fail(c, std::string("connect: ") + strerror(errno));
    c.phase = Phase::connecting;
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    if (r == 0) {  // Unix sockets connect at once
      ev.events = EPOLLIN;
      epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
      advance(c);
    }
  };

  epoll_event evs[512];
  while (true) {
    double t = now_s();
    if (!counting && t >= t_count) {
      counting = true;
      t_count = t;
    }
    if (t >= t_end) break;
    bool any_idle = false;
    for (size_t i = 0; i < clients.size(); ++i)
      if (clients[i].phase == Phase::idle) {
        start(clients[i], i);
        if (clients[i].phase == Phase::idle) any_idle = true;
      }
    int n = epoll_wait(ep, evs, 512, any_idle ? 1 : 100);
    for (int k = 0; k < n; ++k) {
      Client& c = clients[evs[k].data.u64];
      if (c.fd == -1) continue;
      if (c.phase == Phase::connecting) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err != 0) {
          fail(c, std::string("connect: ") + strerror(err));
          continue;
        }
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = evs[k].data.u64;
        epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
        advance(c);
        continue;
      }
      ssize_t r = read(c.fd, c.buf + c.have, sizeof c.buf - c.have);
      if (r == -1 && errno == EAGAIN) continue;
      if (r <= 0) {
        // For http, EOF after the whole head ends a response without a length.
        if (r == 0 && c.phase == Phase::response && c.need == -2) {
          finish(c);
          continue;
        }
        fail(c, r == 0 ? "eof in " + std::to_string(int(c.phase)) + " step " + std::to_string(c.step) + ": " +
                             std::string(c.buf, std::min<size_t>(c.have, 60))
                       : std::string("read: ") + strerror(errno));
        continue;
      }
      c.have += size_t(r);
      if (c.phase == Phase::handshake) {
        long got = reply_complete(proto, c.step, c.buf, c.have);
        if (got < 0) {
          fail(c, "refused: " + std::string(c.buf, std::min<size_t>(c.have, 80)));
          continue;
        }
        if (got == 0) continue;
        ++c.step;
        size_t extra = c.have - size_t(got);
        advance(c);
        if (extra && c.fd != -1) fail(c, "bytes after the handshake reply");
      } else if (c.phase == Phase::echo) {
        if (c.have >= 64) finish(c);
      } else if (c.phase == Phase::response) {
        if (c.need < 0) {
          std::string_view v(c.buf, c.have);
          auto end = v.find("\r\n\r\n");
          if (end == std::string_view::npos) {
            if (c.have == sizeof c.buf) fail(c, "response head too large");
            continue;
          }
          if (v.substr(0, 5) != "HTTP/" || v.size() < 12 || v.substr(9, 3) != "200") {
            fail(c, "status: " + std::string(v.substr(0, std::min<size_t>(v.size(), 80))));
            continue;
          }
          c.need = -2;
          std::string head(v.substr(0, end));
          for (auto& ch : head) ch = char(std::tolower(static_cast<unsigned char>(ch)));
          auto cl = head.find("\r\ncontent-length:");
          if (cl != std::string::npos) c.need = long(end + 4) + std::atol(head.c_str() + cl + 17);
        }
        if (c.need >= 0 && long(c.have) >= c.need) {
          finish(c);
        } else if (c.have == sizeof c.buf) {
          c.have = 0;  // a long body: keep reading, count nothing
          c.need = c.need >= 0 ? c.need - long(sizeof c.buf) : c.need;
        }
      }
    }
  }
  res.secs = now_s() - t_count;
  for (auto& c : clients)
    if (c.fd != -1) close(c.fd);
  std::sort(res.lat_us.begin(), res.lat_us.end());
  auto pct = [&](double p) {
    if (res.lat_us.empty()) return 0.0;
    return res.lat_us[std::min(res.lat_us.size() - 1, size_t(p * double(res.lat_us.size())))] / 1000.0;
  };
  std::printf(
      "{\"ops\":%llu,\"ops_all\":%llu,\"secs\":%.3f,\"rate\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"errors\":%llu,\"retries\":%llu,"
      "\"first_error\":\"",
      (unsigned long long)res.ops, (unsigned long long)res.ops_all, res.secs, double(res.ops) / res.secs, pct(0.5), pct(0.99),
      (unsigned long long)res.errors, (unsigned long long)res.retries);
  std::printf("%s\"}\n", json_escape(res.first_error).c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// stream

int cmd_stream(const Args& a) {
  std::string via = a.get("via");
  Proto proto = proto_of(a.get("proto"));
  std::string target_s = a.get("target");
  sockaddr_in target = inet_addr_port(target_s);
  Endpoint e = endpoint_of(via, target_s);
  int streams = int(a.num("streams", 4));
  // up: write into the tunnel (the origin is a sink); down: read from it (the origin is a source).
  bool down = a.get("dir", "up") == "down";
  size_t chunk = size_t(a.num("chunk", 256 * 1024));
  if (chunk < 1 || chunk > (16u << 20)) die("--chunk: 1 to 16 MiB");
  double seconds = a.num("seconds", 3), warmup = a.num("warmup", 0.5);
  std::vector<int> fds;
  for (int i = 0; i < streams; ++i) {
    std::string err;
    int fd = open_tunnel_blocking(e, proto, target, err);
    if (fd == -1) {
      std::printf("{\"mbps\":0,\"error\":\"%s\"}\n", json_escape(err).c_str());
      return 1;
    }
    // --sockbuf: the client socket's buffers fixed at this size (the kernel doubles it) instead of autotuned.
    if (int sb = int(a.num("sockbuf", 0)); sb > 0) {
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sb, sizeof sb);
    }
    timeval tv{1, 0};  // so that a stalled path still lets the loop see the clock
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    fds.push_back(fd);
  }
  std::atomic<uint64_t> counted{0}, all{0};
  std::atomic<int> errors{0};
  double t0 = now_s(), tc = t0 + warmup, te = tc + seconds;
  std::vector<std::thread> threads;
  for (int fd : fds)
    threads.emplace_back([&, fd] {
      std::vector<char> buf(chunk, 'z');
      uint64_t mine = 0, mine_all = 0;
      while (true) {
        double t = now_s();
        if (t >= te) break;
        // Up, bytes written after the warm-up are bytes delivered: by then every buffer on the path is full.
        // Down, bytes read are delivered by definition.
        ssize_t n = down ? read(fd, buf.data(), buf.size()) : write(fd, buf.data(), buf.size());
        if (n <= 0) {
          if (n == -1 && errno == EAGAIN) continue;  // the time-out: check the clock again
          ++errors;
          break;
        }
        mine_all += uint64_t(n);
        if (t >= tc) mine += uint64_t(n);
      }
      counted += mine;
      all += mine_all;
    });
  for (auto& t : threads) t.join();
  for (int fd : fds) close(fd);
  std::printf("{\"mbps\":%.1f,\"bytes\":%llu,\"bytes_all\":%llu,\"secs\":%.3f,\"errors\":%d}\n",
              double(counted) / 1e6 / seconds, (unsigned long long)counted.load(), (unsigned long long)all.load(),
              seconds, errors.load());
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// idle

int cmd_idle(const Args& a) {
  raise_nofile();
  std::string via = a.get("via");
  Proto proto = proto_of(a.get("proto"));
  std::string target_s = a.get("target");
  sockaddr_in target = inet_addr_port(target_s);
  Endpoint e = endpoint_of(via, target_s);
  long n = long(a.num("n", 1000));
  double hold_max = a.num("hold-max", 120), open_max = a.num("open-max", 60);
  std::vector<int> fds;
  std::string err;
  double t0 = now_s();
  for (long i = 0; i < n && now_s() - t0 < open_max; ++i) {
    int fd = open_tunnel_blocking(e, proto, target, err);
    if (fd == -1) break;
    char buf[64];
    size_t got = 0;
    if (write(fd, kPayload, 64) != 64) {
      err = "payload write";
      close(fd);
      break;
    }
    while (got < 64) {
      ssize_t r = read(fd, buf, 64 - got);
      if (r <= 0) break;
      got += size_t(r);
    }
    if (got < 64) {
      err = "echo";
      close(fd);
      break;
    }
    fds.push_back(fd);
  }
  std::printf("{\"event\":\"holding\",\"n\":%zu,\"open_s\":%.3f,\"error\":\"%s\"}\n", fds.size(), now_s() - t0,
              json_escape(err).c_str());
  std::fflush(stdout);
  pollfd p{0, POLLIN, 0};
  poll(&p, 1, int(hold_max * 1000));
  for (int fd : fds) close(fd);
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// start

// VmRSS summed over the process group; `anon` gets RssAnon summed (what is the group's own: no shared library pages).
long rss_kib_of_group(pid_t pgid, long* anon = nullptr) {
  long total = 0;
  if (anon) *anon = 0;
  DIR* d = opendir("/proc");
  if (!d) return -1;
  while (dirent* de = readdir(d)) {
    pid_t pid = pid_t(std::atoi(de->d_name));
    if (pid <= 0) continue;
    if (getpgid(pid) != pgid) continue;
    std::string path = "/proc/" + std::to_string(pid) + "/status";
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) continue;
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "VmRSS:", 6) == 0) {
        total += std::atol(line + 6);
      } else if (anon && std::strncmp(line, "RssAnon:", 8) == 0) {
        *anon += std::atol(line + 8);
      }
    std::fclose(f);
  }
  closedir(d);
  return total;
}

int cmd_start(const Args& a) {
  if (a.rest.empty()) die("start: want -- ARGV");
  std::string probe = a.get("probe");
  Endpoint e;
  int cpu = int(a.num("cpu", -1));
  int runs = int(a.num("runs", 5));
  int settle_ms = int(a.num("settle-ms", 100));
  std::string log = a.get("log", "/dev/null");
  // --probe exit: no socket; time exec to exit (the floor: what exec'ing any program costs on this machine).
  bool to_exit = probe == "exit";
  if (!to_exit) e = endpoint_of(probe, "0.0.0.0:0");
  std::string unix_path = probe.rfind("unix:", 0) == 0 ? probe.substr(5) : "";
  auto* shared = static_cast<uint64_t*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::vector<double> ms, cpu_ms;
  std::vector<long> rss, anon;
  std::string err;
  for (int run = 0; run < runs; ++run) {
    if (!unix_path.empty()) unlink(unix_path.c_str());
    shared[0] = 0;
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
      }
      int dn = open("/dev/null", O_RDWR);
      int lf = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(dn, 0);
      dup2(dn, 1);
      dup2(lf == -1 ? dn : lf, 2);
      std::vector<char*> argv;
      for (auto& s : a.rest) argv.push_back(const_cast<char*>(s.c_str()));
      argv.push_back(nullptr);
      shared[0] = now_ns();
      execvp(argv[0], argv.data());
      _exit(127);
    }
    setpgid(pid, pid);
    uint64_t t1 = 0;
    double give_up = now_s() + 10;
    bool exited = false;
    if (to_exit) {
      int status;
      rusage ru{};
      if (wait4(pid, &status, 0, &ru) == pid) {
        t1 = now_ns();
        cpu_ms.push_back(ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
                         ru.ru_stime.tv_usec / 1e3);
        ms.push_back(double(t1 - shared[0]) / 1e6);
      } else {
        err = "wait4 failed";
      }
      if (!err.empty()) break;
      continue;
    }
    while (now_s() < give_up) {
      int fd = socket(e.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      int r = connect(fd, reinterpret_cast<const sockaddr*>(&e.ss), e.len);
      close(fd);
      if (r == 0) {
        t1 = now_ns();
        // CPU time the process has had so far (ns): on a busy machine the wall time above is mostly waiting for a
        // core; this is what the start itself costs.
        std::string path = "/proc/" + std::to_string(pid) + "/schedstat";
        if (FILE* f = std::fopen(path.c_str(), "r")) {
          unsigned long long ns = 0;
          if (std::fscanf(f, "%llu", &ns) == 1) cpu_ms.push_back(double(ns) / 1e6);
          std::fclose(f);
        }
        break;
      }
      int status;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      usleep(50);
    }
    if (t1 == 0) {
      err = exited ? "the process exited before accepting" : "not accepting within 10 s";
    } else {
      ms.push_back(double(t1 - shared[0]) / 1e6);
      usleep(useconds_t(settle_ms) * 1000);
      long anon_kib = 0;
      rss.push_back(rss_kib_of_group(pid, &anon_kib));
      anon.push_back(anon_kib);
    }
    if (!exited) {
      kill(-pid, SIGTERM);
      double kill_by = now_s() + 5;
      int status;
      while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_s() > kill_by) {
          kill(-pid, SIGKILL);
          waitpid(pid, &status, 0);
          break;
        }
        usleep(1000);
      }
      // Stray members of the group (forked workers) get no grace.
      kill(-pid, SIGKILL);
    }
    if (!err.empty()) break;
  }
  std::vector<double> ms_sorted = ms;
  std::vector<long> rss_sorted = rss, anon_sorted = anon;
  std::sort(anon_sorted.begin(), anon_sorted.end());
  std::sort(ms_sorted.begin(), ms_sorted.end());
  std::sort(rss_sorted.begin(), rss_sorted.end());
  std::vector<double> cpu_sorted = cpu_ms;
  std::sort(cpu_sorted.begin(), cpu_sorted.end());
  std::printf("{\"start_ms\":%.3f,\"start_cpu_ms\":%.3f,\"rss_kib\":%ld,\"rss_anon_kib\":%ld,\"runs\":%zu,\"error\":\"%s\",\"samples_ms\":[",
              ms.empty() ? -1.0 : ms_sorted[ms.size() / 2], cpu_ms.empty() ? -1.0 : cpu_sorted[cpu_ms.size() / 2],
              rss.empty() ? -1L : rss_sorted[rss.size() / 2], anon.empty() ? -1L : anon_sorted[anon.size() / 2],
              ms.size(), json_escape(err).c_str());
  for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.3f", i ? "," : "", ms[i]);
  std::printf("]}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) die("usage: boxbench origin|tunnels|http|stream|idle|start ...");
  std::string cmd = argv[1];
  Args a = parse_args(argc, argv, 2);
  if (cmd == "origin") return cmd_origin(a);
  if (cmd == "tunnels") return cmd_load(a, false);
  if (cmd == "http") return cmd_load(a, true);
  if (cmd == "stream") return cmd_stream(a);
  if (cmd == "idle") return cmd_idle(a);
  if (cmd == "start") return cmd_start(a);
  die("unknown command " + cmd);
}
