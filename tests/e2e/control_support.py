# SPDX-License-Identifier: Apache-2.0
"""A client of the supervisor's channel (SPEC §15) for the tests: JSON lines both ways.

Replies carry "ok", events never do; a request's reply is found by reading lines in order and
keeping the events met on the way in `events`. Every read is bounded in time and bytes.
"""

import json
import os
import select
import socket
import time

from fault_support import proxy_env as measured_env, rss_kib  # noqa: F401 (for the tests that import them here)
from harness import SOCKET_TIMEOUT, wait_until

MAX_LINE = 64 * 1024


def control_pair():
    """A socketpair: (ours, the proxy's). Pass the proxy's with pass_fds and close it after start."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return ours, theirs


def proxy_with_control_fd(test, *args, start=None, **kwargs):
    """A proxy started with --control-fd (by `start`, the test's own start-up when it adds options
    of its own, else test.proxy); returns (proxy, ControlClient)."""
    ours, theirs = control_pair()
    fd = theirs.fileno()
    p = (start or test.proxy)("--control-fd", str(fd), *args, pass_fds=(fd,), **kwargs)
    theirs.close()
    client = ControlClient(ours)
    test.addCleanup(client.close)
    return p, client


def has_clock_hooks(client):
    """True when the binary was built with BOXPROXY_TEST_HOOKS: only then does it know the
    advance-clock op (an unknown op is an error reply, and changes nothing)."""
    return client.request("advance-clock", seconds=0)["ok"]


def skip_without_clock_hooks(test, client):
    if not has_clock_hooks(client):
        test.skipTest("the binary was built without BOXPROXY_TEST_HOOKS (scripts/test-all builds with them): "
                      "its clock cannot be advanced")


def advance_clock(client, seconds):
    """Moves the proxy's clock `seconds` forward (proxy/clock.h): its timers now due fire at once."""
    r = client.request("advance-clock", seconds=seconds)
    if not r.get("ok"):
        raise AssertionError(f"advance-clock: {r}")


def proxy_on_clock(test, *args, **kwargs):
    """A proxy whose clock the test moves: proxy_with_control_fd, and the test skipped when the
    binary cannot have its clock moved. Returns (proxy, ControlClient)."""
    p, client = proxy_with_control_fd(test, *args, **kwargs)
    skip_without_clock_hooks(test, client)
    return p, client


def wait_stats(client, timeout=5.0, **want):
    """Polls the stats op until its keys equal `want` (e.g. clients=1: the proxy has accepted a
    client, and armed its timer); returns that reply, or raises AssertionError."""
    last = {}

    def has_them():
        last.update(client.request("stats"))
        return all(last.get(k) == v for k, v in want.items())
    if not wait_until(has_them, timeout):
        raise AssertionError(f"stats never had {want}: {last}")
    return last


def readable_within(sock, wait):
    """True when `sock` has something to read (bytes, EOF or an error) within `wait` seconds.
    poll, not select: a test may hold more than 1024 descriptors."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(wait * 1000))


def nothing_to_read(sock, wait=0.3):
    """True when `sock` has nothing to read, not even EOF, for `wait` seconds: the proxy has
    neither answered nor closed."""
    return not readable_within(sock, wait)


CLOCK_SHORT_BY = 2.0  # seconds short of a timeout the clock is first moved to (see past_the_timeout)


def past_the_timeout(test, client, sock, timeout, what, within=3.0):
    """Runs one timeout on the proxy's clock, for `sock` whose timer of `timeout` seconds the proxy
    has armed already: nothing comes on `sock` now, nor with the clock moved to CLOCK_SHORT_BY
    seconds short of the timeout, and something (an answer, or EOF) within `within` seconds of real
    time once the clock has passed it. Short of it by whole seconds, because the real time since
    the timer was armed counts too; the timeout itself is long (30 s), so that real time alone
    never reaches it during a test. The caller reads what came."""
    test.assertTrue(nothing_to_read(sock), f"{what}: answered or closed at once")
    advance_clock(client, timeout - CLOCK_SHORT_BY)
    test.assertTrue(nothing_to_read(sock), f"{what}: answered or closed {CLOCK_SHORT_BY}s before its {timeout}s")
    advance_clock(client, CLOCK_SHORT_BY + 1)
    test.assertTrue(readable_within(sock, within),
                    f"{what}: nothing within {within}s of real time once the clock passed {timeout}s")


def connect_control_socket(path, timeout=SOCKET_TIMEOUT):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return ControlClient(s)


class ControlClient:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.events = []
        self.next_id = 1

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def read_line(self, timeout=SOCKET_TIMEOUT):
        """The next line as parsed JSON; None at EOF; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line from the control channel within {timeout}s (have {self.buf[:200]!r})")
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                continue
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
            if len(self.buf) > 4 * MAX_LINE and b"\n" not in self.buf:
                raise AssertionError("a control line longer than any reply")
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def reply(self, timeout=SOCKET_TIMEOUT):
        """The next reply; events met on the way are kept in self.events."""
        deadline = time.monotonic() + timeout
        while True:
            obj = self.read_line(max(0.01, deadline - time.monotonic()))
            if obj is None:
                raise AssertionError("the control channel closed before a reply")
            if "ok" in obj:
                return obj
            self.events.append(obj)

    def request(self, op, timeout=SOCKET_TIMEOUT, **fields):
        """Sends {"op":op,"id":N,...}; returns its reply (whose id must be N)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"op": op, "id": rid, **fields})
        r = self.reply(timeout)
        if r.get("id") != rid:
            raise AssertionError(f"reply to request {rid} carries id {r.get('id')!r}: {r}")
        return r

    def event(self, name, timeout=SOCKET_TIMEOUT, **want):
        """The first event named `name` whose keys equal `want` (kept ones first); replies on the way
        are an error."""
        for i, e in enumerate(self.events):
            if e.get("event") == name and all(e.get(k) == v for k, v in want.items()):
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {name} event with {want} within {timeout}s; kept: {self.events[-10:]}")
            obj = self.read_line(left)
            if obj is None:
                raise AssertionError(f"the control channel closed before a {name} event")
            if "ok" in obj:
                raise AssertionError(f"a reply came while waiting for a {name} event: {obj}")
            if obj.get("event") == name and all(obj.get(k) == v for k, v in want.items()):
                return obj
            self.events.append(obj)

    def closed_within(self, timeout):
        """True when the proxy closes its end within `timeout` (lines before it are kept as events)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                obj = self.read_line(max(0.01, deadline - time.monotonic()))
            except AssertionError:
                return False
            except OSError:
                return True
            if obj is None:
                return True
            self.events.append(obj)
        return False


def fd_is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
