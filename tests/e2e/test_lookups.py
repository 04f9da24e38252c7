# SPDX-License-Identifier: Apache-2.0
"""The lookup budget (SPEC §14, `serve --max-lookups N`) and the answer cache behind it.

Every name the proxy looks up in DNS spends one of the budget, whichever protocol named it
(CONNECT, plain HTTP, SOCKS5, SOCKS4a, and RESOLVE, the bridge's DNS responder's question); once
spent, a name is refused `lookup budget` (HTTP 429, SOCKS5 2) and no query for it leaves. An
answer reused within its TTL, a --resolve answer and an IP literal cost nothing, and a name asked
by two clients at once is one lookup: so the bridge's DNS answer and the connection that follows
cost one. The test's own DNS server on loopback counts what was really asked.
"""

import json
import os
import select
import signal
import socket
import struct
import threading
import time
import unittest

from box_support import Bridge
from control_support import advance_clock, proxy_with_control_fd, skip_without_clock_hooks
from harness import (DnsServer, EchoServer, ProxyTestCase, assert_http_refusal, connect_request, recv_exact,
                     socks4_connect, socks5_connect, still_open, wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
RESOLVE = 0xF0
A = 1


def resolve(proxy, name):
    """A SOCKS5 RESOLVE; returns the reply code."""
    s = proxy.connect()
    try:
        raw = name.encode()
        s.sendall(b"\x05\x01\x00" + bytes([5, RESOLVE, 0, 3, len(raw)]) + raw + b"\x00\x00")
        assert recv_exact(s, 2) == b"\x05\x00"
        head = recv_exact(s, 4)
        recv_exact(s, (4 if head[3] == 1 else 16) + 2)
        return head[1]
    finally:
        s.close()


class LookupBudgetTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.echo = EchoServer()
        self.addCleanup(self.echo.close)

    def dns(self, names, **kwargs):
        d = DnsServer({n: ["127.0.0.2"] for n in names}, **kwargs)
        self.addCleanup(d.close)
        return d

    def a_queries(self, dns, name):
        return sum(1 for n, t in list(dns.queries) if n == name and t == A)

    def stats(self, p):
        before = len([l for l in p.raw_log_lines() if '"event":"stats"' in l])
        os.kill(p.pid, signal.SIGUSR1)
        self.assertTrue(wait_until(lambda: len([l for l in p.raw_log_lines() if '"event":"stats"' in l]) > before, 5))
        return json.loads([l for l in p.raw_log_lines() if '"event":"stats"' in l][-1])

    def tunnel(self, p, name):
        s = p.connect()
        s.sendall(connect_request(f"{name}:{self.echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED, name)
        s.close()

    def socks5_ok(self, p, name):
        s, _, _, reply = socks5_connect(p, name, self.echo.port, atyp=3)
        s.close()
        self.assertEqual(reply[:2], b"\x05\x00", name)

    def test_the_budget_is_spent_by_every_protocol_then_names_are_refused_without_a_query(self):
        names = ["one.test", "two.test", "three.test", "four.test", "five.test", "six.test", "seven.test",
                 "eight.test"]
        dns = self.dns(names)
        p = self.proxy("--max-lookups", "4", "--resolve", "fixed.test=127.0.0.2", dns=dns)
        # Four names, four protocols: each one lookup.
        self.assertEqual(resolve(p, "one.test"), 0)
        self.tunnel(p, "two.test")
        self.socks5_ok(p, "three.test")
        s, reply = socks4_connect(p, self.echo.port, host=b"four.test")
        s.close()
        self.assertEqual(reply[:2], b"\x00\x5a")
        # The fifth name, and every one after it, is refused by name, and never asked.
        s = p.connect()
        s.sendall(connect_request(f"five.test:{self.echo.port}"))
        assert_http_refusal(self, s, 429, "lookup budget")
        s.close()
        s, _, _, reply = socks5_connect(p, "six.test", self.echo.port, atyp=3)
        s.close()
        self.assertEqual(reply[1], 2)
        self.assertEqual(resolve(p, "seven.test"), 2)
        s = p.connect()
        s.sendall(f"GET http://eight.test:{self.echo.port}/ HTTP/1.1\r\nHost: eight.test:{self.echo.port}\r\n\r\n"
                  .encode())
        assert_http_refusal(self, s, 429, "lookup budget")
        s.close()
        for name in ("five.test", "six.test", "seven.test", "eight.test"):
            p.wait_log(host=name, cls="lookup budget")
            self.assertNotIn(name, dns.names_asked())
        # What costs nothing still works: an answer within its TTL, --resolve, an IP literal.
        self.tunnel(p, "two.test")
        self.assertEqual(resolve(p, "one.test"), 0)
        self.tunnel(p, "fixed.test")
        self.tunnel(p, "127.0.0.2")
        stats = self.stats(p)
        self.assertEqual(stats["lookups"], 4)
        self.assertEqual(stats["refused"].get("lookup budget"), 4)
        self.assertEqual(self.a_queries(dns, "one.test"), 1)
        self.assertEqual(self.a_queries(dns, "two.test"), 1)

    def test_an_answer_is_reused_within_its_ttl_and_looked_up_again_after_it(self):
        # The TTL is on the proxy's clock: a minute of it passes in no time, and real time (a few
        # seconds at most here) never reaches it by itself.
        ttl = 60
        dns = self.dns(["short.test"], ttl=ttl)
        p, c = proxy_with_control_fd(self, dns=dns)
        skip_without_clock_hooks(self, c)
        self.tunnel(p, "short.test")
        self.assertEqual(resolve(p, "short.test"), 0)
        self.tunnel(p, "SHORT.test")
        self.assertEqual(self.a_queries(dns, "short.test"), 1, dns.queries)
        advance_clock(c, ttl - 5)  # still within the TTL: the answer is kept
        self.tunnel(p, "short.test")
        self.assertEqual(self.a_queries(dns, "short.test"), 1, dns.queries)
        self.assertEqual(self.stats(p)["lookups"], 1)
        advance_clock(c, 6)  # past the TTL: the answer is gone
        self.tunnel(p, "short.test")
        self.assertEqual(self.a_queries(dns, "short.test"), 2, dns.queries)
        self.assertEqual(self.stats(p)["lookups"], 2)

    def test_resolve_then_connect_to_the_same_name_is_one_lookup(self):
        dns = self.dns(["box.test"])
        p = self.proxy("--max-lookups", "1", dns=dns)
        self.assertEqual(resolve(p, "box.test"), 0)   # the bridge's DNS answer
        self.tunnel(p, "box.test")                    # the connection that follows
        self.socks5_ok(p, "box.test")
        self.assertEqual(self.a_queries(dns, "box.test"), 1)
        self.assertEqual(self.stats(p)["lookups"], 1)

    def test_a_name_asked_twice_at_once_is_one_lookup(self):
        # The bridge asks A and AAAA of one name at once (a box's resolver sends both together):
        # the second waits on the first's lookup instead of making its own.
        dns = self.dns(["both.test"], delays={"both.test": 0.4})
        p = self.proxy("--max-lookups", "1", dns=dns)
        codes = []
        threads = [threading.Thread(target=lambda: codes.append(resolve(p, "both.test"))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(codes, [0, 0])
        self.assertEqual(self.a_queries(dns, "both.test"), 1)
        self.assertEqual(self.stats(p)["lookups"], 1)

    def test_fixed_answers_and_addresses_cost_nothing(self):
        dns = self.dns(["looked.test", "over.test"])
        p = self.proxy("--max-lookups", "1", "--resolve", "fixed.test=127.0.0.2", dns=dns)
        for _ in range(3):
            self.tunnel(p, "fixed.test")
            self.assertEqual(resolve(p, "fixed.test"), 0)
            self.tunnel(p, "127.0.0.2")
        self.assertEqual(self.stats(p)["lookups"], 0)
        self.tunnel(p, "looked.test")
        self.assertEqual(resolve(p, "over.test"), 2)
        p.wait_log(kind="resolve", host="over.test", cls="lookup budget")
        self.assertNotIn("over.test", dns.names_asked())
        self.assertEqual(dns.names_asked(), {"looked.test"})

    def test_a_server_that_drops_aaaa_questions_costs_seconds_not_the_dns_timeout(self):
        # Once A has answered (or failed), AAAA gets 3 s more (as evdns_getaddrinfo gave it), then
        # the name is answered with A alone. That partial answer is not kept: the AAAA it lacks
        # might have been one the address rule refuses, so the next decision asks again. The 3 s
        # are on the proxy's clock, advanced here instead of slept for.
        dns = self.dns(["noaaaa.test"], silent_types={28})
        p, c = proxy_with_control_fd(self, "--dns-timeout", "20", dns=dns)
        skip_without_clock_hooks(self, c)
        for lookups in (1, 2):
            s = self.waiting_past_the_skew(p, c, dns, "noaaaa.test", lookups)
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            s.close()
            self.assertEqual(self.a_queries(dns, "noaaaa.test"), lookups)
        # A failed A (NXDOMAIN) starts the same 3 s, not the whole --dns-timeout.
        s = self.waiting_past_the_skew(p, c, dns, "unknown.test", 1)
        assert_http_refusal(self, s, 502, "name not resolved")
        s.close()

    def waiting_past_the_skew(self, p, c, dns, name, lookups):
        """A CONNECT to `name` whose A query is answered and AAAA not: still waiting when the clock
        is not moved, answered as soon as it is moved past the 3 s (in less real time than that,
        so a skew the clock does not drive fails). Its socket, with the answer to read."""
        s = p.connect()
        s.sendall(connect_request(f"{name}:{self.echo.port}"))
        self.assertTrue(wait_until(lambda: self.a_queries(dns, name) == lookups and
                                   sum(1 for n, t in list(dns.queries) if n == name and t == 28) == lookups, 5))
        self.assertTrue(still_open(s), f"{name} was answered before AAAA's 3 s were up")
        started = time.monotonic()
        for _ in range(4):  # again, in case the A answer was read after a move
            advance_clock(c, 3.5)
            if select.select([s], [], [], 0.3)[0]:
                break
        self.assertLess(time.monotonic() - started, 2.5, f"{name}: not answered on the clock")
        return s

    def test_names_in_etc_hosts_are_answered_there_and_cost_nothing(self):
        # SPEC §2: /etc/hosts is read first, --nameserver or not. A name it maps to loopback is
        # judged by that answer (loopback), and never asked of the DNS server.
        names = []
        try:
            with open("/etc/hosts") as f:
                for line in f:
                    fields = line.split("#", 1)[0].split()
                    if len(fields) >= 2 and fields[0].startswith("127."):
                        names += [n for n in fields[1:] if "localhost" not in n and "." not in n.rstrip(".")]
        except OSError:
            pass
        if not names:
            self.skipTest("/etc/hosts maps no name but localhost to a loopback address here")
        name = names[0]
        dns = self.dns([name.lower()])  # the DNS server would say 127.0.0.2: allowed, were it asked
        p = self.proxy("--max-lookups", "1", dns=dns)
        s = p.connect()
        s.sendall(connect_request(f"{name}:443"))
        assert_http_refusal(self, s, 403, "loopback")
        s.close()
        self.assertNotIn(name.lower(), dns.names_asked())
        self.assertEqual(self.stats(p)["lookups"], 0)

    def test_a_failed_lookup_is_not_cached_and_costs_each_time(self):
        dns = DnsServer({})
        self.addCleanup(dns.close)
        p = self.proxy("--max-lookups", "2", dns=dns)
        for _ in range(2):
            s = p.connect()
            s.sendall(connect_request("gone.test:443"))
            assert_http_refusal(self, s, 502, "name not resolved")
            s.close()
        s = p.connect()
        s.sendall(connect_request("gone.test:443"))
        assert_http_refusal(self, s, 429, "lookup budget")
        s.close()
        self.assertEqual(self.a_queries(dns, "gone.test"), 2)

    def test_a_flood_of_names_stops_at_the_budget(self):
        dns = self.dns([])
        p = self.proxy("--max-lookups", "50", dns=dns)
        codes = [resolve(p, f"n{i}.flood.test") for i in range(200)]
        self.assertEqual(codes.count(2), 150)
        self.assertEqual(len({n for n in dns.names_asked() if n.endswith(".flood.test")}), 50)
        self.assertEqual(self.stats(p)["lookups"], 50)


class BridgeDnsTest(ProxyTestCase):
    """Through the bridge's DNS responder, as a box's resolver asks: A and AAAA of a name together,
    then a connection to it, cost one lookup."""

    def test_a_and_aaaa_then_the_connection_cost_one_lookup(self):
        echo = EchoServer()
        self.addCleanup(echo.close)
        upstream = DnsServer({"site.test": ["127.0.0.2"]}, delays={"site.test": 0.3})
        self.addCleanup(upstream.close)
        p = self.proxy("--max-lookups", "1", dns=upstream)
        bridge = Bridge(p.socket_path, extra=("--dns", "127.0.0.1:0"))
        self.addCleanup(bridge.stop)
        host, _, port = bridge.listening["dns"][0].rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        s.settimeout(5)
        for qid, qtype in ((1, 1), (2, 28)):  # sent together, as glibc does
            s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + b"\x04site\x04test\x00"
                     + struct.pack(">HH", qtype, 1), (host, int(port)))
        rcodes = {}
        for _ in range(2):
            data, _ = s.recvfrom(4096)
            qid, flags = struct.unpack(">HH", data[:4])
            rcodes[qid] = flags & 0xF
        self.assertEqual(rcodes, {1: 0, 2: 0})
        t = p.connect()
        t.sendall(connect_request(f"site.test:{echo.port}"))
        self.assertEqual(recv_exact(t, len(ESTABLISHED)), ESTABLISHED)
        t.close()
        self.assertEqual([q for q in upstream.queries if q[1] == A], [("site.test", A)])
        os.kill(p.pid, signal.SIGUSR1)
        self.assertEqual(json.loads(p.wait_raw(r'"event":"stats"'))["lookups"], 1)


if __name__ == "__main__":
    unittest.main()
