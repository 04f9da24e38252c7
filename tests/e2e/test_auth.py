# SPDX-License-Identifier: Apache-2.0
"""The session token (SPEC §11) through every protocol."""

import os
import socket
import unittest

from harness import (SOCKS4_REFUSED, OriginsMixin, ProxyTestCase, basic_auth, closed_within, connect_request,
                     read_http_response, recv_all, recv_exact, socks4_connect, socks5_greeting, socks5_reply,
                     socks5_request)

TOKEN = "tok-3f9a1c7e5b2d4f6a8c0e"
ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


class AuthTest(OriginsMixin, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.http.requests.clear()

    def start(self, *args, token=TOKEN, **kwargs):
        path = os.path.join(self._tmpdir(), "token")
        with open(path, "w") as f:
            f.write(token + "\n")
        return self.proxy("--resolve", "origin.test=127.0.0.2", "--auth-token-file", path, *args, **kwargs)

    def _tmpdir(self):
        import tempfile
        d = tempfile.TemporaryDirectory(prefix="boxproxy-e2e-token-")
        self.addCleanup(d.cleanup)
        return d.name

    def assert_407(self, s):
        resp = read_http_response(s)
        self.assertEqual(resp.status_line, "HTTP/1.1 407 egress refused: auth required")
        self.assertEqual(resp.header("x-egress-refused"), "auth required")
        self.assertEqual(resp.header("proxy-authenticate"), 'Basic realm="boxproxy"')
        self.assertEqual(resp.header("content-type"), "text/plain")
        self.assertEqual((resp.header("connection") or "").lower(), "close")
        self.assertEqual(resp.body, b"egress refused: auth required\n")
        self.assertEqual(recv_all(s, 3), b"")

    def assert_logged_without_host(self, p, kind, secret_host):
        lines = p.wait_log(kind=kind, cls="auth required")
        text = "\n".join(p.raw_log_lines())
        self.assertNotIn(secret_host, text, "an unauthenticated peer must not put a host into the log")
        self.assertNotIn(TOKEN, text)
        for line in lines:
            # SPEC §11: "logged as `auth required` with `host=-`" (not the JSON string "-").
            self.assertIsNone(line.host, line.raw)

    # -- HTTP

    def test_connect_without_token(self):
        p = self.start()
        s = p.connect()
        s.sendall(connect_request(f"unauth-secret.test:{self.echo.port}"))
        self.assert_407(s)
        self.assert_logged_without_host(p, "connect", "unauth-secret.test")

    def test_connect_with_bearer(self):
        p = self.start()
        for scheme in ["Bearer", "bearer", "BEARER"]:
            with self.subTest(scheme=scheme):
                s = p.connect()
                s.sendall(connect_request(f"origin.test:{self.echo.port}",
                                          [f"Proxy-Authorization: {scheme} {TOKEN}"]))
                self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
                s.sendall(b"authed")
                self.assertEqual(recv_exact(s, 6), b"authed")
                s.close()
        self.assertNotIn(TOKEN, "\n".join(p.raw_log_lines()))

    def test_connect_with_basic_any_user(self):
        p = self.start()
        for user in ["anyone", "", "any one"]:
            with self.subTest(user=user):
                s = p.connect()
                s.sendall(connect_request(f"origin.test:{self.echo.port}",
                                          [f"Proxy-Authorization: {basic_auth(user, TOKEN)}"]))
                self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
                s.close()

    def test_wrong_tokens_are_refused(self):
        p = self.start()
        for header in [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", f"Basic {TOKEN}",
                       basic_auth("user", TOKEN + "x"), basic_auth(TOKEN, "nope"), f"Token {TOKEN}",
                       f"Bearer  {TOKEN.upper()}", "Basic !!!notbase64"]:
            with self.subTest(header=header):
                s = p.connect()
                s.sendall(connect_request(f"wrong-secret.test:{self.echo.port}",
                                          [f"Proxy-Authorization: {header}"]))
                self.assert_407(s)
        self.assert_logged_without_host(p, "connect", "wrong-secret.test")

    def test_auth_comes_before_any_decision(self):
        p = self.start()
        s = p.connect()
        s.sendall(connect_request("10.0.0.1:443"))
        self.assert_407(s)
        self.assertEqual(p.find_logs(cls="private"), [])

    def test_plain_http_with_token_does_not_forward_it(self):
        p = self.start()
        s = p.connect()
        s.sendall((f"GET http://origin.test:{self.http.port}/ HTTP/1.1\r\nHost: origin.test:{self.http.port}\r\n"
                   f"Proxy-Authorization: {basic_auth('u', TOKEN)}\r\n\r\n").encode())
        resp = read_http_response(s)
        self.assertEqual(resp.status, 200)
        s.close()
        headers = {k.lower(): v for k, v in self.http.requests[0]["headers"]}
        self.assertNotIn("proxy-authorization", headers)
        for k, v in self.http.requests[0]["headers"]:
            self.assertNotIn(TOKEN, v)

    def test_plain_http_without_token(self):
        p = self.start()
        s = p.connect()
        s.sendall(f"GET http://plain-secret.test:{self.http.port}/ HTTP/1.1\r\n\r\n".encode())
        self.assert_407(s)
        self.assert_logged_without_host(p, "http", "plain-secret.test")
        self.assertEqual(self.http.requests, [])

    # -- SOCKS5

    def socks5_auth(self, p, user, password, methods=(2,)):
        s = p.connect()
        s.sendall(socks5_greeting(methods))
        self.assertEqual(recv_exact(s, 2), b"\x05\x02")
        s.sendall(bytes([1, len(user)]) + user + bytes([len(password)]) + password)
        return s, recv_exact(s, 2)

    def test_socks5_method_two_with_token(self):
        p = self.start()
        s, status = self.socks5_auth(p, b"whoever", TOKEN.encode(), methods=(0, 2))
        self.assertEqual(status, b"\x01\x00")
        s.sendall(socks5_request("origin.test", self.echo.port) + b"data")
        self.assertEqual(recv_exact(s, 10), socks5_reply(0))
        self.assertEqual(recv_exact(s, 4), b"data")
        s.close()
        p.wait_log(kind="socks", cls="ok")
        self.assertNotIn(TOKEN, "\n".join(p.raw_log_lines()))

    def test_socks5_wrong_password(self):
        p = self.start()
        s, status = self.socks5_auth(p, b"whoever", b"not-the-token")
        self.assertEqual(status, b"\x01\x01")
        self.assertTrue(closed_within(s, 3))
        self.assertEqual(p.find_logs(kind="socks", cls="ok"), [])
        lines = p.wait_log(kind="socks", cls="auth required")
        self.assertIsNone(lines[0].host, lines[0].raw)

    def test_socks5_without_method_two(self):
        p = self.start()
        s = p.connect()
        s.sendall(socks5_greeting((0,)) + socks5_request("noauth-secret.test", 443))
        self.assertEqual(recv_all(s), b"\x05\xff")
        self.assertNotIn("noauth-secret.test", "\n".join(p.raw_log_lines()))

    def test_socks5_pipelined_auth_and_request(self):
        p = self.start()
        s = p.connect()
        s.sendall(socks5_greeting((2,)) + b"\x01\x01u" + bytes([len(TOKEN)]) + TOKEN.encode()
                  + socks5_request("origin.test", self.echo.port) + b"piped")
        self.assertEqual(recv_exact(s, 2), b"\x05\x02")
        self.assertEqual(recv_exact(s, 2), b"\x01\x00")
        self.assertEqual(recv_exact(s, 10), socks5_reply(0))
        self.assertEqual(recv_exact(s, 5), b"piped")
        s.close()

    def test_socks5_handshake_over_1024_bytes_closes(self):
        long_token = "T" * 255
        p = self.start(token=long_token)
        s = p.connect()
        greeting = bytes([5, 255]) + bytes([2] + list(range(3, 256)) + [0])[:255]
        auth = bytes([1, 255]) + b"u" * 255 + bytes([255]) + long_token.encode()
        request = socks5_request("a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61, self.echo.port)
        self.assertGreater(len(greeting) + len(auth) + len(request), 1024)
        s.sendall(greeting + auth + request)
        data = recv_all(s)
        self.assertNotIn(socks5_reply(0), data)
        self.assertEqual(p.find_logs(kind="socks", cls="ok"), [])

    # -- SOCKS4

    def test_socks4_cannot_carry_a_token(self):
        p = self.start()
        s, reply = socks4_connect(p, self.echo.port, host="four-secret.test")
        self.assertEqual(reply.hex(), SOCKS4_REFUSED.hex())
        self.assertTrue(closed_within(s, 3))
        self.assert_logged_without_host(p, "socks4", "four-secret.test")
        s, reply = socks4_connect(p, self.echo.port, ip="127.0.0.2")
        self.assertEqual(reply.hex(), SOCKS4_REFUSED.hex())

    # -- the token never leaves

    def test_token_never_in_audit(self):
        p = self.start("--audit", os.path.join(self._tmpdir(), "audit.jsonl"))
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}", [f"Proxy-Authorization: Bearer {TOKEN}"]))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.close()
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}", [f"Proxy-Authorization: Bearer {TOKEN}x"]))
        self.assert_407(s)
        p.wait_log(kind="connect", cls="done")
        audit = [a for a in p.argv if a.endswith("audit.jsonl")][0]
        with open(audit) as f:
            text = f.read()
        self.assertIn('"auth required"', text)
        self.assertNotIn(TOKEN, text)


if __name__ == "__main__":
    unittest.main()
