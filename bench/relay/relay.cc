// SPDX-License-Identifier: Apache-2.0
// relay: the reference hop for bench/run. Not product code: a measuring tool, the floor of what any user-space relay
// between a Unix socket and a TCP origin costs on this machine.
//
//   relay rw|splice BYTES SOCKET ADDR:PORT [SOCKET ADDR:PORT ...]
//
// Listens on each Unix SOCKET; every connection accepted there is joined to a new TCP connection to its ADDR:PORT,
// and bytes are moved both ways until both ends have closed. No protocol at all: the client's first byte is data.
// `rw` moves them with read/write through a BYTES buffer per direction, `splice` through a pipe of BYTES per
// direction (F_SETPIPE_SZ) with splice(2). One thread, edge-triggered epoll; each wake-up pumps both directions of
// the connection until the kernel says EAGAIN, so no readiness is ever lost, reading while earlier bytes still wait
// to be written. Half-close is passed on (SHUT_WR once a direction has ended and is drained); an error on either
// side closes both.
//
// Only POSIX and Linux system calls (g++ -O2 -std=c++17, nothing else).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

bool g_splice = false;
size_t g_bytes = 0;

struct Pump {  // one direction: bytes read from `in` and written to `out`
  int in = -1, out = -1;
  std::unique_ptr<char[]> buf;  // rw: buf[start, end) is still to be written (not zeroed: a tunnel's cost is I/O)
  size_t start = 0, end = 0;
  int pipe_fd[2] = {-1, -1};  // splice: `pending` bytes sit in the pipe
  size_t pending = 0;
  bool eof = false, shut = false;
};

struct Conn {
  bool listener = false;  // epoll data points at a Conn; listeners use only fd[0] and origin
  int fd[2] = {-1, -1};   // client (Unix), origin (TCP)
  sockaddr_in origin{};
  Pump dir[2];  // 0: client to origin, 1: origin to client
  bool dead = false;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "relay: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

// Moves what it can: writes what is held and reads while there is room, until neither moves a byte. False on an
// error (the connection then closes). Each way out follows an EAGAIN that will be followed by an edge: `in` said
// EAGAIN with nothing held (EPOLLIN), or `out` said EAGAIN with bytes held (EPOLLOUT; a pipe full of partial pages
// also says EAGAIN to the read side, and draining it is what frees it).
bool pump(Pump& p) {
  for (bool moved = true; moved;) {
    moved = false;
    if (size_t have = g_splice ? p.pending : p.end - p.start; have > 0) {
      ssize_t n = g_splice ? splice(p.pipe_fd[0], nullptr, p.out, nullptr, have, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
                           : write(p.out, p.buf.get() + p.start, have);
      if (n == -1 && errno != EAGAIN) return false;
      if (n > 0) {
        moved = true;
        if (g_splice) p.pending -= size_t(n);
        else if ((p.start += size_t(n)) == p.end) p.start = p.end = 0;
      }
    }
    if (size_t room = g_bytes - (g_splice ? p.pending : p.end); !p.eof && room > 0) {
      ssize_t n = g_splice ? splice(p.in, nullptr, p.pipe_fd[1], nullptr, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
                           : read(p.in, p.buf.get() + p.end, room);
      if (n == -1 && errno != EAGAIN) return false;
      if (n >= 0) moved = true;
      if (n == 0) p.eof = true;
      if (n > 0 && g_splice) p.pending += size_t(n);
      if (n > 0 && !g_splice) p.end += size_t(n);
    }
  }
  if (p.eof && !p.shut && (g_splice ? p.pending : p.end - p.start) == 0) {
    if (shutdown(p.out, SHUT_WR) == -1 && errno != ENOTCONN) return false;
    p.shut = true;
  }
  return true;
}

void watch(int ep, int fd, Conn* c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = c;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) die("epoll_ctl");
}

// rw buffers of closed connections, reused: a new tunnel then costs no allocation (never more than the most
// connections open at once hold).
std::vector<std::unique_ptr<char[]>> g_spare;

void close_conn(Conn* c) {
  for (Pump& p : c->dir) {
    for (int fd : p.pipe_fd)
      if (fd != -1) close(fd);
    if (p.buf) g_spare.push_back(std::move(p.buf));
  }
  for (int fd : c->fd)
    if (fd != -1) close(fd);  // also leaves the epoll set
  c->dead = true;
}

void accept_some(int ep, Conn* l) {
  for (int i = 0; i < 64; ++i) {  // a bounded number per wake-up
    int cfd = accept4(l->fd[0], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd == -1) return;
    auto* c = new Conn;
    c->fd[0] = cfd;
    c->fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(c->fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bool ok = c->fd[1] != -1 &&
              (connect(c->fd[1], reinterpret_cast<sockaddr*>(&l->origin), sizeof l->origin) == 0 ||
               errno == EINPROGRESS);  // until it is connected, writes say EAGAIN and EPOLLOUT follows
    for (int d = 0; d < 2 && ok; ++d) {
      Pump& p = c->dir[d];
      p.in = c->fd[d];
      p.out = c->fd[1 - d];
      if (!g_splice && g_spare.empty()) p.buf.reset(new char[g_bytes]);
      else if (!g_splice) p.buf = std::move(g_spare.back()), g_spare.pop_back();
      else ok = pipe2(p.pipe_fd, O_NONBLOCK | O_CLOEXEC) == 0 && fcntl(p.pipe_fd[0], F_SETPIPE_SZ, int(g_bytes)) != -1;
    }
    if (!ok) {
      close_conn(c);
      delete c;
      continue;
    }
    for (int fd : c->fd) watch(ep, fd, c, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || (argc - 3) % 2 != 0) {
    std::fprintf(stderr, "usage: relay rw|splice BYTES SOCKET ADDR:PORT [SOCKET ADDR:PORT ...]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  g_splice = std::string(argv[1]) == "splice";
  g_bytes = std::strtoul(argv[2], nullptr, 10);
  if (g_bytes < 4096 || g_bytes > (16u << 20)) die("BYTES: 4096 to 16 MiB");
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 3; i + 1 < argc; i += 2) {
    auto* l = new Conn;  // lives as long as the process
    l->listener = true;
    std::string hp = argv[i + 1];
    size_t colon = hp.rfind(':');
    l->origin.sin_family = AF_INET;
    l->origin.sin_port = htons(uint16_t(std::atoi(hp.c_str() + colon + 1)));
    if (colon == std::string::npos || inet_pton(AF_INET, hp.substr(0, colon).c_str(), &l->origin.sin_addr) != 1)
      die("ADDR:PORT");
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    if (std::strlen(argv[i]) >= sizeof sun.sun_path) die("SOCKET too long");
    std::strcpy(sun.sun_path, argv[i]);
    unlink(argv[i]);
    l->fd[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd[0] == -1 || bind(l->fd[0], reinterpret_cast<sockaddr*>(&sun), sizeof sun) == -1 ||
        listen(l->fd[0], 4096) == -1)
      die("listen");
    watch(ep, l->fd[0], l, EPOLLIN);
  }
  std::vector<Conn*> closed;
  epoll_event evs[256];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n == -1 && errno != EINTR) die("epoll_wait");
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Conn*>(evs[i].data.ptr);
      if (c->listener) {
        accept_some(ep, c);
        continue;
      }
      if (c->dead) continue;  // closed earlier in this batch
      // EPOLLERR: a reset the pumps might not look at (a direction already ended reads nothing more).
      if ((evs[i].events & EPOLLERR) || !pump(c->dir[0]) || !pump(c->dir[1]) || (c->dir[0].shut && c->dir[1].shut)) {
        close_conn(c);
        closed.push_back(c);
      }
    }
    for (Conn* c : closed) delete c;  // only now: this batch may still have held events for it
    closed.clear();
  }
}
