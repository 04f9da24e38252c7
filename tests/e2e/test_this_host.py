# SPDX-License-Identifier: Apache-2.0
"""this-host (SPEC §5 step 4): an address the host itself holds is refused, read fresh each decision.

The machine has no public address of its own, so each test makes a network namespace whose loopback
holds public-looking addresses, and runs the proxy (and `check`) inside it. Nothing is
ever dialled: every target here is refused before any socket opens. Needs root and `ip`; skipped
with a reason otherwise.
"""

import os
import shutil
import subprocess
import unittest

import harness
from harness import ProxyTestCase, assert_http_refusal, connect_request, socks5_connect, socks5_reply

# Public-looking addresses that only ever live on the namespace's own loopback.
OWN_V4 = "1.2.3.4"
OWN_V6 = "2001:4860::1"
LATER_V4 = "1.2.3.6"
OTHER_V4 = "1.2.3.5"  # judged only by `check`, never dialled


def _namespaces_usable():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return "needs root and iproute2's ip"
    probe = f"boxproxy-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, timeout=10)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.decode(errors='replace').strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


SKIP_REASON = _namespaces_usable()


@unittest.skipIf(SKIP_REASON, SKIP_REASON or "")
class ThisHostTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.ns = f"boxproxy-thishost-{os.getpid()}"
        self.ip("netns", "add", self.ns)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", self.ns], capture_output=True, timeout=10)
        # The namespace's own loopback holds them (no dummy-interface module is needed).
        self.in_ns("ip", "link", "set", "lo", "up")
        self.in_ns("ip", "addr", "add", f"{OWN_V4}/32", "dev", "lo")
        self.in_ns("ip", "-6", "addr", "add", f"{OWN_V6}/128", "dev", "lo")

    def ip(self, *args):
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

    def in_ns(self, *argv):
        subprocess.run(["ip", "netns", "exec", self.ns, *argv], check=True, capture_output=True, timeout=10)

    def start(self, *args):
        p = harness.Proxy(*args)
        p.argv = ["ip", "netns", "exec", self.ns] + p.argv  # `ip netns exec` execs: the pid is the proxy's
        p.start()
        self._proxies.append(p)
        self.addCleanup(p.cleanup)
        return p

    def test_check_judges_the_hosts_own_addresses(self):
        out = subprocess.run(["ip", "netns", "exec", self.ns, harness.binary(), "check",
                              OWN_V4, f"[{OWN_V6}]", f"[::ffff:{OWN_V4}]", OTHER_V4],
                             capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 1, out)
        rows = [line.split("\t") for line in out.stdout.splitlines()]
        self.assertEqual(rows, [[OWN_V4, OWN_V4, "this-host"],
                                [f"[{OWN_V6}]", OWN_V6, "this-host"],
                                [f"[::ffff:{OWN_V4}]", f"::ffff:{OWN_V4}", "this-host"],
                                [OTHER_V4, OTHER_V4, "ok"]])

    def test_serve_refuses_the_hosts_own_addresses_through_each_protocol(self):
        p = self.start("--resolve", f"me.test={OWN_V4}", "--resolve", f"mixed.test={OTHER_V4},{OWN_V6}")
        for target in (f"{OWN_V4}:80", "me.test:443", f"[{OWN_V6}]:443", "mixed.test:443"):
            with self.subTest(target=target):
                s = p.connect()
                s.sendall(connect_request(target))
                assert_http_refusal(self, s, 403, "this-host")
                s.close()
        s, _, _, reply = socks5_connect(p, "me.test", 80)
        self.assertEqual(reply, socks5_reply(2))
        s.close()
        line = p.wait_log(kind="connect", cls="this-host", host="mixed.test")[0]
        self.assertEqual(line.ip, OWN_V6)

    def test_addresses_are_read_fresh_for_each_decision(self):
        p = self.start()
        # LATER_V4 is added after the proxy started; it is only ever asked for once it is ours.
        self.in_ns("ip", "addr", "add", f"{LATER_V4}/32", "dev", "lo")
        s = p.connect()
        s.sendall(connect_request(f"{LATER_V4}:80"))
        assert_http_refusal(self, s, 403, "this-host")
        s.close()


if __name__ == "__main__":
    unittest.main()
