# SPDX-License-Identifier: Apache-2.0
"""The control channel's live {"op":"inspect"} (SPEC §15, §18) through the real binary and its
inspector: a TLS origin of the test's own on 127.0.0.2 (--upstream-ca), the box's side a raw
keep-alive TLS connection that trusts the session CA (--ca-out). A rule added live judges the next
request of a connection already open; a removed endpoint's open connection is closed before its
next request, and a new connection to it is an opaque tunnel again; a refused op changes nothing;
serve without an inspector refuses to name an endpoint."""

import json
import os
import ssl
import unittest

from control_support import proxy_with_control_fd, readable_within
from harness import ProxyTestCase, read_http_response, recv_exact, wait_until
from inspect_support import INSPECTOR, InspectRig

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectLiveTest(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.host = f"origin.test:{self.origin.port}"

    def start(self, *args):
        """A proxy inspecting origin.test at the origin's port with no rules (unless `args` says
        otherwise), and its control channel."""
        return proxy_with_control_fd(self, "--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                                     "--upstream-ca", self.cert, *args)

    def open_tls(self, p, cafile):
        """A CONNECT tunnel to the origin, then TLS over it trusting `cafile` only: the session CA
        (the proxy takes the handshake: inspected) or the origin's own certificate (the origin
        takes it: an opaque tunnel)."""
        s = p.connect()
        s.sendall(f"CONNECT {self.host} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        context = ssl.create_default_context(cafile=cafile)
        tls = context.wrap_socket(s, server_hostname="origin.test")
        self.addCleanup(tls.close)
        return tls

    def get(self, tls, path):
        """One keep-alive request on `tls`: (status, x-egress-refused)."""
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        response = read_http_response(tls)
        return response.status, response.header("x-egress-refused")

    def origin_paths(self):
        return [r["path"] for r in self.origin.requests]

    def inspect(self, client, **change):
        reply = client.request("inspect", **change)
        self.assertTrue(reply.get("ok"), reply)
        return reply["inspect"]

    def test_a_rule_added_live_judges_the_next_request_of_an_open_connection(self):
        p, client = self.start("--inspect", self.host)
        tls = self.open_tls(p, self.ca)
        self.assertEqual(self.get(tls, "/one"), (200, None))
        endpoints = self.inspect(client, set=[{"host": self.host, "deny": [{"method": "*", "path": "/secret/**"}]}])
        self.assertEqual(endpoints, [{"host": self.host, "deny": [{"method": "*", "path": "/secret/**"}],
                                      "mode": "enforce"}])
        # The same connection: its next request is judged by the new rules, and it goes on.
        self.assertEqual(self.get(tls, "/secret/key"), (403, "request denied"))
        self.assertEqual(self.get(tls, "/two"), (200, None))
        self.assertEqual(self.origin_paths(), ["/one", "/two"])
        lines = [line.obj for line in p.wait_log(kind="request", count=3)]
        self.assertEqual([(l["class"], l["rule"]) for l in lines], [("ok", "-"), ("request denied", "deny[0]"),
                                                                    ("ok", "-")])
        self.assertEqual(len({l["id"] for l in lines}), 1)  # one client connection throughout

    def test_a_removed_endpoints_connection_closes_and_a_new_one_is_opaque(self):
        p, client = self.start("--inspect", self.host)
        tls = self.open_tls(p, self.ca)
        self.assertEqual(self.get(tls, "/one"), (200, None))
        self.assertEqual(self.inspect(client, remove=[self.host]), [])
        # Idle between requests: closed at once, before any next request.
        self.assertTrue(readable_within(tls, 5), "the connection was not closed")
        try:
            self.assertEqual(tls.recv(1), b"")
        except (ssl.SSLError, OSError):
            pass  # closed without close_notify is as closed
        done = p.wait_log(kind="connect", cls="done", count=1)[0].obj
        self.assertEqual(done["end"], "shutdown")
        # A new connection is a tunnel like any other: the origin's own certificate comes through.
        opaque = self.open_tls(p, self.cert)
        self.assertEqual(self.get(opaque, "/three"), (200, None))
        self.assertEqual(self.origin_paths(), ["/one", "/three"])
        self.assertEqual(len(p.find_logs(kind="request")), 1)  # /three was not inspected

    def test_a_refused_op_changes_nothing(self):
        p, client = self.start("--inspect", self.host)
        refused = [
            {"set": [{"host": self.host, "deny": [{"method": "*", "path": "/**"}]}, {"host": "b.test", "rules": [
                {"method": "GET", "path": "no-slash"}]}]},  # one bad endpoint among good ones
            {"add": [{"host": "b.test", "access": "read-only"}, {"host": "b.test"}]},  # a host twice
            {"add": [{"host": self.host, "access": "read-only"}]},  # a host inspected already
            {"remove": [self.host, "c.test"]},  # c.test is not inspected
            {"add": ["b.test"]},  # a bare entry: objects only
            {"set": [], "remove": [self.host]},  # two changes at once
        ]
        for change in refused:
            with self.subTest(change=change):
                reply = client.request("inspect", **change)
                self.assertFalse(reply["ok"], reply)
                self.assertTrue(reply["error"].startswith("inspect: "), reply)
        # Still the endpoint of the command line, with no rules: an empty add shows what is in force.
        self.assertEqual(self.inspect(client, add=[]), [{"host": self.host, "mode": "enforce"}])
        tls = self.open_tls(p, self.ca)
        self.assertEqual(self.get(tls, "/anything"), (200, None))
        self.assertEqual(self.origin_paths(), ["/anything"])

    def test_endpoints_the_inspectors_channel_cannot_carry_are_refused(self):
        # The change goes to the inspector as one message of at most 64 KiB: one larger would end
        # the inspector, and every inspected connection with it. Refused instead, nothing changed.
        p, client = self.start("--inspect", self.host)

        def batch(first, count):
            return [{"host": f"h{i:05d}.padding-padding.test"} for i in range(first, first + count)]
        in_force = self.inspect(client, add=batch(0, 700))
        self.assertLess(len(json.dumps(in_force, separators=(",", ":"))), 50000)
        reply = client.request("inspect", add=batch(700, 700))
        self.assertFalse(reply["ok"], f"{len(reply.get('inspect', []))} endpoints taken")
        self.assertIn("65536 bytes", reply["error"])
        self.assertEqual(len(self.inspect(client, add=[])), 701)
        tls = self.open_tls(p, self.ca)  # still inspected: the session CA's certificate
        self.assertEqual(self.get(tls, "/after"), (200, None))
        self.assertEqual(self.origin_paths(), ["/after"])

    def test_without_an_inspector_an_endpoint_cannot_be_named(self):
        p, client = self.start()
        reply = client.request("inspect", add=[{"host": self.host}])
        self.assertEqual((reply["ok"], reply.get("error")), (False, (
            "inspect: inspection was not enabled at start: name an endpoint with --inspect or the config's inspect "
            "array")))
        self.assertEqual(self.inspect(client, set=[]), [])
        # The connection is an opaque tunnel, as before.
        opaque = self.open_tls(p, self.cert)
        self.assertEqual(self.get(opaque, "/plain"), (200, None))


if __name__ == "__main__":
    unittest.main()
