# SPDX-License-Identifier: Apache-2.0
"""A WebSocket through an inspected endpoint (SPEC §18: "An `Upgrade: websocket` request is judged
like any request; once the origin answers 101 the connection relays bytes both ways"), through the
real binary and its inspector. The origin (the test's own, TLS on 127.0.0.2) does the upgrade and
echoes every frame; the client, a raw TLS socket trusting the session CA, sends masked frames (a
short text one and a 100 KiB binary one, past any one buffer of the relay) and gets each back as
the origin sent it. An upgrade the rules deny gets 403 inside TLS and never reaches the origin,
and the connection goes on."""

import base64
import json
import os
import unittest

from harness import ProxyTestCase, closed_within, read_http_response, recv_exact
from inspect_support import (INSPECTOR, OP_BINARY, OP_CLOSE, OP_TEXT, InspectRig, WebSocketOrigin, connect_tls,
                             read_websocket_frame, websocket_accept, websocket_frame)


def upgrade_request(path, host, key):
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectWebSocketTest(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.ws = WebSocketOrigin(self.cert, self.key)
        self.addCleanup(self.ws.close)
        self.host = f"origin.test:{self.ws.port}"

    def start(self, endpoint):
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [dict(endpoint, host=self.host)]}, f)
        return self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                          "--upstream-ca", self.cert, "--config", config)

    def test_a_websocket_echo_goes_through_the_inspector(self):
        p = self.start({"rules": [{"method": "GET", "path": "/ws/**"}]})
        tls = connect_tls(p, self.host, self.ca)
        self.addCleanup(tls.close)
        key = base64.b64encode(os.urandom(16)).decode()
        tls.sendall(upgrade_request("/ws/echo", self.host, key))
        response = read_http_response(tls, head_only=True)
        self.assertEqual(response.status, 101, response)
        self.assertEqual(response.header("upgrade").lower(), "websocket")
        self.assertEqual(response.header("sec-websocket-accept"), websocket_accept(key))
        self.assertEqual(response.rest, b"")

        def read_exact(n):
            return recv_exact(tls, n, timeout=10)
        text = "hello through the inspector".encode()
        large = os.urandom(100 * 1024)
        for opcode, payload in ((OP_TEXT, text), (OP_BINARY, large), (OP_TEXT, text)):
            tls.sendall(websocket_frame(opcode, payload, mask=os.urandom(4)))
            self.assertEqual(read_websocket_frame(read_exact), (opcode, False, payload))
        tls.sendall(websocket_frame(OP_CLOSE, b"\x03\xe8", mask=os.urandom(4)))
        self.assertEqual(read_websocket_frame(read_exact), (OP_CLOSE, False, b"\x03\xe8"))
        # The origin closes after its close frame: so does the relay, toward the box.
        self.assertTrue(closed_within(tls, 5), "the origin closed, the box's connection did not")
        # The origin got the frames masked, as the client sent them: bytes relayed, not rewritten.
        self.assertEqual(self.ws.frames, [(OP_TEXT, True, len(text)), (OP_BINARY, True, len(large)),
                                          (OP_TEXT, True, len(text)), (OP_CLOSE, True, 2)])
        (request,) = self.ws.requests
        self.assertEqual((request["method"], request["path"]), ("GET", "/ws/echo"))
        self.assertEqual(request["headers"]["upgrade"].lower(), "websocket")
        self.assertEqual(request["headers"]["sec-websocket-key"], key)
        tls.close()
        (line,) = p.wait_log(kind="request")
        self.assertEqual((line.obj["class"], line.obj["status"], line.obj["rule"]), ("ok", 101, "rules[0]"))
        self.assertGreaterEqual(line.obj["up"], len(large))
        self.assertGreaterEqual(line.obj["down"], len(large))

    def test_frames_right_behind_either_head_are_relayed(self):
        # A client may send its first frame right behind its upgrade request, and an origin its
        # first frame in the same write as its 101: neither is taken for HTTP, nor lost.
        self.ws.close()
        self.ws = WebSocketOrigin(self.cert, self.key, greeting=b"welcome")
        self.addCleanup(self.ws.close)
        self.host = f"origin.test:{self.ws.port}"
        p = self.start({})
        tls = connect_tls(p, self.host, self.ca)
        self.addCleanup(tls.close)
        key = base64.b64encode(os.urandom(16)).decode()
        tls.sendall(upgrade_request("/eager", self.host, key) + websocket_frame(OP_TEXT, b"early", mask=os.urandom(4)))
        response = read_http_response(tls, head_only=True)
        self.assertEqual(response.status, 101, response)
        pending = bytearray(response.rest)

        def read_exact(n):
            while len(pending) < n:
                pending.extend(recv_exact(tls, 1, timeout=10))
            out = bytes(pending[:n])
            del pending[:n]
            return out
        self.assertEqual(read_websocket_frame(read_exact), (OP_TEXT, False, b"welcome"))
        self.assertEqual(read_websocket_frame(read_exact), (OP_TEXT, False, b"early"))
        self.assertEqual(self.ws.frames, [(OP_TEXT, True, 5)])
        self.assertEqual(len(self.ws.requests), 1)

    def test_a_denied_upgrade_gets_403_and_never_reaches_the_origin(self):
        p = self.start({"rules": [{"method": "GET", "path": "/ws/**"}], "deny": [{"method": "*", "path": "/ws/admin"}]})
        tls = connect_tls(p, self.host, self.ca)
        self.addCleanup(tls.close)
        key = base64.b64encode(os.urandom(16)).decode()
        for path, rule in (("/ws/admin", "deny[0]"), ("/chat", "-")):
            with self.subTest(path=path):
                tls.sendall(upgrade_request(path, self.host, key))
                response = read_http_response(tls)
                self.assertEqual((response.status, response.header("x-egress-refused")), (403, "request denied"))
                self.assertIsNone(response.header("upgrade"))
        self.assertEqual(self.ws.requests, [])
        # Refused, and still HTTP: the same connection's next request goes on.
        tls.sendall(f"GET /ws/plain HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        self.assertEqual(read_http_response(tls).body, b"plain\n")
        self.assertEqual([r["path"] for r in self.ws.requests], ["/ws/plain"])
        lines = [line.obj for line in p.wait_log(kind="request", count=3)]
        self.assertEqual([(l["class"], l["status"], l["rule"]) for l in lines],
                         [("request denied", 403, "deny[0]"), ("request denied", 403, "-"), ("ok", 200, "rules[0]")])


if __name__ == "__main__":
    unittest.main()
