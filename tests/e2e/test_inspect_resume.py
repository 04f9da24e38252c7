# SPDX-License-Identifier: Apache-2.0
"""The box resumes its TLS sessions with the inspector (SPEC §18; issue 34), bound to the decided
host and port, through the real binary and its (confined) inspector.

Two inspected hosts, origin.test and other.test, both resolving to 127.0.0.2, served by one TLS
origin of the test's own whose certificate names both, and origin.test again at a second origin's
port; each endpoint read-only. The box's client is Python's ssl over a CONNECT tunnel, offering the
session of an earlier connection (`session=`) and reading whether the proxy took it
(`session_reused`), in TLS 1.3 and in TLS 1.2. A session made on a connection decided for one host
and port resumes only on another decided for the same; anywhere else it is a full handshake with
that connection's own leaf. The SNI check holds on an offered session, requests on a resumed
connection are judged as any, ALPN still picks h2 or http/1.1, and the inspector's seccomp filter
refuses nothing of it. A ticket does not outlive the inspector that sealed it (its keys are drawn
at start, held in memory only), says it lasts two hours, and allows no early data (0-RTT: seen by
openssl s_client, through `boxproxy bridge`). Loopback only; every wait bounded."""

import json
import os
import re
import ssl
import subprocess
import tempfile
import unittest

from harness import ProxyTestCase, read_http_response, recv_exact
from inspect_support import INSPECTOR, make_signed_certificate, make_test_ca
from box_support import Bridge, TlsOrigin
from test_confine import REFUSED

try:
    from test_inspect_h2 import H2Client
except ImportError:  # python3-h2 is missing: the ALPN test's h2 half skips
    H2Client = None

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
S_CLIENT_TIMEOUT = 30.0  # one `openssl s_client` run: a handshake, one request, the answer
VERSIONS = (("TLS 1.3", ssl.TLSVersion.TLSv1_3), ("TLS 1.2", ssl.TLSVersion.TLSv1_2))


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectResumeTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-resume-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.origin_ca = make_test_ca(self.dir)
        cert, key = make_signed_certificate(self.dir, self.origin_ca, ["origin.test", "other.test"], "both")
        self.origin = TlsOrigin(cert, key)
        self.addCleanup(self.origin.close)
        self.second = TlsOrigin(cert, key)  # origin.test at another port: another decided origin
        self.addCleanup(self.second.close)
        self.config = os.path.join(self.dir, "config.json")
        hosts = [f"origin.test:{self.origin.port}", f"other.test:{self.origin.port}", f"origin.test:{self.second.port}"]
        with open(self.config, "w") as f:
            json.dump({"inspect": [{"host": h, "access": "read-only"} for h in hosts]}, f)
        self.ca = os.path.join(self.dir, "session-ca.pem")
        self.p = self.start(self.ca)

    def start(self, ca_out):
        """serve inspecting the three endpoints, read-only, writing its CA to `ca_out`."""
        return self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--resolve", "other.test=127.0.0.2",
                          "--ca-out", ca_out, "--upstream-ca", self.origin_ca[0], "--config", self.config)

    def context(self, version, alpn=("http/1.1",)):
        """A client context trusting the session's CA, speaking only `version`, offering `alpn`."""
        context = ssl.create_default_context(cafile=self.ca)
        context.minimum_version = context.maximum_version = version
        context.set_alpn_protocols(list(alpn))
        return context

    def connect(self, context, host, port, sni=None, session=None):
        """A CONNECT tunnel to host:port, then TLS over it (SNI `sni`, default the host), offering
        `session`: the TLS socket, handshake done."""
        s = self.p.connect()
        try:
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            return context.wrap_socket(s, server_hostname=sni or host, session=session)
        except BaseException:
            s.close()
            raise

    def ask(self, tls, host, port, method="GET", path="/"):
        """One request on `tls` (Host: host:port, keep-alive): the response."""
        tls.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        return read_http_response(tls, method=method)

    def first_session(self, context, host, port):
        """A full handshake to host:port, one request read (so the ticket sent after the handshake
        has come), the connection closed: its session."""
        with self.connect(context, host, port) as tls:
            self.assertFalse(tls.session_reused)
            self.assertEqual(self.ask(tls, host, port).status, 200)
            session = tls.session
        self.assertIsNotNone(session)
        return session

    def assert_nothing_refused(self):
        """After the test: serve stopped, and the inspector's filter refused no call it made."""
        self.p.stop()
        self.assertIsNone(REFUSED.search(self.p.stderr_text()), self.p.stderr_text())

    def each_version(self, check, port=None):
        """For TLS 1.3 and TLS 1.2, each a subtest: a context of that version only and a session of
        origin.test's connection at `port` (default the first origin's), then
        check(name, version, context, session)."""
        for name, version in VERSIONS:
            with self.subTest(name):
                context = self.context(version)
                check(name, version, context, self.first_session(context, "origin.test", port or self.origin.port))

    def test_a_second_connection_to_the_same_host_resumes(self):
        port = self.origin.port

        def check(name, version, context, session):
            for _ in range(2):  # each resumed connection's own ticket resumes the next
                with self.connect(context, "origin.test", port, session=session) as tls:
                    self.assertTrue(tls.session_reused, name)
                    self.assertEqual(tls.version(), "TLSv1.3" if version == ssl.TLSVersion.TLSv1_3 else "TLSv1.2")
                    response = self.ask(tls, "origin.test", port, path="/again")
                    self.assertEqual((response.status, response.body), (200, b"x" * 511 + b"\n"))
                    session = tls.session
        self.each_version(check)
        self.p.wait_log(kind="request", cls="ok", count=6)
        self.assert_nothing_refused()

    def test_a_session_of_one_host_is_not_resumed_on_a_connection_decided_for_another(self):
        def check(name, version, context, session):
            # Another host at the same address and port, and the same host at another port: each a
            # full handshake, verified, with its own leaf, and it works.
            for host, port in (("other.test", self.origin.port), ("origin.test", self.second.port)):
                with self.connect(context, host, port, session=session) as tls:
                    self.assertFalse(tls.session_reused, f"{name}: {host}:{port} resumed origin.test's session")
                    names = [value for kind, value in tls.getpeercert()["subjectAltName"] if kind == "DNS"]
                    self.assertEqual(names, [host])
                    self.assertEqual(self.ask(tls, host, port).status, 200)
        self.each_version(check)
        self.assert_nothing_refused()

    def test_an_sni_naming_another_host_is_refused_on_an_offered_session(self):
        def check(name, version, context, session):
            # The connection is decided for origin.test, whose session this is; the hello names
            # other.test. Resumed, the client would not look at a certificate at all.
            with self.assertRaises((ssl.SSLError, OSError), msg=name):
                self.connect(context, "origin.test", self.origin.port, sni="other.test", session=session).close()
        self.each_version(check)
        self.p.wait_log(kind="connect", cls="sni mismatch", count=2)
        self.assert_nothing_refused()

    def test_requests_on_a_resumed_connection_are_still_judged(self):
        port = self.origin.port

        def check(name, version, context, session):
            with self.connect(context, "origin.test", port, session=session) as tls:
                self.assertTrue(tls.session_reused)
                denied = self.ask(tls, "origin.test", port, method="DELETE", path="/resumed-delete")
                self.assertEqual((denied.status, denied.header("x-egress-refused")), (403, "request denied"))
                # A Host naming the other inspected host, on this connection decided for origin.test.
                elsewhere = self.ask(tls, "other.test", port, path="/resumed-elsewhere")
                self.assertEqual((elsewhere.status, elsewhere.header("x-egress-refused")), (400, "host mismatch"))
                self.assertEqual(self.ask(tls, "origin.test", port, path="/resumed-get").status, 200)
        self.each_version(check)
        paths = [r["path"] for r in self.origin.requests]
        self.assertEqual([x for x in paths if x.startswith("/resumed")], ["/resumed-get", "/resumed-get"])
        self.p.wait_log(kind="request", cls="request denied", count=2)
        self.p.wait_log(kind="request", cls="host mismatch", count=2)
        self.assert_nothing_refused()

    def test_alpn_still_chooses_on_a_resumed_session(self):
        port = self.origin.port

        def check(name, version, context, session):  # the session made on an http/1.1 connection
            context.set_alpn_protocols(["h2", "http/1.1"])
            with self.connect(context, "origin.test", port, session=session) as tls:
                self.assertTrue(tls.session_reused)
                self.assertEqual(tls.selected_alpn_protocol(), "h2")
                if H2Client is not None:
                    tls.settimeout(10)
                    client = H2Client(tls, f"origin.test:{port}")
                    sid = client.request("/resumed-h2")
                    self.assertEqual(client.collect([sid])[sid]["status"], 200)
                session = tls.session
            context.set_alpn_protocols(["http/1.1"])
            with self.connect(context, "origin.test", port, session=session) as tls:
                self.assertTrue(tls.session_reused)
                self.assertEqual(tls.selected_alpn_protocol(), "http/1.1")
                self.assertEqual(self.ask(tls, "origin.test", port).status, 200)
        self.each_version(check)
        self.assert_nothing_refused()

    def test_a_ticket_lasts_two_hours(self):
        def check(name, version, context, session):
            # The manual's two hours (REQUEST INSPECTION), as the ticket tells the box: its lifetime
            # hint, the session's timeout on the proxy's side (SSL_CTX_set_timeout), which is
            # what the proxy holds a ticket to when it is offered. (session.timeout is the
            # client's own, 7200 by OpenSSL's default whatever the proxy says: no witness.)
            self.assertTrue(session.has_ticket, name)
            self.assertEqual(session.ticket_lifetime_hint, 7200, name)
        self.each_version(check)
        self.assert_nothing_refused()

    def s_client(self, bridge, *args):
        """`openssl s_client` in TLS 1.3 to origin.test through `bridge` (its CONNECT, `-proxy`),
        verifying the session's CA, sending one GET / (Connection: close) and reading until the
        proxy closes, so that the ticket sent after the handshake has come: its standard output."""
        port = self.origin.port
        argv = ["openssl", "s_client", "-proxy", f"{bridge.host}:{bridge.port}", "-connect", f"origin.test:{port}",
                "-servername", "origin.test", "-CAfile", self.ca, "-verify_return_error", "-tls1_3", "-ign_eof",
                *args]
        request = f"GET / HTTP/1.1\r\nHost: origin.test:{port}\r\nConnection: close\r\n\r\n".encode()
        done = subprocess.run(argv, input=request, capture_output=True, timeout=S_CLIENT_TIMEOUT)
        out = done.stdout.decode("utf-8", "replace")
        self.assertEqual(done.returncode, 0, out + done.stderr.decode("utf-8", "replace"))
        self.assertIn("HTTP/1.1 200 OK", out)
        return out

    def test_no_early_data_is_taken(self):
        # A real 0-RTT client: openssl s_client keeps the ticket of one connection, then offers
        # it with early data on the next. The ticket itself says how much early data the proxy
        # would take (its max_early_data): 0, so the client sends none; a request sent early could
        # be replayed by whoever saw it. Python's ssl has no early data; s_client cannot reach a
        # Unix socket through a proxy, so `boxproxy bridge` (loopback TCP to the socket) stands
        # between, as in a box.
        bridge = Bridge(self.p.socket_path)
        self.addCleanup(bridge.kill)
        session = os.path.join(self.dir, "box-session.pem")
        early = os.path.join(self.dir, "early.txt")
        with open(early, "wb") as f:
            f.write(f"GET /early HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        first = self.s_client(bridge, "-sess_out", session)
        offered = subprocess.run(["openssl", "sess_id", "-in", session, "-noout", "-text"], capture_output=True,
                                 text=True, check=True, timeout=S_CLIENT_TIMEOUT).stdout
        self.assertIn("TLS session ticket lifetime hint: 7200", offered)  # a ticket of this proxy's
        self.assertIn("Max Early Data: 0\n", offered)
        out = self.s_client(bridge, "-sess_in", session, "-early_data", early)
        self.assertIn("Reused, TLSv1.3", out)  # the ticket was offered and taken
        self.assertIn("Early data was not sent", out)
        # Every ticket either connection was given (s_client prints each as it comes) allows none.
        self.assertEqual(set(re.findall(r"Max Early Data: (\d+)", first + out)), {"0"})
        self.assertNotIn("/early", [r["path"] for r in self.origin.requests])
        self.assertEqual(bridge.stop(), 0)
        self.assert_nothing_refused()

    def test_a_session_does_not_outlive_the_proxy_that_made_it(self):
        port = self.origin.port

        def check(name, version, context, session):
            # The next session of serve: its inspector's ticket keys are new (and its CA: trusted too).
            self.p.stop()
            self.ca = os.path.join(self.dir, f"next-{version.name}.pem")  # the next subtest's first session too
            self.p = self.start(self.ca)
            context.load_verify_locations(self.ca)
            with self.connect(context, "origin.test", port, session=session) as tls:
                self.assertFalse(tls.session_reused, f"{name}: a ticket of the last process was taken")
                self.assertEqual(self.ask(tls, "origin.test", port).status, 200)
        self.each_version(check)

if __name__ == "__main__":
    unittest.main()
