# SPDX-License-Identifier: Apache-2.0
"""Shared by the request-inspection tests that need serve's inspector process itself
(test_inspect_confine, test_inspect_ca): a TLS origin of the test's own on 127.0.0.2 (its
certificate made here and given with --upstream-ca), a serve inspecting it, curl as the box's
client, and the inspector found as serve's child in /proc."""

import os
import shutil
import subprocess
import tempfile

from box_support import TlsOrigin, make_certificate
from harness import binary, wait_until

CURL = shutil.which("curl")
INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")


def curl(*args, timeout=20):
    """curl -sS with a bounded time and no proxy of the environment's: (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    proc = subprocess.run([CURL, "-sS", "--max-time", "10", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def children_of(pid):
    """The pids whose parent is `pid` (from /proc/*/stat: the field after the name's closing paren)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def inspector_of(serve_pid, timeout=5.0):
    """The pid of serve's boxproxy-inspect child (its argv[0]), or None within `timeout` seconds."""
    found = []

    def look():
        for child in children_of(serve_pid):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    argv0 = f.read().split(b"\0")[0]
            except OSError:
                continue
            if argv0 == b"boxproxy-inspect":
                found.append(child)
                return True
        return False

    wait_until(look, timeout)
    return found[0] if found else None


class InspectRig:
    """A mixin for ProxyTestCase: self.dir (a temp dir), self.cert and self.key (the origin's),
    self.origin (a TlsOrigin on 127.0.0.2), self.ca (where --ca-out writes)."""

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspect-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.cert, self.key = make_certificate(self.dir)
        self.origin = TlsOrigin(self.cert, self.key)
        self.addCleanup(self.origin.close)
        self.ca = os.path.join(self.dir, "session-ca.pem")

    def start_inspecting(self, *args, **kwargs):
        """serve inspecting origin.test at the origin's port (no rules), trusting the origin's
        certificate, writing its CA to self.ca."""
        return self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                          "--upstream-ca", self.cert, "--inspect", f"origin.test:{self.origin.port}", *args, **kwargs)

    def get(self, p, path, cacert=None):
        """curl https://origin.test:PORT/PATH through the proxy's socket (SOCKS5), trusting `cacert`
        (default self.ca): (exit code, status or None, body, stderr)."""
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", cacert or self.ca,
                              "-D", "-", f"https://origin.test:{self.origin.port}{path}")
        head, _, body = out.partition("\r\n\r\n")
        first = head.split("\r\n")[0]
        status = int(first.split()[1]) if first.startswith("HTTP/") else None
        return code, status, body, err
