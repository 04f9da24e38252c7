# SPDX-License-Identifier: Apache-2.0
"""HTTP CONNECT end to end (SPEC §7, with the §6 refusals it carries and the §2 timeouts)."""

import os
import select
import socket
import threading
import time
import unittest

from control_support import advance_clock, nothing_to_read, past_the_timeout, proxy_on_clock, wait_stats
from fault_support import wait_settled
from harness import (holds_for, trickle, ORIGIN_HOST, Blackhole, EchoServer, HalfCloseServer, OriginsMixin, ProxyTestCase,
                     ReplyAfterEofServer, assert_http_refusal, low_port_server, closed_within, connect_request, free_port,
                     http_connect, read_http_response, recv_all, recv_exact, refusal_bytes,
                     wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


class ConnectTest(OriginsMixin, ProxyTestCase):

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    def open_tunnel(self, proxy, target, extra=b""):
        s = proxy.connect()
        s.sendall(connect_request(target) + extra)
        got = recv_exact(s, len(ESTABLISHED))
        self.assertEqual(got, ESTABLISHED)
        return s

    # -- allowed tunnels

    def test_tunnel_to_name_echoes_and_is_logged(self):
        p = self.start()
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
        s.sendall(b"hello tunnel")
        self.assertEqual(recv_exact(s, 12), b"hello tunnel")
        (line,) = p.wait_log(kind="connect", cls="ok")
        self.assertEqual((line.host, line.port, line.ip), ("origin.test", self.echo.port, ORIGIN_HOST))
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.host, done.port, done.ip, done.up, done.down), ("origin.test", self.echo.port,
                                                                               ORIGIN_HOST, 12, 12))

    def test_tunnel_to_permitted_ipv4_literal(self):
        p = self.start()
        s = self.open_tunnel(p, f"127.0.0.2:{self.echo.port}")
        s.sendall(b"x")
        self.assertEqual(recv_exact(s, 1), b"x")
        s.close()
        p.wait_log(kind="connect", cls="ok", ip="127.0.0.2")

    def test_http_1_0_connect(self):
        p = self.start()
        s = p.connect()
        s.sendall(f"CONNECT origin.test:{self.echo.port} HTTP/1.0\r\n\r\n".encode())
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.sendall(b"ten")
        self.assertEqual(recv_exact(s, 3), b"ten")
        s.close()

    def test_port_with_leading_zeros(self):
        echo = low_port_server(EchoServer)
        self.addCleanup(echo.close)
        p = self.start()
        s = self.open_tunnel(p, f"origin.test:0{echo.port}")  # five digits
        s.sendall(b"z")
        self.assertEqual(recv_exact(s, 1), b"z")
        s.close()
        p.wait_log(kind="connect", cls="ok", port=echo.port)
        # Six digits is too many, whatever their value.
        s = p.connect()
        s.sendall(connect_request(f"origin.test:00{echo.port}"))
        assert_http_refusal(self, s, 400, "invalid target")

    def test_anything_else_in_the_connect_line_is_invalid_target(self):
        p = self.start()
        for line in (f"CONNECT origin.test:{self.echo.port} HTTP/2.0",
                     f"CONNECT origin.test:{self.echo.port} extra HTTP/1.1",
                     f"CONNECT  origin.test:{self.echo.port} HTTP/1.1",
                     f"CONNECT http://origin.test:{self.echo.port}/ HTTP/1.1",
                     "CONNECT origin.test HTTP/1.1"):
            with self.subTest(line=line):
                s = p.connect()
                s.sendall(line.encode() + b"\r\n\r\n")
                assert_http_refusal(self, s, 400, "invalid target")
                s.close()
        self.assertEqual(self.echo.count(), 0)

    def test_early_data_after_head_goes_upstream_first(self):
        p = self.start()
        before = self.echo.count()
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}", extra=b"EARLY-BYTES")
        self.assertEqual(recv_exact(s, 11), b"EARLY-BYTES")
        s.sendall(b"+later")
        self.assertEqual(recv_exact(s, 6), b"+later")
        rec = self.echo.connections[before]
        self.assertEqual(bytes(rec["data"]), b"EARLY-BYTES+later")
        self.assertTrue(rec["first"].startswith(b"EARLY"), rec["first"])
        s.close()

    def test_client_half_close_is_passed_on_and_reply_still_arrives(self):
        origin = ReplyAfterEofServer()
        self.addCleanup(origin.close)
        p = self.start()
        s = self.open_tunnel(p, f"origin.test:{origin.port}")
        s.sendall(b"ping" * 1000)
        s.shutdown(socket.SHUT_WR)
        data = recv_all(s, timeout=5)
        self.assertEqual(data, b"got 4000 bytes: " + b"ping" * 1000)
        rec = origin.connections[0]
        self.assertTrue(rec["eof"])
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.up, done.down), (4000, 4016))

    def test_origin_half_close_is_passed_on_and_client_can_still_send(self):
        origin = HalfCloseServer()
        self.addCleanup(origin.close)
        p = self.start()
        s = self.open_tunnel(p, f"origin.test:{origin.port}")
        got = recv_exact(s, len(HalfCloseServer.GREETING))
        self.assertEqual(got, HalfCloseServer.GREETING)
        s.settimeout(5)
        self.assertEqual(s.recv(100), b"", "the origin's FIN should reach the client as EOF")
        s.sendall(b"still talking")
        s.shutdown(socket.SHUT_WR)
        rec = origin.connections[0]
        self.assertTrue(wait_until(lambda: rec["eof"], 5), "origin never saw the client's FIN")
        self.assertEqual(bytes(rec["data"]), b"still talking")
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.up, done.down), (13, len(HalfCloseServer.GREETING)))

    def test_megabytes_both_ways(self):
        p = self.start()
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
        payload = os.urandom(1 << 16) * 32  # 2 MiB
        errors = []

        def send():
            try:
                s.sendall(payload)
            except OSError as e:
                errors.append(e)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        got = recv_exact(s, len(payload), timeout=30)
        t.join(timeout=10)
        self.assertFalse(errors)
        self.assertTrue(got == payload, "echoed bytes differ")
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.up, done.down), (len(payload), len(payload)))

    def test_dial_tries_the_next_answer(self):
        # 127.0.0.3 has nothing on the echo port: refused, so the second answer is dialled.
        p = self.proxy("--resolve", "two.test=127.0.0.3,127.0.0.2", "--permit", "127.0.0.3/32")
        s = self.open_tunnel(p, f"two.test:{self.echo.port}")
        s.sendall(b"second")
        self.assertEqual(recv_exact(s, 6), b"second")
        s.close()

    # -- refusals (§6) through CONNECT

    def assert_refused(self, p, target, status, reason, words=None, cls=None):
        """Checks the refusal; returns [the log line it wrote]."""
        n = len(p.find_logs(kind="connect", cls=cls or reason))
        s = p.connect()
        s.sendall(connect_request(target))
        assert_http_refusal(self, s, status, reason, words)
        s.close()
        return [p.wait_log(kind="connect", cls=cls or reason, count=n + 1)[n]]

    def test_invalid_target(self):
        p = self.start()
        for target in ["origin.test", "origin.test:0", "origin.test:65536", "origin.test:123456",
                       "origin.test:-1", "origin.test:", "origin.test:44x", "origin.test:+443", "[::1]"]:
            with self.subTest(target=target):
                s = p.connect()
                s.sendall(connect_request(target))
                assert_http_refusal(self, s, 400, "invalid target")

    def test_unbracketed_ipv6_is_invalid_target(self):
        # SPEC §7: CONNECT names an IPv6 host as [v6]:port. Unbracketed, "::1:443" has no one way to
        # split (::1 port 443, or ::1:443 without a port): refused as it is, never judged as one of
        # them; the log line names the host as sent, as far as it splits.
        p = self.start(log_file=True)
        for target, host in [("::1:443", "::1"), ("::ffff:127.0.0.1:443", "::ffff:127.0.0.1"),
                             ("2001:db8::1:443", "2001:db8::1"), ("::ffff:127.0.0.2:443", "::ffff:127.0.0.2")]:
            with self.subTest(target=target):
                s = p.connect()
                s.sendall(connect_request(target))
                assert_http_refusal(self, s, 400, "invalid target")
                s.close()
                (line,) = p.wait_log(kind="connect", host=host)
                self.assertEqual((line.port, line.ip, line.cls), (443, "-", "invalid target"))
        self.assertEqual(p.find_logs(cls="loopback"), [])

    def test_invalid_host(self):
        p = self.start()
        for target in ["bad!host:443", "a..b:443", "256.1.1.1:443", "08.0.0.1:443", "1.2.3.4.5:443",
                       "[::1].:443", "[nothing]:443", ".:443", "x" * 254 + ":443"]:
            with self.subTest(target=target):
                s = p.connect()
                s.sendall(connect_request(target))
                assert_http_refusal(self, s, 400, "invalid host")

    def test_address_classes(self):
        p = self.start("--deny", "1.1.1.0/24", "--resolve", "meta.test=169.254.169.254")
        rows = [
            ("0.0.0.0:443", "unspecified", "0.0.0.0"),
            ("127.0.0.1:443", "loopback", "127.0.0.1"),
            ("10.0.0.1:443", "private", "10.0.0.1"),
            ("172.16.5.4:443", "private", "172.16.5.4"),
            ("192.168.1.1:443", "private", "192.168.1.1"),
            ("100.100.100.200:80", "metadata", "100.100.100.200"),
            ("168.63.129.16:80", "metadata", "168.63.129.16"),
            ("100.64.0.1:443", "cgnat", "100.64.0.1"),
            ("169.254.169.254:80", "link-local", "169.254.169.254"),
            ("meta.test:80", "link-local", "169.254.169.254"),
            ("198.18.0.1:443", "benchmarking", "198.18.0.1"),
            ("192.0.2.1:443", "reserved", "192.0.2.1"),
            ("240.0.0.1:443", "reserved", "240.0.0.1"),
            ("224.0.0.1:443", "multicast", "224.0.0.1"),
            ("255.255.255.255:443", "broadcast", "255.255.255.255"),
            ("[::1]:443", "loopback", "::1"),
            ("[::]:443", "unspecified", "::"),
            ("[fe80::1]:443", "link-local", "fe80::1"),
            ("[fe80::1%25eth0]:443", "link-local", None),
            ("[fd00::1]:443", "private", "fd00::1"),
            ("[ff02::1]:443", "multicast", "ff02::1"),
            ("[2001:db8::1]:443", "reserved", "2001:db8::1"),
            ("[::ffff:10.0.0.1]:443", "private", None),
            ("[64:ff9b::a9fe:a9fe]:443", "link-local", None),
            ("[2002:7f00:1::]:443", "loopback", None),
            ("[fd00:ec2::254]:443", "metadata", "fd00:ec2::254"),
            ("1.1.1.1:443", "denied", "1.1.1.1"),
        ]
        for target, cls, ip in rows:
            with self.subTest(target=target):
                n = len(p.find_logs(kind="connect", cls=cls))
                s = p.connect()
                s.sendall(connect_request(target))
                assert_http_refusal(self, s, 403, cls)
                lines = p.wait_log(kind="connect", cls=cls, count=n + 1)
                if ip is not None:
                    self.assertEqual(lines[n].ip, ip)

    def test_deny_is_checked_before_permit(self):
        p = self.start("--deny", "127.0.0.0/24")
        self.assert_refused(p, f"origin.test:{self.echo.port}", 403, "denied")
        self.assertEqual(p.find_logs(kind="connect", cls="ok"), [])

    def test_name_with_one_private_answer_is_refused(self):
        p = self.start("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        before = self.echo.count()
        (line,) = self.assert_refused(p, f"mix.test:{self.echo.port}", 403, "private")
        self.assertEqual((line.host, line.ip), ("mix.test", "10.0.0.1"))
        self.assertTrue(holds_for(lambda: self.echo.count() == before, 0.2), "nothing may be dialled for a refused name")

    def test_name_not_resolved(self):
        p = self.start()
        (line,) = self.assert_refused(p, "nx.test:443", 502, "name not resolved")
        self.assertEqual((line.host, line.ip), ("nx.test", "-"))

    def test_dial_failed(self):
        p = self.start()
        port = free_port()
        (line,) = self.assert_refused(p, f"origin.test:{port}", 502, "dial failed")
        self.assertEqual((line.port, line.ip), (port, ORIGIN_HOST))

    def test_dial_timed_out(self):
        hole = Blackhole()
        self.addCleanup(hole.close)
        if not hole.usable:
            self.skipTest("a full accept queue does not drop SYNs here; no way to make a dial hang on loopback")
        p, c = proxy_on_clock(self, "--connect-timeout", "30", start=self.start)
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{hole.port}"))
        wait_stats(c, open=1)  # dialling: the connect timer is armed
        past_the_timeout(self, c, s, 30, "a dial that hangs")
        assert_http_refusal(self, s, 504, "dial timed out")
        s.close()
        p.wait_log(kind="connect", cls="dial timed out", ip=ORIGIN_HOST, port=hole.port)

    def test_not_listed_words(self):
        p = self.start("--allow", "origin.test", "--resolve", "other.test=127.0.0.2")
        self.assert_refused(p, "other.test:443", 403, "not-listed",
                            "other.test is not on this box's network list")
        self.assert_refused(p, f"origin.test:{self.echo.port}", 403, "not-listed",
                            f"origin.test:{self.echo.port} is not open on this box's network list")
        self.assert_refused(p, "127.0.0.2:443", 403, "not-listed",
                            "127.0.0.2 is an address, not a name on this box's network list")

    def test_head_too_large(self):
        p = self.start("--max-head-bytes", "1024")
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}", ["X-Pad: " + "p" * 2000]))
        assert_http_refusal(self, s, 431, "head too large")

    def test_head_exactly_at_the_limit_is_read(self):
        p = self.start("--max-head-bytes", "1024")
        base = connect_request(f"origin.test:{self.echo.port}", ["X-Pad: "])
        pad = 1024 - len(base)
        head = connect_request(f"origin.test:{self.echo.port}", ["X-Pad: " + "p" * pad])
        self.assertEqual(len(head), 1024)
        s = p.connect()
        s.sendall(head)
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.close()
        head = connect_request(f"origin.test:{self.echo.port}", ["X-Pad: " + "p" * (pad + 1)])
        s = p.connect()
        s.sendall(head)
        assert_http_refusal(self, s, 431, "head too large")

    def test_head_split_over_many_sends(self):
        p = self.start()
        s = p.connect()
        trickle(s, connect_request(f"origin.test:{self.echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.close()

    # -- timeouts (on the proxy's clock: control_support.past_the_timeout)

    def start_on_clock(self, *args):
        return proxy_on_clock(self, *args, start=self.start)

    def test_head_timeout_closes_a_silent_client(self):
        p, c = self.start_on_clock("--head-timeout", "30")
        s = p.connect()
        wait_stats(c, clients=1)  # accepted: the head timer is armed
        past_the_timeout(self, c, s, 30, "a silent client")
        self.assertTrue(closed_within(s, 1), "a silent client must be closed after --head-timeout")
        s.close()

    def test_head_timeout_closes_a_client_with_half_a_head(self):
        p, c = self.start_on_clock("--head-timeout", "30")
        s = p.connect()
        wait_stats(c, clients=1)
        s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: ori")
        past_the_timeout(self, c, s, 30, "half a head")
        self.assertTrue(closed_within(s, 1), "an unfinished head must be closed after --head-timeout")
        s.close()

    def test_head_timeout_does_not_apply_to_a_tunnel(self):
        p, c = self.start_on_clock("--head-timeout", "30")
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
        advance_clock(c, 31)
        self.assertTrue(nothing_to_read(s), "a tunnel was closed at --head-timeout")
        s.sendall(b"alive")
        self.assertEqual(recv_exact(s, 5), b"alive")
        s.close()

    def test_idle_timeout_closes_a_quiet_tunnel(self):
        p, c = self.start_on_clock("--idle-timeout", "30")
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
        past_the_timeout(self, c, s, 30, "a quiet tunnel")
        self.assertTrue(closed_within(s, 1), "a tunnel quiet for --idle-timeout must be closed")
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual(done.end, "idle-timeout")

    def test_idle_timeout_spares_a_busy_tunnel(self):
        # Bytes every 20 s of the clock keep a tunnel with --idle-timeout 30 open well past 30 s
        # from its start; 31 s without any end it.
        p, c = self.start_on_clock("--idle-timeout", "30")
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
        for i in range(4):
            advance_clock(c, 20)
            self.assertTrue(nothing_to_read(s), f"a tunnel busy every 20 s closed after {20 * (i + 1)} s")
            s.sendall(b"%d" % i)
            self.assertEqual(recv_exact(s, 1), b"%d" % i)
        advance_clock(c, 31)
        self.assertTrue(closed_within(s, 3), "a tunnel quiet for --idle-timeout must be closed")
        s.close()

    def test_no_idle_timeout_by_default(self):
        p, c = self.start_on_clock()
        s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
        advance_clock(c, 7 * 86400)  # a quiet week on the proxy's clock
        self.assertTrue(nothing_to_read(s), "a tunnel was closed without --idle-timeout")
        s.sendall(b"alive")
        self.assertEqual(recv_exact(s, 5), b"alive")
        s.close()

    # -- descriptors

    def test_descriptors_return_to_baseline_after_clients_leave(self):
        p = self.start("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        silent = free_port()

        def churn(rounds):
            for i in range(rounds):
                # a finished tunnel
                s = self.open_tunnel(p, f"origin.test:{self.echo.port}")
                s.sendall(b"abc")
                recv_exact(s, 3)
                s.close()
                # a tunnel the client drops mid-flight without reading
                s = self.open_tunnel(p, f"origin.test:{self.echo.port}", extra=b"x" * 5000)
                s.close()
                # a refusal, a dial failure and an unresolved name
                for target in ["mix.test:443", f"origin.test:{silent}", "nx.test:443"]:
                    s = p.connect()
                    s.sendall(connect_request(target))
                    recv_all(s)
                    s.close()
                # a client that leaves in the middle of its head, and one that sends nothing
                s = p.connect()
                s.sendall(b"CONNECT origin.te")
                s.close()
                s = p.connect()
                s.close()

        churn(3)
        baseline = wait_settled(p.fd_count, timeout=3)
        churn(25)
        settled = wait_until(lambda: p.fd_count() <= baseline, timeout=5)
        self.assertTrue(settled, f"proxy holds {p.fd_count()} descriptors, {baseline} before the clients came")

    def test_survives_running_out_of_descriptors(self):
        import resource

        def low_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

        p = self.start(preexec_fn=low_limit)
        clients = []
        try:
            # Far more tunnels than 48 descriptors allow (each takes two): some must fail, none may crash it.
            for i in range(60):
                try:
                    s = p.connect(timeout=2)
                    s.sendall(connect_request(f"origin.test:{self.echo.port}"))
                    clients.append(s)
                except OSError:
                    pass  # the proxy is out of descriptors: the next client may find one
            answered = 0
            waiting = list(clients)
            deadline = time.monotonic() + 3
            while waiting and time.monotonic() < deadline:
                ready, _, _ = select.select(waiting, [], [], max(0.0, deadline - time.monotonic()))
                for s in ready:
                    waiting.remove(s)
                    try:
                        if s.recv(64):
                            answered += 1
                    except OSError:
                        pass
            self.assertGreater(answered, 0)
            self.assertTrue(p.alive(), "the proxy died when it ran out of descriptors")
        finally:
            for s in clients:
                s.close()
        # Once the clients are gone, it serves again.
        def tunnel_opens():
            try:
                s = p.connect(timeout=2)
                s.sendall(connect_request(f"origin.test:{self.echo.port}") + b"again")
                got = recv_exact(s, len(ESTABLISHED) + 5, timeout=2)
                s.close()
                return got == ESTABLISHED + b"again"
            except (OSError, AssertionError):
                return False
        self.assertTrue(wait_until(tunnel_opens, 10, interval=0.1), "no tunnel could be opened after the descriptor storm")
        self.assertTrue(p.alive())


if __name__ == "__main__":
    unittest.main()
