# SPDX-License-Identifier: Apache-2.0
"""1,000 inspected connections held open at once (SPEC §18 Bounds, issue 24), and the memory they
cost against what the manual's RESOURCE BOUNDS states for an inspected connection, idle and busy.

Each connection is a CONNECT tunnel to an inspected endpoint, TLS done both ways (the box's with a
session-CA leaf, the proxy's own to the origin), one request served; then they idle. The memory
is the anonymous memory (/proc/PID/smaps_rollup Anonymous: heap and written data; not the PSS,
which moves as other processes sharing the binary's pages start and stop in a parallel run, and
did so by 1.3 MiB in CI) of serve and of its inspector, read
before the connections open (after a warm-up whose connections were closed) and with all of them
held: the growth per held connection. Then every connection sends a request the origin holds
(GET /hold, answered only when the test says): busy, a request in flight on each, read again.
The origin is the test's own (TLS on 127.0.0.2, one asyncio thread for every connection). The
test raises its own RLIMIT_NOFILE, and every wait is bounded (the whole test well under a minute
on an idle machine; how long it took is printed, not compared: a time here would measure the
machine's load, and the deadline only bounds the loops).

The same for connections whose box speaks HTTP/2 (h2 by ALPN; test_inspect_h2's client), held
with streams waiting behind their first and a window toward the box that never opens, against the
HTTP/2 bound RESOURCE BOUNDS works out from proxy/inspect/h2_front.h's constants."""

import os
import re
import ssl
import sys
import tempfile
import time
import unittest

from fault_support import memory_compared, proxy_env, raise_own_nofile, sanitized, wait_settled
from harness import ProxyTestCase, read_http_response, wait_until
from inspect_support import (INSPECTOR, ManyOrigin, anonymous_kib, connect_tls, inspector_of, make_signed_certificate,
                             make_test_ca)
from test_inspect_h2 import H2Client, h2, h2_tls

HELD = 1000
WARM_UP = 32
# Of the HELD, those that then pass a response the box does not read: each makes the kernel hold
# about 1.3 MiB of socket buffers besides the proxy's (measured), so not all of them.
FLOODED = 100
# HTTP/2: connections held with their first stream waiting on the origin (GET /hold), and then
# more whose first stream passes an endless response into a window the box never opens (GET
# /flood); on each, H2_WAITING streams behind the first, each a POST with a whole stream window of
# body (kH2StreamWindow, proxy/inspect/h2_front.h), held in the inspector until its turn.
HELD_H2 = 200
FLOODED_H2 = 50
H2_WAITING = 3
H2_WINDOW = 16 * 1024
# The loops' bound, in seconds (under the file's ctest TIMEOUT of 300): a bound on the waits, not
# a claim about speed; well under a minute plain on an idle machine, ASan's handshakes slower.
TIME_BOUND = 240
MANUAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "man", "boxproxy.1")


def manual_bounds_text():
    """RESOURCE BOUNDS as one line of plain words (requests, fonts and line breaks gone)."""
    with open(MANUAL) as f:
        text = f.read()
    section = text[text.index(".SH RESOURCE BOUNDS"):text.index(".SH CONFINEMENT")]
    return re.sub(r"\s+", " ", re.sub(r"^\.[A-Z]+ ?", "", section, flags=re.M))


def manual_bounds():
    """From RESOURCE BOUNDS: (serve's KiB, the inspector's idle KiB, its busy KiB) per inspected
    connection, as the manual states them."""
    flat = manual_bounds_text()
    serve = re.search(r"An inspected connection holds, in serve , its slot and under (\d+) KiB", flat)
    idle = re.search(r"in the inspector, at most (\d+) KiB idle", flat)
    busy = re.search(r"and at most (\d+) KiB busy", flat)
    if not (serve and idle and busy):
        raise AssertionError("RESOURCE BOUNDS does not state an inspected connection's memory in serve, idle and busy")
    return int(serve.group(1)), int(idle.group(1)), int(busy.group(1))


def manual_h2_bound():
    """From RESOURCE BOUNDS: the inspector's KiB at most for one connection whose box speaks HTTP/2."""
    found = re.search(r"an HTTP/2 connection holds in the inspector at most (\d+) KiB", manual_bounds_text())
    if not found:
        raise AssertionError("RESOURCE BOUNDS does not state an HTTP/2 connection's memory in the inspector")
    return int(found.group(1))


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectedConnectionsMemoryTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspect-memory-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        # Every connection's client socket and the origin's end of its upstream, in this process.
        want = 2 * (HELD + WARM_UP) + 256
        if raise_own_nofile(want) < want:
            self.skipTest(f"cannot raise this process's descriptor limit to {want}")
        ca = make_test_ca(self.dir)
        cert, key = make_signed_certificate(self.dir, ca, ["origin.test"], "origin")
        self.origin = ManyOrigin(cert, key)
        self.addCleanup(self.origin.close)
        self.session_ca = os.path.join(self.dir, "session-ca.pem")
        self.target = f"origin.test:{self.origin.port}"
        self.p = self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--upstream-ca", ca[0],
                            "--ca-out", self.session_ca, "--inspect", self.target,
                            "--max-tunnels", str(HELD + WARM_UP + 16),
                            # A keep-alive client's wait for its next request is bounded by the head
                            # timeout: longer than the test, so none is closed while held.
                            "--head-timeout", "300", log_file=True, env=proxy_env())
        self.inspector = inspector_of(self.p.pid)
        self.assertIsNotNone(self.inspector, "no boxproxy-inspect child of serve")
        self.context = ssl.create_default_context(cafile=self.session_ca)

    def open_many(self, count, deadline, connect, begin):
        """`count` inspected connections, each made by `connect()` and then given to `begin(tls)`:
        their TLS sockets (every one closed when one fails)."""
        held = []
        try:
            for _ in range(count):
                if time.monotonic() > deadline:
                    raise AssertionError(f"only {len(held)} of {count} connections opened in time")
                tls = connect()
                held.append(tls)
                begin(tls)
        except BaseException:
            for tls in held:
                tls.close()
            raise
        return held

    def open(self, count, deadline):
        """`count` inspected connections, each with one request served: the TLS sockets."""
        def served(tls):
            tls.sendall(f"GET /idle HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
            response = read_http_response(tls, timeout=10)
            if (response.status, response.body) != (200, b"ok\n"):
                raise AssertionError(f"a connection: {response}")
        return self.open_many(count, deadline, lambda: connect_tls(self.p, self.target, self.session_ca), served)

    def flooded_readings(self, deadline):
        """Once the origin has stopped writing its endless bodies (every flooded connection at what
        the proxy holds for a box that reads none): (the readings, the bytes the origin wrote)."""
        wait_settled(lambda: self.origin.flooded, timeout=max(1, deadline - time.monotonic()), still=1.0)
        return self.readings(), self.origin.flooded

    def readings(self):
        """(serve's, the inspector's) anonymous memory in KiB, each once it has stopped moving."""
        return (wait_settled(lambda: anonymous_kib(self.p.pid), timeout=3, still=0.5),
                wait_settled(lambda: anonymous_kib(self.inspector), timeout=3, still=0.5))

    def test_a_thousand_held_connections_stay_within_the_manuals_bound(self):
        serve_bound, idle_bound, busy_bound = manual_bounds()
        started = time.monotonic()
        deadline = started + TIME_BOUND - 10
        # Warm-up: the leaf is made, the code and the allocator's first pages are in; then closed.
        for tls in self.open(WARM_UP, deadline):
            tls.close()
        self.p.wait_log(kind="connect", cls="done", count=WARM_UP, timeout=10)
        before = self.readings()
        held = self.open(HELD, deadline)
        try:
            opened = time.monotonic() - started
            idle = self.readings()
            # Busy, waiting: a request on each, held by the origin before its response.
            for tls in held:
                tls.sendall(f"GET /hold HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
            self.assertTrue(wait_until(lambda: self.origin.holding >= HELD, max(1, deadline - time.monotonic())),
                            f"only {self.origin.holding} of {HELD} requests reached the origin")
            waiting = self.readings()
            self.origin.release()
            for i, tls in enumerate(held):
                response = read_http_response(tls, timeout=10)
                self.assertEqual((response.status, response.body), (200, b"ok\n"), f"connection {i}")
            # Busy, passing a response: FLOODED of them ask for an endless body and read none of
            # it, so that the inspector's queue toward the box fills to its bound, with the TLS
            # buffers of both sides in use; the rest stay idle.
            idle_again = self.readings()
            for tls in held[:FLOODED]:
                tls.sendall(f"GET /flood HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
            flooding, flooded = self.flooded_readings(deadline)
        finally:
            for tls in held:
                tls.close()
        elapsed = time.monotonic() - started

        def per(after, index, base=before, n=HELD):
            return (after[index] - base[index]) / n
        figures = {"serve idle": per(idle, 0), "inspector idle": per(idle, 1),
                   "serve waiting": per(waiting, 0), "inspector waiting": per(waiting, 1),
                   "inspector passing": per(idle_again, 1) + per(flooding, 1, idle_again, FLOODED)}
        print(f"\n{HELD} inspected connections held (opened in {opened:.1f} s, all done in {elapsed:.1f} s"
              f"{', ASan' if sanitized() else ''}): anonymous memory serve {before[0]} -> {idle[0]} -> {waiting[0]} KiB, inspector "
              f"{before[1]} -> {idle[1]} -> {waiting[1]} KiB (before, idle, a request waiting on each), "
              f"{idle_again[1]} -> {flooding[1]} KiB with {FLOODED} passing a response ({flooded >> 10} KiB of it "
              "written by the origin); per connection "
              + ", ".join(f"{name} {kib:.1f} KiB" for name, kib in figures.items())
              + f"; the manual: serve under {serve_bound} KiB, inspector at most {idle_bound} KiB idle, "
              f"{busy_bound} KiB busy", file=sys.stderr)
        self.assert_within(flooded, FLOODED, figures,
                           {"serve idle": serve_bound, "serve waiting": serve_bound, "inspector idle": idle_bound,
                            "inspector waiting": busy_bound, "inspector passing": busy_bound})

    def assert_within(self, flooded, floods, figures, bounds):
        """The `floods` connections asked for an endless body were given at least 64 KiB each (what
        the inspector holds for a box that reads none: the flood was real); each of `figures`
        (name: KiB a connection) is within its bound (name: KiB), in the plain build."""
        self.assertGreater(flooded, floods * 64 * 1024)
        if not memory_compared("inspected connections"):
            return
        for name, bound in bounds.items():
            self.assertLessEqual(figures[name], bound, name)

    def open_h2(self, path, count, deadline):
        """`count` inspected connections that chose h2, each telling the proxy its windows are 0
        (SETTINGS_INITIAL_WINDOW_SIZE, never opened: no DATA can reach the box), then GET `path` on
        its first stream and H2_WAITING POSTs of H2_WINDOW bytes behind it: their TLS sockets."""
        def begin(tls):
            if tls.selected_alpn_protocol() != "h2":
                raise AssertionError(f"ALPN chose {tls.selected_alpn_protocol()!r}, not h2")
            client = H2Client(tls, self.target)
            client.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
            client.request(path)
            for n in range(H2_WAITING):
                client.request(f"/upload/{n}", method="POST", body=b"u" * H2_WINDOW)
        return self.open_many(count, deadline, lambda: h2_tls(self.p, self.target, self.session_ca), begin)

    def test_held_http2_connections_stay_within_the_manuals_bound(self):
        bound = manual_h2_bound()
        started = time.monotonic()
        deadline = started + TIME_BOUND - 10
        # Warm-up: the leaf, nghttp2's code and the allocator's first pages. Closed by the box, those
        # whose first stream reached the origin stay in the inspector until it answers (the proxy
        # waits for an answer it has asked for), and on the origin's count of those holding.
        for tls in self.open_h2("/hold", WARM_UP, deadline):
            tls.close()
        warm = wait_settled(lambda: self.origin.holding, timeout=3, still=0.5)
        before = self.readings()
        held = []
        try:
            held += self.open_h2("/hold", HELD_H2, deadline)
            reached = wait_until(lambda: self.origin.holding >= warm + HELD_H2, max(1, deadline - time.monotonic()))
            self.assertTrue(reached,
                            f"only {self.origin.holding - warm} of {HELD_H2} first streams reached the origin")
            waiting = self.readings()
            held += self.open_h2("/flood", FLOODED_H2, deadline)
            flooding, flooded = self.flooded_readings(deadline)
        finally:
            for tls in held:
                tls.close()
            self.origin.release()
        elapsed = time.monotonic() - started
        figures = {"waiting": (waiting[1] - before[1]) / HELD_H2, "passing": (flooding[1] - waiting[1]) / FLOODED_H2}
        print(f"\n{HELD_H2} + {FLOODED_H2} HTTP/2 connections held ({elapsed:.1f} s{', ASan' if sanitized() else ''}), "
              f"each with {H2_WAITING} streams of {H2_WINDOW >> 10} KiB body waiting behind the first and the box's "
              f"window shut: inspector anonymous memory {before[1]} -> {waiting[1]} KiB (the first streams waiting on "
              f"the origin) -> {flooding[1]} KiB ({FLOODED_H2} passing a response, {flooded >> 10} KiB of it written "
              f"by the origin); per connection waiting {figures['waiting']:.1f} KiB, passing {figures['passing']:.1f} "
              f"KiB; the manual: at most {bound} KiB", file=sys.stderr)
        self.assert_within(flooded, FLOODED_H2, figures, {"waiting": bound, "passing": bound})


if __name__ == "__main__":
    unittest.main()
