# SPDX-License-Identifier: Apache-2.0
"""One decision for every target (SPEC §5): address forms through each protocol, the host list,
caps and the budget, and DNS through --nameserver (a DNS server of the test's own on loopback)."""

import socket
import threading
import unittest

from control_support import nothing_to_read, past_the_timeout, proxy_on_clock, proxy_with_control_fd, wait_stats
from harness import (ORIGIN_HOST, SOCKS4_OK, SOCKS4_REFUSED, Blackhole, DnsServer, EchoServer, OriginsMixin,
                     ProxyTestCase, assert_http_refusal, closed_within, connect_request, free_port,
                     read_http_response, recv_all, low_port_server, recv_exact, refusal_bytes, socks4_connect,
                     socks4_request, socks5_connect, socks5_greeting, socks5_reply, socks5_request, wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
HTTP_STATUS = {"ok": 200, "invalid target": 400, "invalid host": 400, "not-listed": 403, "loopback": 403,
               "private": 403, "link-local": 403, "denied": 403, "name not resolved": 502, "tunnel cap": 429,
               "connection budget": 429, "lookup budget": 429, "dial failed": 502, "reserved": 403, "unspecified": 403}
SOCKS5_CODE = {"ok": 0, "invalid target": 1, "invalid host": 4, "not-listed": 2, "loopback": 2, "private": 2,
               "link-local": 2, "denied": 2, "name not resolved": 4, "tunnel cap": 2, "connection budget": 2,
               "lookup budget": 2, "dial failed": 5, "reserved": 2, "unspecified": 2}


def _connected(sock):
    try:
        sock.getpeername()
        return True
    except OSError:
        return False


def bracket(host):
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class Through:
    """Asks for host:port through one protocol and says what came back, as a class name or "ok"."""

    def __init__(self, test, proxy):
        self.test = test
        self.p = proxy

    def connect(self, host, port, expect):
        s = self.p.connect()
        s.sendall(connect_request(f"{bracket(host)}:{port}"))
        resp = read_http_response(s, method="CONNECT")
        if expect == "ok":
            self.test.assertEqual(resp.status_line, "HTTP/1.1 200 Connection Established", f"{host}:{port}")
            return s
        self.test.assertEqual(resp.status, HTTP_STATUS[expect], f"{host}:{port}: {resp}")
        self.test.assertEqual(resp.header("x-egress-refused"), expect, f"{host}:{port}: {resp}")
        s.close()
        return None

    def socks5(self, host, port, expect, atyp=None):
        s, method, _, reply = socks5_connect(self.p, host.strip("[]") if atyp == 4 else host, port, atyp=atyp)
        self.test.assertEqual(reply.hex(), socks5_reply(SOCKS5_CODE[expect]).hex(), f"{host}:{port} -> {expect}")
        if expect == "ok":
            return s
        s.close()
        return None

    def socks4a(self, host, port, expect):
        s, reply = socks4_connect(self.p, port, host=host)
        self.test.assertEqual(reply.hex(), (SOCKS4_OK if expect == "ok" else SOCKS4_REFUSED).hex(),
                              f"{host}:{port} -> {expect}")
        if expect == "ok":
            return s
        s.close()
        return None

    def all(self, host, port, expect, kinds=("connect", "socks", "socks4")):
        """Through CONNECT, SOCKS5 (domain type) and SOCKS4a; each must log `expect`."""
        for kind in kinds:
            n = len(self.p.find_logs(kind=kind, cls=expect))
            s = {"connect": lambda: self.connect(host, port, expect),
                 "socks": lambda: self.socks5(host, port, expect, atyp=3),
                 "socks4": lambda: self.socks4a(host, port, expect)}[kind]()
            if s is not None:
                s.sendall(b"?")
                self.test.assertEqual(recv_exact(s, 1), b"?")
                s.close()
            self.p.wait_log(kind=kind, cls=expect, count=n + 1)


class AddressFormsTest(OriginsMixin, ProxyTestCase):

    def test_loopback_in_every_form_is_refused(self):
        p = self.proxy()
        t = Through(self, p)
        for host in ["127.0.0.1", "127.1", "0x7f.1", "0x7f.0.0.1", "017700000001", "2130706433", "0x7F000001",
                     "127.0.0.1.", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.1", "[::ffff:127.0.0.1]",
                     "::ffff:7f00:1", "[0:0:0:0:0:0:0:1]", "64:ff9b::7f00:1", "2002:7f00:1::"]:
            with self.subTest(host=host):
                t.all(host, 443, "loopback")

    def test_ipv6_address_types_through_socks5(self):
        p = self.proxy()
        t = Through(self, p)
        for host in ["::1", "::ffff:127.0.0.1", "::"]:
            with self.subTest(host=host):
                t.socks5(host, 443, "unspecified" if host == "::" else "loopback", atyp=4)
        t.socks5("fd00::2", 443, "private", atyp=4)

    def test_permitted_origin_in_every_form_is_allowed(self):
        p = self.proxy()
        t = Through(self, p)
        for host in ["127.0.0.2", "127.2", "0x7f.0.0.2", "0x7f.2", "017700000002", "2130706434", "127.0.0.2."]:
            with self.subTest(host=host):
                t.all(host, self.echo.port, "ok")
        self.assertTrue(all(l.ip == ORIGIN_HOST for l in p.find_logs(cls="ok")))

    def test_other_forms(self):
        p = self.proxy("--deny", "1.1.1.0/24")
        t = Through(self, p)
        for host, expect in [("192.168.257", "private"), ("10.1", "private"), ("0xa.0.0.1", "private"),
                             ("012.0.0.1", "private"), ("167772161", "private"), ("0", "unspecified"),
                             ("0x01010101", "denied"), ("16843009", "denied"), ("fe80::1%eth0", "link-local"),
                             ("[fe80::1%25eth0]", "link-local"), ("256.1.1.1", "invalid host"),
                             ("08.0.0.1", "invalid host"), ("1.2.3.4.5", "invalid host"),
                             ("[::1].", "invalid host"), ("a..b", "invalid host"), ("a_b!", "invalid host")]:
            with self.subTest(host=host):
                kinds = ("socks", "socks4") if "%" in host and not host.startswith("[") else \
                    ("connect", "socks", "socks4")
                t.all(host, 443, expect, kinds=kinds)

    def test_ports(self):
        p = self.proxy("--resolve", "origin.test=127.0.0.2")
        t = Through(self, p)
        t.connect("origin.test", "0", "invalid target")
        t.connect("origin.test", "65536", "invalid target")
        t.connect("origin.test", "000000", "invalid target")
        t.connect("origin.test", "123456", "invalid target")
        echo = low_port_server(EchoServer)
        self.addCleanup(echo.close)
        t.connect("origin.test", f"0{echo.port}", "ok").close()
        t.connect("origin.test", f"00{echo.port}", "invalid target")
        t.socks5("origin.test", 0, "invalid target", atyp=3)
        t.socks4a("origin.test", 0, "invalid target")

    def test_trailing_dot_of_a_name_is_dropped(self):
        p = self.proxy("--resolve", "origin.test=127.0.0.2")
        Through(self, p).all("origin.test.", self.echo.port, "ok")


class MixedAnswersTest(OriginsMixin, ProxyTestCase):

    def test_one_private_answer_among_good_ones(self):
        p = self.proxy("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        before = self.echo.count()
        Through(self, p).all("mix.test", self.echo.port, "private")
        self.assertTrue(all(l.ip == "10.0.0.1" for l in p.find_logs(cls="private")))
        self.assertEqual(self.echo.count(), before)

    def test_one_loopback_answer_after_good_ones(self):
        p = self.proxy("--resolve", "mix.test=127.0.0.2,127.0.0.2,::1")
        Through(self, p).all("mix.test", self.echo.port, "loopback")

    def test_resolve_takes_precedence_over_dns(self):
        dns = DnsServer({"origin.test": ["10.0.0.1"]})
        self.addCleanup(dns.close)
        p = self.proxy("--resolve", "origin.test=127.0.0.2", dns=dns)
        Through(self, p).all("origin.test", self.echo.port, "ok")
        self.assertNotIn("origin.test", dns.names_asked())


class HostListTest(OriginsMixin, ProxyTestCase):

    def refused_words(self, p, target):
        s = p.connect()
        s.sendall(connect_request(target))
        resp = read_http_response(s)
        self.assertEqual(resp.status, 403, resp)
        self.assertEqual(resp.header("x-egress-refused"), "not-listed")
        s.close()
        return resp.status_line.split(" ", 2)[2], resp.body

    def test_port_rule(self):
        try:
            web = EchoServer(host="127.0.0.4", port=80)
        except OSError as e:
            web = None
            reason = e
        if web is not None:
            self.addCleanup(web.close)
        dns = DnsServer({})
        self.addCleanup(dns.close)
        p = self.proxy("--allow", "a.test", "--resolve", "a.test=127.0.0.4", "--permit", "127.0.0.4/32", dns=dns)
        t = Through(self, p)
        words, body = self.refused_words(p, "a.test:8080")
        self.assertEqual(words, "a.test:8080 is not open on this box's network list")
        self.assertEqual(body, b"a.test:8080 is not open on this box's network list\n")
        t.socks5("a.test", 8080, "not-listed", atyp=3)
        t.socks4a("a.test", 8080, "not-listed")
        # 443 is open: it passes the list and is dialled (nothing listens there: dial failed).
        t.connect("a.test", 443, "dial failed")
        if web is None:
            t.connect("a.test", 80, "dial failed")
            self.skipTest(f"cannot listen on 127.0.0.4:80 ({reason}); port 80 only checked to pass the list")
        Through(self, p).all("a.test", 80, "ok")
        self.assertEqual(dns.queries, [])

    def test_names_off_the_list_never_reach_dns(self):
        dns = DnsServer({"b.test": ["127.0.0.2"], "a.test": ["127.0.0.2"]})
        self.addCleanup(dns.close)
        p = self.proxy("--allow", f"a.test:{self.echo.port}", dns=dns)
        t = Through(self, p)
        t.all("b.test", self.echo.port, "not-listed")
        t.all("sub.a.test", self.echo.port, "not-listed")
        self.assertEqual(dns.names_asked() & {"b.test", "sub.a.test"}, set())
        words, _ = self.refused_words(p, f"b.test:{self.echo.port}")
        self.assertEqual(words, "b.test is not on this box's network list")
        # The listed name and port are looked up and let through.
        t.all("a.test", self.echo.port, "ok")
        self.assertIn("a.test", dns.names_asked())
        # An entry with a port opens only that port: not 443.
        words, _ = self.refused_words(p, "a.test:443")
        self.assertEqual(words, "a.test:443 is not open on this box's network list")

    def test_ip_literals_are_not_listed(self):
        p = self.proxy("--allow", "a.test", "--resolve", "a.test=127.0.0.2")
        t = Through(self, p)
        for host in ["127.0.0.2", "2130706434", "::1", "10.0.0.1"]:
            with self.subTest(host=host):
                t.all(host, 443, "not-listed")
        words, _ = self.refused_words(p, "127.0.0.2:443")
        self.assertEqual(words, "127.0.0.2 is an address, not a name on this box's network list")

    def test_wildcard_matches_below_never_the_name_itself(self):
        p = self.proxy("--allow", f"*.w.test:{self.echo.port}", "--resolve", "x.w.test=127.0.0.2",
                       "--resolve", "y.x.w.test=127.0.0.2", "--resolve", "w.test=127.0.0.2")
        t = Through(self, p)
        t.all("x.w.test", self.echo.port, "ok")
        t.all("y.x.w.test", self.echo.port, "ok")
        t.all("w.test", self.echo.port, "not-listed")
        t.all("xw.test", self.echo.port, "not-listed")

    def test_case_and_trailing_dot(self):
        d = DnsServer({"mixed.test": ["127.0.0.2"]})
        self.addCleanup(d.close)
        p = self.proxy("--allow", f"Mixed.Test.:{self.echo.port}", dns=d)
        t = Through(self, p)
        t.all("mixed.test", self.echo.port, "ok")
        t.all("MIXED.test.", self.echo.port, "ok")

    def test_listed_name_still_meets_the_address_rule(self):
        p = self.proxy("--allow", "priv.test", "--resolve", "priv.test=10.0.0.1")
        Through(self, p).all("priv.test", 443, "private")

    def test_allow_hint_is_appended(self):
        p = self.proxy("--allow", "a.test", "--allow-hint", "ask the operator to add it")
        for target, words in [("b.test:443", "b.test is not on this box's network list"),
                              ("a.test:22", "a.test:22 is not open on this box's network list"),
                              ("10.0.0.1:443", "10.0.0.1 is an address, not a name on this box's network list")]:
            with self.subTest(target=target):
                s = p.connect()
                s.sendall(connect_request(target))
                assert_http_refusal(self, s, 403, "not-listed", words + ": ask the operator to add it")

    def test_several_allow_options_and_separators(self):
        p = self.proxy("--allow", f"a.test:{self.echo.port}, b.test:{self.echo.port}",
                       "--allow", f"c.test:{self.echo.port}",
                       "--resolve", "a.test=127.0.0.2", "--resolve", "b.test=127.0.0.2",
                       "--resolve", "c.test=127.0.0.2", "--resolve", "d.test=127.0.0.2")
        t = Through(self, p)
        for host in ["a.test", "b.test", "c.test"]:
            t.connect(host, self.echo.port, "ok").close()
        t.connect("d.test", self.echo.port, "not-listed")


class CapsTest(OriginsMixin, ProxyTestCase):

    def test_tunnel_cap_through_each_protocol(self):
        p = self.proxy("--max-tunnels", "1", "--resolve", "origin.test=127.0.0.2")
        t = Through(self, p)
        held = t.connect("origin.test", self.echo.port, "ok")
        t.connect("origin.test", self.echo.port, "tunnel cap")
        t.socks5("origin.test", self.echo.port, "tunnel cap", atyp=3)
        t.socks4a("origin.test", self.echo.port, "tunnel cap")
        p.wait_log(cls="tunnel cap", count=3)
        held.close()
        p.wait_log(kind="connect", cls="done")
        again = t.connect("origin.test", self.echo.port, "ok")
        again.close()

    def test_refusals_do_not_take_a_slot(self):
        p = self.proxy("--max-tunnels", "1", "--max-connections", "1", "--resolve", "origin.test=127.0.0.2")
        t = Through(self, p)
        for _ in range(3):
            t.connect("10.0.0.1", 443, "private")
            t.connect("nx.test", 443, "name not resolved")
        t.connect("origin.test", self.echo.port, "ok").close()

    def test_connection_budget(self):
        p = self.proxy("--max-connections", "2", "--resolve", "origin.test=127.0.0.2")
        t = Through(self, p)
        t.connect("origin.test", self.echo.port, "ok").close()
        t.socks5("origin.test", self.echo.port, "ok", atyp=3).close()
        p.wait_log(cls="done", count=2)
        t.connect("origin.test", self.echo.port, "connection budget")
        t.socks5("origin.test", self.echo.port, "connection budget", atyp=3)
        t.socks4a("origin.test", self.echo.port, "connection budget")

    def test_dial_failures_count_against_the_budget(self):
        # A slot is taken at admission (before the dial), so a failed dial still used one.
        p = self.proxy("--max-connections", "1", "--resolve", "origin.test=127.0.0.2")
        t = Through(self, p)
        t.connect("origin.test", free_port(), "dial failed")
        t.connect("origin.test", self.echo.port, "connection budget")

    def test_client_leaving_during_a_slow_dial_gives_its_slot_back(self):
        hole = Blackhole()
        self.addCleanup(hole.close)
        if not hole.usable:
            self.skipTest("a full accept queue does not drop SYNs here; no way to make a dial hang on loopback")
        # --connect-timeout 30: real time never reaches it in this test (the dial must be pending
        # when the client leaves).
        p, c = proxy_with_control_fd(self, "--max-tunnels", "1", "--connect-timeout", "30",
                                     "--resolve", "origin.test=127.0.0.2")
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{hole.port}"))
        wait_stats(c, open=1)  # dialling
        s.close()
        # The dial is still pending (or cancelled). Make room in the accept queue so that a
        # retransmitted SYN lands: the dial then finishes for a client that has gone.
        fillers = {f.getsockname() for f in hole.fillers if f.fileno() != -1 and _connected(f)}
        for f in hole.fillers:
            f.close()
        hole.fillers = []
        accepted = hole.drain(timeout=4)
        from_proxy = [c for c, peer in accepted if peer not in fillers]
        for c, peer in accepted:
            if peer in fillers:
                c.close()
        # An upstream whose client left must be closed, and its slot given back at once.
        closed = all(closed_within(c, 3) for c in from_proxy)
        for c in from_proxy:
            c.close()
        self.assertTrue(closed, "the proxy must close an upstream whose client left during the dial")
        t = Through(self, p)
        s = t.connect("origin.test", self.echo.port, "ok")
        s.close()

    def test_client_leaving_during_a_slow_lookup(self):
        dns = DnsServer({"slow.test": ["127.0.0.2"]}, held={"slow.test"})
        self.addCleanup(dns.close)
        p = self.proxy("--max-tunnels", "1", "--resolve", "origin.test=127.0.0.2", dns=dns)
        before = self.echo.count()
        s = p.connect()
        s.sendall(connect_request(f"slow.test:{self.echo.port}"))
        self.assertTrue(wait_until(lambda: "slow.test" in dns.names_asked(), 5))
        s.close()
        # No slot is taken while resolving: another client gets through while the answer is held.
        t = Through(self, p)
        t.connect("origin.test", self.echo.port, "ok").close()
        dns.release()
        # The delayed answer arrives for a client that has gone; a tunnel opened after it is
        # the second and last thing dialled.
        self.assertTrue(wait_until(lambda: ("slow.test", 1) in dns.answered, 5), "the answer was never sent")
        p.wait_log(kind="connect", cls="done")
        t.connect("origin.test", self.echo.port, "ok").close()
        self.assertTrue(wait_until(lambda: self.echo.count() >= before + 2, 5))
        p.wait_log(kind="connect", cls="done", count=2)
        self.assertEqual(self.echo.count(), before + 2, "nothing may be dialled for a client that left")
        self.assertTrue(p.alive())


class DnsTest(OriginsMixin, ProxyTestCase):

    def dns(self, records, **kwargs):
        d = DnsServer(records, **kwargs)
        self.addCleanup(d.close)
        return d

    def test_a_answer(self):
        d = self.dns({"a-only.test": ["127.0.0.2"]})
        p = self.proxy(dns=d)
        Through(self, p).all("a-only.test", self.echo.port, "ok")
        self.assertIn("a-only.test", d.names_asked())
        self.assertTrue(all(l.ip == ORIGIN_HOST for l in p.find_logs(cls="ok")))

    def test_aaaa_answer(self):
        try:
            echo6 = EchoServer(host="::1", family=socket.AF_INET6)
        except OSError as e:
            self.skipTest(f"no IPv6 loopback here: {e}")
        self.addCleanup(echo6.close)
        d = self.dns({"v6.test": ["::1"]})
        p = self.proxy("--permit", "::1/128", dns=d)
        Through(self, p).all("v6.test", echo6.port, "ok")
        self.assertTrue(all(l.ip == "::1" for l in p.find_logs(cls="ok")))
        self.assertIn(("v6.test", 28), d.queries)

    def test_aaaa_loopback_refused(self):
        d = self.dns({"v6lo.test": ["::1"]})
        p = self.proxy(dns=d)
        Through(self, p).all("v6lo.test", 443, "loopback")
        self.assertTrue(all(l.ip == "::1" for l in p.find_logs(cls="loopback")))

    def test_several_answers_dial_the_next_when_one_fails(self):
        d = self.dns({"many.test": ["127.0.0.3", "127.0.0.2"]})
        p = self.proxy("--permit", "127.0.0.3/32", dns=d)
        Through(self, p).all("many.test", self.echo.port, "ok")

    def test_one_private_answer_among_public_ones(self):
        d = self.dns({"mixdns.test": ["127.0.0.2", "10.0.0.1"]})
        p = self.proxy(dns=d)
        before = self.echo.count()
        Through(self, p).all("mixdns.test", self.echo.port, "private")
        self.assertTrue(all(l.ip == "10.0.0.1" for l in p.find_logs(cls="private")))
        self.assertEqual(self.echo.count(), before)

    def test_private_aaaa_among_good_a(self):
        d = self.dns({"mix6.test": ["127.0.0.2", "fd00::1"]})
        p = self.proxy(dns=d)
        Through(self, p).all("mix6.test", self.echo.port, "private")

    def test_nxdomain(self):
        d = self.dns({})
        p = self.proxy(dns=d)
        Through(self, p).all("nowhere.test", 443, "name not resolved")
        self.assertTrue(any(n.startswith("nowhere.test") for n in d.names_asked()), d.queries)

    def test_no_addresses(self):
        d = self.dns({"empty.test": []})
        p = self.proxy(dns=d)
        Through(self, p).all("empty.test", 443, "name not resolved")

    def test_silent_server_times_out(self):
        d = self.dns({}, silent=True)
        p, c = proxy_on_clock(self, "--dns-timeout", "30", dns=d)
        # kind: (request, what the proxy answers before the lookup, its refusal)
        kinds = {"connect": (connect_request("silent.test:443"), b"", refusal_bytes(502, "name not resolved")),
                 "socks": (socks5_greeting() + socks5_request("silent.test", 443), b"\x05\x00", socks5_reply(4)),
                 "socks4": (socks4_request(443, host="silent.test"), b"", SOCKS4_REFUSED)}
        for kind, (request, first, refusal) in kinds.items():
            with self.subTest(kind=kind):
                asked = len(d.queries)
                s = p.connect()
                s.sendall(request)
                self.assertEqual(recv_exact(s, len(first)), first)
                self.assertTrue(wait_until(lambda: len(d.queries) > asked, 5),
                                "the lookup never reached the test's nameserver")  # its timer is armed
                past_the_timeout(self, c, s, 30, f"{kind}: a name the nameserver never answers")
                self.assertEqual(recv_all(s), refusal)
                s.close()
                p.wait_log(kind=kind, cls="name not resolved")

    def test_concurrent_lookups_do_not_block_each_other(self):
        # The slow name's answer is held until the fast client is through: a lookup that blocked
        # the event loop would keep the fast one waiting for ever (and fail its timeout).
        d = self.dns({"slow.test": ["127.0.0.2"], "fast.test": ["127.0.0.2"]}, held={"slow.test"})
        p = self.proxy(dns=d)
        slow = p.connect()
        slow.sendall(connect_request(f"slow.test:{self.echo.port}"))
        self.assertTrue(wait_until(lambda: "slow.test" in d.names_asked(), 5), "the slow lookup never began")
        Through(self, p).connect("fast.test", self.echo.port, "ok").close()
        self.assertTrue(nothing_to_read(slow, 0), "the slow client was answered before its lookup")
        d.release()
        resp = read_http_response(slow, method="CONNECT")
        self.assertEqual(resp.status, 200)
        slow.close()


if __name__ == "__main__":
    unittest.main()
