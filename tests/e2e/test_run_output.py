# SPDX-License-Identifier: Apache-2.0
"""What `boxproxy run` prints in text mode: the proxy's decision lines on standard error and, when
that is a terminal, no JSON stats line at the end; with --log json, or with standard error on a
pipe, or to --log-file, the stats line is still the log's last. The terminal is a pseudo-terminal of
the test's own; the origin is the test's own on 127.0.0.2. Skips, saying why, where this system
cannot make a box."""

import json
import os
import pty
import select
import subprocess
import time
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase
from harness import HttpOrigin

BODY = b"x" * 511 + b"\n"  # what the harness's HTTP origin answers GET / with


def run_on_a_terminal(argv, env, timeout=RUN_TIMEOUT, cwd=None):
    """Runs argv with standard error on a new pseudo-terminal and standard output on a pipe.
    Returns (exit status, stdout bytes, what the terminal showed, without carriage returns)."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal, env=env,
                                cwd=cwd)
    finally:
        os.close(terminal)
    shown = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: every holder of the terminal has closed it
                    break
                if not chunk:
                    break
                shown += chunk
            elif proc.poll() is not None:
                break
        stdout, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    return proc.returncode, stdout, shown.replace(b"\r\n", b"\n")


class BoxOriginTestCase(BoxTestCase):
    """Boxes (self.box) and the harness's HTTP origin on 127.0.0.2 (cls.http)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.http = HttpOrigin()

    @classmethod
    def tearDownClass(cls):
        cls.http.close()


class RunOutputTest(BoxOriginTestCase):

    def setUp(self):
        super().setUp()
        self.curl = ["curl", "-sS", "--max-time", "20", f"http://origin.test:{self.http.port}/"]

    def argv(self, *serve_args):
        return self.box.argv(["--resolve", "origin.test=127.0.0.2", *serve_args], self.curl)

    def test_a_text_log_on_a_terminal_ends_without_the_stats_line(self):
        status, stdout, shown = run_on_a_terminal(self.argv(), self.box.env())
        self.assertEqual(status, 0, shown)
        self.assertEqual(stdout, BODY)
        lines = shown.decode().splitlines()
        self.assertEqual([line.split(" id=")[0].split(" up=")[0] for line in lines],
                         [f'egress http host="origin.test" port={self.http.port} ip=127.0.0.2 class=ok',
                          f'egress http host="origin.test" port={self.http.port} ip=127.0.0.2 class=done'], shown)
        self.assertNotIn(b"{", shown)

    def test_a_json_log_on_a_terminal_ends_with_it(self):
        status, _, shown = run_on_a_terminal(self.argv("--log", "json"), self.box.env())
        self.assertEqual(status, 0, shown)
        last = json.loads(shown.decode().splitlines()[-1])
        self.assertEqual((last["event"], last["used"]), ("stats", 1))

    def test_a_log_file_ends_with_it(self):
        log = os.path.join(self.box.dir, "log")
        status, _, shown = run_on_a_terminal(self.argv("--log-file", log), self.box.env())
        self.assertEqual(status, 0, shown)
        self.assertEqual(shown, b"")
        with open(log) as f:
            last = f.read().splitlines()[-1]
        self.assertEqual(json.loads(last)["event"], "stats")

    def test_a_text_log_on_a_pipe_ends_with_it(self):
        # A program reading run's standard error (a supervisor, a CI log) still gets the totals.
        r = subprocess.run(self.argv(), stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT,
                           env=self.box.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stderr.decode().splitlines()[-1])["event"], "stats")


if __name__ == "__main__":
    unittest.main()
