# SPDX-License-Identifier: Apache-2.0
"""A session that may hold a secret (SPEC §19) is non-dumpable: no core file, and no other process
of the same user can ptrace it or read its /proc/PID/mem (socketd/serve_command.cc's guard_secrets;
the inspector makes itself so in socketd/inspect_main.cc). A session that inspects nothing
keeps the usual flag, so the operator's tools still see it.

The flag cannot be read from outside by root (the only user these tests run as), but the kernel
shows it: a non-dumpable process's /proc/PID files are owned by root whatever its user. So each
session here runs as nobody (uid 65534; dropped before exec, so the exec leaves the flag at its
default, 1), and the test reads who owns /proc/PID/environ: nobody while dumpable, root once not."""

import os
import unittest

from harness import Proxy, ProxyTestCase
from inspect_support import INSPECTOR, InspectRig

NOBODY = 65534


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def proc_owner(pid):
    return os.stat(f"/proc/{pid}/environ").st_uid


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


@unittest.skipUnless(os.geteuid() == 0, "needs root, to run the session as another user")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class NonDumpableTest(InspectRig, ProxyTestCase):

    def serve_as_nobody(self, *args):
        """serve, run as nobody, in a directory nobody may write: the started Proxy."""
        os.chmod(self.dir, os.stat(self.dir).st_mode | 0o755)  # the origin's certificate (--upstream-ca)
        p = Proxy("--resolve", "origin.test=127.0.0.2", *args, preexec_fn=as_nobody)
        self.addCleanup(p.cleanup)
        os.chmod(p.dir, 0o777)  # the socket, and --ca-out
        p.start()
        self._proxies.append(p)
        return p

    def start_inspecting_as_nobody(self, *args):
        os.chmod(self.dir, 0o777)  # --ca-out's file
        return self.serve_as_nobody("--upstream-ca", self.cert, "--ca-out", self.ca, "--inspect",
                                    f"origin.test:{self.origin.port}", *args)

    def test_a_session_that_inspects_nothing_stays_dumpable(self):
        p = self.serve_as_nobody("--allow", "origin.test")
        self.assertEqual(proc_owner(p.pid), NOBODY)  # the flag is 1: the test can tell

    def test_a_session_that_inspects_is_not_dumpable_nor_its_inspector(self):
        p = self.start_inspecting_as_nobody()
        self.assertEqual(proc_owner(p.pid), 0, "serve, which takes the control channel's secret op")
        inspectors = children(p.pid)
        self.assertEqual(len(inspectors), 1, inspectors)
        self.assertEqual(proc_owner(inspectors[0]), 0, "boxproxy-inspect, which holds the values")

    def test_a_session_with_a_secret_file_is_not_dumpable(self):
        secret = os.path.join(self.dir, "api.secret")
        with open(secret, "w") as f:
            f.write("sk-dumpable-test-0123456789\n")
        os.chmod(secret, 0o644)
        p = self.start_inspecting_as_nobody("--secret", f"api={secret}")
        self.assertEqual(proc_owner(p.pid), 0)


if __name__ == "__main__":
    unittest.main()
