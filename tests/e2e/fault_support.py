# SPDX-License-Identifier: Apache-2.0
"""Support for the soak, fault and resource-bound tests (issue 6 items 2-4).

What harness.py does not have: readings of the proxy from /proc (descriptors, resident memory, CPU
time), whether the binary runs under AddressSanitizer, the test's own descriptor limit, a stats
reading through SIGUSR1, and LoopOrigin, an origin driven by one selector that holds thousands of
connections without a thread each (the harness's origins spawn a thread per connection). Loopback
only, like the rest of the e2e tests; every loop is bounded in count and time.
"""

import errno
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import threading
import time

from harness import ORIGIN_HOST, binary, wait_until

# ----------------------------------------------------------------------------------------------
# The proxy as /proc shows it

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib(pid):
    """VmRSS of `pid` in KiB (everything resident: heap, stacks and the shared libraries' pages)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def anon_kib(pid):
    """Resident anonymous memory of `pid` in KiB (the heap and stacks, not file pages): what the
    proxy itself allocated. /proc/PID/statm's resident minus shared, in pages."""
    with open(f"/proc/{pid}/statm") as f:
        fields = f.read().split()
    return (int(fields[1]) - int(fields[2])) * _PAGE_KIB


def cpu_seconds(pid):
    """User plus system CPU time `pid` has used, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    # After the command: state is field 3 of stat(5), so utime (14) and stime (15) are at 11, 12.
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def fd_targets(pid):
    """What each open descriptor of `pid` points at, sorted (socket:[N] numbered as 'socket')."""
    out = []
    base = f"/proc/{pid}/fd"
    for name in os.listdir(base):
        try:
            target = os.readlink(os.path.join(base, name))
        except OSError:
            continue
        kind = target.split(":[", 1)[0] if ":[" in target else target
        out.append(kind)
    return sorted(out)


_SANITIZED = {}


def sanitized():
    """True when the boxproxy under test is built with AddressSanitizer (its memory figures then
    include redzones, shadow memory and the quarantine, and it runs slower)."""
    path = binary()
    if path not in _SANITIZED:
        found = False
        with open(path, "rb") as f:
            tail = b""
            for _ in range(4096):  # a binary of at most 4096 MiB is read, in 1 MiB pieces
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                if b"__asan_init" in tail + chunk:
                    found = True
                    break
                tail = chunk[-32:]
        _SANITIZED[path] = found
    return _SANITIZED[path]


# Under ASan, freed memory sits in a quarantine (256 MiB by default) before it is reused, so the
# resident size of a proxy that has churned through many connections grows with what it freed,
# whatever it still holds: a client that gives its buffer back looks like one that keeps it (issue
# 33: 30.4 KiB a client measured, all of it the quarantine). A proxy whose memory is measured runs
# with the quarantine off, so that freed memory is reused as in the plain build; use-after-free is
# still caught everywhere else (every other test keeps ASan's default quarantine).


def proxy_env():
    """The environment for a proxy whose memory is measured: ASan's quarantine off."""
    env = dict(os.environ)
    opts = env.get("ASAN_OPTIONS", "")
    extra = "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    env["ASAN_OPTIONS"] = f"{opts}:{extra}" if opts else extra
    return env


def memory_compared(what):
    """Whether this run's memory figures are the proxy's own, to be compared with a bound. In the
    plain build they are. Under ASan they are not, even with the quarantine off: every allocation
    carries redzones, the heap has an eighth more in shadow memory and ASan's allocator rounds to
    its own size classes, none of which a bound of the manual describes, and a slack for them
    would be a guess tuned to one machine. There the memory comparison is skipped (saying so) and
    the test's other assertions still run; the plain build, which CI runs as well, compares."""
    if not sanitized():
        return True
    print(f"\n{what}: memory not compared under ASan (the figure holds ASan's redzones, shadow memory and "
          f"size classes, not only the proxy's; the plain build compares it)", file=sys.stderr)
    return False


def raise_own_nofile(want):
    """Raises this process's soft RLIMIT_NOFILE toward `want` (at most the hard limit); returns
    the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return soft
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def stats_line(proxy, timeout=5.0):
    """Sends SIGUSR1 and returns the stats object it writes (SPEC §12). With a --log-file only the
    part of the log written after the signal is read, so a long log costs nothing."""
    prefix = '{"event":"stats"'
    if proxy.log_path is not None:
        start = os.path.getsize(proxy.log_path)

        def look():
            with open(proxy.log_path, "rb") as f:
                f.seek(start)
                found = [line for line in f.read().decode("utf-8", "replace").splitlines()
                         if line.startswith(prefix)]
            return found[-1] if found else None
    else:
        before = len([line for line in proxy.raw_log_lines() if line.startswith(prefix)])

        def look():
            found = [line for line in proxy.raw_log_lines() if line.startswith(prefix)]
            return found[-1] if len(found) > before else None
    proxy.proc.send_signal(signal.SIGUSR1)
    line = wait_until(look, timeout)
    if not line:
        raise AssertionError("no stats line after SIGUSR1")
    return json.loads(line)


def connect_waiting(proxy, timeout=5.0):
    """A client of the proxy's socket whose connect waits (up to `timeout`) while the listen backlog
    is full, as a blocking client's does, instead of failing with EAGAIN as one with a socket
    timeout does. The socket then has the usual timeout."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(timeout), 0))
    try:
        s.connect(proxy.socket_path)
    except OSError:
        s.close()
        raise
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 0))
    s.settimeout(timeout)
    return s


def wait_slots_free(proxy, timeout=5.0):
    """Waits until the stats line says no upstream connection is open; returns that stats object."""
    last = {}

    def free():
        last.update(stats_line(proxy))
        return last.get("open") == 0
    if not wait_until(free, timeout, interval=0.1):
        raise AssertionError(f"slots still taken: {last}")
    return last


def wait_settled(read, timeout=5.0, still=0.3, interval=0.05):
    """Polls `read()` (wait_until's poll) until it returns the same value for `still` seconds (or
    `timeout` passes); returns the last value. "Settled" means that nothing changes for `still`
    seconds: no event says that a figure such as resident memory will not change."""
    seen = {"value": read(), "since": time.monotonic()}

    def settled():
        value, now = read(), time.monotonic()
        if value != seen["value"]:
            seen.update(value=value, since=now)
        return now - seen["since"] >= still
    wait_until(settled, timeout, interval)
    return seen["value"]


def linger_reset(sock):
    """Closes a TCP socket with a reset (SO_LINGER on, timeout 0) instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ----------------------------------------------------------------------------------------------
# LoopOrigin


class LoopOrigin:
    """Origins on ORIGIN_HOST driven by one selector in one thread (or a child process), so a test
    can hold thousands of upstream connections. `mode`:

    - "echo": echoes every byte; on EOF it half-closes back and closes once all is written.
    - "http": reads a request head, answers `HTTP/1.1 200` with `body_size` bytes of body, closes.
    - "hold": reads and discards; closes when the peer does. `open_count()` says how many are open.
    - "sink": accepts and never reads (nor closes) until the origin is closed.
    - "reset": reads until `reset_after` bytes came, then closes with a reset (SO_LINGER 0).
    - "flood": never reads; sends `body_size` bytes as fast as the peer takes them.
    - "endless-head": reads a request head, then sends `body_size` bytes of response header lines
      that never end (an origin whose response head has no end).

    `ports` listeners are opened (connections spread over several ports leave the kernel more
    four-tuples for many short connections). Counters: accepted, closed, bytes_in.
    """

    CHUNK = 1 << 16

    def __init__(self, mode, ports=1, host=ORIGIN_HOST, body_size=16, reset_after=1, backlog=1024):
        self.mode = mode
        self.body_size = body_size
        self.reset_after = reset_after
        self.listeners = []
        for _ in range(ports):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, 0))
            s.listen(backlog)
            s.setblocking(False)
            self.listeners.append(s)
        self.host = host
        self.ports = [s.getsockname()[1] for s in self.listeners]
        self.port = self.ports[0]
        self.accepted = 0
        self.closed = 0
        self.resets_sent = 0
        self.bytes_in = 0
        self.errors = []
        self._conns = {}  # fd -> state dict
        self._stop_r, self._stop_w = os.pipe()
        self._thread = None
        self._child = None
        self._body_chunk = ((b"X-Pad: " + b"h" * 1015 + b"\r\n") if mode == "endless-head"
                            else (b"b" * 1023 + b"\n")) * 64

    # -- running

    def start(self):
        """Serves in a thread of this process."""
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def start_process(self):
        """Serves in a forked child process (its own CPU; its counters stay in the child)."""
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                self._loop(max_seconds=600)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        self._child = pid
        for s in self.listeners:
            s.close()
        return self

    def close(self):
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._child is not None:
            if not wait_until(lambda: os.waitpid(self._child, os.WNOHANG)[0], 5):
                os.kill(self._child, signal.SIGKILL)
                os.waitpid(self._child, 0)
            self._child = None
        for fd in (self._stop_r, self._stop_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def open_count(self):
        return self.accepted - self.closed

    # -- the loop

    def _loop(self, max_seconds=3600):
        sel = selectors.DefaultSelector()
        for s in self.listeners:
            sel.register(s, selectors.EVENT_READ, ("listen", s))
        sel.register(self._stop_r, selectors.EVENT_READ, ("stop", None))
        deadline = time.monotonic() + max_seconds
        try:
            while time.monotonic() < deadline:
                for key, events in sel.select(timeout=0.2):
                    what, obj = key.data
                    if what == "stop":
                        return
                    if what == "listen":
                        self._accept(sel, obj)
                    else:
                        self._serve(sel, obj, events)
        finally:
            for state in list(self._conns.values()):
                try:
                    state["sock"].close()
                except OSError:
                    pass
            self._conns.clear()
            for s in self.listeners:
                try:
                    s.close()
                except OSError:
                    pass
            sel.close()

    def _accept(self, sel, listener):
        for _ in range(256):
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.errors.append(e)
                return
            conn.setblocking(False)
            self.accepted += 1
            state = {"sock": conn, "out": bytearray(), "head": b"", "left": 0, "in": 0, "eof": False}
            self._conns[conn.fileno()] = state
            if self.mode == "flood":
                state["left"] = self.body_size
                sel.register(conn, selectors.EVENT_WRITE, ("conn", state))
            elif self.mode != "sink":
                sel.register(conn, selectors.EVENT_READ, ("conn", state))

    def _finish(self, sel, state, reset=False):
        sock = state["sock"]
        self._conns.pop(sock.fileno(), None)
        try:
            sel.unregister(sock)
        except (KeyError, ValueError):
            pass
        if reset:
            self.resets_sent += 1
            linger_reset(sock)
        else:
            sock.close()
        self.closed += 1

    def _want(self, sel, state):
        events = 0 if state["eof"] or self.mode == "flood" else selectors.EVENT_READ
        if state["out"] or state["left"]:
            events |= selectors.EVENT_WRITE
        if events == 0:
            try:
                sel.unregister(state["sock"])
            except (KeyError, ValueError):
                pass
            return False
        sel.modify(state["sock"], events, ("conn", state))
        return True

    def _serve(self, sel, state, events):
        sock = state["sock"]
        if events & selectors.EVENT_READ:
            try:
                data = sock.recv(self.CHUNK)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                self._finish(sel, state)
                return
            if data is not None:
                if not data:
                    state["eof"] = True
                    if self.mode != "echo" or not state["out"]:
                        self._finish(sel, state)
                        return
                else:
                    self.bytes_in += len(data)
                    state["in"] += len(data)
                    if self.mode == "echo":
                        state["out"] += data
                    elif self.mode in ("http", "endless-head") and state["head"] is not None:
                        state["head"] += data
                        if b"\r\n\r\n" in state["head"]:
                            state["head"] = None
                            if self.mode == "http":
                                state["out"] += (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                                 b"Content-Length: %d\r\n\r\n" % self.body_size)
                            else:
                                state["out"] += b"HTTP/1.1 200 OK\r\n"
                            state["left"] = self.body_size
                    elif self.mode == "reset" and state["in"] >= self.reset_after:
                        self._finish(sel, state, reset=True)
                        return
        if state["out"] or state["left"]:
            if not self._flush(sel, state):
                return
        if self.mode == "echo" and state["eof"] and not state["out"]:
            self._finish(sel, state)
            return
        if self.mode in ("http", "endless-head") and state["head"] is None and not state["out"] and not state["left"]:
            self._finish(sel, state)
            return
        self._want(sel, state)

    def _flush(self, sel, state):
        sock = state["sock"]
        for _ in range(64):
            if not state["out"] and state["left"]:
                n = min(state["left"], len(self._body_chunk))
                state["out"] += self._body_chunk[:n]
                state["left"] -= n
            if not state["out"]:
                return True
            try:
                sent = sock.send(state["out"])
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                self._finish(sel, state)
                return False
            del state["out"][:sent]
        return True


def socks5_bytes(host, port):
    """A SOCKS5 greeting (no auth) and CONNECT request, in one piece."""
    try:
        body = b"\x01" + socket.inet_aton(host)
    except OSError:
        name = host.encode()
        body = b"\x03" + bytes([len(name)]) + name
    return b"\x05\x01\x00" + b"\x05\x01\x00" + body + struct.pack("!H", port)


def socks4_bytes(host, port):
    """A SOCKS4 (an IPv4 literal) or SOCKS4a (a name) CONNECT request."""
    try:
        return b"\x04\x01" + struct.pack("!H", port) + socket.inet_aton(host) + b"user\x00"
    except OSError:
        return b"\x04\x01" + struct.pack("!H", port) + b"\x00\x00\x00\x01user\x00" + host.encode() + b"\x00"


def is_resetish(error):
    return isinstance(error, OSError) and error.errno in (errno.ECONNRESET, errno.EPIPE)
