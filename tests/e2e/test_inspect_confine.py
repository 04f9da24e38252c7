# SPDX-License-Identifier: Apache-2.0
"""The request inspector confines itself (SPEC §17, §18; issue 24 item 6).

boxproxy-inspect parses every byte of an inspected connection with a TLS library; once set up it
sets NO_NEW_PRIVS, denies every path with Landlock and loads a seccomp filter with no socket,
connect, bind, open, exec, fork or ptrace. What the kernel says of it (/proc/PID/status), that it
still inspects (a leaf made after confinement, the origin reached over its TLS), that serve's
--no-confine leaves it unconfined too, and, in builds with BOXPROXY_TEST_HOOKS, that a TCP socket,
execve and an open fail in it after confinement and are said once on standard error. And, as
test_hardening checks of boxproxy, that boxproxy-inspect carries no libseccomp: it loads the
program compiled when it was built."""

import os
import re
import subprocess
import unittest

from fault_support import sanitized
from harness import ProxyTestCase, wait_until
from inspect_support import CURL, INSPECTOR, InspectRig, inspector_of
from test_confine import OWN, REFUSED, has_test_hooks, status_of

INSPECTOR_REFUSED = re.compile(r"^boxproxy-inspect: confinement refused system call (\d+) ")


@unittest.skipIf(CURL is None, "curl is not installed")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectorConfineTest(InspectRig, ProxyTestCase):

    def inspector(self, p):
        pid = inspector_of(p.pid)
        self.assertIsNotNone(pid, "no boxproxy-inspect child of serve")
        return pid

    def test_the_inspector_is_confined_and_still_inspects(self):
        p = self.start_inspecting()
        status = status_of(self.inspector(p))
        self.assertEqual((status.get("NoNewPrivs"), status.get("Seccomp")), ("1", "2"), status)
        # Its own filter, one more than this test's process has (serve's is not inherited: the
        # inspector is started before serve confines itself).
        self.assertEqual(int(status.get("Seccomp_filters", "0")), int(OWN.get("Seccomp_filters", "0")) + 1, status)
        # The leaf for origin.test is made now, confined, and the origin reached over the
        # inspector's own TLS.
        for path in ("/one", "/two"):
            code, http_status, body, err = self.get(p, path)
            self.assertEqual((code, http_status), (0, 200), err)
            self.assertEqual(body, "x" * 511 + "\n")
        self.assertEqual([r["path"] for r in self.origin.requests], ["/one", "/two"])
        p.stop()
        # No call of its work was refused (nor of its exit).
        self.assertIsNone(REFUSED.search(p.stderr_text()), p.stderr_text())

    def test_no_confine_leaves_the_inspector_unconfined(self):
        p = self.start_inspecting("--no-confine")
        # Exactly what it inherited from this process: nothing of its own.
        self.assertEqual(status_of(self.inspector(p)), OWN)
        code, http_status, _, err = self.get(p, "/x")
        self.assertEqual((code, http_status), (0, 200), err)


@unittest.skipIf(CURL is None, "curl is not installed")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
@unittest.skipUnless(os.environ.get("BOXPROXY") and has_test_hooks(),
                     "the binary was built without BOXPROXY_TEST_HOOKS (scripts/test-all builds with them)")
class InspectorAfterConfineTest(InspectRig, ProxyTestCase):
    """The test hook (socketd/self_confine.cc) tries, after confinement, what the inspector's must
    refuse. serve runs it too: serve may make a TCP socket (it dials), the inspector may not."""

    def hooked(self, what):
        return self.start_inspecting(env=dict(os.environ, BOXPROXY_TEST_AFTER_CONFINE=what))

    def inspector_lines(self, p):
        return [line for line in p.stderr_text().splitlines() if line.startswith("boxproxy-inspect: ")]

    def test_a_socket_exec_or_open_fails_in_the_inspector_and_is_said_once(self):
        for hook, number in (("inet", 41), ("execve", 59), ("open", 257)):
            with self.subTest(hook=hook):
                p = self.hooked(hook)
                if hook == "open" and sanitized():
                    # The sanitizer build's program lets the runtime open files (it reads /proc
                    # itself); Landlock, with no rule, still refuses this one.
                    said = "boxproxy-inspect: test hook: open: failed: Permission denied"
                    self.assertTrue(wait_until(lambda: said in self.inspector_lines(p), 5), p.stderr_text())
                    p.stop()
                    continue
                said = f"boxproxy-inspect: test hook: {hook}: failed: Operation not permitted"
                self.assertTrue(wait_until(lambda: said in self.inspector_lines(p), 5), p.stderr_text())
                refused = [m.group(1) for m in map(INSPECTOR_REFUSED.search, self.inspector_lines(p)) if m]
                if os.uname().machine == "x86_64":
                    self.assertEqual(refused, [str(number)], p.stderr_text())
                else:
                    self.assertEqual(len(refused), 1, p.stderr_text())
                if hook == "inet":  # serve dials: its own filter lets it make one
                    self.assertTrue(wait_until(lambda: "test hook: inet: succeeded" in p.stderr_text(), 5))
                # It goes on inspecting.
                code, http_status, _, err = self.get(p, "/after")
                self.assertEqual((code, http_status), (0, 200), err)
                p.stop()


def libseccomp_in(path):
    """What of libseccomp the ELF file at `path` holds, and whether it holds the loader of compiled
    programs: ([NEEDED libseccomp lines and seccomp_* symbols], has load_confine_program), the
    symbols read only when it is not stripped (None then)."""
    def tool(*args):
        return subprocess.run(args, capture_output=True, text=True, timeout=60, check=True).stdout
    found = [line.strip() for line in tool("readelf", "-dW", path).splitlines() if re.search(r"NEEDED.*libseccomp", line)]
    symbols = tool("readelf", "-sW", path)
    if "Symbol table '.symtab'" not in symbols:
        return found, None
    names = {line.split()[-1].split("@")[0] for line in symbols.splitlines() if len(line.split()) >= 8}
    found += sorted({"seccomp_init", "seccomp_rule_add", "seccomp_load", "seccomp_export_bpf"} & names)
    return found, any("load_confine_program" in name for name in names)


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectorLinksNoLibseccompTest(unittest.TestCase):

    def test_no_libseccomp_and_the_loader_is_there(self):
        found, has_loader = libseccomp_in(INSPECTOR)
        self.assertEqual(found, [])
        if has_loader is None:
            self.skipTest("boxproxy-inspect is stripped: no symbol table to read")
        self.assertTrue(has_loader)  # else the check above would prove nothing


if __name__ == "__main__":
    unittest.main()
