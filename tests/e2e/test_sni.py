# SPDX-License-Identifier: Apache-2.0
"""The SNI check (SPEC §16): with a host list, a tunnel whose TLS ClientHello names another host
is closed as `sni mismatch` before any of its bytes reach the origin; anything else passes intact.

The ClientHellos are real ones, made by Python's ssl module (a MemoryBIO, no socket) for the
name each test wants; the origins are the test's own on 127.0.0.2."""

import signal
import socket
import ssl
import unittest

from control_support import past_the_timeout, proxy_on_clock
from harness import (holds_for, wait_until, trickle, ORIGIN_HOST, EchoServer, ProxyTestCase, _TcpServer, closed_within, connect_request,
                     recv_exact, socks5_connect, socks5_reply)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


def client_hello(server_name):
    """The first bytes a TLS client sends for `server_name` (None: no SNI at all)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    assert hello[0] == 0x16, hello[:5]
    return hello


class BannerServer(_TcpServer):
    """Speaks first (as SMTP or SSH do), then echoes."""

    BANNER = b"220 origin ready\r\n"

    def handle(self, conn, record):
        conn.sendall(self.BANNER)
        while self._read(conn, record):
            pass


class CheckedTunnelCase(ProxyTestCase):
    """Tunnels to HOST through a proxy whose host list opens HOST at the echo server's port (both
    HOST and OTHER resolve to the origin address), and what a check of their first bytes closes as
    MISMATCH. Shared by the SNI check's tests and the Host check's (test_sni_host)."""

    HOST, OTHER, MISMATCH = "origin.test", "other.test", "sni mismatch"

    @classmethod
    def setUpClass(cls):
        cls.echo = EchoServer()

    @classmethod
    def tearDownClass(cls):
        cls.echo.close()

    def start(self, *args, allow=True, **kwargs):
        listed = ("--allow", f"{self.HOST}:{self.echo.port}") if allow else ()
        return self.proxy("--resolve", f"{self.HOST}=127.0.0.2", "--resolve", f"{self.OTHER}=127.0.0.2", *listed,
                          *args, **kwargs)

    def connect_tunnel(self, proxy, extra=b""):
        s = proxy.connect()
        s.sendall(connect_request(f"{self.HOST}:{self.echo.port}") + extra)
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        return s

    def socks_tunnel(self, proxy, extra=b""):
        s, method, _, reply = socks5_connect(proxy, self.HOST, self.echo.port, extra=extra)
        self.assertEqual((method, reply), (b"\x05\x00", socks5_reply(0)))
        return s

    def tunnel(self, proxy, kind="connect", extra=b""):
        return self.socks_tunnel(proxy, extra) if kind == "socks" else self.connect_tunnel(proxy, extra)

    def echo_records_since(self, before):
        with self.echo.lock:
            return self.echo.connections[before:]

    def assert_origin_got_nothing_to_act_on(self, data):
        """What the origin may have got of a tunnel closed as MISMATCH: here, none of its bytes."""
        self.assertEqual(data, b"")

    def assert_closed_as_mismatch(self, proxy, s, kind, before):
        self.assertTrue(closed_within(s, 5), "the tunnel was not closed")
        (line,) = proxy.wait_log(kind=kind, cls=self.MISMATCH)
        self.assertEqual((line.host, line.port, line.ip), (self.HOST, self.echo.port, ORIGIN_HOST))
        # Its line takes the place of the done line, and the origin got nothing it could act on.
        self.assertTrue(holds_for(lambda: proxy.find_logs(kind=kind, cls="done") == [], 0.2), "a done line came")
        for record in self.echo_records_since(before):
            self.assert_origin_got_nothing_to_act_on(bytes(record["data"]))

    def assert_passes_intact(self, s, data):
        got = recv_exact(s, len(data))
        self.assertEqual(got, data)


class SniTest(CheckedTunnelCase):

    # -- another host: closed and logged

    def test_connect_hello_naming_another_host_is_closed(self):
        p = self.start()
        before = self.echo.count()
        s = self.connect_tunnel(p)
        s.sendall(client_hello("other.test"))
        self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_socks5_hello_naming_another_host_is_closed(self):
        p = self.start()
        before = self.echo.count()
        s = self.socks_tunnel(p)
        s.sendall(client_hello("other.test"))
        self.assert_closed_as_mismatch(p, s, "socks", before)

    def test_hello_sent_with_the_request_is_checked_too(self):
        p = self.start()
        before = self.echo.count()
        s = self.connect_tunnel(p, extra=client_hello("www.other.test"))
        self.assert_closed_as_mismatch(p, s, "connect", before)
        before = self.echo.count()
        s = self.socks_tunnel(p, extra=client_hello("other.test"))
        self.assert_closed_as_mismatch(p, s, "socks", before)

    def test_a_name_below_the_decided_one_is_another_host(self):
        p = self.start()
        before = self.echo.count()
        s = self.connect_tunnel(p)
        s.sendall(client_hello("www.origin.test"))
        self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_the_mismatch_line_follows_the_published_schema(self):
        from test_schemas import errors
        p = self.start("--log", "json")
        s = self.connect_tunnel(p)
        s.sendall(client_hello("other.test"))
        self.assertTrue(closed_within(s, 5))
        (line,) = p.wait_log(cls="sni mismatch")
        self.assertEqual(errors("decision-line", line.obj), [], line.raw)

    def test_mismatch_is_counted_among_refusals_in_stats(self):
        p = self.start()
        s = self.connect_tunnel(p)
        s.sendall(client_hello("other.test"))
        self.assertTrue(closed_within(s, 5))
        p.wait_log(cls="sni mismatch")
        p.proc.send_signal(signal.SIGUSR1)
        line = p.wait_raw(r'"event":"stats"')
        self.assertIn('"sni mismatch":1', line)

    # -- the decided host, or none: passes intact

    def test_the_decided_name_passes_intact(self):
        p = self.start()
        for name in ("origin.test", "ORIGIN.Test", "origin.test."):
            with self.subTest(name=name):
                hello = client_hello(name)
                s = self.connect_tunnel(p)
                s.sendall(hello + b"after the hello")
                self.assert_passes_intact(s, hello + b"after the hello")
                s.close()
        s = self.socks_tunnel(p)
        hello = client_hello("origin.test")
        s.sendall(hello)
        self.assert_passes_intact(s, hello)
        s.close()
        self.assertEqual(p.find_logs(cls="sni mismatch"), [])

    def test_hello_without_sni_passes(self):
        p = self.start()
        hello = client_hello(None)
        s = self.connect_tunnel(p)
        s.sendall(hello)
        self.assert_passes_intact(s, hello)

    def test_non_tls_first_bytes_pass(self):
        p = self.start()
        # An HTTP request naming the decided host and port passes the Host check (test_sni_host).
        request = f"GET / HTTP/1.1\r\nHost: origin.test:{self.echo.port}\r\n\r\n".encode()
        for first in (request, b"SSH-2.0-test\r\n", b"\x00\x01\x02"):
            with self.subTest(first=first):
                s = self.connect_tunnel(p)
                s.sendall(first)
                self.assert_passes_intact(s, first)
                s.close()

    def test_hello_split_over_many_small_writes(self):
        for name, passes in (("origin.test", True), ("other.test", False)):
            with self.subTest(name=name):
                p = self.start()
                before = self.echo.count()
                hello = client_hello(name)
                s = self.connect_tunnel(p)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
                trickle(s, hello, step=7)
                if passes:
                    self.assert_passes_intact(s, hello)
                    s.close()
                else:
                    self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_hello_over_several_tls_records(self):
        p = self.start()
        hello = client_hello("other.test")
        body = hello[5:]
        # The same handshake message in records of 40 bytes each.
        records = b"".join(b"\x16\x03\x01" + len(body[i:i + 40]).to_bytes(2, "big") + body[i:i + 40]
                           for i in range(0, len(body), 40))
        before = self.echo.count()
        s = self.connect_tunnel(p)
        s.sendall(records)
        self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_client_fin_after_part_of_a_hello_passes_what_was_sent(self):
        p = self.start()
        part = client_hello("other.test")[:30]
        s = self.connect_tunnel(p)
        s.sendall(part)
        s.shutdown(socket.SHUT_WR)
        self.assert_passes_intact(s, part)  # the echo origin echoes it, then half-closes
        self.assertTrue(closed_within(s, 5))

    # -- waiting, and bounds

    def test_a_silent_client_waits_and_the_idle_timeout_still_applies(self):
        p, c = proxy_on_clock(self, "--idle-timeout", "30", start=self.start)
        s = self.connect_tunnel(p)
        past_the_timeout(self, c, s, 30, "a tunnel whose client never sends its first bytes")
        self.assertTrue(closed_within(s, 1))
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual(done.end, "idle-timeout")
        self.assertEqual(p.find_logs(cls="sni mismatch"), [])

    def test_a_server_that_speaks_first_is_heard_while_the_check_waits(self):
        banner = BannerServer()
        try:
            p = self.proxy("--resolve", "smtp.test=127.0.0.2", "--allow", f"smtp.test:{banner.port}")
            s = p.connect()
            s.sendall(connect_request(f"smtp.test:{banner.port}"))
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            self.assertEqual(recv_exact(s, len(BannerServer.BANNER)), BannerServer.BANNER)
            s.sendall(b"EHLO box\r\n")
            self.assertTrue(wait_for_data(banner, b"EHLO box\r\n"))
        finally:
            banner.close()

    def test_garbage_that_looks_like_tls_is_closed(self):
        p = self.start()
        for garbage in (b"\x16\x03\x01\xff\xff" + b"x" * 100,   # a record over 2^14
                        b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00",  # a ServerHello, not a ClientHello
                        b"\x16\x09\x09\x00\x01\x01",            # not TLS's major version
                        b"\x16\x03\x01\x00\x04\x01\xff\xff\xff"):  # a ClientHello of 16 MiB
            with self.subTest(garbage=garbage):
                before = self.echo.count()
                s = self.connect_tunnel(p)
                s.sendall(garbage)
                self.assertTrue(closed_within(s, 5))
                for record in self.echo_records_since(before):
                    self.assertEqual(bytes(record["data"]), b"")
        p.wait_log(cls="sni mismatch", count=4)

    def test_a_hello_that_never_ends_is_closed_within_its_bound(self):
        p = self.start()
        before = self.echo.count()
        s = self.connect_tunnel(p)
        # A ClientHello declared 16 KiB long (the bound), sent in 1-byte records: the records' headers
        # take the reader past its bound before the message ends.
        header = b"\x01" + (16 * 1024 - 4).to_bytes(3, "big")
        stream = b"".join(b"\x16\x03\x01\x00\x01" + bytes([b]) for b in header + b"x" * 20000)
        sent = 0
        try:
            while sent < len(stream):
                s.sendall(stream[sent:sent + 4096])
                sent += 4096
        except OSError:
            pass
        self.assertTrue(closed_within(s, 5))
        self.assertLess(sent, len(stream))  # closed long before the stream's end
        for record in self.echo_records_since(before):
            self.assertEqual(bytes(record["data"]), b"")
        p.wait_log(kind="connect", cls="sni mismatch")

    # -- when the check does not apply

    def test_no_sni_check_turns_it_off(self):
        p = self.start("--no-sni-check")
        hello = client_hello("other.test")
        s = self.connect_tunnel(p)
        s.sendall(hello)
        self.assert_passes_intact(s, hello)

    def test_without_a_host_list_any_sni_passes(self):
        p = self.start(allow=False)
        hello = client_hello("other.test")
        s = self.connect_tunnel(p)
        s.sendall(hello)
        self.assert_passes_intact(s, hello)


def wait_for_data(server, data, timeout=5.0):
    def got_it():
        with server.lock:
            return any(bytes(r["data"]) == data for r in server.connections)
    return wait_until(got_it, timeout)


if __name__ == "__main__":
    unittest.main()
