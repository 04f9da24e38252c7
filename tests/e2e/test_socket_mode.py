# SPDX-License-Identifier: Apache-2.0
"""The socket's mode is set at creation, never by name afterwards (SPEC §3; issue 10 item 12).

A chmod by path between bind and link follows a symlink swapped in at the temporary name and
changes the mode of whatever file it points at. The mode must come from the umask at bind: the
whole start-up, traced with strace, makes no chmod-family call at all, and the socket is 0600.
"""

import json
import os
import re
import signal
import stat
import subprocess
import tempfile
import unittest

from harness import START_TIMEOUT, binary

def untraced_leak_check_env():
    """The environment for a traced serve: LeakSanitizer (the sanitizer build) cannot run under
    ptrace and would abort at exit, so its leak check is left to the other tests."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))
    return env


CHMOD_CALLS = re.compile(r"^\d+\s+(chmod|fchmodat|fchmodat2|fchmod|lchmod)\(", re.M)


class SocketModeTest(unittest.TestCase):
    """Needs strace (scripts/install-deps installs it)."""

    def test_no_chmod_by_name_and_the_socket_is_0600_under_any_umask(self):
        for umask in (0o000, 0o022, 0o777):
            with self.subTest(umask=oct(umask)), tempfile.TemporaryDirectory(prefix="boxproxy-mode-") as d:
                path = os.path.join(d, "egress.sock")
                trace = os.path.join(d, "trace")
                process = subprocess.Popen(
                    ["strace", "-f", "-qq", "-e", "trace=%file,fchmod", "-o", trace, binary(), "serve",
                     "--socket", path],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                    preexec_fn=lambda: os.umask(umask), env=untraced_leak_check_env())
                try:
                    line = process.stdout.readline()
                    self.assertTrue(line, "serve did not print its listening line")
                    listening = json.loads(line)
                    self.assertEqual(stat.S_IMODE(os.lstat(path).st_mode), 0o600)
                    os.kill(listening["pid"], signal.SIGTERM)
                    self.assertEqual(process.wait(timeout=START_TIMEOUT), 0)
                finally:
                    if process.poll() is None:
                        process.kill()
                        process.wait()
                    process.stdout.close()
                with open(trace) as f:
                    calls = f.read()
                self.assertIn("link(", calls, "the trace must show the start-up's file calls")
                self.assertEqual(CHMOD_CALLS.findall(calls), [], calls)


if __name__ == "__main__":
    unittest.main()
