# SPDX-License-Identifier: Apache-2.0
"""Plain http:// requests end to end (SPEC §8, and the §6 refusals they carry)."""

import tempfile
import unittest

from harness import (ORIGIN_HOST, holds_for, OriginsMixin, ProxyTestCase, assert_http_refusal, free_port,
                     read_http_response, recv_all, still_open, wait_until)

HOP_BY_HOP = {"connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
              "te", "trailer", "upgrade"}


def request(method, uri, headers=None, body=b"", host=True, version="HTTP/1.1"):
    """Raw request bytes. `headers` is a list of "Name: value" lines (sent as given)."""
    lines = [f"{method} {uri} {version}"]
    if host is True:
        authority = uri.split("//", 1)[1].split("/", 1)[0] if "//" in uri else "origin.test"
        lines.append(f"Host: {authority}")
    elif host:
        lines.append(f"Host: {host}")
    lines += headers or []
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class PlainHttpTest(OriginsMixin, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.http.requests.clear()

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    @property
    def base(self):
        return f"http://origin.test:{self.http.port}"

    def exchange(self, p, raw, method="GET"):
        s = p.connect()
        s.sendall(raw)
        resp = read_http_response(s, method=method)
        return s, resp

    def origin_headers(self, i=0):
        return {k.lower(): v for k, v in self.http.requests[i]["headers"]}

    # -- forwarding

    def test_get_is_forwarded_in_origin_form(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/get?q=1", ["Accept: */*", "X-Kept: yes"]))
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.body, b"x" * 511 + b"\n")
        s.close()
        self.assertEqual(len(self.http.requests), 1)
        self.assertEqual(self.http.requests[0]["requestline"], "GET /get?q=1 HTTP/1.1")
        h = self.origin_headers()
        self.assertEqual(h.get("host"), f"origin.test:{self.http.port}")
        self.assertEqual(h.get("connection"), "close")
        self.assertEqual(h.get("x-kept"), "yes")
        (line,) = p.wait_log(kind="http", cls="ok")
        self.assertEqual((line.host, line.port, line.ip), ("origin.test", self.http.port, ORIGIN_HOST))
        (done,) = p.wait_log(kind="http", cls="done")
        self.assertGreater(done.up, 0)
        self.assertGreaterEqual(done.down, 512)

    def test_scheme_is_matched_without_regard_to_case(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", f"HTTP://origin.test:{self.http.port}/", host=False))
        self.assertEqual(resp.status, 200)
        s.close()

    def test_request_without_host_header_gets_one(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/", host=False))
        self.assertEqual(resp.status, 200)
        s.close()
        self.assertEqual(self.origin_headers().get("host"), f"origin.test:{self.http.port}")

    def test_http_1_0_request(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/", version="HTTP/1.0"))
        self.assertEqual(resp.status, 200)
        self.assertEqual(len(resp.body), 512)
        s.close()

    def test_hop_by_hop_request_headers_are_removed(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/", [
            "Connection: keep-alive, X-Private, Host, Content-Length",
            "X-Private: secret-hop", "Proxy-Connection: keep-alive", "Keep-Alive: timeout=5",
            "Proxy-Authorization: Basic dXNlcjpwYXNz", "TE: trailers", "Trailer: X-T", "X-Kept: yes"]))
        self.assertEqual(resp.status, 200)
        s.close()
        h = self.origin_headers()
        for name in ["x-private", "proxy-connection", "keep-alive", "proxy-authorization", "te", "trailer"]:
            self.assertNotIn(name, h)
        self.assertEqual(h.get("connection"), "close")
        self.assertEqual(h.get("x-kept"), "yes")
        self.assertEqual(h.get("host"), f"origin.test:{self.http.port}", "Host is never removed via Connection")

    def test_connection_cannot_remove_content_length(self):
        p = self.start()
        s, resp = self.exchange(p, request("POST", self.base + "/post", [
            "Connection: Content-Length", "Content-Length: 5"], b"hello"), method="POST")
        self.assertEqual((resp.status, resp.body), (200, b"hello"))
        s.close()
        self.assertEqual(self.http.requests[0]["body"], b"hello")
        self.assertEqual(self.origin_headers().get("content-length"), "5")

    def test_response_hop_by_hop_and_forged_refusal_header_are_removed(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/hop"))
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.body, b"hop\n")
        names = {k.lower() for k, _ in resp.headers}
        for name in ["x-private-hop", "keep-alive", "proxy-authenticate", "trailer", "upgrade", "x-egress-refused"]:
            self.assertNotIn(name, names, resp.raw_head)
        self.assertEqual(resp.header("x-kept"), "yes")
        s.close()

    def test_post_with_content_length(self):
        p = self.start()
        body = bytes(range(256)) * 40
        s, resp = self.exchange(p, request("POST", self.base + "/post", [f"Content-Length: {len(body)}"], body),
                                method="POST")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.body, body)
        self.assertEqual(resp.header("x-was-chunked"), "no")
        s.close()

    def test_chunked_post_body_arrives_exactly(self):
        p = self.start()
        chunks = [b"first chunk\n", b"\x00\x01\x02 binary \r\n in it", b"z" * 5000]
        framed = b"".join(b"%x\r\n" % len(c) + c + b"\r\n" for c in chunks) + b"0\r\n\r\n"
        s, resp = self.exchange(p, request("POST", self.base + "/post", ["Transfer-Encoding: chunked"], framed),
                                method="POST")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.body, b"".join(chunks))
        self.assertEqual(resp.header("x-was-chunked"), "yes")
        self.assertEqual(self.http.requests[0]["body"], b"".join(chunks))
        s.close()

    def test_chunked_post_with_extension_and_trailer(self):
        p = self.start()
        framed = b"5;name=value\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"
        s, resp = self.exchange(p, request("POST", self.base + "/post", ["Transfer-Encoding: chunked"], framed),
                                method="POST")
        self.assertEqual((resp.status, resp.body), (200, b"hello"))
        s.close()

    def test_redirect_is_passed_back_not_followed(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/redirect"))
        self.assertEqual(resp.status, 302)
        self.assertEqual(resp.header("location"), "http://elsewhere.test/target")
        self.assertEqual(resp.body, b"moved\n")
        s.close()
        self.assertTrue(holds_for(lambda: len(self.http.requests) == 1, 0.2), "the redirect was followed")
        self.assertEqual(p.find_logs(host="elsewhere.test"), [])

    def test_two_requests_on_one_connection_are_each_decided_and_logged(self):
        p = self.start()
        s = p.connect()
        s.sendall(request("GET", self.base + "/one"))
        r1 = read_http_response(s)
        self.assertEqual(r1.status, 200)
        self.assertEqual(len(r1.body), 512)
        self.assertNotEqual((r1.header("connection") or "").lower(), "close")
        s.sendall(request("GET", self.base + "/two"))
        r2 = read_http_response(s)
        self.assertEqual(r2.status, 200)
        self.assertEqual(len(r2.body), 512)
        s.close()
        self.assertEqual([r["path"] for r in self.http.requests], ["/one", "/two"])
        p.wait_log(kind="http", cls="ok", count=2)
        p.wait_log(kind="http", cls="done", count=2)

    def test_pipelined_second_request_to_a_refused_host(self):
        p = self.start()
        s = p.connect()
        s.sendall(request("GET", self.base + "/one"))
        r1 = read_http_response(s)
        self.assertEqual(r1.status, 200)
        s.sendall(request("GET", "http://10.0.0.1/"))
        assert_http_refusal(self, s, 403, "private")
        p.wait_log(kind="http", cls="private", ip="10.0.0.1")

    def test_keep_alive_counts_against_the_budget(self):
        p = self.start("--max-connections", "1")
        s = p.connect()
        s.sendall(request("GET", self.base + "/one"))
        self.assertEqual(read_http_response(s).status, 200)
        s.sendall(request("GET", self.base + "/two"))
        assert_http_refusal(self, s, 429, "connection budget")

    def test_connection_close_request_closes_after_response(self):
        p = self.start()
        s, resp = self.exchange(p, request("GET", self.base + "/", ["Connection: close"]))
        self.assertEqual(resp.status, 200)
        self.assertEqual(recv_all(s, 3), b"")

    # -- refusals

    def refused(self, p, raw, status, reason, words=None):
        s = p.connect()
        s.sendall(raw)
        assert_http_refusal(self, s, status, reason, words)
        s.close()

    def test_not_an_absolute_uri(self):
        p = self.start()
        self.refused(p, request("GET", "/", host=f"origin.test:{self.http.port}"), 400, "not an absolute URI")
        p.wait_log(kind="http", cls="not an absolute URI")
        self.assertEqual(self.http.requests, [])

    def test_not_an_http_uri(self):
        p = self.start()
        for uri in [f"https://origin.test:{self.http.port}/", "ftp://origin.test/", "HTTPS://origin.test/"]:
            with self.subTest(uri=uri):
                self.refused(p, request("GET", uri), 400, "not an http URI")

    def test_invalid_target_never_judged_as_another_host(self):
        p = self.start("--resolve", "evil.test=127.0.0.2")
        port = self.http.port
        for uri in [f"http://user@origin.test:{port}/", f"http://origin.test:{port}@evil.test:{port}/",
                    f"http://user:pw@origin.test:{port}/", f"http://origin.test:{port}\\@evil.test/",
                    f"http://origin.test:{port}/\\path", f"http://origin.test:{port}/#frag",
                    f"http://origin.test:{port}#@evil.test/", f"http://origin.test:0/",
                    f"http://origin.test:99999/"]:
            with self.subTest(uri=uri):
                self.refused(p, request("GET", uri, host=False), 400, "invalid target")
        self.assertEqual(self.http.requests, [])

    def test_invalid_host(self):
        p = self.start()
        self.refused(p, request("GET", "http://bad!host/", host=False), 400, "invalid host")
        self.refused(p, request("GET", "http://256.1.1.1/", host=False), 400, "invalid host")

    def test_refused_host_is_logged_as_sent(self):
        # SPEC §12: a refusal of a target whose host text is known names that host, JSON-quoted and
        # cut at 255 characters, even when the host itself is what is refused.
        p = self.start(log_file=True)
        long_host = "a" * 300
        for uri, host, port, reason in [
                ("http://256.1.1.1/", "256.1.1.1", 80, "invalid host"),
                ("http://bad!host:8080/x", "bad!host", 8080, "invalid host"),
                ("http://origin.test:99999/", "origin.test", 0, "invalid target"),
                (f"http://{long_host}/", long_host[:255], 80, "invalid host"),
                ("https://secure.test/", "secure.test", 0, "not an http URI")]:
            with self.subTest(uri=uri):
                self.refused(p, request("GET", uri, host=False), 400, reason)
                (line,) = p.wait_log(kind="http", host=host, cls=reason)
                self.assertEqual((line.port, line.ip), (port, "-"))
        # A target whose host depends on who reads it names none.
        self.refused(p, request("GET", "http://user@origin.test/", host=False), 400, "invalid target")
        p.wait_log(kind="http", host=None, cls="invalid target")
        self.assertEqual(p.find_logs(host="user@origin.test"), [])

    def test_refused_host_of_an_unauthenticated_client_is_never_logged(self):
        # SPEC §11: the token comes first, and an unauthenticated client puts no host in the log.
        token_path = f"{self._tmp_dir()}/token"
        with open(token_path, "w") as f:
            f.write("s3cret-token\n")
        p = self.start("--auth-token-file", token_path, log_file=True)
        s = p.connect()
        s.sendall(request("GET", "http://256.1.1.1/", host=False))
        self.assertEqual(read_http_response(s).status, 407)
        s.close()
        (line,) = p.wait_log(kind="http", cls="auth required")
        self.assertIsNone(line.host)
        self.assertEqual(p.find_logs(host="256.1.1.1"), [])

    def _tmp_dir(self):
        d = tempfile.TemporaryDirectory(prefix="boxproxy-e2e-token-")
        self.addCleanup(d.cleanup)
        return d.name

    def test_host_mismatch(self):
        p = self.start("--resolve", "other.test=127.0.0.2")
        port = self.http.port
        for host in ["other.test", f"other.test:{port}", "origin.test", f"origin.test:{port + 1}",
                     f"origin.test:{port}x"]:
            with self.subTest(host=host):
                self.refused(p, request("GET", self.base + "/", host=host), 400, "host mismatch")
        self.assertEqual(self.http.requests, [])

    def test_host_header_with_default_port(self):
        # http://origin.test/ means port 80, so "Host: origin.test:80" names the same place.
        p = self.start("--resolve", "origin.test=127.0.0.2")
        s = p.connect()
        s.sendall(request("GET", "http://origin.test/", host="origin.test:80"))
        resp = read_http_response(s)
        self.assertNotEqual(resp.header("x-egress-refused"), "host mismatch")
        s.close()

    def test_upgrade_not_supported(self):
        p = self.start()
        self.refused(p, request("GET", self.base + "/", ["Connection: Upgrade", "Upgrade: websocket"]), 400,
                     "upgrade not supported")
        self.assertEqual(self.http.requests, [])

    def test_smuggling_shapes_are_refused(self):
        p = self.start()
        b = self.base + "/post"
        shapes = {
            "CL and TE": ["Content-Length: 5", "Transfer-Encoding: chunked"],
            "TE and CL": ["Transfer-Encoding: chunked", "Content-Length: 5"],
            "two different CL": ["Content-Length: 5", "Content-Length: 6"],
            "CL with sign": ["Content-Length: +5"],
            "CL negative": ["Content-Length: -5"],
            "CL hex": ["Content-Length: 0x5"],
            "CL list": ["Content-Length: 5, 5"],
            "CL nineteen digits": ["Content-Length: 1234567890123456789"],
            "CL empty": ["Content-Length: "],
            "TE trailing comma": ["Transfer-Encoding: chunked,"],
            "TE gzip, chunked": ["Transfer-Encoding: gzip, chunked"],
            "TE identity": ["Transfer-Encoding: identity"],
            "TE twice": ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
            "TE with vertical tab": ["Transfer-Encoding: \x0bchunked"],
            "folded header": ["X-A: 1", " folded"],
            "folded with tab": ["X-A: 1", "\tfolded"],
            "space before colon": ["Content-Length : 5"],
            "tab before colon": ["Transfer-Encoding\t: chunked"],
            "NUL in a value": ["X-A: a\x00b"],
            "control character": ["X-A: a\x01b"],
            "DEL character": ["X-A: a\x7fb"],
        }
        for name, headers in shapes.items():
            with self.subTest(shape=name):
                s = p.connect()
                s.sendall(request("POST", b, headers, b"hello"))
                resp = read_http_response(s)
                self.assertEqual(resp.status, 400, resp)
                self.assertIn(resp.header("x-egress-refused"), ("bad framing", "bad request"), resp)
                s.close()
        self.assertEqual(self.http.requests, [])

    def test_bare_cr_and_lf_are_refused(self):
        p = self.start()
        host = f"Host: origin.test:{self.http.port}"
        for name, raw in {
            "bare LF line ends": f"GET {self.base}/ HTTP/1.1\n{host}\n\n".encode(),
            "one bare LF": f"GET {self.base}/ HTTP/1.1\r\n{host}\nX-A: 1\r\n\r\n".encode(),
            "bare CR": f"GET {self.base}/ HTTP/1.1\r\n{host}\rX-A: 1\r\n\r\n".encode(),
            "CR in request line": f"GET {self.base}/\r HTTP/1.1\r\n{host}\r\n\r\n".encode(),
        }.items():
            with self.subTest(shape=name):
                s = p.connect()
                s.sendall(raw)
                resp = read_http_response(s)
                self.assertEqual(resp.status, 400, resp)
                self.assertIn(resp.header("x-egress-refused"), ("bad framing", "bad request"), resp)
                s.close()
        self.assertEqual(self.http.requests, [])

    def test_malformed_chunks_are_refused(self):
        p = self.start()
        for name, framed in {
            "size not hex": b"zz\r\nhello\r\n0\r\n\r\n",
            "negative size": b"-5\r\nhello\r\n0\r\n\r\n",
            "size overflows": b"1" + b"0" * 20 + b"\r\nhello\r\n0\r\n\r\n",
            "space inside size": b"5 5\r\nhello\r\n0\r\n\r\n",
            "bare LF after size": b"5\nhello\r\n0\r\n\r\n",
            "data longer than size": b"3\r\nhello\r\n0\r\n\r\n",
            "bad extension": b"5;\x01\r\nhello\r\n0\r\n\r\n",
        }.items():
            with self.subTest(shape=name):
                s = p.connect()
                s.sendall(request("POST", self.base + "/post", ["Transfer-Encoding: chunked"], framed))
                resp = read_http_response(s)
                self.assertEqual(resp.status, 400, resp)
                self.assertEqual(resp.header("x-egress-refused"), "bad framing", resp)
                s.close()

    def test_malformed_chunk_with_the_head_is_refused_before_any_dial(self):
        p = self.start()
        before = len(self.http.requests)
        s = p.connect()
        s.sendall(request("POST", self.base + "/post", ["Transfer-Encoding: chunked"], b"zz\r\nhello\r\n"))
        resp = read_http_response(s)
        self.assertEqual((resp.status, resp.header("x-egress-refused")), (400, "bad framing"), resp)
        s.close()
        (line,) = p.wait_log(kind="http", cls="bad framing")
        self.assertEqual(line.ip, "-")  # refused before a dial: no address was dialled
        self.assertEqual(p.find_logs(kind="http", cls="ok"), [])
        self.assertEqual(len(self.http.requests), before)

    def test_origin_closing_mid_response_still_logs_a_done_line(self):
        from harness import _TcpServer

        class CutShort(_TcpServer):
            def handle(self, conn, record):
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
                conn.close()

        origin = CutShort()
        self.addCleanup(origin.close)
        p = self.start()
        s = p.connect()
        s.sendall(request("GET", f"http://origin.test:{origin.port}/"))
        data = recv_all(s, timeout=5)
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data)
        self.assertTrue(data.endswith(b"only ten b"), data)  # then closed: the client sees it cut short
        s.close()
        (done,) = p.wait_log(kind="http", cls="done")
        self.assertEqual(done.port, origin.port)
        self.assertGreater(done.down, 0)

    def test_head_too_large(self):
        p = self.start("--max-head-bytes", "1024")
        self.refused(p, request("GET", self.base + "/", ["X-Pad: " + "p" * 1100]), 431, "head too large")

    def test_refusals_through_plain_http(self):
        hole_port = free_port()
        p = self.start("--deny", "1.1.1.0/24", "--resolve", "mix.test=127.0.0.2,10.0.0.1")
        rows = [
            ("http://127.0.0.1/", 403, "loopback"),
            ("http://[::1]/", 403, "loopback"),
            ("http://0x7f.1/", 403, "loopback"),
            ("http://10.0.0.1/", 403, "private"),
            ("http://169.254.169.254/latest/meta-data/", 403, "link-local"),
            ("http://1.1.1.1/", 403, "denied"),
            ("http://mix.test/", 403, "private"),
            ("http://nx.test/", 502, "name not resolved"),
            (f"http://origin.test:{hole_port}/", 502, "dial failed"),
        ]
        for uri, status, reason in rows:
            with self.subTest(uri=uri):
                self.refused(p, request("GET", uri, host=False), status, reason)
                p.wait_log(kind="http", cls=reason)

    def test_not_listed_through_plain_http(self):
        p = self.start("--allow", "origin.test", "--allow-hint", "ask your operator")
        self.refused(p, request("GET", "http://other.test/", host=False), 403, "not-listed",
                     "other.test is not on this box's network list: ask your operator")
        self.refused(p, request("GET", self.base + "/", host=False), 403, "not-listed",
                     f"origin.test:{self.http.port} is not open on this box's network list: ask your operator")


if __name__ == "__main__":
    unittest.main()
