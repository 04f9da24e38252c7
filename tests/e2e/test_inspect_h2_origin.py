# SPDX-License-Identifier: Apache-2.0
"""HTTP/2 toward the origin (SPEC §19: the inspector "uses what the origin offers upstream, in any
pairing"; issue 25 item 4, stage 2), through the real binary and its inspector: an origin of the
test's own (python3-h2, TLS on 127.0.0.2, ALPN "h2" only) that records what it receives, reached
by a box speaking HTTP/1.1 and by one speaking HTTP/2. Every request is judged (a denied one never
reaches the origin), injection applies, one origin connection carries a keep-alive box's requests,
trailers come back to either kind of box (filtered), a GOAWAY is followed by a new connection, and
an origin that breaks HTTP/2 (a PUSH_PROMISE, a header list past the bound) costs that request a
502 while the box's connection goes on. Loopback only; every wait bounded."""

import json
import os
import socket
import ssl
import sys
import time
import unittest

try:
    import h2.events
except ImportError:  # an interpreter of its own (pyenv): Debian's packages are where install-deps put them
    sys.path.append("/usr/lib/python3/dist-packages")
    import h2.events

from harness import ProxyTestCase, read_http_response, recv_all, recv_exact
from inspect_support import CURL, INSPECTOR, H2Origin, InspectRig, curl
from test_inspect_h2 import H2Client, h2_tls, start_inspecting_endpoint

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
RULES = {"rules": [{"method": "GET", "path": "/allowed/**"}, {"method": "POST", "path": "/allowed/**"},
                   {"method": "GET", "path": "/trailers/**"}, {"method": "GET", "path": "/goaway/**"},
                   {"method": "GET", "path": "/push/**"}, {"method": "GET", "path": "/bighead/**"},
                   {"method": "DELETE", "path": "/refused/**"}]}
SECRET = "sk-h2-origin-5e6f7a8b9c0d1e2f"


class TrailerClient(H2Client):
    """H2Client that also keeps each stream's trailers."""

    def _take(self, event):
        if isinstance(event, h2.events.TrailersReceived):
            self.streams[event.stream_id]["trailers"] = {k.decode(): v.decode() for k, v in event.headers}
        super()._take(event)


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectH2OriginTest(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.record = os.path.join(self.dir, "h2-origin.jsonl")
        self.h2origin = H2Origin(self.cert, self.key, self.record)
        self.addCleanup(self.h2origin.close)
        self.target = f"origin.test:{self.h2origin.port}"

    def start(self, endpoint=None, *args):
        return start_inspecting_endpoint(self, dict(endpoint or RULES, host=self.target), *args)

    def curl(self, p, version, path):
        return curl(version, "--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.ca, "-D", "-",
                    "-w", "\nversion=%{http_version}", f"https://{self.target}{path}")

    def open_h1(self, p):
        s = p.connect()
        s.sendall(f"CONNECT {self.target} HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        context = ssl.create_default_context(cafile=self.ca)
        context.set_alpn_protocols(["http/1.1"])
        tls = context.wrap_socket(s, server_hostname="origin.test")
        tls.settimeout(10)
        self.addCleanup(tls.close)
        return tls

    def get_h1(self, tls, path, extra=""):
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.target}\r\n{extra}\r\n".encode())
        return read_http_response(tls)

    def h2_box(self, p, cls=H2Client):
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        return cls(tls, self.target)

    def paths(self):
        return [r["path"] for r in self.h2origin.requests]

    # ---- the pairings ---------------------------------------------------------------------

    @unittest.skipUnless(CURL, "no curl")
    def test_box_http1_to_origin_h2_each_request_judged(self):
        p = self.start()
        code, out, err = self.curl(p, "--http1.1", "/allowed/one?q=1")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("HTTP/1.1 200"), out[:300])
        self.assertIn("h2 origin: /allowed/one?q=1", out)
        code, out, err = self.curl(p, "--http1.1", "/denied")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("HTTP/1.1 403"), out[:300])
        self.assertIn("x-egress-refused: request denied", out)
        (request,) = self.h2origin.requests  # over HTTP/2 (python3-h2 speaks nothing else), the denied one never
        self.assertEqual((request["method"], request["path"]), ("GET", "/allowed/one?q=1"))
        headers = dict((k, v) for k, v in request["headers"])
        self.assertEqual((headers[":scheme"], headers[":authority"]), ("https", self.target))
        self.assertEqual(headers.get("te"), "trailers")
        for name in ("host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"):
            self.assertNotIn(name, headers)
        lines = p.wait_log(kind="request", count=2)
        self.assertEqual(sorted((l.obj["class"], l.obj["status"]) for l in lines),
                         [("ok", 200), ("request denied", 403)])
        with open(self.record) as f:  # what the origin wrote where the box cannot read it
            self.assertEqual([json.loads(line)["path"] for line in f], ["/allowed/one?q=1"])

    @unittest.skipUnless(CURL, "no curl")
    def test_box_h2_to_origin_h2_each_request_judged(self):
        p = self.start()
        code, out, err = self.curl(p, "--http2", "/allowed/two")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("HTTP/2 200"), out[:300])
        self.assertTrue(out.endswith("version=2"), out[-50:])
        self.assertIn("h2 origin: /allowed/two", out)
        code, out, err = self.curl(p, "--http2", "/secret")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("HTTP/2 403"), out[:300])
        self.assertEqual(self.paths(), ["/allowed/two"])

    def test_keep_alive_box_http1_reuses_one_origin_h2_connection(self):
        p = self.start()
        tls = self.open_h1(p)
        for i in range(4):
            response = self.get_h1(tls, f"/allowed/{i}")
            self.assertEqual(response.status, 200)
            self.assertEqual(response.body, f"h2 origin: /allowed/{i}".encode())
        post = f"POST /allowed/post HTTP/1.1\r\nHost: {self.target}\r\nContent-Length: 5\r\n\r\nhello"
        tls.sendall(post.encode())
        self.assertEqual(read_http_response(tls).status, 200)
        chunked = (f"POST /allowed/chunks HTTP/1.1\r\nHost: {self.target}\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n")
        tls.sendall(chunked.encode())
        self.assertEqual(read_http_response(tls).status, 200)
        self.assertEqual(self.paths(), ["/allowed/0", "/allowed/1", "/allowed/2", "/allowed/3", "/allowed/post",
                                        "/allowed/chunks"])
        bodies = [r["body"] for r in self.h2origin.requests]
        self.assertEqual(bodies[4:], [b"hello", b"abcdefg"])
        self.assertEqual(self.h2origin.connections, 1)
        self.assertEqual({r["connection"] for r in self.h2origin.requests}, {1})

    def test_streams_of_an_h2_box_reuse_one_origin_h2_connection(self):
        p = self.start()
        client = self.h2_box(p)
        ids = [client.request("/allowed/a"), client.request("/denied"), client.request("/allowed/b"),
               client.request("/allowed/c", method="POST", body=b"posted")]
        got = client.collect(ids)
        self.assertEqual([got[i]["status"] for i in ids], [200, 403, 200, 200])
        self.assertEqual(got[ids[0]]["body"], b"h2 origin: /allowed/a")
        self.assertEqual(sorted(self.paths()), ["/allowed/a", "/allowed/b", "/allowed/c"])
        self.assertEqual([r["body"] for r in self.h2origin.requests if r["path"] == "/allowed/c"], [b"posted"])
        self.assertEqual(self.h2origin.connections, 1)

    def test_injection_reaches_the_h2_origin(self):
        secret = os.path.join(self.dir, "api.secret")
        with open(secret, "w") as f:
            f.write(SECRET + "\n")
        p = self.start(dict(RULES, inject={"Authorization": "Bearer {api}"}), "--secret", f"api={secret}")
        tls = self.open_h1(p)
        response = self.get_h1(tls, "/allowed/key", "Authorization: Bearer box-own\r\n")
        self.assertEqual(response.status, 200)
        client = self.h2_box(p)
        sid = client.request("/allowed/key2", extra=[("authorization", "Bearer box-h2")])
        self.assertEqual(client.collect([sid])[sid]["status"], 200)
        for request in self.h2origin.requests:
            auth = [v for k, v in request["headers"] if k == "authorization"]
            self.assertEqual(auth, [f"Bearer {SECRET}"], request)
        self.assertNotIn(SECRET.encode(), response.raw_head + response.body)

    # ---- trailers -------------------------------------------------------------------------

    def test_trailers_reach_an_h2_box_filtered(self):
        p = self.start()
        client = self.h2_box(p, TrailerClient)
        sid = client.request("/trailers/one", extra=[("te", "trailers")])
        record = client.collect([sid])[sid]
        self.assertEqual(record["status"], 200, record)
        self.assertEqual(record["body"], b"h2 origin: /trailers/one")
        self.assertEqual(record.get("trailers"), {"grpc-status": "0", "x-trailer": "yes"}, record)
        headers = dict((k, v) for k, v in self.h2origin.requests[0]["headers"])
        self.assertEqual(headers.get("te"), "trailers")

    def test_trailers_reach_an_http1_box_in_the_chunked_body(self):
        p = self.start()
        tls = self.open_h1(p)
        tls.sendall(f"GET /trailers/two HTTP/1.1\r\nHost: {self.target}\r\nTE: trailers\r\nConnection: close\r\n\r\n"
                    .encode())
        raw = recv_all(tls, 10)
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertIn(b"transfer-encoding: chunked", head.lower())
        self.assertTrue(body.endswith(b"0\r\ngrpc-status: 0\r\nx-trailer: yes\r\n\r\n"), body)
        self.assertNotIn(b"evil", raw)
        self.assertNotIn(b"forged", raw)

    # ---- an origin that ends or misbehaves --------------------------------------------------

    def test_after_an_origin_goaway_the_next_request_dials_again(self):
        p = self.start()
        tls = self.open_h1(p)
        self.assertEqual(self.get_h1(tls, "/goaway/1").body, b"h2 origin: /goaway/1")
        self.assertEqual(self.get_h1(tls, "/allowed/after").body, b"h2 origin: /allowed/after")
        self.assertEqual(self.paths(), ["/goaway/1", "/allowed/after"])
        self.assertEqual([r["connection"] for r in self.h2origin.requests], [1, 2])

    def test_a_stream_the_origin_refused_unprocessed_is_sent_again_whatever_its_method(self):
        p = self.start()
        tls = self.open_h1(p)
        tls.sendall(f"DELETE /refused/1 HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
        answer = read_http_response(tls)
        self.assertEqual((answer.status, answer.body), (200, b"h2 origin: /refused/1"))
        self.assertEqual(self.paths(), ["/refused/1", "/refused/1"])
        self.assertEqual([r["connection"] for r in self.h2origin.requests], [1, 2])

    def test_a_push_promise_gets_502_and_the_box_connection_goes_on(self):
        p = self.start()
        tls = self.open_h1(p)
        self.assertEqual(self.get_h1(tls, "/push/1").status, 502)
        self.assertEqual(self.get_h1(tls, "/allowed/after").status, 200)
        client = self.h2_box(p)
        ids = [client.request("/push/2"), client.request("/allowed/after2")]
        got = client.collect(ids)
        self.assertEqual([got[i]["status"] for i in ids], [502, 200])

    def test_a_header_list_past_the_bound_gets_502_and_the_box_connection_goes_on(self):
        p = self.start()
        tls = self.open_h1(p)
        response = self.get_h1(tls, "/bighead/1")
        self.assertEqual(response.status, 502)
        self.assertNotIn(b"bbbbbbbb", response.raw_head)
        self.assertEqual(self.get_h1(tls, "/allowed/after").status, 200)
        lines = p.wait_log(kind="request", count=2)
        self.assertEqual([l.obj["status"] for l in lines], [502, 200])


if __name__ == "__main__":
    unittest.main()
