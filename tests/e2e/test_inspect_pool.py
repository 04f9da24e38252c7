# SPDX-License-Identifier: Apache-2.0
"""Request inspection (SPEC §18, §5): idle origin connections kept across the box's connections
(proxy/inspect/origin_pool.h) and counted as tunnels by serve (proxy/origin_ledger.h), through the
real binary and its inspector, with TLS origins of the test's own on 127.0.0.2 that count the
connections made to them:

- two box connections one after the other to one host use one origin connection, and a reuse
  spends none of --max-connections;
- a kept connection is open (stats "open" 1) until the origin closes it (0);
- at --max-tunnels 1 a connection to another host is admitted, the kept one closed first (an
  opaque tunnel waits for the inspector to say it closed it);
- a kept connection the origin closes or speaks on is not reused: the next box connection dials;
- a connection that takes a kept one over but is never handed to the inspector has it closed;
- a GET on a kept connection closed under it goes again on a connection dialled new; a kept
  connection gone as serve hands it over (its "unpooled" crossing the hand-over) is dialled again."""

import os
import signal
import socket
import ssl
import threading
import unittest

from fault_support import stats_line
from harness import HttpOrigin, ProxyTestCase, _OriginHandler, read_http_response, recv_exact, wait_until
from inspect_support import INSPECTOR, InspectRig, inspector_of, make_signed_certificate, make_test_ca

OTHER = "other.test"
TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSE = 8, 9, 7


class CountingHandler(_OriginHandler):
    """The harness's origin (HTTP/1.1, keep-alive), counting its connections."""

    def setup(self):
        super().setup()
        server = self.server
        if server.first_of is not None:
            server.first_closed_at_accept.append(closed_by_peer(server.first_of.server))
        server.connections.append(self.client_address)
        server.sockets.append(self.connection)
        self.served = 0

    def finish(self):
        super().finish()
        self.server.ended.append(self.client_address)  # the proxy closed it, or this origin did

    def handle_one_request(self):
        server = self.server
        if server.drop_second and self.served == 1:
            # The keep-alive race: a request comes on a connection the origin is closing.
            line = self.rfile.readline(65537)
            if line:
                server.dropped.append(line)
            self.close_connection = True
            return
        if server.chatter and self.served == 1:
            # Once the test says the connection is kept: bytes nobody asked for.
            server.speak.wait(5)
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nextra")
            self.wfile.flush()
            self.served += 1
        self.served += 1
        super().handle_one_request()


def closed_by_peer(server):
    """Whether the first connection `server` accepted has been ended by its peer (the kernel's
    state of the socket: its FIN arrived), or is closed already."""
    if server.ended:
        return True
    try:
        info = server.sockets[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    except (OSError, IndexError):
        return True
    return info[0] in (TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSE)


def counting_origin(cert, key, first_of=None, tls=True, **behaviour):
    context = None
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
    origin = HttpOrigin(tls_context=context, handler=CountingHandler)
    server = origin.server
    server.connections, server.dropped, server.ended, server.sockets = [], [], [], []
    server.first_of, server.first_closed_at_accept = first_of, []
    server.drop_second = behaviour.get("drop_second", False)
    server.chatter = behaviour.get("chatter", False)
    server.speak = threading.Event()
    return origin


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class OriginPoolTest(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.origin.close()
        ca = make_test_ca(self.dir)
        self.test_ca = ca[0]
        self.cert, self.key = make_signed_certificate(self.dir, ca, ["origin.test", OTHER], "both")

    def use_origins(self, **behaviour):
        self.origin = counting_origin(self.cert, self.key, **behaviour)
        self.addCleanup(self.origin.close)
        self.other = counting_origin(self.cert, self.key, first_of=self.origin)
        self.addCleanup(self.other.close)

    def port_of(self, host):
        return (self.origin if host == "origin.test" else self.other).port

    def start(self, *args):
        return self.proxy(*args, "--log", "json", "--resolve", "origin.test=127.0.0.2", "--resolve",
                          f"{OTHER}=127.0.0.2", "--ca-out", self.ca, "--upstream-ca", self.test_ca, "--inspect",
                          f"origin.test:{self.origin.port}", "--inspect", f"{OTHER}:{self.other.port}")

    def tunnel(self, p, host):
        s = p.connect()
        target = f"{host}:{self.port_of(host)}"
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        established = b"HTTP/1.1 200 Connection Established\r\n\r\n"
        got = recv_exact(s, len(established))
        if got != established:
            s.close()
            raise AssertionError(f"CONNECT {target}: {got!r}")
        return s

    def tls(self, s, host):
        return ssl.create_default_context(cafile=self.ca).wrap_socket(s, server_hostname=host)

    def ask(self, tls, host="origin.test", close=False):
        extra = "Connection: close\r\n" if close else ""
        tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{self.port_of(host)}\r\n{extra}\r\n".encode())
        return read_http_response(tls)

    def one(self, p, host="origin.test", done=None, close=False):
        """One box connection, one GET (keep-alive, or asking to close), closed; waits for its done
        line (`done`: how many there are then), after which its origin connection is kept or closed."""
        with self.tls(self.tunnel(p, host), host) as tls:
            self.assertEqual(self.ask(tls, host, close).status, 200)
        if done is not None:
            p.wait_log(kind="connect", cls="done", count=done)

    def open_count(self, p, want):
        return wait_until(lambda: stats_line(p)["open"] == want, 5)

    def test_two_box_connections_in_a_row_use_one_origin_connection(self):
        self.use_origins()
        p = self.start("--max-connections", "1")
        self.one(p, done=1)
        self.one(p, done=2)  # --max-connections 1: a reuse spends none of it
        self.one(p, done=3, close=True)  # the box's Connection: close ends its connection only
        self.one(p, done=4)
        self.assertEqual(len(self.origin.server.connections), 1)
        self.assertEqual(len(self.origin.requests), 4)
        # A connection that needs a new upstream connection is what the budget counts.
        s = p.connect()
        target = f"{OTHER}:{self.other.port}"
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        self.assertIn(b" 429 ", s.recv(100))
        s.close()
        p.wait_log(cls="connection budget")

    def test_a_kept_connection_is_open_until_the_origin_closes_it(self):
        self.use_origins()
        p = self.start()
        self.one(p, done=1)
        self.assertTrue(self.open_count(p, 1), "a kept origin connection is an upstream connection open")
        (kept,) = self.origin.server.sockets
        kept.shutdown(socket.SHUT_RDWR)
        self.assertTrue(self.open_count(p, 0), "its slot was not given back when the origin closed it")
        self.one(p, done=2)  # dialled new, and answered
        self.assertEqual(len(self.origin.server.connections), 2)

    def test_at_the_tunnel_cap_the_kept_one_is_closed_for_another_host(self):
        self.use_origins()
        p = self.start("--max-tunnels", "1")
        self.one(p, "origin.test", done=1)
        self.one(p, OTHER, done=2)  # admitted, never refused tunnel cap
        self.assertEqual(self.other.server.first_closed_at_accept, [True],
                         "the kept connection was not closed before the new one was made")
        self.assertEqual(p.find_logs(cls="tunnel cap"), [])
        self.assertTrue(wait_until(lambda: len(self.origin.server.ended) == 1, 5))
        self.assertTrue(self.open_count(p, 1))  # the other host's, kept now

    def test_at_the_tunnel_cap_a_tunnel_not_inspected_waits_for_the_kept_one_to_close(self):
        # An opaque tunnel dials itself: serve asks the inspector to close the kept connection and
        # dials only once it says it has, so the two never overlap.
        self.use_origins()
        plain = counting_origin(self.cert, self.key, first_of=self.origin, tls=False)
        self.addCleanup(plain.close)
        p = self.start("--max-tunnels", "1", "--resolve", "plain.test=127.0.0.2")
        self.one(p, "origin.test", done=1)
        self.assertTrue(self.open_count(p, 1))
        inspector = inspector_of(p.pid)
        self.assertIsNotNone(inspector)
        # The inspector stopped, it cannot say it closed the kept connection: the tunnel must not
        # be dialled (nor answered) meanwhile. A bounded wait for what must not happen: a dial
        # that did not wait is answered within milliseconds.
        os.kill(inspector, signal.SIGSTOP)
        self.addCleanup(os.kill, inspector, signal.SIGCONT)
        s = p.connect()
        target = f"plain.test:{plain.port}"
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        s.settimeout(0.5)
        with self.assertRaises(socket.timeout, msg="dialled before the kept connection was closed"):
            s.recv(1)
        self.assertEqual(plain.server.connections, [])
        os.kill(inspector, signal.SIGCONT)
        established = b"HTTP/1.1 200 Connection Established\r\n\r\n"
        self.assertEqual(recv_exact(s, len(established)), established)
        s.sendall(b"GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n")
        self.assertEqual(read_http_response(s).status, 200)
        s.close()
        self.assertEqual(plain.server.first_closed_at_accept, [True],
                         "the kept connection was not closed before the tunnel's was made")
        self.assertEqual(p.find_logs(cls="tunnel cap"), [])

    def test_a_kept_connection_the_origin_speaks_on_is_not_reused(self):
        self.use_origins(chatter=True)
        p = self.start()
        self.one(p, done=1)
        self.assertTrue(self.open_count(p, 1))
        self.origin.server.speak.set()
        self.assertTrue(wait_until(lambda: len(self.origin.server.ended) == 1, 5), "not closed on unasked bytes")
        self.assertTrue(self.open_count(p, 0))
        self.one(p, done=2)
        self.assertEqual(len(self.origin.server.connections), 2)
        self.assertEqual(len(self.origin.requests), 2)

    def test_a_get_on_a_kept_connection_closed_under_it_goes_again_on_a_new_one(self):
        # The taker's redial (serve's connect_again) under the slot it took over.
        self.use_origins(drop_second=True)
        p = self.start()
        self.one(p, done=1)
        self.one(p, done=2)
        self.assertEqual(len(self.origin.server.dropped), 1)
        self.assertEqual([r["path"] for r in self.origin.requests], ["/", "/"])
        self.assertEqual(len(self.origin.server.connections), 2)

    def test_a_connection_that_takes_a_kept_one_but_never_gets_it_has_it_closed(self):
        # Its client sent bytes before the tunnel's answer (not tls): serve took the kept
        # connection and its slot, then never handed it over. The inspector is told to close it
        # (its "unpooled" may have crossed the take: a dead entry filed again would hold a slot
        # for good), the slot held until it has; the next box connection dials new.
        self.use_origins()
        p = self.start()
        self.one(p, done=1)
        s = p.connect()
        target = f"origin.test:{self.origin.port}"
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode() + b"\x16\x03\x01early")
        p.wait_log(cls="not tls")
        s.close()
        self.assertTrue(self.open_count(p, 0), "the kept connection's slot was never given back")
        self.assertTrue(wait_until(lambda: closed_by_peer(self.origin.server), 5),
                        "the kept connection was left open")
        self.one(p, done=2)
        self.assertEqual(len(self.origin.server.connections), 2)

    def test_a_kept_connection_gone_as_it_is_handed_over_is_dialled_again(self):
        self.use_origins()
        p = self.start()
        self.one(p, done=1)
        inspector = inspector_of(p.pid)
        self.assertIsNotNone(inspector)
        # The inspector stopped: the origin's close of the kept connection cannot be reported
        # before serve hands the next connection over naming it.
        os.kill(inspector, signal.SIGSTOP)
        self.addCleanup(os.kill, inspector, signal.SIGCONT)
        (kept,) = self.origin.server.sockets
        kept.shutdown(socket.SHUT_RDWR)
        self.assertTrue(wait_until(lambda: len(self.origin.server.ended) == 1, 5))
        s = self.tunnel(p, "origin.test")  # answered by serve alone, handed over naming the kept one
        os.kill(inspector, signal.SIGCONT)
        with self.tls(s, "origin.test") as tls:
            self.assertEqual(self.ask(tls).status, 200)
        p.wait_log(kind="connect", cls="done", count=2)
        self.assertEqual(len(self.origin.server.connections), 2)
        self.assertTrue(self.open_count(p, 1))


if __name__ == "__main__":
    unittest.main()
