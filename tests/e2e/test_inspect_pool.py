# SPDX-License-Identifier: Apache-2.0
"""Request inspection (SPEC §18): idle origin connections kept across the box's connections
(proxy/inspect/origin_pool.h), through the real binary and its inspector, with a TLS origin of the
test's own on 127.0.0.2 that counts the TLS connections made to it (each one a handshake):

- two box connections one after the other to the same host make one origin TLS connection; to two
  hosts (on the same address and port), two;
- an origin that closes its idle pooled connection: the next box connection still gets its answer;
- an origin that closes a pooled connection just as a request goes on it: a GET is sent once more
  on a new connection and answered; a POST is never sent twice (its box connection ends);
- the bound a key holds: 6 connections left idle at once keep 4, so 6 new ones make 2 more."""

import os
import socket
import unittest

from harness import HttpOrigin, ProxyTestCase, _OriginHandler, read_http_response, wait_until
from inspect_support import INSPECTOR, InspectRig, connect_tls, make_signed_certificate, make_test_ca

OTHER = "other.test"


class CountingHandler(_OriginHandler):
    """The harness's origin (HTTP/1.1, keep-alive), counting its TLS connections: the handshake is
    done as the connection is accepted, so each one counted here is a handshake completed."""

    def setup(self):
        super().setup()
        self.server.connections.append(self.client_address)
        self.server.sockets.append(self.connection)
        self.served = 0

    def parse_request(self):
        parsed = super().parse_request()
        self.server.heads.append(self.requestline)  # every head read, whether answered or not
        return parsed

    def finish(self):
        super().finish()
        self.server.ended.append(self.client_address)  # the proxy closed it, or this origin did

    def handle_one_request(self):
        if self.server.drop_second and self.served == 1:
            # The keep-alive race: a request comes on a connection the origin is closing.
            line = self.rfile.readline(65537)
            if line:
                self.server.dropped.append(line)
            self.close_connection = True
            return
        self.served += 1
        super().handle_one_request()


def counting_origin(cert, key, **behaviour):
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    origin = HttpOrigin(tls_context=context, handler=CountingHandler)
    origin.server.connections = []
    origin.server.dropped = []
    origin.server.ended = []
    origin.server.heads = []
    origin.server.sockets = []
    origin.server.drop_second = behaviour.get("drop_second", False)
    return origin


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class OriginPoolTest(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.origin.close()
        ca = make_test_ca(self.dir)
        self.test_ca = ca[0]
        self.cert, self.key = make_signed_certificate(self.dir, ca, ["origin.test", OTHER], "both")

    def use_origin(self, **behaviour):
        self.origin = counting_origin(self.cert, self.key, **behaviour)
        self.addCleanup(self.origin.close)

    def start(self, *args):
        port = self.origin.port
        return self.proxy(*args, "--log", "json", "--resolve", "origin.test=127.0.0.2", "--resolve", f"{OTHER}=127.0.0.2",
                          "--ca-out", self.ca, "--upstream-ca", self.test_ca, "--inspect", f"origin.test:{port}",
                          "--inspect", f"{OTHER}:{port}")

    def open_box(self, p, host="origin.test"):
        return connect_tls(p, f"{host}:{self.origin.port}", self.ca, server_hostname=host)

    def ask(self, tls, host="origin.test", method="GET", path="/", body=b""):
        head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{self.origin.port}\r\n"
        if body:
            head += f"Content-Length: {len(body)}\r\n"
        tls.sendall(head.encode() + b"\r\n" + body)
        return read_http_response(tls)

    def one(self, p, host="origin.test", done=None):
        """One box connection, one GET (keep-alive), closed; waits for its done line (`done`: how
        many there are then), after which its origin connection is in the pool or closed."""
        with self.open_box(p, host) as tls:
            self.assertEqual(self.ask(tls, host).status, 200)
        if done is not None:
            p.wait_log(kind="connect", cls="done", count=done)

    def test_two_box_connections_to_one_host_make_one_origin_handshake(self):
        self.use_origin()
        p = self.start()
        self.one(p, done=1)
        self.one(p, done=2)
        self.assertEqual(len(self.origin.server.connections), 1)
        self.assertEqual(len(self.origin.requests), 2)

    def test_two_hosts_make_two(self):
        self.use_origin()
        p = self.start()
        self.one(p, "origin.test", done=1)
        self.one(p, OTHER, done=2)
        self.one(p, OTHER, done=3)
        self.assertEqual(len(self.origin.server.connections), 2)
        hosts = [dict(r["headers"])["Host"].split(":")[0] for r in self.origin.requests]
        self.assertEqual(hosts, ["origin.test", OTHER, OTHER])

    def test_an_origin_that_closes_its_idle_connection_still_answers_the_next_box(self):
        self.use_origin()
        p = self.start()
        self.one(p, done=1)  # its origin connection is in the pool now
        (pooled,) = self.origin.server.sockets
        pooled.shutdown(socket.SHUT_RDWR)  # the origin closes it while it is idle
        self.assertTrue(wait_until(lambda: len(self.origin.server.ended) == 1, 5))
        self.one(p, done=2)
        self.assertEqual(len(self.origin.requests), 2)
        self.assertEqual(len(self.origin.server.connections), 2)

    def test_a_get_on_a_pooled_connection_closed_under_it_is_sent_again(self):
        # inspected_origin_side.cc's keep-alive race: a safe request without a body goes once more,
        # on a connection serve dials new (never another pooled one).
        self.use_origin(drop_second=True)
        p = self.start()
        self.one(p, done=1)
        self.one(p, done=2)
        self.assertEqual(len(self.origin.server.dropped), 1)
        self.assertEqual([r["path"] for r in self.origin.requests], ["/", "/"])
        self.assertEqual(len(self.origin.server.connections), 2)

    def test_a_post_on_a_pooled_connection_closed_under_it_is_never_sent_twice(self):
        self.use_origin(drop_second=True)
        p = self.start()
        self.one(p, done=1)
        with self.open_box(p) as tls:
            with self.assertRaises((ConnectionError, OSError, AssertionError, ValueError)):
                self.ask(tls, method="POST", path="/echo", body=b"once")
        p.wait_log(kind="connect", cls="done", count=2)
        self.assertEqual([line.split()[0] for line in self.origin.server.dropped], [b"POST"])
        self.assertEqual([head.split()[0] for head in self.origin.server.heads], ["GET"])  # never again
        self.assertEqual([r["method"] for r in self.origin.requests], ["GET"])
        self.one(p, done=3)  # and the next box connection is answered, on a connection dialled new
        self.assertEqual([r["method"] for r in self.origin.requests], ["GET", "GET"])

    def test_an_idle_origin_connection_is_kept_no_longer_than_the_idle_timeout(self):
        # origin_pool.h: kPooledIdleSeconds, or --idle-timeout when shorter.
        self.use_origin()
        p = self.start("--idle-timeout", "1")
        self.one(p, done=1)
        self.assertTrue(wait_until(lambda: len(self.origin.server.ended) == 1, 6),
                        "the pooled origin connection was not closed after --idle-timeout")
        self.one(p, done=2)
        self.assertEqual(len(self.origin.server.connections), 2)

    def test_a_host_keeps_at_most_four_idle_connections(self):
        self.use_origin()
        p = self.start()

        def at_once(count, done):
            boxes = [self.open_box(p) for _ in range(count)]
            try:
                for tls in boxes:
                    self.assertEqual(self.ask(tls).status, 200)
            finally:
                for tls in boxes:
                    tls.close()
            p.wait_log(kind="connect", cls="done", count=done)

        at_once(6, 6)
        self.assertEqual(len(self.origin.server.connections), 6)
        at_once(6, 12)  # 4 taken from the pool, 2 made new
        self.assertEqual(len(self.origin.server.connections), 8)


if __name__ == "__main__":
    unittest.main()
