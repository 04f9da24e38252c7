# SPDX-License-Identifier: Apache-2.0
"""Request inspection (SPEC §18) and whom the box talks to, through the real binary and its
inspector, with TLS origins of the test's own on 127.0.0.2:

- a request whose Host names another host (or port) than the one the tunnel was decided for is
  refused inside TLS as `host mismatch` (400), never reaches the origin, and the connection goes on;
- an origin whose certificate is signed by the trusted test CA but for another name is
  `upstream tls` (502), while one of the same CA for the right name is reached;
- a host or port not named for inspection stays an opaque tunnel in the same session: the client
  sees the origin's own certificate (the test CA's issuer, its very bytes), not a session-CA leaf;
- a body framed by the origin's close that ends without close_notify (cut short, for all anyone can
  tell) reaches the box with its own connection ended the same way, never with close_notify."""

import os
import shutil
import ssl
import tempfile
import unittest

from box_support import TlsOrigin
from harness import HttpOrigin, ProxyTestCase, _OriginHandler, read_http_response
from inspect_support import (INSPECTOR, CutOrigin, InspectRig, connect_tls, curl, der_of, issuer_cn,
                             make_signed_certificate, make_test_ca)

CURL = shutil.which("curl")


def origin_context(cert, key):
    """A TLS origin's context that picks the suite by the client's order (Python's server context
    picks by its own, OP_CIPHER_SERVER_PREFERENCE; nginx's default is the client's)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    return context


class ClosingHandler(_OriginHandler):
    """The harness's origin, closing each connection after its answer: the inspector keeps no idle
    connection of it (proxy/inspect/origin_pool.h), so each box connection makes a TLS connection
    of its own to it."""

    def end_headers(self):
        self.send_header("Connection", "close")
        super().end_headers()


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class OriginSessionTest(InspectRig, ProxyTestCase):

    def test_a_new_inspected_connection_resumes_the_origins_tls_session(self):
        # proxy/inspect/origin_sessions.h: what the origin handed out on the first connection is
        # offered by the next one to the same host and port, so the origin makes no full handshake.
        self.origin.close()
        context = origin_context(self.cert, self.key)
        self.origin = HttpOrigin(tls_context=context, handler=ClosingHandler)
        self.addCleanup(self.origin.close)
        p = self.start_inspecting()
        for path in ("/first", "/second", "/third"):
            tls = connect_tls(p, f"origin.test:{self.origin.port}", self.ca)
            tls.sendall(f"GET {path} HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n"
                        "Connection: close\r\n\r\n".encode())
            self.assertEqual(read_http_response(tls).status, 200)
            tls.close()
        resumed = [(r["path"], r["tls_resumed"]) for r in self.origin.requests]
        self.assertEqual(resumed, [("/first", False), ("/second", True), ("/third", True)])

    def test_a_host_keeps_more_sessions_than_a_few(self):
        # proxy/inspect/origin_sessions.h: a session is used once, so a box that opens several
        # connections at once needs several kept; a host keeps up to 32 (4 before, when 16 new
        # connections at a time resumed on about half). Here the origin hands out 8 tickets on the
        # first handshake and none after: each of the next 8 connections resumes only if all 8
        # were kept.
        self.origin.close()
        context = origin_context(self.cert, self.key)
        context.num_tickets = 8
        self.origin = HttpOrigin(tls_context=context, handler=ClosingHandler)
        self.addCleanup(self.origin.close)
        p = self.start_inspecting()

        def one(path):
            with connect_tls(p, f"origin.test:{self.origin.port}", self.ca) as tls:
                tls.sendall(f"GET {path} HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n"
                            "Connection: close\r\n\r\n".encode())
                self.assertEqual(read_http_response(tls).status, 200)

        one("/first")
        context.num_tickets = 0  # from here on, nothing new to keep
        for i in range(8):
            one(f"/next{i}")
        resumed = [r["tls_resumed"] for r in self.origin.requests]
        self.assertEqual(resumed, [False] + [True] * 8)

    def test_both_sides_agree_on_aes_128_gcm_with_sha_256_when_the_peer_offers_it(self):
        # proxy/inspect/tls_contexts.cc: the key schedule's hash is SHA-256 (the processor's SHA
        # instructions), not OpenSSL's first choice SHA-384, on both sides. Python's client offers
        # TLS_AES_256_GCM_SHA384 first: the box side picks by its own order; the origin (picking
        # by the client's order, as nginx does by default) gets the proxy's offer.
        self.origin.close()
        self.origin = HttpOrigin(tls_context=origin_context(self.cert, self.key))
        self.addCleanup(self.origin.close)
        p = self.start_inspecting()
        tls = connect_tls(p, f"origin.test:{self.origin.port}", self.ca)
        self.addCleanup(tls.close)
        self.assertEqual(ssl.create_default_context().get_ciphers()[0]["name"], "TLS_AES_256_GCM_SHA384")
        self.assertEqual(tls.cipher()[0], "TLS_AES_128_GCM_SHA256")
        tls.sendall(f"GET /suite HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        self.assertEqual(read_http_response(tls).status, 200)
        self.assertEqual([r["tls_cipher"] for r in self.origin.requests], ["TLS_AES_128_GCM_SHA256"])


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class HostMismatchTest(InspectRig, ProxyTestCase):

    def test_a_host_naming_another_host_is_refused_and_never_reaches_the_origin(self):
        p = self.start_inspecting()
        port = self.origin.port
        tls = connect_tls(p, f"origin.test:{port}", self.ca)
        self.addCleanup(tls.close)
        # Another name, another name at the decided port, the decided name at another port, the
        # decided name with its port left out (allowed only when the decided port is 443), none.
        hosts = ["other.test", f"other.test:{port}", f"origin.test:{port + 1 if port < 65535 else 1}", "origin.test",
                 f"origin.test.other.test:{port}", None]
        for host in hosts:
            with self.subTest(host=host):
                field = f"Host: {host}\r\n" if host is not None else ""
                tls.sendall(f"GET /mismatch HTTP/1.1\r\n{field}\r\n".encode())
                response = read_http_response(tls)
                self.assertEqual((response.status, response.header("x-egress-refused")), (400, "host mismatch"))
                # Framing sound: the connection goes on (no Connection: close).
                self.assertNotIn("close", (response.header("connection") or "").lower())
        # The same connection, the decided host: through.
        tls.sendall(f"GET /matched HTTP/1.1\r\nHost: origin.test:{port}\r\n\r\n".encode())
        self.assertEqual(read_http_response(tls).status, 200)
        self.assertEqual([r["path"] for r in self.origin.requests], ["/matched"])
        lines = [line.obj for line in p.wait_log(kind="request", count=len(hosts) + 1)]
        self.assertEqual([(l["class"], l["status"]) for l in lines],
                         [("host mismatch", 400)] * len(hosts) + [("ok", 200)])
        self.assertEqual(len({l["id"] for l in lines}), 1)


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class OriginCertificateTest(ProxyTestCase):
    """Origins whose certificates a CA of the test's own signed; that CA is the proxy's
    --upstream-ca, so only the name can be wrong."""

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspect-origins-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.test_ca = make_test_ca(self.dir)
        self.session_ca = os.path.join(self.dir, "session-ca.pem")

    def origin_for(self, names, stem):
        cert, key = make_signed_certificate(self.dir, self.test_ca, names, stem)
        origin = TlsOrigin(cert, key)
        self.addCleanup(origin.close)
        return origin, cert

    def start(self, *inspected):
        args = ["--log", "json", "--resolve", "origin.test=127.0.0.2", "--resolve", "other.test=127.0.0.2",
                "--upstream-ca", self.test_ca[0], "--ca-out", self.session_ca]
        for entry in inspected:
            args += ["--inspect", entry]
        return self.proxy(*args)

    @unittest.skipIf(CURL is None, "curl is not installed")
    def test_an_origin_certificate_for_another_name_is_upstream_tls(self):
        wrong, _ = self.origin_for(["wrong.test"], "wrong")
        right, _ = self.origin_for(["origin.test"], "right")
        p = self.start(f"origin.test:{wrong.port}", f"origin.test:{right.port}")

        def get(origin):
            code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.session_ca,
                                  "-D", "-", "-o", "/dev/null", f"https://origin.test:{origin.port}/x")
            lines = out.split("\r\n")
            status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/") else None
            refused = next((l.split(":", 1)[1].strip() for l in lines if l.lower().startswith("x-egress-refused:")),
                           None)
            return status, refused, err

        status, refused, err = get(wrong)
        self.assertEqual((status, refused), (502, "upstream tls"), err)
        self.assertEqual(wrong.requests, [])
        # The same CA for the right name: reached, so the name is what failed.
        status, refused, err = get(right)
        self.assertEqual((status, refused), (200, None), err)
        self.assertEqual([r["path"] for r in right.requests], ["/x"])
        classes = sorted(line.obj.get("class") for line in p.wait_log(kind="request", count=2))
        self.assertEqual(classes, ["ok", "upstream tls"])

    def test_a_host_or_port_not_named_stays_an_opaque_tunnel(self):
        inspected, cert = self.origin_for(["origin.test", "other.test"], "both")
        elsewhere = TlsOrigin(cert, os.path.join(self.dir, "both.key"))  # the same certificate, another port
        self.addCleanup(elsewhere.close)
        p = self.start(f"origin.test:{inspected.port}")
        either = os.path.join(self.dir, "either-ca.pem")  # the client trusts both CAs: the issuer tells which
        with open(either, "w") as out:
            for path in (self.test_ca[0], self.session_ca):
                with open(path) as f:
                    out.write(f.read())
        cases = [("origin.test", inspected.port, True), ("origin.test", elsewhere.port, False),
                 ("other.test", inspected.port, False)]
        for host, port, inspected_here in cases:
            with self.subTest(host=host, port=port):
                tls = connect_tls(p, f"{host}:{port}", either, server_hostname=host)
                self.addCleanup(tls.close)
                if inspected_here:
                    self.assertTrue(issuer_cn(tls).startswith("boxproxy "), issuer_cn(tls))
                    self.assertNotEqual(tls.getpeercert(binary_form=True), der_of(cert))
                else:
                    # The origin's own certificate, byte for byte: the proxy never touched the TLS.
                    self.assertEqual(issuer_cn(tls), "Test Origin CA")
                    self.assertEqual(tls.getpeercert(binary_form=True), der_of(cert))
                tls.sendall(f"GET /{host}/{port} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
                self.assertEqual(read_http_response(tls).status, 200)
        # One request line: only the inspected one was judged.
        (line,) = p.wait_log(kind="request")
        self.assertEqual(line.obj["port"], inspected.port)
        self.assertEqual(len(p.wait_log(kind="connect", cls="ok", count=3)), 3)



@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class CutBodyTest(InspectRig, ProxyTestCase):

    def test_a_body_the_origin_may_have_cut_reaches_the_box_without_a_clean_end(self):
        origin = CutOrigin(self.cert, self.key)
        self.addCleanup(origin.close)
        target = f"origin.test:{origin.port}"
        p = self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                       "--upstream-ca", self.cert, "--inspect", target)
        tls = connect_tls(p, target, self.ca, suppress_ragged_eofs=False)
        self.addCleanup(tls.close)
        tls.settimeout(10)
        tls.sendall(f"GET /cut HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        got, clean = b"", None
        for _ in range(100):  # bounded: each recv waits at most 10 s
            try:
                chunk = tls.recv(65536)
            except ssl.SSLEOFError:
                clean = False
                break
            if not chunk:
                clean = True  # close_notify: the box would take the body for whole
                break
            got += chunk
        self.assertTrue(got.endswith(b"part of a body"), got)
        self.assertIs(clean, False, "the box's connection ended with close_notify after a body that may be cut")


if __name__ == "__main__":
    unittest.main()
