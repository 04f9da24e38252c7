# SPDX-License-Identifier: Apache-2.0
"""The bridge's DNS responder (`bridge --dns ADDR:PORT`, SPEC §16), with a raw DNS client over UDP
and TCP: a name the proxy lets through gets an address of the bridge's own (198.18.0.0/15 or
fd62:6f78:7072::/96), never its real one; a refused name NXDOMAIN, with no query leaving; other
types an empty answer; bad input a clear answer or none; a flood bounded."""

import ipaddress
import json
import os
import select
import signal
import socket
import struct
import time
import unittest

from box_support import Bridge
from fault_support import memory_compared, rss_kib
from harness import DnsServer, ProxyTestCase, recv_exact, wait_until

SYNTHETIC_V4 = ipaddress.ip_network("198.18.0.0/15")
SYNTHETIC_V6 = ipaddress.ip_network("fd62:6f78:7072::/96")


def query(name, qtype=1, qid=0x4242, flags=0x0100, qclass=1):
    labels = name.encode().split(b".") if name else []
    wire = b"".join(bytes([len(l)]) + l for l in labels) + b"\0"
    return struct.pack(">HHHHHH", qid, flags, 1, 0, 0, 0) + wire + struct.pack(">HH", qtype, qclass)


def parse_reply(data):
    """(id, flags, rcode, [answer rdata as address text])."""
    qid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", data[:12])
    at = 12
    for _ in range(qd):
        while data[at] != 0:
            at += 1 + data[at]
        at += 1 + 4
    answers = []
    for _ in range(an):
        if data[at] & 0xC0 == 0xC0:
            at += 2
        else:
            while data[at] != 0:
                at += 1 + data[at]
            at += 1
        rtype, rclass, ttl, length = struct.unpack(">HHIH", data[at:at + 10])
        at += 10
        rdata = data[at:at + length]
        at += length
        family = socket.AF_INET if rtype == 1 else socket.AF_INET6
        answers.append(socket.inet_ntop(family, rdata))
    return qid, flags, flags & 0xF, answers


class DnsResponderTest(ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.upstream_dns = DnsServer({"looked.test": ["127.0.0.2"], "other.test": ["127.0.0.2"]})
        self.addCleanup(self.upstream_dns.close)
        self.proxy_ = self.proxy("--allow", "api.test,looked.test,*.wild.test", "--resolve", "api.test=127.0.0.2",
                                 "--resolve", "inside.wild.test=10.0.0.1", dns=self.upstream_dns)
        self.bridge = Bridge(self.proxy_.socket_path, extra=("--dns", "127.0.0.1:0"))
        self.addCleanup(self.bridge.stop)
        host, _, port = self.bridge.listening["dns"][0].rpartition(":")
        self.dns_address = (host, int(port))

    def udp(self, message, timeout=5.0):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(timeout)
        try:
            s.sendto(message, self.dns_address)
            data, _ = s.recvfrom(4096)
            return data
        finally:
            s.close()

    def tcp(self, *messages, timeout=5.0):
        s = socket.create_connection(self.dns_address, timeout=timeout)
        try:
            s.sendall(b"".join(struct.pack(">H", len(m)) + m for m in messages))
            replies = []
            for _ in messages:
                (length,) = struct.unpack(">H", recv_exact(s, 2))
                replies.append(recv_exact(s, length))
            return replies
        finally:
            s.close()

    # -- answers

    def test_an_allowed_name_gets_an_address_of_the_bridges_own(self):
        qid, flags, rcode, answers = parse_reply(self.udp(query("api.test")))
        self.assertEqual((qid, rcode), (0x4242, 0))
        self.assertTrue(flags & 0x8000)
        self.assertEqual(len(answers), 1)
        self.assertIn(ipaddress.ip_address(answers[0]), SYNTHETIC_V4)
        self.assertNotEqual(answers[0], "127.0.0.2")  # the real address is never given out
        # The same name keeps its address; AAAA gets the v6 one.
        self.assertEqual(parse_reply(self.udp(query("API.test")))[3], answers)
        _, _, rcode6, answers6 = parse_reply(self.udp(query("api.test", qtype=28)))
        self.assertEqual(rcode6, 0)
        self.assertIn(ipaddress.ip_address(answers6[0]), SYNTHETIC_V6)
        self.proxy_.wait_log(kind="resolve", cls="ok", host="api.test")

    def test_a_and_aaaa_asked_together_make_one_resolve(self):
        # A box's resolver sends A and AAAA at once (glibc does); the proxy is asked once, so it
        # decides and logs the name once, with the port asked (none: 0), and both get an answer.
        # The name's upstream lookup is slow, so all three questions wait on it together.
        self.upstream_dns.records["slow.wild.test"] = ["127.0.0.2"]
        self.upstream_dns.delays["slow.wild.test"] = 0.5
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.settimeout(5)
        self.addCleanup(udp.close)
        udp.sendto(query("slow.wild.test", qtype=1, qid=1), self.dns_address)
        udp.sendto(query("slow.wild.test", qtype=28, qid=2), self.dns_address)
        (tcp_reply,) = self.tcp(query("SLOW.wild.test", qtype=1, qid=3))
        replies = {}
        for _ in range(2):
            qid, _, rcode, answers = parse_reply(udp.recvfrom(4096)[0])
            replies[qid] = (rcode, answers)
        self.assertEqual(sorted(replies), [1, 2])
        self.assertEqual(replies[1][0], 0)
        self.assertIn(ipaddress.ip_address(replies[1][1][0]), SYNTHETIC_V4)
        self.assertEqual(replies[2][0], 0)
        self.assertIn(ipaddress.ip_address(replies[2][1][0]), SYNTHETIC_V6)
        self.assertEqual(parse_reply(tcp_reply)[2:], (0, replies[1][1]))
        # One line: a later question's line comes after any second one would have.
        self.proxy_.wait_log(kind="resolve", host="slow.wild.test")
        parse_reply(self.udp(query("api.test")))
        self.proxy_.wait_log(kind="resolve", host="api.test")
        lines = self.proxy_.find_logs(kind="resolve", host="slow.wild.test")
        self.assertEqual(len(lines), 1, lines)
        self.assertEqual((lines[0].cls, lines[0].port), ("ok", 0))
        self.assertEqual(self.upstream_dns.queries.count(("slow.wild.test", 1)), 1)

    def test_a_listed_name_is_looked_up_by_the_proxy(self):
        _, _, rcode, answers = parse_reply(self.udp(query("looked.test")))
        self.assertEqual(rcode, 0)
        self.assertIn(ipaddress.ip_address(answers[0]), SYNTHETIC_V4)
        self.assertIn("looked.test", self.upstream_dns.names_asked())

    def test_a_refused_name_is_nxdomain_and_no_query_leaves(self):
        for name in ("other.test", "inside.wild.test", "bad name.test", "under*star.test"):
            with self.subTest(name=name):
                _, _, rcode, answers = parse_reply(self.udp(query(name)))
                self.assertEqual((rcode, answers), (3, []))
        self.assertNotIn("other.test", self.upstream_dns.names_asked())
        self.proxy_.wait_log(kind="resolve", cls="not-listed", host="other.test")
        self.proxy_.wait_log(kind="resolve", cls="private", host="inside.wild.test")

    def test_sigusr1_counts_the_questions(self):
        parse_reply(self.udp(query("api.test")))
        parse_reply(self.udp(query("other.test")))
        parse_reply(self.udp(query("api.test", qtype=16)))  # answered empty, without asking
        os.kill(self.bridge.pid, signal.SIGUSR1)
        line = wait_until(lambda: next((line for line in self.bridge.stderr_text().splitlines()
                                        if line.startswith('{"event":"stats"')), None), 5)
        self.assertIsNotNone(line, self.bridge.stderr_text())
        stats = json.loads(line)
        self.assertEqual(stats["dns"], {"queries": 3, "refused": 1, "busy": 0})
        self.assertEqual(stats["captured"], 0)

    def test_tcp_answers_too_and_takes_several_queries(self):
        replies = self.tcp(query("api.test", qid=1), query("other.test", qid=2), query("api.test", qtype=16, qid=3))
        self.assertEqual([parse_reply(r)[0] for r in replies], [1, 2, 3])
        self.assertEqual(parse_reply(replies[0])[2], 0)
        self.assertEqual(parse_reply(replies[1])[2], 3)
        self.assertEqual(parse_reply(replies[2])[2:], (0, []))

    def test_other_types_get_an_empty_answer_without_asking(self):
        for qtype in (16, 15, 65, 255, 12):
            with self.subTest(qtype=qtype):
                _, _, rcode, answers = parse_reply(self.udp(query("api.test", qtype=qtype)))
                self.assertEqual((rcode, answers), (0, []))
        self.assertEqual(self.proxy_.find_logs(kind="resolve"), [])

    # -- bad input

    def test_malformed_queries_get_a_clear_answer_or_none(self):
        self.assertEqual(parse_reply(self.udp(query("api.test", flags=0x1100)))[2], 4)  # opcode STATUS: NOTIMP
        self.assertEqual(parse_reply(self.udp(query("api.test", qclass=3)))[2], 4)      # class CHAOS: NOTIMP
        self.assertEqual(parse_reply(self.udp(query("api.test")[:20]))[2], 1)           # cut: FORMERR
        pointer = struct.pack(">HHHHHH", 9, 0x100, 1, 0, 0, 0) + b"\x01a\xc0\x0c" + struct.pack(">HH", 1, 1)
        self.assertEqual(parse_reply(self.udp(pointer))[2], 1)                            # a loop: FORMERR
        too_long = query(".".join(["a" * 63] * 4))
        self.assertEqual(parse_reply(self.udp(too_long))[2], 1)                           # over 255 bytes
        # A response, or less than a header, is not answered at all; the responder lives on.
        for silent in (query("api.test", flags=0x8100), b"\x00" * 5):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(0.3)
            s.sendto(silent, self.dns_address)
            with self.assertRaises(socket.timeout):
                s.recvfrom(4096)
            s.close()
        self.assertEqual(parse_reply(self.udp(query("api.test")))[2], 0)

    def test_tcp_message_over_the_bound_closes_the_client(self):
        s = socket.create_connection(self.dns_address, timeout=5)
        s.sendall(struct.pack(">H", 60000) + b"x" * 1000)
        s.settimeout(5)
        got = b""
        try:
            got = s.recv(100)
        except ConnectionResetError:
            pass
        self.assertEqual(got, b"")
        s.close()

    def test_a_flood_keeps_memory_bounded_and_every_answer_is_clear(self):
        rss_before = rss_kib(self.bridge.pid)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.setblocking(False)
        sent = 3000
        rcodes = {}
        for i in range(sent):
            s.sendto(query("api.test" if i % 2 else f"n{i}.other.test", qid=i & 0xffff), self.dns_address)
            try:
                while True:
                    data, _ = s.recvfrom(4096)
                    rcode = parse_reply(data)[2]
                    rcodes[rcode] = rcodes.get(rcode, 0) + 1
            except BlockingIOError:
                pass
        deadline = time.monotonic() + 10
        s.settimeout(0.5)
        while sum(rcodes.values()) < sent and time.monotonic() < deadline:
            try:
                data, _ = s.recvfrom(4096)
            except socket.timeout:
                break
            rcode = parse_reply(data)[2]
            rcodes[rcode] = rcodes.get(rcode, 0) + 1
        s.close()
        # Answers are NOERROR, NXDOMAIN or SERVFAIL (busy); UDP may drop what the socket buffers do
        # not hold.
        self.assertLessEqual(set(rcodes), {0, 2, 3})
        self.assertGreater(sum(rcodes.values()), 0)
        # At most 256 questions wait on the proxy (man page); the rest are answered SERVFAIL at
        # once. 20 MiB would be 7 KiB for each of the 3000 sent: far more than a question holds.
        if memory_compared("a DNS flood on the bridge"):
            self.assertLess(rss_kib(self.bridge.pid) - rss_before, 20 * 1024)
        # Afterwards, a resolver's pace (batches of 50) gets every answer.
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(5)
        try:
            for batch in range(6):
                for i in range(50):
                    s.sendto(query("api.test" if i % 2 else "other.test", qid=batch * 50 + i), self.dns_address)
                got = [parse_reply(s.recvfrom(4096)[0]) for _ in range(50)]
                self.assertEqual(sorted(r[0] for r in got), list(range(batch * 50, batch * 50 + 50)))
                for qid, _, rcode, _ in got:
                    self.assertEqual(rcode, 3 if qid % 2 == 0 else 0)
        finally:
            s.close()

    def test_tcp_clients_are_bounded(self):
        clients = [socket.create_connection(self.dns_address, timeout=5) for _ in range(40)]
        try:
            # Those past the bound (32) are closed: readable (EOF or a reset). Wait until they are.
            poller = select.poll()
            for c in clients:
                poller.register(c, select.POLLIN)
            wait_until(lambda: len(poller.poll(0)) >= 40 - 32, 5)
            closed = 0
            for c in clients:
                c.settimeout(0.05)
                try:
                    if c.recv(1) == b"":
                        closed += 1
                except socket.timeout:
                    pass
                except ConnectionResetError:
                    closed += 1
            self.assertGreaterEqual(closed, 40 - 32)
        finally:
            for c in clients:
                c.close()
        self.assertEqual(parse_reply(self.tcp(query("api.test"))[0])[2], 0)


class DnsOptionTest(unittest.TestCase):

    def test_a_bad_dns_address_is_a_usage_error(self):
        import subprocess
        from harness import binary
        for bad in ("localhost:53", "127.0.0.1", "[::1]:99999"):
            with self.subTest(bad=bad):
                r = subprocess.run([binary(), "bridge", "--socket", "/nonexistent.sock", "--dns", bad],
                                   capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(b"--dns", r.stderr)


if __name__ == "__main__":
    unittest.main()
