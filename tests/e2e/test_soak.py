# SPDX-License-Identifier: Apache-2.0
"""Soak (issue 6 item 2): at least 100,000 tunnels and plain requests through one process, 64 at
once, then the proxy's descriptors and memory are back where they were after a warm-up, and every
decision and every done line was logged exactly once.

The clients are non-blocking sockets on one selector (64 jobs in flight at any time): HTTP CONNECT,
SOCKS5 and SOCKS4/4a echo tunnels (the payload goes with the handshake, then a half-close, and the
echo and the EOF come back) and keep-alive connections carrying several plain GETs each. The
origins run in a child process (their own CPU) on several ports of 127.0.0.2.

The count: always at least 100,000 in the plain build. Under AddressSanitizer the proxy is several
times slower, so the count is chosen from the warm-up's rate to stay within the time budget (and
printed); set BOXPROXY_SOAK_COUNT to force a count.
"""

import os
import re
import select
import socket
import sys
import time
import unittest

from fault_support import (LoopOrigin, anon_kib, fd_targets, memory_compared, proxy_env, rss_kib, sanitized,
                           socks4_bytes, socks5_bytes, stats_line, wait_settled)
from harness import ORIGIN_HOST, Proxy, wait_until

CONCURRENCY = 64
PLAIN_COUNT = 100_000          # tunnels and requests in all, never fewer in the plain build
SANITIZED_BUDGET_SECONDS = 60  # the main run's time under ASan (the file's budget is ~120 s)
SANITIZED_MIN_COUNT = 20_000
WARMUP_COUNT = 4_000
REQUESTS_PER_HTTP_CLIENT = 4
PAYLOAD = bytes(range(48, 48 + 40))  # 40 bytes each way per tunnel
ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
SOCKS5_OK = b"\x05\x00" + b"\x05\x00\x00\x01" + b"\x00" * 6
SOCKS4_OK = b"\x00\x5a" + b"\x00" * 6
HTTP_BODY = 16
ORIGIN_PORTS = 8
KINDS = ("connect", "socks", "http", "socks4", "connect", "socks")
# The origin's answer as the proxy passes it back (SPEC §8: hop-by-hop headers are its own).
HTTP_RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                 b"Connection: keep-alive\r\n\r\n" % HTTP_BODY + b"b" * HTTP_BODY)

# "Back where it was" means that no unit leaves anything behind. The smallest thing a unit allocates
# is a few dozen bytes (malloc's smallest chunk is 32; a libevent event is about 130), so a unit
# that left even one small allocation behind grows the proxy's anonymous memory by 32 bytes or
# more a unit: 3 MiB over 100,000. The bound is half that, 16 bytes a unit, on anonymous memory
# (the heap; a code page first touched late is not a leak). Compared in the plain build only
# (fault_support.memory_compared).
LEAK_BYTES_PER_UNIT = 16


class _Job:
    __slots__ = ("kind", "sock", "fd", "out", "expect", "got", "left", "phase", "units", "host", "port")


class SoakDriver:
    """Runs jobs CONCURRENCY at a time through the proxy's socket until `count` units (a tunnel, or
    one plain request) are done. Every job checks every byte it gets back. Plain epoll on
    non-blocking sockets: the Python side is most of the CPU a unit costs, so it is kept lean."""

    def __init__(self, socket_path, echo_ports, http_ports, deadline_seconds):
        self.socket_path = socket_path
        self.echo_ports = echo_ports
        self.http_ports = http_ports
        self.deadline_seconds = deadline_seconds
        self.ep = select.epoll()
        self.jobs = {}  # fd -> job
        self.serial = 0
        self.units = {"connect": 0, "socks": 0, "socks4": 0, "http": 0}
        self.failures = []

    def total(self):
        return sum(self.units.values())

    def close(self):
        for job in list(self.jobs.values()):
            job.sock.close()
        self.jobs.clear()
        self.ep.close()

    # -- jobs

    def _new_job(self):
        n = self.serial
        self.serial += 1
        job = _Job()
        job.kind = KINDS[n % len(KINDS)]
        job.got = b""
        job.phase = 0  # 0: waiting for the reply and the echo; 1: for the EOF after our half-close
        # A quarter go by name (--resolve), the rest by the permitted address.
        job.host = host = "origin.test" if n % 4 == 1 else ORIGIN_HOST
        if job.kind == "http":
            job.port = port = self.http_ports[n % len(self.http_ports)]
            job.left = job.units = REQUESTS_PER_HTTP_CLIENT
            out = self._http_request(host, port)
            job.expect = None
        else:
            job.port = port = self.echo_ports[n % len(self.echo_ports)]
            job.units = 1
            job.left = 0
            if job.kind == "connect":
                out = f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
                job.expect = ESTABLISHED + PAYLOAD
            elif job.kind == "socks":
                out = socks5_bytes(host, port)
                job.expect = SOCKS5_OK + PAYLOAD
            else:
                out = socks4_bytes(host, port)
                job.expect = SOCKS4_OK + PAYLOAD
            out += PAYLOAD  # pipelined: early data goes upstream once the tunnel is up
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(self.socket_path)
        s.setblocking(False)
        job.sock = s
        job.fd = s.fileno()
        self.jobs[job.fd] = job
        job.out = b""
        self.ep.register(job.fd, select.EPOLLIN)
        self._send(job, out)
        return job

    @staticmethod
    def _http_request(host, port):
        return (f"GET http://{host}:{port}/soak HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"User-Agent: soak\r\n\r\n").encode()

    def _send(self, job, data):
        """Sends `data` after anything still queued; waits for EPOLLOUT only while some is left."""
        had = bool(job.out)
        data = job.out + data
        try:
            n = job.sock.send(data)
        except BlockingIOError:
            n = 0
        job.out = data[n:]
        if bool(job.out) != had:
            self.ep.modify(job.fd, select.EPOLLIN | (select.EPOLLOUT if job.out else 0))

    def _fail(self, job, why):
        self.failures.append(f"{job.kind} {job.host}:{job.port}: {why}; got {job.got[:300]!r}")
        self._close(job)

    def _close(self, job):
        self.ep.unregister(job.fd)
        del self.jobs[job.fd]
        job.sock.close()

    def _readable(self, job):
        """Returns True when the job is over (done or failed)."""
        try:
            data = job.sock.recv(65536)
        except BlockingIOError:
            return False
        except OSError as e:
            self._fail(job, f"recv: {e}")
            return True
        if job.kind == "http":
            return self._http_readable(job, data)
        if job.phase == 0:
            if not data:
                self._fail(job, "EOF before the echo")
                return True
            job.got += data
            if len(job.got) < len(job.expect):
                return False
            if job.got != job.expect:
                self._fail(job, "wrong bytes")
                return True
            job.phase = 1
            job.sock.shutdown(socket.SHUT_WR)  # half-close: the origin's FIN comes back
            return False
        if data:
            job.got += data
            self._fail(job, "bytes after the echo")
            return True
        self.units[job.kind] += 1
        self._close(job)
        return True

    def _http_readable(self, job, data):
        if not data:
            self._fail(job, f"EOF with {job.left} requests left")
            return True
        job.got += data
        end = job.got.find(b"\r\n\r\n")
        if end == -1:
            return False
        total = end + 4 + HTTP_BODY
        if len(job.got) < total:
            return False
        if job.got != HTTP_RESPONSE:
            self._fail(job, "not the origin's response")
            return True
        job.got = b""
        job.left -= 1
        self.units["http"] += 1
        if job.left == 0:
            self._close(job)
            return True
        self._send(job, self._http_request(job.host, job.port))
        return False

    # -- the run

    def run(self, count):
        """Runs jobs until `count` more units are done; returns the seconds it took."""
        start = time.monotonic()
        deadline = start + self.deadline_seconds
        target = self.total() + count
        launched = self.total()
        while len(self.jobs) < CONCURRENCY and launched < target:
            launched += self._new_job().units
        idle_since = start
        jobs = self.jobs
        while jobs:
            now = time.monotonic()
            if now > deadline:
                raise AssertionError(f"soak did not finish within {self.deadline_seconds}s: "
                                     f"{self.total()} of {target} done, {len(jobs)} in flight")
            events = self.ep.poll(1.0)
            if not events:
                if now - idle_since > 10:
                    raise AssertionError(f"no progress for 10s with {len(jobs)} jobs in flight: "
                                         + ", ".join(f"{j.kind} {j.got[:80]!r}" for j in list(jobs.values())[:5]))
                continue
            idle_since = now
            for fd, mask in events:
                job = jobs.get(fd)
                if job is None:
                    continue
                if mask & select.EPOLLOUT and job.out:
                    self._send(job, b"")
                if mask & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR) and self._readable(job):
                    if len(self.failures) > 20:
                        raise AssertionError("soak failures:\n" + "\n".join(self.failures))
                    if launched < target:
                        launched += self._new_job().units
        if self.failures:
            raise AssertionError(f"{len(self.failures)} soak jobs failed:\n" + "\n".join(self.failures[:20]))
        return time.monotonic() - start


def count_log(path):
    """Counts of decision lines by (kind, class) in a text log, and the done lines whose tunnel
    byte counts are not the payload's (each tunnel carried exactly PAYLOAD both ways)."""
    counts = {}
    bad_tunnel_done = []
    other = []
    tunnel_done = f" up={len(PAYLOAD)} down={len(PAYLOAD)} "
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("egress "):
                if line.startswith("boxproxy: "):
                    other.append(line.rstrip("\n"))
                continue
            kind = line[7:line.index(" ", 7)]
            # The class, without the id= every line ends with (SPEC §12) and a --label after it.
            cls = re.sub(r" id=\d+( label=.*)?$", "", line[line.index(" class=") + 7:].rstrip("\n"))
            if cls.startswith("done "):
                if kind != "http" and tunnel_done not in line + " ":
                    bad_tunnel_done.append(line.rstrip("\n"))
                cls = "done"
            counts[(kind, cls)] = counts.get((kind, cls), 0) + 1
    return counts, bad_tunnel_done, other


class SoakTest(unittest.TestCase):

    def setUp(self):
        self.echo = LoopOrigin("echo", ports=ORIGIN_PORTS).start_process()
        self.addCleanup(self.echo.close)
        self.http = LoopOrigin("http", ports=ORIGIN_PORTS, body_size=HTTP_BODY).start_process()
        self.addCleanup(self.http.close)

    def test_100k_tunnels_and_requests(self):
        p = Proxy("--resolve", "origin.test=127.0.0.2", "--max-connections", "10000000", "--max-tunnels", "256",
                  "--head-timeout", "10", log_file=True, env=proxy_env())
        self.addCleanup(p.cleanup)
        p.start()
        asan = sanitized()
        forced = os.environ.get("BOXPROXY_SOAK_COUNT")
        driver = SoakDriver(p.socket_path, self.echo.ports, self.http.ports,
                            deadline_seconds=240 if asan else 150)
        self.addCleanup(driver.close)

        # Warm-up: the allocator's pools, libevent's tables and the kernel's socket caches reach
        # their working size; the figures are taken after it.
        warm_seconds = driver.run(WARMUP_COUNT)
        rate = driver.total() / warm_seconds

        def idle_fds():
            return fd_targets(p.pid)
        fds_before = wait_settled(idle_fds, timeout=3)
        anon_before = wait_settled(lambda: anon_kib(p.pid), timeout=3)
        rss_before = rss_kib(p.pid)

        if forced:
            count = int(forced)
        elif asan:
            count = max(SANITIZED_MIN_COUNT, min(PLAIN_COUNT, int(rate * SANITIZED_BUDGET_SECONDS)))
        else:
            count = PLAIN_COUNT
        seconds = driver.run(count)

        # Every client has closed its end; the proxy closes its ends as it sees that. Back to the
        # warm-up's descriptors (the same number and the same kinds) within a bounded wait.
        fds_after = wait_until(lambda: idle_fds() == fds_before and idle_fds(), timeout=5) or idle_fds()
        anon_after = wait_settled(lambda: anon_kib(p.pid), timeout=3)
        rss_after = rss_kib(p.pid)
        alive = p.alive()
        stats = stats_line(p) if alive else {}
        p.stop()

        total = driver.total()
        tunnels = total - driver.units["http"]
        counts, bad_done, messages = count_log(p.log_path)
        bound_kib = count * LEAK_BYTES_PER_UNIT / 1024
        print(f"\nsoak: {total} in all ({count} measured after a {WARMUP_COUNT} warm-up) in {seconds:.1f}s "
              f"({count / seconds:.0f}/s, warm-up {rate:.0f}/s){' under ASan' if asan else ''}; "
              f"tunnels {tunnels} (connect {driver.units['connect']}, socks5 {driver.units['socks']}, "
              f"socks4 {driver.units['socks4']}), plain requests {driver.units['http']} "
              f"on {driver.units['http'] // REQUESTS_PER_HTTP_CLIENT} keep-alive clients, {CONCURRENCY} at once; "
              f"fds {len(fds_before)} -> {len(fds_after)}; anonymous memory {anon_before} -> {anon_after} KiB "
              f"(bound +{bound_kib:.0f} KiB: {LEAK_BYTES_PER_UNIT} bytes a unit; VmRSS {rss_before} -> {rss_after} KiB)",
              file=sys.stderr)

        self.assertTrue(alive, "the proxy died during the soak")
        if not asan and not forced:
            self.assertGreaterEqual(count, PLAIN_COUNT)
        self.assertEqual((stats.get("open"), stats.get("clients"), stats.get("used")), (0, 0, total),
                         f"stats after the soak: {stats}")
        self.assertEqual(fds_after, fds_before, "descriptors not back to the warm-up's")
        if memory_compared("soak"):
            self.assertLess(anon_after - anon_before, bound_kib,
                            f"anonymous memory grew by {LEAK_BYTES_PER_UNIT} bytes or more a unit: a leak")
        # Every decision logged exactly once: an ok line and a done line per tunnel and request,
        # nothing refused, and each tunnel's done line counts exactly its payload.
        want = {}
        for kind, n in driver.units.items():
            want[(kind, "ok")] = n
            want[(kind, "done")] = n
        self.assertEqual(counts, want, "decision lines do not match the tunnels and requests made")
        self.assertEqual(bad_done, [], "tunnel done lines with byte counts other than the payload's")
        self.assertEqual([m for m in messages if "accept" in m], [], "accepts were paused")


if __name__ == "__main__":
    unittest.main()
