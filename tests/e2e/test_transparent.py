# SPDX-License-Identifier: Apache-2.0
"""Transparent capture (SPEC §16, issue 14 items 1 and 3): `run --transparent` redirects every TCP
connection COMMAND opens to a non-loopback address to the bridge, which asks the proxy for the
original destination; `bridge --transparent` is the same listener on its own.

The addresses the box dials here are documentation addresses (192.0.2.1, 2001:db8::1): inside the
box they are captured before they could leave, the proxy refuses them, and nothing is ever dialled.
The run tests skip, saying why, where this system cannot make a box or lacks libnftables."""

import ctypes.util
import json
import os
import socket
import subprocess
import sys
import textwrap
import unittest

from box_support import BoxTestCase, Bridge, namespaces_usable
from harness import HttpOrigin, OriginsMixin, ProxyTestCase, binary

BOX_CLIENT = textwrap.dedent("""
    import json, socket, sys, time
    out = {}
    for name, family, address in [("v4", socket.AF_INET, ("192.0.2.1", 80)),
                                  ("v6", socket.AF_INET6, ("2001:db8::1", 443))]:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(10)
        t = time.monotonic()
        try:
            s.connect(address)
            s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
            data = s.recv(100)
            out[name] = "read " + repr(data)
        except OSError as e:
            out[name] = type(e).__name__
        out[name + "_s"] = round(time.monotonic() - t, 3)
        s.close()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.sendto(b"x", ("192.0.2.1", 9))
        u.settimeout(2)
        u.recv(10)
        out["udp"] = "answered"
    except OSError as e:
        out["udp"] = type(e).__name__
    # The box's own loopback is not captured: a server in the box is reached directly.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=5)
    a, _ = srv.accept()
    c.sendall(b"ping")
    out["loopback"] = a.recv(4).decode()
    # The box's resolver is the bridge on its loopback; DNS sent to any other server goes there too.
    out["resolv_conf"] = open("/etc/resolv.conf").read()
    d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    d.settimeout(3)
    try:
        d.connect(("192.0.2.53", 53))  # connected: an ICMP "port unreachable" comes back as an error
        d.send(b"\\x12\\x34" + bytes(10))
        d.recv(512)
        out["dns_elsewhere"] = "answered"
    except OSError as e:
        out["dns_elsewhere"] = type(e).__name__
    try:
        open("/etc/resolv.conf", "a").write("nameserver 192.0.2.1\\n")
        out["resolv_conf_written"] = True
    except OSError:
        out["resolv_conf_written"] = False
    print(json.dumps(out))
""")


def capture_usable():
    why = namespaces_usable()
    if why:
        return why
    if not ctypes.util.find_library("nftables"):
        return "libnftables is not installed (Debian's libnftables1)"
    return None


class CaptureTestCase(BoxTestCase):
    """A test of `run --transparent`: skipped where capture cannot work here; self.box runs boxes
    and self.log is a decision log file in its directory. With WITH_ORIGIN, cls.origin is an HTTP
    origin on the loopback origin address for the whole class."""

    WITH_ORIGIN = False

    @classmethod
    def setUpClass(cls):
        why = capture_usable()
        if why:
            raise unittest.SkipTest(why)
        if cls.WITH_ORIGIN:
            cls.origin = HttpOrigin()

    @classmethod
    def tearDownClass(cls):
        if cls.WITH_ORIGIN:
            cls.origin.close()

    def setUp(self):
        super().setUp()
        self.log = os.path.join(self.box.dir, "decisions.log")


class TransparentRunTest(CaptureTestCase):

    def test_connections_to_other_addresses_are_captured_and_judged_never_dialled(self):
        log = os.path.join(self.box.dir, "decisions.log")
        r = self.box.run(["--transparent", "--log-file", log], [sys.executable, "-c", BOX_CLIENT])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-3000:])
        out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        # Captured, asked for by address, refused by the proxy: the box sees a reset at once (not
        # a time-out: nothing was dialled, nothing waited for).
        self.assertEqual(out["v4"], "ConnectionResetError", out)
        self.assertEqual(out["v6"], "ConnectionResetError", out)
        self.assertLess(out["v4_s"], 5)
        self.assertLess(out["v6_s"], 5)
        # Other UDP goes nowhere, and says so at once.
        self.assertEqual(out["udp"], "PermissionError", out)
        self.assertEqual(out["loopback"], "ping")
        self.assertIn("nameserver 127.0.0.1\n", out["resolv_conf"])
        self.assertNotIn("nameserver", out["resolv_conf"].replace("nameserver 127.0.0.1", ""))
        self.assertFalse(out["resolv_conf_written"])
        # Redirected to the box's loopback port 53 (refused there when nothing answers; never sent).
        self.assertIn(out["dns_elsewhere"], ("ConnectionRefusedError", "answered"), out)
        with open(log, encoding="utf-8") as f:
            text = f.read()
        self.assertIn('egress socks host="192.0.2.1" port=80 ip=192.0.2.1 class=reserved', text)
        self.assertIn('egress socks host="2001:db8::1" port=443 ip=2001:db8::1 class=reserved', text)
        self.assertNotIn("class=ok", text)

    def test_without_transparent_nothing_is_captured(self):
        # The same client in a box without capture: no route, so the connects fail in the box and
        # the proxy hears of none of them.
        log = os.path.join(self.box.dir, "decisions.log")
        r = self.box.run(["--log-file", log], [sys.executable, "-c", BOX_CLIENT])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-3000:])
        out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        self.assertEqual(out["v4"], "OSError", out)  # ENETUNREACH
        with open(log, encoding="utf-8") as f:
            self.assertNotIn("192.0.2.1", f.read())

    def test_transparent_with_a_token_is_a_usage_error(self):
        token = os.path.join(self.box.dir, "token")
        with open(token, "w") as f:
            f.write("secret-token\n")
        os.chmod(token, 0o600)
        r = self.box.run(["--transparent", "--auth-token-file", token], ["true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--transparent", r.stderr)


class TransparentBridgeTest(OriginsMixin, ProxyTestCase):
    """`bridge --transparent` on its own (no namespace needed)."""

    def test_listening_line_names_the_transparent_listeners(self):
        p = self.proxy()
        b = Bridge(p.socket_path, "127.0.0.1:0", extra=("--transparent", "127.0.0.1:0"))
        self.addCleanup(b.kill)
        self.assertEqual(len(b.listening["transparent"]), 1)
        self.assertTrue(b.listening["transparent"][0].startswith("127.0.0.1:"))
        self.assertEqual(b.stop(), 0)

    def test_a_connection_that_was_not_redirected_is_reset_and_never_asked_for(self):
        # A program that connects to the transparent port itself has no original destination
        # but the bridge: it is reset, and the proxy hears nothing.
        p = self.proxy()
        b = Bridge(p.socket_path, "127.0.0.1:0", extra=("--transparent", "127.0.0.1:0"))
        self.addCleanup(b.kill)
        port = int(b.listening["transparent"][0].rsplit(":", 1)[1])
        # The reset may arrive before connect(2) has returned (on loopback the bridge can accept and
        # reset first): then connect itself fails with it.
        with self.assertRaises(ConnectionResetError):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.settimeout(5)
                s.sendall(b"hello")
                data = s.recv(10)
                if data == b"":
                    raise AssertionError("closed cleanly, not reset")
        self.assertEqual(p.log_lines(), [])

    def test_a_bad_transparent_address_is_a_usage_error(self):
        r = subprocess.run([binary(), "bridge", "--socket", "/nonexistent.sock", "--transparent", "localhost:3129"],
                           capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--transparent", r.stderr)
        self.assertIn(b"localhost:3129", r.stderr)


if __name__ == "__main__":
    unittest.main()
