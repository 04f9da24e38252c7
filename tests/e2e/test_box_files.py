# SPDX-License-Identifier: Apache-2.0
"""What a `boxproxy run` box must not read or hold (SPEC §19a, issue 35): every file the proxy is
given that the box must not read (--secret, --ca-key, --auth-token-file) is unreadable in the box
whatever name it was given by (/dev/fd/N, /proc/self/fd/N, a symbolic link), a file that cannot be
masked safely is a usage error, and no descriptor of run's but 0, 1 and 2 reaches COMMAND. The
tests skip, saying why, where this system cannot make a box."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase
from harness import Proxy, binary
from test_inspect_ca import make_ca

INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")
VALUE = "sk-the-real-value-0123456789abcdef"

# In the box: for each path, "readable" (and whether the value is in it) or the error; then every
# descriptor open in COMMAND (found by fstat, which opens none of its own).
LOOK = textwrap.dedent("""
    import json, os, sys
    out = {}
    for path in sys.argv[2:]:
        try:
            with open(path, "rb") as f:
                data = f.read()
            out[path] = "readable with the value" if sys.argv[1].encode() in data else "readable"
        except OSError as e:
            out[path] = type(e).__name__
    fds = []
    for fd in range(4096):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            pass
    out["fds"] = fds
    print(json.dumps(out))
""")


class BoxFilesCase(BoxTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-box-files-"))
        self.look = self.write("look.py", LOOK)

    def write(self, name, text, mode=0o600):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def opened(self, path):
        fd = os.open(path, os.O_RDONLY)  # inheritable: passed to run by pass_fds
        self.addCleanup(os.close, fd)
        return fd

    def looked(self, r):
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        return json.loads(r.stdout.decode().strip().splitlines()[-1])

    def run_look(self, serve_args, paths, pass_fds=()):
        return self.box.run(serve_args, [sys.executable, self.look, VALUE, *paths], pass_fds=pass_fds, cwd=self.dir)


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class HiddenFilesTest(BoxFilesCase):
    """Issue 35: `run --secret NAME=/dev/fd/N` (or /proc/self/fd/N) was not masked, and the box
    inherited the descriptor; `run --ca-cert/--ca-key` let the box read the CA's private key."""

    INSPECT = ["--inspect", "origin.test:443"]

    def test_a_secret_given_by_descriptor_is_masked_where_it_is(self):
        secret = self.write("api.key", VALUE + "\n")
        for form in ("/dev/fd/{}", "/proc/self/fd/{}"):
            with self.subTest(form=form):
                fd = self.opened(secret)
                r = self.run_look([*self.INSPECT, "--secret", "api=" + form.format(fd)], [secret],
                                  pass_fds=(fd,))
                seen = self.looked(r)
                self.assertEqual(seen[secret], "PermissionError", seen)
                self.assertEqual(seen["fds"], [0, 1, 2], seen)
                self.assertNotIn(VALUE.encode(), r.stdout + r.stderr)

    def test_a_secret_by_a_symbolic_link_or_a_relative_name_is_masked(self):
        secret = self.write("api.key", VALUE + "\n")
        link = os.path.join(self.dir, "link.key")
        os.symlink(secret, link)
        for given in (link, "api.key"):
            with self.subTest(given=given):
                seen = self.looked(self.run_look([*self.INSPECT, "--secret", "api=" + given], [secret, link]))
                self.assertEqual([seen[secret], seen[link]], ["PermissionError"] * 2, seen)

    def test_the_operators_ca_key_is_masked_and_its_certificate_readable(self):
        cert, key = make_ca(self.dir, "operator-ca")
        fd = self.opened(key)
        for given in (key, f"/dev/fd/{fd}"):
            with self.subTest(given=given):
                seen = self.looked(self.run_look([*self.INSPECT, "--ca-cert", cert, "--ca-key", given], [key, cert],
                                                 pass_fds=(fd,)))
                self.assertEqual(seen[key], "PermissionError", seen)
                self.assertEqual(seen[cert], "readable", seen)

    def test_the_token_file_is_masked(self):
        token = self.write("token", "a-session-token-of-the-proxys\n")
        seen = self.looked(self.run_look(["--auth-token-file", token], [token]))
        self.assertEqual(seen[token], "PermissionError", seen)

    def test_a_file_with_a_second_name_is_a_usage_error(self):
        secret = self.write("api.key", VALUE + "\n")
        os.link(secret, os.path.join(self.dir, "other-name"))
        r = self.run_look([*self.INSPECT, "--secret", f"api={secret}"], [])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f'--secret: "{secret}" has 2 names (hard links)'.encode(), r.stderr)
        self.assertNotIn(VALUE.encode(), r.stdout + r.stderr)


class DescriptorsTest(BoxFilesCase):
    """SPEC §19a: no descriptor of run's but 0, 1 and 2 reaches COMMAND (the manual names no option
    that passes one), whatever the caller left open: a file, a pipe, a socket."""

    def extra_descriptors(self):
        fds = [self.opened(self.look)]
        read_end, write_end = os.pipe()
        ours, theirs = socket.socketpair()
        for fd in (read_end, write_end):
            self.addCleanup(os.close, fd)
        for s in (ours, theirs):
            self.addCleanup(s.close)
        fds += [read_end, write_end, theirs.fileno()]
        for fd in fds:
            os.set_inheritable(fd, True)
        return fds

    def test_a_box_with_its_own_proxy_gets_0_1_2_only(self):
        fds = self.extra_descriptors()
        seen = self.looked(self.run_look([], [], pass_fds=fds))
        self.assertEqual(seen["fds"], [0, 1, 2], f"passed {fds}: {seen}")

    def test_a_box_on_a_running_proxy_gets_0_1_2_only(self):
        proxy = Proxy(dns=self.box.dns)
        self.addCleanup(proxy.cleanup)
        proxy.start()
        fds = self.extra_descriptors()
        r = subprocess.run([binary(), "run", "--socket", proxy.socket_path, "--", sys.executable, self.look, VALUE],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env(),
                           pass_fds=fds)
        self.assertEqual(self.looked(r)["fds"], [0, 1, 2], f"passed {fds}")


if __name__ == "__main__":
    unittest.main()
