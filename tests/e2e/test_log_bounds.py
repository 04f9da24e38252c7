# SPDX-License-Identifier: Apache-2.0
"""A log reader that stalls never stalls the proxy (SPEC §12): the proxy's standard error is a pipe that
nobody reads (a supervisor's `stderr=PIPE` it never drains); writes never block, a bounded queue holds what
the pipe does not take, whole lines past it are dropped and counted, and `{"event":"log-dropped","n":N}` is
written once writing works again. SIGTERM works with the pipe full.
"""

import fcntl
import json
import signal
import socket
import struct
import termios
import threading
import time
import unittest

from harness import (OriginsMixin, Proxy, ProxyTestCase, connect_request, parse_log_line, recv_all, recv_exact,
                     wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
# A 200-character name off the list: each refusal line carries it, so the 64 KiB pipe and the proxy's
# queue fill after a few hundred lines and the rest must be dropped (counted).
LONG_NAME = ("a" * 60 + ".") * 3 + "b" * 16 + ".test"
REFUSALS = 2500
TUNNELS = 300
CLIENT_TIMEOUT = 3.0


# fcntl(2) commands for a pipe's size (Python has them as fcntl.F_SETPIPE_SZ from 3.10).
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


def pipe_queued(pipe):
    """Bytes written into `pipe` and not yet read (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(pipe.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


class StalledReaderProxy(Proxy):
    """A Proxy whose standard error pipe is not read until `start_reading()`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reading = threading.Event()

    def _read_stderr(self):
        self.reading.wait(60)
        super()._read_stderr()

    def start_reading(self):
        self.reading.set()

    def cleanup(self):
        self.reading.set()
        super().cleanup()


class StalledLogReaderTest(OriginsMixin, ProxyTestCase):

    def stalled_proxy(self, *args):
        p = StalledReaderProxy("--allow", f"origin.test:{self.echo.port}", "--resolve", "origin.test=127.0.0.2", *args)
        self.addCleanup(p.cleanup)
        self._proxies.append(p)
        p.start()
        return p

    def refuse_many(self, p, n):
        for i in range(n):
            s = p.connect(timeout=CLIENT_TIMEOUT)
            try:
                s.sendall(connect_request(f"{LONG_NAME}:443"))
                reply = recv_all(s, timeout=CLIENT_TIMEOUT)
            finally:
                s.close()
            self.assertTrue(reply.startswith(b"HTTP/1.1 403"), f"refusal {i}: {reply[:80]!r}")

    def tunnel_many(self, p, n):
        for i in range(n):
            s = p.connect(timeout=CLIENT_TIMEOUT)
            try:
                s.sendall(connect_request(f"origin.test:{self.echo.port}"))
                self.assertEqual(recv_exact(s, len(ESTABLISHED), timeout=CLIENT_TIMEOUT), ESTABLISHED, f"tunnel {i}")
                s.sendall(b"ping")
                self.assertEqual(recv_exact(s, 4, timeout=CLIENT_TIMEOUT), b"ping", f"tunnel {i}")
            finally:
                s.close()

    def check_every_line_is_written_or_counted(self, fmt):
        args = ("--log", fmt) if fmt == "json" else ()
        p = self.stalled_proxy(*args)
        self.tunnel_many(p, TUNNELS)
        self.refuse_many(p, REFUSALS)
        expected = REFUSALS + 2 * TUNNELS  # a refusal line each; an ok and a done line per tunnel
        # Every done line is owed once the echo origin has seen the close.
        wait_until(lambda: self.echo.count() >= TUNNELS, 5)
        p.start_reading()
        dropped_line = p.wait_raw(r'^\{"event":"log-dropped","n":\d+\}$', timeout=10)

        def written_and_dropped():
            raw = p.raw_log_lines()
            dropped = sum(json.loads(line)["n"] for line in raw if line.startswith('{"event":"log-dropped"'))
            return raw, [line for line in map(parse_log_line, raw) if line is not None], dropped

        # Lines that were queued come first; the count comes once the queue has drained: wait
        # (at most 10 s) until every line is accounted for, then check.
        def accounted():
            _, decisions, dropped = written_and_dropped()
            return len(decisions) + dropped >= expected
        wait_until(accounted, 10)
        raw, decisions, dropped = written_and_dropped()
        self.assertGreater(dropped, 0, f"nothing dropped: {dropped_line}")
        self.assertEqual(len(decisions) + dropped, expected,
                         f"{len(decisions)} lines written + {dropped} dropped != {expected}")
        for line in raw:
            if fmt == "json":
                json.loads(line)  # every line, the log-dropped one too, is JSON
            # Whole lines only: nothing glued or cut.
            self.assertTrue(parse_log_line(line) is not None or line.startswith('{"event":'), line[:120])
        # Writing works again: a new decision is logged at once.
        self.refuse_many(p, 1)
        p.wait_log(count=len([d for d in decisions if d.cls == "not-listed"]) + 1, cls="not-listed")
        p.stop()

    def test_text_log_to_a_pipe_nobody_reads(self):
        self.check_every_line_is_written_or_counted("text")

    def test_json_log_to_a_pipe_nobody_reads(self):
        self.check_every_line_is_written_or_counted("json")

    def check_sigterm_with_the_pipe_full(self, fmt):
        args = ("--log", fmt) if fmt == "json" else ()
        p = self.stalled_proxy(*args)
        self.refuse_many(p, REFUSALS // 2)
        started = time.monotonic()
        p.proc.send_signal(signal.SIGTERM)
        try:
            code = p.proc.wait(timeout=1.0)
        finally:
            p.start_reading()
        self.assertEqual(code, 0)
        self.assertLess(time.monotonic() - started, 1.0)
        p.stop()  # collects the rest; already exited

    def test_sigterm_exits_with_a_full_text_log_pipe(self):
        self.check_sigterm_with_the_pipe_full("text")

    def test_sigterm_exits_with_a_full_json_log_pipe(self):
        self.check_sigterm_with_the_pipe_full("json")

    def test_log_file_stays_whole_lines(self):
        # A regular file is written as before: every line, whole, nothing dropped.
        p = self.proxy("--allow", "origin.test", log_file=True)
        self.refuse_many(p, 300)
        p.wait_log(count=300, cls="not-listed")
        raw = p.raw_log_lines()
        self.assertFalse([l for l in raw if "log-dropped" in l])
        self.assertFalse([l for l in raw if parse_log_line(l) is None])


class BridgeLogTest(ProxyTestCase):
    """The bridge writes its standard error the same way: JSON lines, never a blocking write."""

    def test_bridge_stats_with_a_stalled_reader_then_read(self):
        import subprocess
        from harness import binary
        p = self.proxy()
        bridge = subprocess.Popen([binary(), "bridge", "--socket", p.socket_path, "--listen", "127.0.0.1:0"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # The smallest pipe the kernel makes (one page), so that the stats lines surely fill it
        # however many of the signals the bridge's loop coalesces into one line.
        fcntl.fcntl(bridge.stderr.fileno(), F_SETPIPE_SZ, 4096)
        pipe_bytes = fcntl.fcntl(bridge.stderr.fileno(), F_GETPIPE_SZ)
        try:
            listening = json.loads(bridge.stdout.readline())
            host, port = listening["listen"][0].rsplit(":", 1)
            # More stats lines than the pipe holds, nobody reading; signals that arrive within one
            # pass of the loop make one line.
            for _ in range(3000):
                bridge.send_signal(signal.SIGUSR1)
                time.sleep(0.0002)  # a sleep: a stream of signals paced, not a wait on anything
            # The pipe fills (less room left than a line or two): the bridge's writes now wait.
            wait_until(lambda: pipe_queued(bridge.stderr) > pipe_bytes - 1024, 5)
            # The bridge still relays: a refusal comes back through it.
            with socket.create_connection((host, int(port)), timeout=CLIENT_TIMEOUT) as s:
                s.sendall(connect_request("10.0.0.1:443"))
                self.assertTrue(recv_all(s, timeout=CLIENT_TIMEOUT).startswith(b"HTTP/1.1 403"))
            bridge.send_signal(signal.SIGTERM)
            # Read while it exits: what it wrote is whole JSON lines, and it exits 0 promptly.
            out = bridge.communicate(timeout=5)[1]
            self.assertEqual(bridge.returncode, 0)
        finally:
            if bridge.poll() is None:
                bridge.kill()
                bridge.wait(timeout=5)
        lines = out.decode().splitlines()
        # The pipe was filled (to within one line: only whole lines go in); what did not fit waited
        # in the bridge's bounded queue, and was dropped at exit rather than block SIGTERM.
        self.assertGreater(len(out), pipe_bytes - 200, "the pipe was never full")
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                self.fail(f"not a JSON line: {line!r}")
            self.assertIn(obj["event"], ("stats", "log-dropped", "message"), line)


if __name__ == "__main__":
    unittest.main()
