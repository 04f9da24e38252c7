# SPDX-License-Identifier: Apache-2.0
"""examples/inspected-session (issue 37 item 9), as the unit would run it: the unit's ExecStart
from the manual's systemd example, with the example's s1.env options, its s1.json and a token
file made as its README says (0640). /etc/boxproxy and %t are directories of the test's; the
GitHub API is the README test's stand-in on 127.0.0.2 (its certificate named api.github.com, the
policy's host given its port), reached with --permit, --resolve and --upstream-ca added.

What the example promises: the session's CA lands in the session's runtime directory beside the
socket (mode 0644), so the one directory bind-mounted into the box carries both; a client that
trusts that file alone gets GitHub's answer with the token the proxy injected; what read-only and
no-hooks refuse never reaches the origin."""

import json
import os
import shlex
import stat
import subprocess
import tempfile
import unittest

from box_support import make_certificate
from harness import DNS_HOST, START_TIMEOUT, STOP_TIMEOUT, binary
from inspect_support import CURL, INSPECTOR, curl
from test_manual_systemd import systemd_unit
from test_readme_inspection import GitHubStandIn

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "inspected-session")


def example_options():
    """BOXPROXY_OPTIONS of the example's s1.env, split as systemd splits $BOXPROXY_OPTIONS."""
    with open(os.path.join(EXAMPLE, "s1.env")) as f:
        (line,) = [line for line in f if line.startswith("BOXPROXY_OPTIONS=")]
    return shlex.split(shlex.split(line.partition("=")[2])[0])


@unittest.skipUnless(os.path.exists(INSPECTOR) and CURL, "needs boxproxy-inspect next to boxproxy, and curl")
class InspectedSessionExampleTest(unittest.TestCase):

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspected-session-")
        self.addCleanup(tmp.cleanup)
        self.etc = os.path.join(tmp.name, "etc", "boxproxy")
        self.runtime = os.path.join(tmp.name, "run")  # %t
        os.makedirs(self.etc)
        self.token = "ghp_example_session_token_0123456789"
        cert, key = make_certificate(tmp.name, "api.github.com")
        self.github = GitHubStandIn(cert, key, self.token)
        self.addCleanup(self.github.close)
        self.cert = cert

    def local(self, text):
        return text.replace("/etc/boxproxy", self.etc).replace("/run/", self.runtime + "/")

    def start_session(self):
        unit = systemd_unit()
        session_directory = os.path.join(self.runtime, unit["RuntimeDirectory"][0].replace("%i", "s1"))
        os.makedirs(session_directory, mode=0o700)  # what systemd makes for the instance
        with open(os.path.join(EXAMPLE, "s1.json")) as f:
            policy = f.read().replace('"api.github.com"', f'"api.github.com:{self.github.port}"')
        with open(os.path.join(self.etc, "s1.json"), "w") as f:
            f.write(policy)
        key_file = os.path.join(self.etc, "s1.gh.key")
        os.close(os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640))  # install -m 0640 /dev/null
        with open(key_file, "w") as f:  # written in place, as the README does
            f.write(self.token + "\n")
        exec_start = unit["ExecStart"][0].replace("$BOXPROXY_OPTIONS", "").replace("%t", self.runtime)
        argv = [binary()] + exec_start.replace("%i", "s1").split()[1:] + [self.local(o) for o in example_options()]
        argv += ["--permit", "127.0.0.2/32", "--resolve", "api.github.com=127.0.0.2", "--upstream-ca", self.cert,
                 "--nameserver", DNS_HOST]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(self.stop, proc)
        line = proc.stdout.readline()  # the listening line: the CA was written before it
        if not line.startswith(b'{"event":"listening"'):
            proc.terminate()
            self.fail(f"serve did not start: {line!r} {proc.stderr.read()!r}")
        self.assertEqual(oct(os.stat(key_file).st_mode & 0o777), "0o640")
        return session_directory, json.loads(line)["socket"]

    @staticmethod
    def stop(proc):
        proc.terminate()
        proc.wait(timeout=STOP_TIMEOUT + START_TIMEOUT)
        proc.stdout.close()
        proc.stderr.close()

    def test_the_session_directory_holds_the_socket_and_the_ca(self):
        session_directory, socket_path = self.start_session()
        self.assertEqual(sorted(os.listdir(session_directory)), ["ca.pem", "egress.sock"])
        self.assertEqual(os.path.dirname(socket_path), session_directory)
        ca = os.path.join(session_directory, "ca.pem")
        self.assertEqual(stat.S_IMODE(os.stat(ca).st_mode), 0o644)
        port = self.github.port
        proxy = f"socks5h://localhost{socket_path}"

        def status(method, path):
            code, out, err = curl("--proxy", proxy, "--cacert", ca, "-X", method, "-H", "authorization: Bearer box",
                                  "-o", "/dev/null", "-w",
                                  "%{http_code}", f"https://api.github.com:{port}{path}")
            self.assertEqual(code, 0, err)
            return out

        # The box's own token is dropped, the file's goes on.
        self.assertEqual(status("GET", "/user"), "200")
        self.assertEqual(status("DELETE", "/repos/acme/widget"), "403")  # read-only
        self.assertEqual(status("GET", "/repos/acme/widget/hooks/1"), "403")  # no-hooks
        self.assertEqual(self.github.seen, [("GET", "/user", f"Bearer {self.token}")])


if __name__ == "__main__":
    unittest.main()
