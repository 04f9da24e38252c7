# SPDX-License-Identifier: Apache-2.0
"""SOCKS4 and SOCKS4a end to end (SPEC §10): 00 5A on success, 00 5B and six zeros on any refusal."""

import socket
import unittest

from control_support import past_the_timeout, proxy_on_clock, wait_stats
from harness import (trickle, ORIGIN_HOST, SOCKS4_OK, SOCKS4_REFUSED, Blackhole, HalfCloseServer, OriginsMixin,
                     ProxyTestCase, ReplyAfterEofServer, closed_within, free_port, recv_all, recv_exact,
                     socks4_connect, socks4_request, wait_until)


class Socks4Test(OriginsMixin, ProxyTestCase):

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    def assert_refused(self, p, port, cls, ip="0.0.0.1", host=None, cmd=1):
        n = len(p.find_logs(kind="socks4", cls=cls))
        s, reply = socks4_connect(p, port, ip=ip, host=host, cmd=cmd)
        self.assertEqual(reply.hex(), SOCKS4_REFUSED.hex(), f"{ip} {host}:{port}")
        self.assertTrue(closed_within(s, 3), "the proxy must close after a refusal")
        s.close()
        return [p.wait_log(kind="socks4", cls=cls, count=n + 1)[n]]

    # -- allowed

    def test_socks4_ipv4_connect(self):
        p = self.start()
        s, reply = socks4_connect(p, self.echo.port, ip="127.0.0.2")
        self.assertEqual(reply, SOCKS4_OK)
        s.sendall(b"four")
        self.assertEqual(recv_exact(s, 4), b"four")
        s.close()
        (line,) = p.wait_log(kind="socks4", cls="ok")
        self.assertEqual((line.port, line.ip), (self.echo.port, ORIGIN_HOST))
        (done,) = p.wait_log(kind="socks4", cls="done")
        self.assertEqual((done.up, done.down), (4, 4))

    def test_socks4a_name_connect(self):
        p = self.start()
        s, reply = socks4_connect(p, self.echo.port, host="origin.test")
        self.assertEqual(reply, SOCKS4_OK)
        s.sendall(b"four-a")
        self.assertEqual(recv_exact(s, 6), b"four-a")
        s.close()
        (line,) = p.wait_log(kind="socks4", cls="ok")
        self.assertEqual((line.host, line.ip), ("origin.test", ORIGIN_HOST))

    def test_request_and_data_in_one_send(self):
        p = self.start()
        before = self.echo.count()
        s, reply = socks4_connect(p, self.echo.port, host="origin.test", extra=b"EARLY4")
        self.assertEqual(reply, SOCKS4_OK)
        self.assertEqual(recv_exact(s, 6), b"EARLY4")
        self.assertTrue(self.echo.connections[before]["first"].startswith(b"EARLY4"))
        s.close()

    def test_request_byte_by_byte(self):
        p = self.start()
        s = p.connect()
        trickle(s, socks4_request(self.echo.port, host="origin.test"))
        self.assertEqual(recv_exact(s, 8), SOCKS4_OK)
        s.close()

    def test_half_close_both_ways(self):
        a = ReplyAfterEofServer()
        self.addCleanup(a.close)
        b = HalfCloseServer()
        self.addCleanup(b.close)
        p = self.start()
        s, reply = socks4_connect(p, a.port, host="origin.test")
        self.assertEqual(reply, SOCKS4_OK)
        s.sendall(b"xyz")
        s.shutdown(socket.SHUT_WR)
        self.assertEqual(recv_all(s), b"got 3 bytes: xyz")
        s.close()
        s, reply = socks4_connect(p, b.port, host="origin.test")
        self.assertEqual(reply, SOCKS4_OK)
        self.assertEqual(recv_exact(s, len(HalfCloseServer.GREETING)), HalfCloseServer.GREETING)
        s.settimeout(5)
        self.assertEqual(s.recv(10), b"")
        s.sendall(b"late")
        s.shutdown(socket.SHUT_WR)
        self.assertTrue(wait_until(lambda: b.connections and b.connections[0]["eof"], 5))
        self.assertEqual(bytes(b.connections[0]["data"]), b"late")
        s.close()

    def test_address_forms_of_the_permitted_origin_are_allowed(self):
        p = self.start()
        for host in ["127.0.0.2", "127.2", "0x7f.0.0.2", "2130706434", "127.0.0.2."]:
            with self.subTest(host=host):
                s, reply = socks4_connect(p, self.echo.port, host=host)
                self.assertEqual(reply, SOCKS4_OK)
                s.close()

    # -- refusals

    def test_address_forms_of_loopback_are_refused(self):
        p = self.start()
        self.assert_refused(p, 443, "loopback", ip="127.0.0.1")
        for host in ["0x7f.1", "2130706433", "[::ffff:127.0.0.1]", "127.1", "017700000001", "::1", "[::1]"]:
            with self.subTest(host=host):
                s, reply = socks4_connect(p, 443, host=host)
                self.assertEqual(reply.hex(), SOCKS4_REFUSED.hex())
                s.close()
        p.wait_log(kind="socks4", cls="loopback", count=8)

    def test_refusal_rows(self):
        hole_port = free_port()
        p = self.start("--deny", "1.1.1.0/24", "--resolve", "mix.test=127.0.0.2,10.0.0.1")
        rows = [
            (dict(ip="10.0.0.1", port=443), "private"),
            (dict(ip="169.254.169.254", port=80), "link-local"),
            (dict(ip="1.1.1.1", port=443), "denied"),
            (dict(host="mix.test", port=443), "private"),
            (dict(host="fd00::1", port=443), "private"),
            (dict(host="nx.test", port=443), "name not resolved"),
            (dict(host="origin.test", port=hole_port), "dial failed"),
            (dict(host="bad!host", port=443), "invalid host"),
            (dict(host="256.1.1.1", port=443), "invalid host"),
            (dict(host="origin.test", port=0), "invalid target"),
            (dict(host="origin.test", port=self.echo.port, cmd=2), "socks bind"),
            (dict(host="origin.test", port=self.echo.port, cmd=3), "socks command"),
        ]
        for kwargs, cls in rows:
            with self.subTest(row=kwargs):
                self.assert_refused(p, cls=cls, **kwargs)

    def test_not_listed(self):
        p = self.start("--allow", "origin.test")
        self.assert_refused(p, 443, "not-listed", host="other.test")
        self.assert_refused(p, 443, "not-listed", ip="127.0.0.2")
        self.assert_refused(p, self.echo.port, "not-listed", host="origin.test")

    def test_dial_timed_out(self):
        hole = Blackhole()
        self.addCleanup(hole.close)
        if not hole.usable:
            self.skipTest("a full accept queue does not drop SYNs here; no way to make a dial hang on loopback")
        p, c = proxy_on_clock(self, "--connect-timeout", "30", start=self.start)
        s = p.connect()
        s.sendall(socks4_request(hole.port, host="origin.test"))
        wait_stats(c, open=1)  # dialling: the connect timer is armed
        past_the_timeout(self, c, s, 30, "a dial that hangs")
        self.assertEqual(recv_exact(s, 8).hex(), SOCKS4_REFUSED.hex())
        self.assertTrue(closed_within(s, 3), "the proxy must close after a refusal")
        s.close()
        p.wait_log(kind="socks4", cls="dial timed out", port=hole.port)

    def test_tunnel_cap_and_budget(self):
        p = self.start("--max-tunnels", "1", "--max-connections", "2")
        s, reply = socks4_connect(p, self.echo.port, host="origin.test")
        self.assertEqual(reply, SOCKS4_OK)
        self.assert_refused(p, self.echo.port, "tunnel cap", host="origin.test")
        s.close()
        p.wait_log(kind="socks4", cls="done")
        s, reply = socks4_connect(p, self.echo.port, host="origin.test")
        self.assertEqual(reply, SOCKS4_OK)
        s.close()
        p.wait_log(kind="socks4", cls="done", count=2)
        self.assert_refused(p, self.echo.port, "connection budget", host="origin.test")

    def test_oversized_request_closes(self):
        p = self.start()
        s = p.connect()
        s.sendall(socks4_request(self.echo.port, host="origin.test", userid=b"u" * 2000))
        data = recv_all(s)
        self.assertNotEqual(data[:2], b"\x00\x5a")
        self.assertEqual(p.find_logs(kind="socks4", cls="ok"), [])


if __name__ == "__main__":
    unittest.main()
