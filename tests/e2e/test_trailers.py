# SPDX-License-Identifier: Apache-2.0
"""Trailers of chunked bodies are dropped both ways (SPEC §8; issue 10 item 8).

A trailer field is a header that arrives after the proxy filtered the head. Passed on, it would let
an origin forge `x-egress-refused` (which must only ever mean this proxy refused), `Connection` or
`Proxy-Authenticate` to the client, and a client carry `Proxy-Authorization` or `Host` upstream.
"""

import socket
import unittest

from harness import ProxyTestCase, _TcpServer, recv_all, wait_until

CHUNKED_BODY = b"5\r\nhello\r\n6\r\n world\r\n0\r\n"
FORGED_TRAILERS = (b"x-egress-refused: forged\r\nConnection: keep-alive\r\n"
                   b"Proxy-Authenticate: Basic realm=\"evil\"\r\nX-Trailer: value\r\n\r\n")


class ChunkedTrailerOrigin(_TcpServer):
    """Reads one request head (and a chunked request body, if any, to its end), then answers with a
    chunked response that carries forged trailers, and closes."""

    def handle(self, conn, record):
        while b"\r\n\r\n" not in record["data"]:
            if not self._read(conn, record):
                return
        head, _, rest = bytes(record["data"]).partition(b"\r\n\r\n")
        if b"transfer-encoding: chunked" in head.lower():
            while not bytes(record["data"]).endswith(b"\r\n\r\n") or bytes(record["data"]).count(b"\r\n\r\n") < 2:
                if not self._read(conn, record):
                    return
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + CHUNKED_BODY + FORGED_TRAILERS)
        conn.shutdown(socket.SHUT_WR)
        while self._read(conn, record):
            pass


class TrailerTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.origin = ChunkedTrailerOrigin()
        self.addCleanup(self.origin.close)

    def start(self):
        return self.proxy("--resolve", "origin.test=127.0.0.2")

    def test_response_trailers_never_reach_the_client(self):
        p = self.start()
        s = p.connect()
        s.sendall(f"GET http://origin.test:{self.origin.port}/ HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n"
                  "Connection: close\r\n\r\n".encode())
        # Everything until the close: forged trailers would come after the last chunk.
        data = recv_all(s)
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        self.assertEqual(body, CHUNKED_BODY + b"\r\n")
        self.assertNotIn(b"x-egress-refused", data.lower())
        self.assertNotIn(b"proxy-authenticate", data.lower())
        (done,) = p.wait_log(kind="http", cls="done")
        self.assertEqual(done.down, len(data))

    def test_request_trailers_never_reach_the_origin(self):
        p = self.start()
        s = p.connect()
        s.sendall(f"POST http://origin.test:{self.origin.port}/ HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n"
                  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
                  + b"3\r\nabc\r\n0\r\nProxy-Authorization: Bearer stolen\r\nHost: other.example\r\n\r\n")
        recv_all(s)
        s.close()
        self.assertTrue(wait_until(lambda: self.origin.count() == 1 and self.origin.connections[0]["closed"]))
        got = bytes(self.origin.connections[0]["data"])
        head, _, body = got.partition(b"\r\n\r\n")
        self.assertEqual(body, b"3\r\nabc\r\n0\r\n\r\n")
        self.assertNotIn(b"proxy-authorization", got.lower())
        self.assertNotIn(b"other.example", got.lower())


if __name__ == "__main__":
    unittest.main()
