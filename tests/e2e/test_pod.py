# SPDX-License-Identifier: Apache-2.0
"""A pod whose only way out is boxproxy (issue 38; man/boxproxy.1, PODS): `boxproxy capture`,
`boxproxy sidecar` and examples/kubernetes/.

CaptureInANamespaceTest: capture in a network namespace of its own (`unshare -n`, as root), with the
bridge there and serve outside: what a process that is not the exempt user reaches, against the
same probes with no rules (so each check can see a way out where there is one).
PodTest: `podman kube play` of examples/kubernetes/pod.yaml as written, but for the images, the
policy and an origin container of the test's own, with --network none: from the agent container.

Loopback only: origins on 127.0.0.2, every name given with --resolve, nothing else resolved."""

import json
import os
import shutil
import subprocess
import sys
import unittest

from harness import HttpOrigin, Proxy, binary

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXEMPT = 4242  # the exempt user in the namespace test
PROBE_TIMEOUT = 120


def can_unshare():
    if os.geteuid() != 0:
        return "needs root (unshare -n, nftables in the new namespace)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2)"
    tried = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, timeout=30)
    return None if tried.returncode == 0 else f"unshare -n fails here: {tried.stderr.strip()}"


class CaptureCommandTest(unittest.TestCase):
    """What needs no namespace: --check, the option errors, the refusal without CAP_NET_ADMIN."""

    def capture(self, *args, preexec=None):
        return subprocess.run([binary(), "capture", *args], capture_output=True, text=True, timeout=30,
                              preexec_fn=preexec)

    def test_check_prints_the_rules_and_loads_nothing(self):
        done = self.capture("--exempt-uid", "1337", "--check")
        self.assertEqual(done.returncode, 0, done.stderr)
        rules = done.stdout
        # One transaction that replaces the table: idempotent.
        self.assertTrue(rules.startswith("table inet boxproxy_capture {}\ndelete table inet boxproxy_capture\n"))
        for line in ("meta skuid 1337 return;", "meta l4proto { tcp, udp } th dport 53 redirect to :1053;",
                     "ip daddr 127.0.0.1 tcp dport 3128 return;", "meta l4proto tcp redirect to :3129;",
                     "type filter hook output priority 0; policy drop;", "meta skuid 1337 accept;",
                     "ip6 daddr ::1 tcp dport 3129 accept;"):
            self.assertIn(line, rules)
        other = self.capture("--exempt-uid", "7", "--port", "4000", "--dns-port", "0", "--listen-port", "0", "--check")
        self.assertEqual(other.returncode, 0, other.stderr)
        self.assertIn("redirect to :4000;", other.stdout)
        self.assertNotIn("dport 53", other.stdout)  # --dns-port 0: DNS falls to the drop policy
        self.assertNotIn("3128", other.stdout)

    def test_bad_options_exit_2_naming_them(self):
        for args, words in ((["--check"], "--exempt-uid N is required"),
                            (["--exempt-uid", "0", "--check"], '--exempt-uid: "0"'),
                            (["--exempt-uid", "x", "--check"], '--exempt-uid: "x"'),
                            (["--exempt-uid", "5", "--port", "70000", "--check"], '--port: "70000"'),
                            (["--exempt-uid", "5", "--dns-port", "3129", "--check"], "must differ"),
                            (["--exempt-uid", "5", "--bogus", "--check"], "--bogus")):
            done = self.capture(*args)
            self.assertEqual(done.returncode, 2, (args, done.stderr))
            self.assertIn(words, done.stderr, args)
            self.assertEqual(done.stdout, "")

    def test_refuses_without_net_admin(self):
        if os.geteuid() != 0:
            # Not root: the capability is missing already.
            done = self.capture("--exempt-uid", "1337")
        else:
            def drop():  # nobody, with no capability at all
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            done = self.capture("--exempt-uid", "1337", preexec=drop)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("needs CAP_NET_ADMIN", done.stderr)
        self.assertIn("nothing was changed", done.stderr)


class CaptureInANamespaceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        why = can_unshare()
        if why:
            raise unittest.SkipTest(why)

    def probe(self, captures):
        origin = HttpOrigin()
        self.addCleanup(origin.close)
        proxy = Proxy("--resolve", "origin.test=127.0.0.2")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        done = subprocess.run(["unshare", "-n", sys.executable, os.path.join(HERE, "pod_netns_probe.py"), binary(),
                               proxy.socket_path, str(origin.port), str(captures), str(EXEMPT)],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout), origin, proxy

    def test_without_rules_the_probes_see_the_ways_out(self):
        # The control: each probe below finds its way where nothing captures it.
        got, origin, _ = self.probe(0)
        self.assertEqual(got["tables"], [])
        self.assertEqual(got["origin_by_address"], "error 111")  # nothing of the host's is here
        self.assertEqual(got["dns_allowed"], ["none", []])
        self.assertTrue(got["tcp_bait_v4"])
        self.assertTrue(got["tcp_bait_v6"])
        self.assertTrue(got["udp_v4"])
        self.assertTrue(got["udp_v6"])
        self.assertTrue(got["icmp"])
        self.assertEqual(origin.requests, [])

    def test_capture_sends_tcp_and_dns_to_the_bridge_and_drops_the_rest(self):
        got, origin, proxy = self.probe(2)
        # Twice, each exit 0, and one table.
        self.assertEqual([code for code, _ in got["captures"]], [0, 0], got["captures"])
        self.assertEqual(got["tables"], ["table inet boxproxy_capture"])
        # A dial to a loopback address that is not the proxy's ends at the bridge, and the proxy
        # (outside the namespace) reaches the origin it names.
        self.assertEqual(got["origin_by_address"], "HTTP/1.0 200 OK")
        proxy.wait_log(host="127.0.0.2", port=origin.port, cls="ok")
        # DNS to any server goes to the bridge: an allowed name gets one of the bridge's addresses,
        # which leads back to the name; a name the proxy refuses is NXDOMAIN.
        rcode, addresses = got["dns_allowed"]
        self.assertEqual(rcode, "0")
        self.assertTrue(addresses[0].startswith("198.1"), addresses)
        self.assertEqual(got["dns_refused"], ["3", []])
        self.assertEqual(got["origin_by_name"], "HTTP/1.0 200 OK")
        self.assertEqual(got["origin_via_listen"], "HTTP/1.0 200 OK")
        self.assertEqual(len(origin.requests), 3)
        # A server of the namespace that is not the proxy is reached only through it (here
        # refused: 127.0.0.3 and ::1 are loopback), and only the exempt user dials it directly.
        self.assertFalse(got["tcp_bait_v4"])
        self.assertFalse(got["tcp_bait_v6"])
        self.assertTrue(got["tcp_bait_exempt"])
        proxy.wait_log(ip="127.0.0.3", cls="local")
        # Other UDP and ICMP go nowhere, IPv4 and IPv6; the exempt user's datagrams pass.
        self.assertFalse(got["udp_v4"])
        self.assertFalse(got["udp_v6"])
        self.assertTrue(got["udp_exempt"])
        self.assertFalse(got["icmp"])


if __name__ == "__main__":
    unittest.main()
