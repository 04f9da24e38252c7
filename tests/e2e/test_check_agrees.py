# SPDX-License-Identifier: Apache-2.0
"""`boxproxy check` predicts `serve` exactly (SPEC §13): the same decision, the same resolver.

Each target is put to `check` and, with the very same options, to a running `serve` (HTTP CONNECT);
serve's decision line must say what check's lines said: the class of the first refused answer and
that answer, or ok and the first answer, which is what serve dials. Names are answered by --resolve
or by the test's own DNS server on loopback (--nameserver), answers repeated in both; only
127.0.0.2 is ever dialled (--permit 127.0.0.2/32); the other answers are judged and refused.
"""

import subprocess
import unittest

from harness import DnsServer, EchoServer, ProxyTestCase, binary, http_connect, wait_until

TIMEOUT = 20
ORIGIN = "127.0.0.2"

RECORDS = {
    "ok.test": [ORIGIN],
    "dup.test": [ORIGIN, ORIGIN, ORIGIN],
    "mixed.test": [ORIGIN, "192.0.2.1"],
    "dupmixed.test": ["192.0.2.7", ORIGIN, "192.0.2.7"],
    "private.test": ["10.0.0.1"],
    "v6doc.test": [ORIGIN, "2001:db8::1"],
    "slow.test": [ORIGIN],
}
RESOLVE = ["fixed.test=127.0.0.2,127.0.0.2", "fixedmixed.test=127.0.0.2,192.0.2.1,127.0.0.2"]
# slow.test answers after --dns-timeout: name not resolved, in both.
DELAYS = {"slow.test": 3.0}
DNS_TIMEOUT = "1"
NAMES = list(RECORDS) + ["missing.test", "fixed.test", "fixedmixed.test"]


def check(*args):
    done = subprocess.run([binary(), "check", *args], capture_output=True, text=True, timeout=TIMEOUT)
    lines = [tuple(line.split("\t")) for line in done.stdout.splitlines()]
    return done.returncode, lines, done.stderr


def expected_decision(lines):
    """(class, ip) that serve's decision line should carry, from check's lines for one target."""
    for _, address, verdict in lines:
        if verdict != "ok":
            return verdict, address
    return "ok", lines[0][1]


class CheckAgreesWithServe(ProxyTestCase):
    def setUp(self):
        super().setUp()
        self.echo = EchoServer(host=ORIGIN)
        self.addCleanup(self.echo.close)
        self.dns = DnsServer(RECORDS, delays=DELAYS)
        self.addCleanup(self.dns.close)
        self.options = ["--permit", f"{ORIGIN}/32", "--dns-timeout", DNS_TIMEOUT]
        for entry in RESOLVE:
            self.options += ["--resolve", entry]

    def check_lines(self):
        targets = [f"{name}:{self.echo.port}" for name in NAMES]
        code, lines, err = check("--nameserver", self.dns.address, *self.options, *targets)
        by_target = {t: [line for line in lines if line[0] == t] for t in targets}
        # In the order given, whichever lookup answered first.
        self.assertEqual([line[0] for line in lines],
                         [t for t in targets for _ in by_target[t]], lines)
        self.assertEqual(code, 1, err)  # some are refused
        return by_target

    def test_repeated_answers_are_one_line_each_in_check(self):
        lines = self.check_lines()
        port = self.echo.port
        self.assertEqual(lines[f"dup.test:{port}"], [(f"dup.test:{port}", ORIGIN, "ok")])
        self.assertEqual(lines[f"fixed.test:{port}"], [(f"fixed.test:{port}", ORIGIN, "ok")])
        self.assertEqual(lines[f"fixedmixed.test:{port}"],
                         [(f"fixedmixed.test:{port}", ORIGIN, "ok"),
                          (f"fixedmixed.test:{port}", "192.0.2.1", "reserved")])
        self.assertEqual(lines[f"dupmixed.test:{port}"],
                         [(f"dupmixed.test:{port}", "192.0.2.7", "reserved"),
                          (f"dupmixed.test:{port}", ORIGIN, "ok")])
        self.assertEqual(lines[f"ok.test:{port}"], [(f"ok.test:{port}", ORIGIN, "ok")])
        self.assertEqual(lines[f"private.test:{port}"], [(f"private.test:{port}", "10.0.0.1", "private")])
        self.assertEqual(lines[f"missing.test:{port}"], [(f"missing.test:{port}", "-", "name not resolved")])
        self.assertEqual(lines[f"slow.test:{port}"], [(f"slow.test:{port}", "-", "name not resolved")])
        # check asked the test's server, as serve does, not the machine's resolver.
        self.assertIn("ok.test", self.dns.names_asked())

    def test_serve_decides_what_check_predicted(self):
        lines = self.check_lines()
        # serve gets the options through --nameserver by the harness (dns=).
        proxy = self.proxy(*self.options, permit=False, dns=self.dns, log_file=True)
        for target, target_lines in lines.items():
            with self.subTest(target=target):
                want_class, want_ip = expected_decision(target_lines)
                sock, response = http_connect(proxy, target, timeout=TIMEOUT)
                sock.close()
                self.assertEqual(response.status, 200 if want_class == "ok" else
                                 {"name not resolved": 502}.get(want_class, 403), response)
                host = target.rsplit(":", 1)[0]
                decided = proxy.wait_log(kind="connect", host=host, timeout=TIMEOUT)
                decision = [line for line in decided if not line.done][0]
                self.assertEqual((decision.cls, decision.ip), (want_class, want_ip), decision)


class CheckLookupsAtOnce(unittest.TestCase):
    def test_lookups_run_at_once_and_lines_keep_the_targets_order(self):
        """Three names whose answers the test holds: all three are asked before any is answered
        (one after the other, the second would be asked only once the first was answered); the
        first target's lines come first although the last one answered long before it."""
        slow = {"a.test", "b.test", "c.test"}
        dns = DnsServer({"a.test": ["192.0.2.1"], "b.test": ["192.0.2.2"], "c.test": ["192.0.2.3"],
                         "fast.test": ["192.0.2.4"]}, held=slow)
        self.addCleanup(dns.close)
        proc = subprocess.Popen([binary(), "check", "--nameserver", dns.address, "--dns-timeout", "10",
                                 "a.test", "b.test", "c.test", "fast.test"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        asked_at_once = wait_until(lambda: slow <= dns.names_asked(), TIMEOUT)
        dns.release()
        out, err = proc.communicate(timeout=TIMEOUT)
        code, lines = proc.returncode, [tuple(line.split("\t")) for line in out.splitlines()]
        self.assertTrue(asked_at_once, f"the lookups ran one after the other: asked {dns.names_asked()}")
        self.assertEqual(lines, [("a.test", "192.0.2.1", "reserved"), ("b.test", "192.0.2.2", "reserved"),
                                 ("c.test", "192.0.2.3", "reserved"), ("fast.test", "192.0.2.4", "reserved")], err)
        self.assertEqual(code, 1)


if __name__ == "__main__":
    unittest.main()
