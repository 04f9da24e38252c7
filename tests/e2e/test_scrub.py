# SPDX-License-Identifier: Apache-2.0
"""Responses scrubbed (SPEC §19a): in a session that holds a secret, nothing an inspected origin
sends back carries its value. The origin here is the test's own, on 127.0.0.2 behind TLS, and
reflects what it is sent the ways ordinary origins do: an echo endpoint returning the request's
headers (the injected Authorization among them), a trailing-slash redirect keeping the query in
Location, a 404 quoting the path, X-Request-Id echoed, CORS reflecting Origin and
Access-Control-Request-Headers on an OPTIONS preflight, the value split across two body writes,
its base64 (a Basic credential) and its percent-encoding, chunked and by length, in trailers, and a
server-sent-event stream that must reach the box event by event (nothing held for the next).
The box sends the value itself here (it never would: it has a placeholder), since this tests what
comes back: in a head a match becomes the placeholder, in a body '*' byte for byte. The request
line says scrub=NAME."""

import base64
import http.server
import json
import os
import ssl
import threading
import time
import unittest
import urllib.parse

from box_support import ThreadedOrigin, make_certificate
from control_support import proxy_with_control_fd
from harness import ProxyTestCase, read_http_response, recv_until, wait_until
from inspect_support import INSPECTOR, connect_tls, curl

VALUE = "sk-scrub-4f1e9a2b7c3d6e5f"  # the secret: no other byte of the session holds it
LATE = "sk-late-8a7b6c5d4e3f2a1b0c"  # a secret set over the control channel while a stream is open
PLACEHOLDER_PREFIX = "bxp_api_"


class _Reflecting(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_OPTIONS(self):
        # Express's cors(): the request's Origin and Access-Control-Request-Headers reflected.
        self.send(204, headers=[("Access-Control-Allow-Origin", self.headers.get("Origin", "*")),
                                ("Access-Control-Allow-Headers",
                                 self.headers.get("Access-Control-Request-Headers", ""))])

    def do_POST(self):
        # What framing reached the origin: every Content-Length it was sent, and the body.
        lengths = self.headers.get_all("Content-Length") or []
        body = self.rfile.read(int(lengths[0])) if lengths else b""
        return self.send(200, json.dumps({"lengths": lengths, "body": body.decode()}).encode())

    def do_GET(self):
        path, _, query = self.path.partition("?")
        auth = self.headers.get("Authorization", "")
        if path == "/echo":  # an echo endpoint: every header, as JSON
            return self.send(200, json.dumps(dict(self.headers.items())).encode(),
                             [("Content-Type", "application/json")])
        if path == "/dir":  # a static server's trailing-slash redirect keeps the query
            return self.send(301, b"", [("Location", f"/dir/?{query}")])
        if path == "/request-id":
            return self.send(200, b"ok", [("X-Request-Id", self.headers.get("X-Request-Id", ""))])
        if path == "/split":  # the value in two writes, a moment apart
            body = f"before {auth} after".encode()
            cut = body.index(VALUE.encode()) + 7
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:cut])
            self.wfile.flush()
            time.sleep(0.01)  # a sleep: the gap between the two writes is the point
            self.wfile.write(body[cut:])
            return None
        if path == "/encodings":  # base64 inside a Basic credential, percent-encoded, hex
            token = auth.split(" ", 1)[-1]
            basic = base64.b64encode(f"user:{token}".encode()).decode()
            body = f"basic={basic}\nquoted={urllib.parse.quote(token, safe='')}\nhex={token.encode().hex()}\n"
            return self.send(200, body.encode())
        if path == "/chunked":  # chunked, the value in a trailer too
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Echo")
            self.end_headers()
            for piece in (b"value=", auth.encode(), b"\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(f"0\r\nX-Echo: {auth}\r\n\r\n".encode())
            return None
        if path == "/partial":  # printable bytes with no end in sight: the scrubber may hold them
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"progress:40%")
            self.wfile.flush()
            self.server.next_event.wait(10)
            self.wfile.write(b" " * 988)
            return None
        if path == "/gzip":  # a compressed body: the scrubber would read gzip, not the value
            import gzip
            body = gzip.compress(f"auth={auth}".encode())
            return self.send(200, body, [("Content-Encoding", "gzip")])
        if path == "/range":  # what Range reached the origin
            return self.send(200, f"range={self.headers.get('Range')}".encode())
        if path == "/events":  # server-sent events: one now, the next only when the test says
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in (b"data: first-event\n\n", b"data: second-event\n\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
                self.server.next_event.wait(10)
            self.wfile.write(b"0\r\n\r\n")
            return None
        if path == "/late":  # a stream that, once the test says, quotes a value set after it began
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in (b"data: first-event\n\n", f"data: {LATE}\n\n".encode()):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
                self.server.next_event.wait(10)
            self.wfile.write(b"0\r\n\r\n")
            return None
        # Anything else: an error page quoting the path ("Cannot GET /v1/...").
        return self.send(404, f"Cannot GET {urllib.parse.unquote(path)}".encode())


class ReflectingOrigin(ThreadedOrigin):
    def __init__(self, cert, key):
        super().__init__(_Reflecting, cert, key)
        self.server.next_event = threading.Event()

    def close(self):
        self.server.next_event.set()
        super().close()


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class ScrubTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        import tempfile
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-scrub-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.cert, self.key = make_certificate(self.dir)
        self.origin = ReflectingOrigin(self.cert, self.key)
        self.addCleanup(self.origin.close)
        self.ca = os.path.join(self.dir, "ca.pem")
        secret = os.path.join(self.dir, "api.secret")
        with open(secret, "w") as f:
            f.write(VALUE + "\n")
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": f"origin.test:{self.origin.port}",
                                    "inject": {"Authorization": "Bearer {api}"}}]}, f)
        self.p, self.control = proxy_with_control_fd(
            self, "--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca, "--upstream-ca",
            self.cert, "--config", config, "--secret", f"api={secret}", "--placeholder", "api", log_file=True)
        self.tls = connect_tls(self.p, f"origin.test:{self.origin.port}", self.ca)
        self.addCleanup(self.tls.close)

    def ask(self, request_line, *headers):
        lines = [request_line, "Host: origin.test:%d" % self.origin.port, *headers, "", ""]
        self.tls.sendall("\r\n".join(lines).encode())
        method = request_line.split()[0]
        return read_http_response(self.tls, method=method)

    def assert_clean(self, response):
        self.assertNotIn(VALUE.encode(), response.raw_head + response.body)

    def request_lines(self):
        lines = []
        for line in self.p.raw_log_lines():
            if '"kind":"request"' in line:
                lines.append(json.loads(line))
        return lines

    def test_an_echoed_injected_header_comes_back_starred_and_the_line_says_scrub(self):
        r = self.ask("GET /echo HTTP/1.1")
        self.assertEqual(r.status, 200)
        self.assert_clean(r)
        echoed = json.loads(r.body)["Authorization"]
        self.assertEqual(echoed, "Bearer " + "*" * len(VALUE))  # same length: the framing stays right
        self.assertTrue(wait_until(lambda: any(l.get("scrub") == ["api"] for l in self.request_lines()), 5),
                        self.request_lines())

    def test_a_redirect_keeping_the_query_gets_the_placeholder_in_location(self):
        r = self.ask(f"GET /dir?key={VALUE} HTTP/1.1")
        self.assertEqual(r.status, 301)
        self.assert_clean(r)
        self.assertRegex(r.header("location"), r"^/dir/\?key=" + PLACEHOLDER_PREFIX + "[0-9a-f]{32}$")

    def test_an_error_page_quoting_the_path_and_an_echoed_request_id(self):
        r = self.ask(f"GET /v1/{VALUE} HTTP/1.1")
        self.assertEqual(r.status, 404)
        self.assert_clean(r)
        self.assertEqual(r.body, b"Cannot GET /v1/" + b"*" * len(VALUE))
        r = self.ask("GET /request-id HTTP/1.1", f"X-Request-Id: {VALUE}")
        self.assert_clean(r)
        self.assertTrue(r.header("x-request-id").startswith(PLACEHOLDER_PREFIX), r.raw_head)

    def test_cors_reflecting_origin_and_request_headers(self):
        r = self.ask("OPTIONS /anything HTTP/1.1", f"Origin: https://{VALUE}.example",
                     f"Access-Control-Request-Headers: x-{VALUE}")
        self.assertEqual(r.status, 204)
        self.assert_clean(r)
        self.assertIn(PLACEHOLDER_PREFIX, r.header("access-control-allow-origin"))

    def test_a_value_split_across_two_writes(self):
        r = self.ask("GET /split HTTP/1.1")
        self.assertEqual(r.status, 200)
        self.assert_clean(r)
        self.assertEqual(r.body, b"before Bearer " + b"*" * len(VALUE) + b" after")

    def test_base64_percent_and_hex_spellings(self):
        r = self.ask("GET /encodings HTTP/1.1")
        self.assert_clean(r)
        for line in r.body.decode().splitlines():
            name, _, text = line.partition("=")
            if name == "basic":
                self.assertNotIn(VALUE.encode(), base64.b64decode(text + "=="), line)
            else:
                self.assertIn("*" * 12, text, line)
            self.assertNotIn(VALUE.encode().hex(), text)

    def test_a_chunked_body_and_its_trailer(self):
        r = self.ask("GET /chunked HTTP/1.1", "TE: trailers")
        self.assertEqual(r.status, 200)
        self.assert_clean(r)
        self.assertNotIn(VALUE.encode(), r.rest)

    def test_what_the_scrubber_holds_goes_out_once_the_origin_is_quiet(self):
        # "progress:40%" could begin a spelling of a key, so the scrubber holds it while more may
        # come; the origin then says nothing: it reaches the box soon after (50 ms), not when the
        # response ends.
        self.tls.sendall(f"GET /partial HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        head, got = recv_until(self.tls, b"\r\n\r\n", 5)
        deadline = time.monotonic() + 5
        while b"progress:40%" not in got and time.monotonic() < deadline:
            got += self.tls.recv(4096)
        self.assertIn(b"progress:40%", got)
        self.origin.server.next_event.set()

    def test_over_http2_the_same_reflections_come_back_scrubbed(self):
        # The box speaks HTTP/2 (curl --http2, ALPN h2): heads and bodies go through the same stages.
        base = f"https://origin.test:{self.origin.port}"
        for path, status in (("/echo", "200"), (f"/dir?key={VALUE}", "301"), (f"/v1/{VALUE}", "404")):
            code, out, err = curl("--http2", "--proxy", f"socks5h://localhost{self.p.socket_path}", "--cacert",
                                  self.ca, "-D", "-", base + path)
            self.assertEqual(code, 0, err)
            self.assertTrue(out.startswith(f"HTTP/2 {status}"), out[:200])
            self.assertNotIn(VALUE, out)
            self.assertTrue("*" * len(VALUE) in out or PLACEHOLDER_PREFIX in out, out[:500])

    def test_a_compressed_response_never_reaches_the_box(self):
        # SPEC §19a: the endpoint injects, so its requests ask for identity; a gzip answer anyway is
        # the origin's fault, and ends the connection before any byte of it reaches the box.
        self.tls.sendall(f"GET /gzip HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        got = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                piece = self.tls.recv(4096)
            except (ssl.SSLError, OSError):
                break
            if not piece:
                break
            got += piece
        self.assertNotIn(b"200", got[:20])
        self.assertNotIn(b"\x1f\x8b", got)

    def test_range_and_accept_encoding_never_reach_the_origin_and_the_line_says_inject(self):
        # Two ranges of a stored value would hand it back in pieces no scrubber recognises.
        r = self.ask("GET /range HTTP/1.1", "Range: bytes=0-5", "Accept-Encoding: gzip")
        self.assertEqual(r.body, b"range=None")
        self.assertTrue(wait_until(lambda: any(l.get("inject") == ["Authorization"] for l in self.request_lines()), 5),
                        self.request_lines())

    def test_repeated_equal_content_lengths_reach_the_origin_as_one(self):
        # SPEC §19a "Framing": an origin (or one in front of it) may read two as a list, or pick
        # another; different ones are bad framing and never sent.
        self.tls.sendall(f"POST /lengths HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\nContent-Length: 5\r\n"
                         "Content-Length: 5\r\n\r\nhello".encode())
        r = read_http_response(self.tls, method="POST")
        self.assertEqual(r.status, 200, r.raw_head)
        self.assertEqual(json.loads(r.body), {"lengths": ["5"], "body": "hello"})
        self.tls.sendall(f"POST /lengths HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\nContent-Length: 5\r\n"
                         "Content-Length: 6\r\n\r\nhello!".encode())
        r = read_http_response(self.tls, method="POST")
        self.assertEqual(r.status, 400, r.raw_head)
        self.assertEqual(r.header("x-egress-refused"), "bad framing")

    def test_a_secret_set_while_a_stream_is_open_is_scrubbed_from_what_comes_after(self):
        self.tls.sendall(f"GET /late HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        head, got = recv_until(self.tls, b"\r\n\r\n", 5)
        self.assertIn(b" 200 ", head)
        deadline = time.monotonic() + 5
        while b"first-event" not in got and time.monotonic() < deadline:
            got += self.tls.recv(4096)
        self.assertIn(b"first-event", got)
        self.assertEqual(self.control.request("secret", name="late", value=LATE)["ok"], True)
        self.origin.server.next_event.set()  # the origin now quotes the new value, and ends
        deadline = time.monotonic() + 5
        while not got.endswith(b"0\r\n\r\n") and time.monotonic() < deadline:
            piece = self.tls.recv(4096)
            if not piece:
                break
            got += piece
        self.assertNotIn(LATE.encode(), got)
        self.assertIn(b"data: " + b"*" * len(LATE), got)

    def test_server_sent_events_reach_the_box_one_by_one(self):
        self.tls.sendall(f"GET /events HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        head, rest = recv_until(self.tls, b"\r\n\r\n", 5)
        self.assertIn(b" 200 ", head)
        # The first event arrives while the origin holds the second back: nothing waits for more.
        got = rest
        deadline = time.monotonic() + 5
        while b"first-event" not in got and time.monotonic() < deadline:
            got += self.tls.recv(4096)
        self.assertIn(b"first-event", got)
        self.assertNotIn(b"second-event", got)
        self.origin.server.next_event.set()


if __name__ == "__main__":
    unittest.main()
