# SPDX-License-Identifier: Apache-2.0
"""SOCKS5 end to end (SPEC §9, and the §6 refusals with their exact reply bytes)."""

import socket
import struct
import unittest

from control_support import past_the_timeout, proxy_on_clock, wait_stats
from harness import (trickle, ORIGIN_HOST, Blackhole, EchoServer, HalfCloseServer, OriginsMixin, ProxyTestCase,
                     ReplyAfterEofServer, closed_within, free_port, recv_all, recv_exact, socks5_connect,
                     socks5_greeting, socks5_reply, socks5_request, wait_until)

OK = socks5_reply(0)


class Socks5Test(OriginsMixin, ProxyTestCase):

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    def assert_reply(self, p, host, port, code, cls, atyp=None, ip=None):
        n = len(p.find_logs(kind="socks", cls=cls))
        s, method, _, reply = socks5_connect(p, host, port, atyp=atyp)
        self.assertEqual(method, b"\x05\x00")
        self.assertEqual(reply.hex(), socks5_reply(code).hex(), f"{host}:{port}")
        if code != 0:
            self.assertTrue(closed_within(s, 3), "the proxy must close after a refusal")
        s.close()
        line = p.wait_log(kind="socks", cls=cls, count=n + 1)[n]
        if ip is not None:
            self.assertEqual(line.ip, ip)
        return [line]

    # -- allowed

    def test_domain_connect_echoes_and_logs(self):
        p = self.start()
        s, method, _, reply = socks5_connect(p, "origin.test", self.echo.port)
        self.assertEqual((method, reply), (b"\x05\x00", OK))
        s.sendall(b"over socks5")
        self.assertEqual(recv_exact(s, 11), b"over socks5")
        s.close()
        (line,) = p.wait_log(kind="socks", cls="ok")
        self.assertEqual((line.host, line.port, line.ip), ("origin.test", self.echo.port, ORIGIN_HOST))
        (done,) = p.wait_log(kind="socks", cls="done")
        self.assertEqual((done.up, done.down), (11, 11))

    def test_ipv4_address_type(self):
        p = self.start()
        s, method, _, reply = socks5_connect(p, "127.0.0.2", self.echo.port)
        self.assertEqual(reply, OK)
        s.sendall(b"v4")
        self.assertEqual(recv_exact(s, 2), b"v4")
        s.close()
        p.wait_log(kind="socks", cls="ok", ip="127.0.0.2")

    def test_ipv6_address_type_permitted(self):
        try:
            echo6 = EchoServer(host="::1", family=socket.AF_INET6)
        except OSError as e:
            self.skipTest(f"no IPv6 loopback here: {e}")
        self.addCleanup(echo6.close)
        p = self.start("--permit", "::1/128")
        s, method, _, reply = socks5_connect(p, "::1", echo6.port)
        self.assertEqual(reply, OK)
        s.sendall(b"v6")
        self.assertEqual(recv_exact(s, 2), b"v6")
        s.close()
        p.wait_log(kind="socks", cls="ok", ip="::1")

    def test_greeting_request_and_data_in_one_send(self):
        p = self.start()
        before = self.echo.count()
        s, method, _, reply = socks5_connect(p, "origin.test", self.echo.port, extra=b"PIPELINED")
        self.assertEqual((method, reply), (b"\x05\x00", OK))
        self.assertEqual(recv_exact(s, 9), b"PIPELINED")
        rec = self.echo.connections[before]
        self.assertTrue(rec["first"].startswith(b"PIPELINED"))
        s.close()

    def test_handshake_byte_by_byte(self):
        p = self.start()
        s = p.connect()
        trickle(s, socks5_greeting((1, 0, 2)) + socks5_request("origin.test", self.echo.port))
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        self.assertEqual(recv_exact(s, 10), OK)
        s.close()

    def test_client_half_close(self):
        origin = ReplyAfterEofServer()
        self.addCleanup(origin.close)
        p = self.start()
        s, _, _, reply = socks5_connect(p, "origin.test", origin.port)
        self.assertEqual(reply, OK)
        s.sendall(b"abc")
        s.shutdown(socket.SHUT_WR)
        self.assertEqual(recv_all(s), b"got 3 bytes: abc")
        s.close()

    def test_origin_half_close(self):
        origin = HalfCloseServer()
        self.addCleanup(origin.close)
        p = self.start()
        s, _, _, reply = socks5_connect(p, "origin.test", origin.port)
        self.assertEqual(reply, OK)
        self.assertEqual(recv_exact(s, len(HalfCloseServer.GREETING)), HalfCloseServer.GREETING)
        s.settimeout(5)
        self.assertEqual(s.recv(10), b"")
        s.sendall(b"after fin")
        s.shutdown(socket.SHUT_WR)
        rec = origin.connections[0]
        self.assertTrue(wait_until(lambda: rec["eof"], 5))
        self.assertEqual(bytes(rec["data"]), b"after fin")
        s.close()

    # -- the greeting and the request's shape

    def test_no_acceptable_method(self):
        p = self.start()
        s = p.connect()
        s.sendall(socks5_greeting((2, 1)))
        self.assertEqual(recv_all(s), b"\x05\xff")

    def test_request_with_wrong_version_closes(self):
        p = self.start()
        s = p.connect()
        s.sendall(socks5_greeting((0,)))
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        req = bytearray(socks5_request("origin.test", self.echo.port))
        req[0] = 4
        s.sendall(bytes(req))
        self.assertEqual(recv_all(s), b"")
        self.assertEqual(p.find_logs(kind="socks", cls="ok"), [])

    def test_commands_other_than_connect(self):
        p = self.start()
        for cmd, cls in [(2, "socks bind"), (3, "socks udp associate"), (9, "socks command")]:
            with self.subTest(cmd=cmd):
                s = p.connect()
                s.sendall(socks5_greeting() + socks5_request("origin.test", self.echo.port, cmd=cmd))
                self.assertEqual(recv_exact(s, 2), b"\x05\x00")
                self.assertEqual(recv_all(s).hex(), socks5_reply(7).hex())
                p.wait_log(kind="socks", cls=cls)

    def test_unknown_address_type(self):
        p = self.start()
        s = p.connect()
        s.sendall(socks5_greeting() + bytes([5, 1, 0, 5]) + b"\x7f\x00\x00\x02" + struct.pack("!H", 80))
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        self.assertEqual(recv_all(s).hex(), socks5_reply(8).hex())
        p.wait_log(kind="socks", cls="socks address type")

    # -- §6 rows

    def test_invalid_target_port_zero(self):
        p = self.start()
        self.assert_reply(p, "origin.test", 0, 1, "invalid target")

    def test_invalid_host(self):
        p = self.start()
        for host in ["bad!host", "a..b", "256.1.1.1", "08.0.0.1", "[::1].", "x" * 254, "a b", ""]:
            with self.subTest(host=host):
                s, method, _, reply = socks5_connect(p, host, 443, atyp=3)
                self.assertEqual(reply.hex(), socks5_reply(4).hex())
                s.close()
        p.wait_log(kind="socks", cls="invalid host", count=8)

    def test_address_forms_of_loopback_are_refused(self):
        p = self.start()
        for host, atyp in [("127.0.0.1", 1), ("::1", 4), ("::ffff:127.0.0.1", 4), ("127.1", 3), ("0x7f.1", 3),
                           ("2130706433", 3), ("017700000001", 3), ("127.0.0.1.", 3), ("::1", 3),
                           ("[::ffff:127.0.0.1]", 3), ("2002:7f00:1::", 4)]:
            with self.subTest(host=host, atyp=atyp):
                s, _, _, reply = socks5_connect(p, host, 443, atyp=atyp)
                self.assertEqual(reply.hex(), socks5_reply(2).hex())
                s.close()
        p.wait_log(kind="socks", cls="loopback", count=11)

    def test_address_forms_of_the_permitted_origin_are_allowed(self):
        p = self.start()
        for host in ["127.0.0.2", "127.2", "0x7f.0.0.2", "2130706434", "017700000002", "127.0.0.2."]:
            with self.subTest(host=host):
                s, _, _, reply = socks5_connect(p, host, self.echo.port, atyp=3)
                self.assertEqual(reply, OK)
                s.sendall(b"k")
                self.assertEqual(recv_exact(s, 1), b"k")
                s.close()

    def test_refusal_rows(self):
        hole_port = free_port()
        p = self.start("--deny", "1.1.1.0/24", "--resolve", "mix.test=127.0.0.2,10.0.0.1")
        rows = [
            ("10.0.0.1", 443, 2, "private", "10.0.0.1"),
            ("169.254.169.254", 80, 2, "link-local", "169.254.169.254"),
            ("fd00::1", 443, 2, "private", "fd00::1"),
            ("fe80::1", 443, 2, "link-local", "fe80::1"),
            ("1.1.1.1", 443, 2, "denied", "1.1.1.1"),
            ("mix.test", 443, 2, "private", "10.0.0.1"),
            ("nx.test", 443, 4, "name not resolved", "-"),
            ("origin.test", hole_port, 5, "dial failed", ORIGIN_HOST),
        ]
        for host, port, code, cls, ip in rows:
            with self.subTest(host=host):
                self.assert_reply(p, host, port, code, cls, ip=ip)

    def test_not_listed(self):
        p = self.start("--allow", "origin.test")
        self.assert_reply(p, "other.test", 443, 2, "not-listed")
        self.assert_reply(p, "127.0.0.2", 443, 2, "not-listed")
        self.assert_reply(p, "origin.test", self.echo.port, 2, "not-listed")

    def test_dial_timed_out(self):
        hole = Blackhole()
        self.addCleanup(hole.close)
        if not hole.usable:
            self.skipTest("a full accept queue does not drop SYNs here; no way to make a dial hang on loopback")
        p, c = proxy_on_clock(self, "--connect-timeout", "30", start=self.start)
        s = p.connect()
        s.sendall(socks5_greeting() + socks5_request("origin.test", hole.port))
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        wait_stats(c, open=1)  # dialling: the connect timer is armed
        past_the_timeout(self, c, s, 30, "a dial that hangs")
        self.assertEqual(recv_exact(s, 10).hex(), socks5_reply(4).hex())
        self.assertTrue(closed_within(s, 3), "the proxy must close after a refusal")
        s.close()
        p.wait_log(kind="socks", cls="dial timed out", port=hole.port)

    def test_tunnel_cap_and_budget(self):
        p = self.start("--max-tunnels", "1")
        s, _, _, reply = socks5_connect(p, "origin.test", self.echo.port)
        self.assertEqual(reply, OK)
        self.assert_reply(p, "origin.test", self.echo.port, 2, "tunnel cap")
        s.close()
        p.stop()
        p = self.start("--max-connections", "1")
        s, _, _, reply = socks5_connect(p, "origin.test", self.echo.port)
        self.assertEqual(reply, OK)
        s.close()
        p.wait_log(kind="socks", cls="done")
        self.assert_reply(p, "origin.test", self.echo.port, 2, "connection budget")

    def test_head_timeout(self):
        p, c = proxy_on_clock(self, "--head-timeout", "30", start=self.start)
        s = p.connect()
        s.sendall(socks5_greeting())
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")  # the head timer is armed since the accept
        past_the_timeout(self, c, s, 30, "a SOCKS5 handshake stalled after its greeting")
        self.assertTrue(closed_within(s, 1), "a SOCKS5 client that stalls mid-handshake must be closed")
        s.close()


if __name__ == "__main__":
    unittest.main()
