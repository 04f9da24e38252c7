# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of `boxproxy check` (SPEC §13) through the real binary (env BOXPROXY).

check never dials. These tests also never let it ask the system resolver: every target is an
IP literal, a name given answers with --resolve, or a name refused before any lookup (a bad
target, a name off the --allow list, a usage error).
"""

import ipaddress
import os
import shutil
import subprocess
import unittest

from harness import binary

TIMEOUT = 10




def check(*args):
    """Runs `boxproxy check ARGS...`; returns (exit code, stdout lines as tuples, stderr)."""
    done = subprocess.run([binary(), "check", *args], capture_output=True, text=True, timeout=TIMEOUT)
    lines = [tuple(line.split("\t")) for line in done.stdout.splitlines()]
    return done.returncode, lines, done.stderr


class CheckSpecExamples(unittest.TestCase):
    """The "Done when" list."""

    def test_hex_shorthand_is_loopback(self):
        code, lines, _ = check("0x7f.1")
        self.assertEqual(lines, [("0x7f.1", "127.0.0.1", "loopback")])
        self.assertEqual(code, 1)

    def test_public_addresses_exit_0(self):
        code, lines, _ = check("1.1.1.1", "[2606:4700::1111]")
        self.assertEqual(lines, [("1.1.1.1", "1.1.1.1", "ok"),
                                 ("[2606:4700::1111]", "2606:4700::1111", "ok")])
        self.assertEqual(code, 0)

    def test_mapped_private(self):
        code, lines, _ = check("[::ffff:a00:1]")
        self.assertEqual(lines, [("[::ffff:a00:1]", "::ffff:10.0.0.1", "private")])
        self.assertEqual(code, 1)

    def test_resolve_prints_a_line_per_answer(self):
        code, lines, _ = check("--resolve", "x.test=10.1.2.3,1.1.1.1", "x.test")
        self.assertEqual(lines, [("x.test", "10.1.2.3", "private"), ("x.test", "1.1.1.1", "ok")])
        self.assertEqual(code, 1)

    def test_allow_wildcard_never_the_name_itself(self):
        # box.test has a --resolve answer, so even a wrong "listed" would never ask DNS; the
        # address column "-" shows it was refused before any lookup.
        code, lines, _ = check("--allow", "*.box.test", "--resolve", "box.test=1.1.1.1", "box.test")
        self.assertEqual(lines, [("box.test", "-", "not-listed")])
        self.assertEqual(code, 1)

    def test_permit(self):
        code, lines, _ = check("--permit", "10.0.0.0/8", "10.1.1.1")
        self.assertEqual(lines, [("10.1.1.1", "10.1.1.1", "ok")])
        self.assertEqual(code, 0)

    def test_deny(self):
        code, lines, _ = check("--deny", "1.1.1.0/24", "1.1.1.1")
        self.assertEqual(lines, [("1.1.1.1", "1.1.1.1", "denied")])
        self.assertEqual(code, 1)

    def test_bad_permit_is_a_usage_error(self):
        code, lines, err = check("--permit", "10.0.0.0/33", "1.1.1.1")
        self.assertEqual(code, 2)
        self.assertEqual(lines, [])
        self.assertIn("--permit", err)
        self.assertIn("10.0.0.0/33", err)

    def test_address_in_allow_is_a_usage_error(self):
        code, lines, err = check("--allow", "10.0.0.1", "x")
        self.assertEqual(code, 2)
        self.assertEqual(lines, [])
        self.assertIn("--allow", err)
        self.assertIn("10.0.0.1", err)


class CheckForms(unittest.TestCase):
    def assert_one(self, args, target, address, verdict, code):
        got_code, lines, err = check(*args)
        self.assertEqual(lines, [(target, address, verdict)], err)
        self.assertEqual(got_code, code)

    def test_address_forms(self):
        rows = [
            ("017700000001", "127.0.0.1", "loopback"),
            ("2130706433", "127.0.0.1", "loopback"),
            ("127.1", "127.0.0.1", "loopback"),
            ("127.0.0.1.", "127.0.0.1", "loopback"),
            ("192.168.257", "192.168.1.1", "private"),
            ("0x64.0x64.0x64.0xc8", "100.100.100.200", "metadata"),
            ("169.254.169.254", "169.254.169.254", "link-local"),
            ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "loopback"),
            ("[64:ff9b::a00:1]", "64:ff9b::a00:1", "private"),
            ("[2002:a00:1::]", "2002:a00:1::", "private"),
            ("fe80::1%eth0", "fe80::1", "link-local"),
            ("[fe80::1%25eth0]", "fe80::1", "link-local"),
            ("[::a00:1]", "::10.0.0.1", "reserved"),
            ("::1", "::1", "loopback"),
            ("[fd00:ec2::254]", "fd00:ec2::254", "metadata"),
            ("255.255.255.255", "255.255.255.255", "broadcast"),
            ("2001:db8::1", "2001:db8::1", "reserved"),
        ]
        for target, address, verdict in rows:
            with self.subTest(target=target):
                self.assert_one([target], target, address, verdict, 1)

    def test_not_addresses_nor_names(self):
        for target in ["[::1].", "256.1.1.1", "08.0.0.1", "1.2.3.4.5", "a..b", "exa mple.test", "[::1"]:
            with self.subTest(target=target):
                self.assert_one([target], target, "-", "invalid host", 1)

    def test_host_port_forms(self):
        ok = [
            ("1.1.1.1:80", "1.1.1.1"),
            ("1.1.1.1:00080", "1.1.1.1"),
            ("1.1.1.1:65535", "1.1.1.1"),
            ("[2606:4700::1111]:8443", "2606:4700::1111"),
            ("2606:4700::1111", "2606:4700::1111"),
        ]
        for target, address in ok:
            with self.subTest(target=target):
                self.assert_one([target], target, address, "ok", 0)
        self.assert_one(["[::1]:22"], "[::1]:22", "::1", "loopback", 1)
        self.assert_one(["0x7f.1:8080"], "0x7f.1:8080", "127.0.0.1", "loopback", 1)
        for target in ["1.1.1.1:0", "1.1.1.1:65536", "1.1.1.1:123456", "1.1.1.1:", "[::1]:", "x.test:http"]:
            with self.subTest(target=target):
                self.assert_one([target], target, "-", "invalid target", 1)

    def test_resolve_with_port_and_case(self):
        self.assert_one(["--resolve", "x.test=1.1.1.1", "X.Test.:8443"], "X.Test.:8443", "1.1.1.1", "ok", 0)
        self.assert_one(["--resolve=x.test=[::1]", "x.test"], "x.test", "::1", "loopback", 1)

    def test_allow_listed_name_meets_the_address_rule(self):
        base = ["--allow", "*.box.test, api.box.test:8443", "--resolve", "a.box.test=1.1.1.1",
                "--resolve", "b.box.test=127.0.0.1", "--resolve", "api.box.test=1.1.1.1"]
        self.assert_one(base + ["a.box.test"], "a.box.test", "1.1.1.1", "ok", 0)
        self.assert_one(base + ["a.box.test:80"], "a.box.test:80", "1.1.1.1", "ok", 0)
        self.assert_one(base + ["a.box.test:8080"], "a.box.test:8080", "-", "not-listed", 1)
        self.assert_one(base + ["b.box.test"], "b.box.test", "127.0.0.1", "loopback", 1)
        self.assert_one(base + ["api.box.test:8443"], "api.box.test:8443", "1.1.1.1", "ok", 0)
        self.assert_one(base + ["1.1.1.1"], "1.1.1.1", "-", "not-listed", 1)
        self.assert_one(base + ["[2606:4700::1111]"], "[2606:4700::1111]", "-", "not-listed", 1)
        self.assert_one(base + ["other.test"], "other.test", "-", "not-listed", 1)

    def test_deny_before_permit_and_through_embedded_v4(self):
        self.assert_one(["--permit", "1.1.1.1", "--deny", "1.1.1.0/24", "1.1.1.1"], "1.1.1.1", "1.1.1.1",
                        "denied", 1)
        self.assert_one(["--deny", "1.1.1.0/24", "[::ffff:1.1.1.1]"], "[::ffff:1.1.1.1]", "::ffff:1.1.1.1",
                        "denied", 1)
        self.assert_one(["--deny", "1.1.1.0/24", "2002:101:101::1"], "2002:101:101::1", "2002:101:101::1",
                        "denied", 1)
        self.assert_one(["--permit", "10.0.0.0/8", "[::ffff:10.1.1.1]"], "[::ffff:10.1.1.1]",
                        "::ffff:10.1.1.1", "ok", 0)

    def test_any_refused_target_exits_1(self):
        code, lines, _ = check("1.1.1.1", "10.0.0.1", "8.8.8.8")
        self.assertEqual([line[2] for line in lines], ["ok", "private", "ok"])
        self.assertEqual(code, 1)

    def test_this_host(self):
        """One of the machine's own public addresses, when it has one, is this-host."""
        ip_tool = shutil.which("ip")
        if ip_tool is None:
            self.skipTest("no `ip` tool to list the interface addresses")
        out = subprocess.run([ip_tool, "-o", "addr", "show"], capture_output=True, text=True,
                             timeout=TIMEOUT).stdout
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 4 or fields[2] not in ("inet", "inet6"):
                continue
            address = ipaddress.ip_address(fields[3].split("/")[0])
            if address.is_global:
                shown = f"[{address}]" if address.version == 6 else str(address)
                self.assert_one([shown], shown, str(address), "this-host", 1)
                return
        self.skipTest("this machine holds no public address")


class CheckUsage(unittest.TestCase):
    def assert_usage(self, args, *words):
        code, lines, err = check(*args)
        self.assertEqual(code, 2, err)
        self.assertEqual(lines, [])
        self.assertTrue(err.startswith("boxproxy check: "), err)
        for word in words:
            self.assertIn(word, err)

    def test_usage_errors_name_option_and_value(self):
        self.assert_usage(["--deny", "10.1.2.3/8", "1.1.1.1"], "--deny", "10.1.2.3/8", "10.0.0.0/8")
        self.assert_usage(["--permit", "10/8", "1.1.1.1"], "--permit", "10/8")
        self.assert_usage(["--resolve", "x.test=127.1", "x.test"], "--resolve", "x.test=127.1")
        self.assert_usage(["--resolve", "x.test", "x.test"], "--resolve", "x.test")
        self.assert_usage(["--allow", "http://example.test", "x"], "--allow", "http://example.test", "URL")
        self.assert_usage(["--allow", "good.test,com", "x"], "--allow", "com", "single label")
        self.assert_usage(["--allow", "*", "x"], "--allow", "*")
        self.assert_usage(["--allow", "x.test:0", "x"], "--allow", "x.test:0", "port")
        self.assert_usage(["--bogus", "1.1.1.1"], "--bogus")
        self.assert_usage(["--permit"], "--permit")
        self.assert_usage([])

    def test_help(self):
        done = subprocess.run([binary(), "check", "--help"], capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(done.returncode, 0)
        self.assertIn("boxproxy check", done.stdout)
        self.assertIn("--permit", done.stdout)


if __name__ == "__main__":
    unittest.main()
