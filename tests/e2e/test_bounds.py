# SPDX-License-Identifier: Apache-2.0
"""Resource bounds (issue 6 item 4): what the man page's RESOURCE BOUNDS section says one client may
make the proxy hold, checked under hostile peers through the real binary.

Each test opens N hostile clients at once, lets the proxy take all it will, and compares the
proxy's anonymous resident memory (settled) with what it was before. Each bound follows from what the
test means, never from a measurement: "at most one read" means fewer than two reads' worth a
client, "the head is given back" means well below one head a client, so the connection object
(which the man page does not size) fits in the difference and a broken bound shows by a whole
buffer. N is large enough that one buffer too many a client shows. Under AddressSanitizer the
resident figure also holds redzones, shadow memory and ASan's size classes: the figures are printed
and the memory comparison is skipped (fault_support.memory_compared), the other assertions run.
"""

import select
import sys
import time
import unittest

from fault_support import LoopOrigin, anon_kib, connect_waiting, memory_compared, proxy_env, raise_own_nofile, rss_kib
from fault_support import stats_line, wait_settled, wait_slots_free
from harness import (ORIGIN_HOST, DnsServer, ProxyTestCase, closed_within, connect_request, recv_exact, still_open,
                     wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
READ_CHUNK_KIB = 16  # proxy/relay.h kReadChunk: one read, at most, per direction
BULK_READ_CHUNK_KIB = 256  # proxy/relay.h kBulkReadChunk: a bulk direction out of a Unix socket (the box's, upward)


def head_of(size, host="origin.test", port=80):
    """A plain-HTTP request head of exactly `size` bytes without its final blank line: the proxy
    must keep reading, and holds all of it."""
    start = f"GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
    out = bytearray(start)

    def pad(length):  # one header line of exactly `length` bytes (at least 10)
        return b"X-Pad: " + b"p" * (length - 9) + b"\r\n"
    while size - len(out) >= 2018:
        out += pad(1009)
    room = size - len(out)
    if room >= 20:
        out += pad(room // 2) + pad(room - room // 2)
    elif room >= 10:
        out += pad(room)
    assert len(out) == size and out.endswith(b"\r\n"), (len(out), size)
    return bytes(out)


class BoundsTest(ProxyTestCase):

    def origin(self, mode, **kwargs):
        o = LoopOrigin(mode, **kwargs).start()
        self.addCleanup(o.close)
        return o

    def per_client(self, p, n, before, what, bound_kib, meaning):
        """Waits for the proxy's memory to settle, prints the figures, and checks that the growth
        per client is below `bound_kib` (which `meaning` explains), in the plain build. Anonymous
        memory (the heap and stacks), not VmRSS: a code page first touched now is not the clients'."""
        anon = wait_settled(lambda: anon_kib(p.pid), timeout=10, still=0.5)
        after = rss_kib(p.pid)
        growth = (anon - before[1]) / n
        print(f"\n{what}: {n} clients, anonymous memory {before[1]} -> {anon} KiB (VmRSS {before[0]} -> {after} KiB): "
              f"{growth:.1f} KiB each; bound {bound_kib:.1f} KiB ({meaning})", file=sys.stderr)
        if memory_compared(what):
            self.assertLess(growth, bound_kib, f"{what}: {growth:.1f} KiB per client; {meaning}")
        return growth

    def snapshot(self, p):
        anon = wait_settled(lambda: anon_kib(p.pid), timeout=3)
        return rss_kib(p.pid), anon

    # -- a client in its handshake

    def test_handshaking_clients_hold_at_most_the_head_limit(self):
        n = 200
        max_head = 32768
        if raise_own_nofile(n + 100) < n + 100:
            self.skipTest("cannot raise this process's descriptor limit")
        p = self.proxy("--resolve", "origin.test=127.0.0.2", "--head-timeout", "30", env=proxy_env())
        head = head_of(max_head - 40)

        def stall(count):
            clients = []
            for _ in range(count):
                s = connect_waiting(p)
                s.sendall(head)
                clients.append(s)
            return clients

        # Warm-up: the same thing once, so that the code and the allocator's first pages are in.
        for s in stall(4):
            s.close()
        self.assertTrue(wait_until(lambda: p.fd_count() < 20, 5))
        before = self.snapshot(p)
        clients = stall(n)
        try:
            # Every head is read in full (the kernel holds none of it): nothing comes back, and
            # each client is still open, waiting for the rest of its head.
            self.assertTrue(all(still_open(s, 0.01) for s in clients[-5:]))
            # Man page: "the head read so far, at most --max-head-bytes plus one byte ... and the
            # connection object". The object is not sized, so the bound is the head limit and half
            # of it again: a second copy of the head (a parsed string beside the buffer) or a
            # buffer grown to twice the limit goes past it; the object (a few KiB) does not.
            self.per_client(p, n, before, "handshaking clients", 1.5 * (max_head + 1) / 1024,
                            "the head limit, less than half a second copy of it")
            self.assertTrue(all(still_open(s, 0.01) for s in clients))
        finally:
            for s in clients:
                s.close()

    # -- clients waiting on DNS

    def test_clients_waiting_on_dns_are_capped_and_give_their_head_back(self):
        # A box names hosts whose DNS server never answers (here the test's own, silent, on
        # loopback) and keeps thousands of clients waiting. Before: a client left the cap of 1024
        # undecided clients at its decision and kept its head's buffer, so 2,500 of them were all
        # held, each with its 30 KiB head. Now they stay counted until allowed or refused (a newer
        # client is closed at once), and each gives its head's buffer back at the decision.
        n = 2500
        cap = 1024  # proxy/proxy_server.h kMaxHandshakingClients
        if raise_own_nofile(n + 200) < n + 200:
            self.skipTest("cannot raise this process's descriptor limit")
        dns = DnsServer(silent=True)
        self.addCleanup(dns.close)
        echo = self.origin("echo")
        p = self.proxy("--dns-timeout", "300", "--head-timeout", "300", dns=dns, env=proxy_env())
        pad = ["X-Pad-%d: %s" % (i, "p" * 1000) for i in range(30)]  # a head of about 30 KiB
        head_kib = len(connect_request("silent-0000.test:443", pad)) / 1024

        def waiting(first, count):
            clients, closed_at_once = [], 0
            for i in range(first, first + count):
                s = connect_waiting(p)
                try:
                    s.sendall(connect_request(f"silent-{i}.test:443", pad))
                except OSError:  # closed at once: past the cap
                    closed_at_once += 1
                clients.append(s)
            return clients, closed_at_once

        def held(clients):
            """The clients the proxy still holds once those past the cap are closed: a closed one
            is readable (EOF); a waiting one gets nothing. Waits (at most 10 s) until at least
            all but `cap` are closed; a proxy that holds more than the cap times out and fails."""
            poller = select.poll()
            for s in clients:
                poller.register(s, select.POLLIN)

            def closed():
                return len(poller.poll(0))
            wait_until(lambda: closed() >= len(clients) - cap, 10)
            return len(clients) - closed()

        warm, _ = waiting(0, 4)
        for s in warm:
            s.close()
        self.assertTrue(wait_until(lambda: stats_line(p)["clients"] == 0, 5))
        before = self.snapshot(p)
        clients, _ = waiting(10, n)
        try:
            kept = held(clients)
            print(f"\nclients waiting on DNS: {n} sent a 30 KiB head, {kept} held", file=sys.stderr)
            self.assertLessEqual(kept, cap)
            self.assertGreaterEqual(kept, cap - 8)
            self.assertLessEqual(stats_line(p)["clients"], cap)
            # Man page: a waiting client holds its early data (none here) and the connection object
            # with its lookup; its head's buffer is given back. Given back means a client grows the
            # proxy by well below one head: the bound is half the head (15 KiB). A head kept is 30
            # KiB or more a client; the object, its events and lookup (not sized by the man page)
            # are a few KiB.
            self.per_client(p, kept, before, "clients waiting on DNS", head_kib / 2,
                            "half the 30 KiB head: the head is given back")
            # While they wait, a newer client is closed at once (the cap holds).
            s = connect_waiting(p)
            self.assertTrue(closed_within(s, 5), "a client past the cap was kept")
            s.close()
        finally:
            for s in clients:
                s.close()
        # Once they leave, the proxy serves again at once: a normal tunnel.
        self.assertTrue(wait_until(lambda: stats_line(p)["clients"] == 0, 10), "waiting clients were not let go")
        s = connect_waiting(p)
        s.sendall(connect_request(f"{ORIGIN_HOST}:{echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.sendall(b"still served")
        self.assertEqual(recv_exact(s, 12), b"still served")
        s.close()

    # -- a tunnel under hostile peers

    def test_stalled_tunnels_hold_at_most_one_read_per_direction(self):
        # Both directions stalled: the client writes and never reads; the origin floods and never
        # reads. Half the tunnels are CONNECT, half SOCKS5.
        n = 50
        if raise_own_nofile(2 * n + 100) < 2 * n + 100:
            self.skipTest("cannot raise this process's descriptor limit")
        flood = self.origin("flood", body_size=1 << 40)
        p = self.proxy("--max-tunnels", str(n + 8), env=proxy_env())

        def stalled(count):
            clients = []
            for i in range(count):
                s = connect_waiting(p)
                s.sendall(connect_request(f"{ORIGIN_HOST}:{flood.port}"))
                got = recv_exact(s, len(ESTABLISHED))
                self.assertEqual(got, ESTABLISHED)
                s.setblocking(False)
                clients.append(s)
            # Each client writes until nothing more is taken for half a second (at most 64 MiB
            # each, ten seconds in all).
            chunk = b"u" * 65536
            written = [0] * len(clients)
            poller = select.poll()  # poll, not select: a descriptor may be past 1024
            for s in clients:
                poller.register(s, select.POLLOUT)
            progress = time.monotonic()
            deadline = progress + 10
            while time.monotonic() - progress < 0.5 and time.monotonic() < deadline:
                moved = False
                for i, s in enumerate(clients):
                    if written[i] >= 64 << 20:
                        continue
                    try:
                        written[i] += s.send(chunk)
                        moved = True
                    except BlockingIOError:
                        pass
                if moved:
                    progress = time.monotonic()
                else:  # wait (briefly) for any client to be writable again
                    poller.poll(50)
            return clients, written

        warm, _ = stalled(2)
        for s in warm:
            s.close()
        self.assertTrue(wait_until(lambda: flood.open_count() == 0, 5))
        wait_slots_free(p)
        before = self.snapshot(p)
        clients, written = stalled(n)
        try:
            self.assertTrue(all(w < 64 << 20 for w in written), "a client wrote 64 MiB into a stalled tunnel")
            # Man page: "a tunnel holds at most 272 KiB (256 KiB upward, 16 KiB downward, whose bulk
            # goes through a pipe) and the connection object". The bound is one read each way plus
            # less than one more read of the smallest (16 KiB): a second read held in either
            # direction goes past it, the object (a few KiB, not sized by the man page) does not.
            self.per_client(p, n, before, f"stalled tunnels (clients wrote {sum(written) >> 20} MiB in all)",
                            BULK_READ_CHUNK_KIB + 2 * READ_CHUNK_KIB,
                            "one read each way and less than one more 16 KiB read")
        finally:
            for s in clients:
                s.close()
        self.assertTrue(wait_until(lambda: flood.open_count() == 0, 5), "upstream connections left open")

    # -- a plain request

    def test_slow_reader_of_a_large_response_holds_at_most_one_read(self):
        n = 50
        body = 64 << 20
        if raise_own_nofile(2 * n + 100) < 2 * n + 100:
            self.skipTest("cannot raise this process's descriptor limit")
        origin = self.origin("http", body_size=body)
        p = self.proxy("--max-tunnels", str(n + 8), env=proxy_env())
        request = (f"GET http://{ORIGIN_HOST}:{origin.port}/big HTTP/1.1\r\n"
                   f"Host: {ORIGIN_HOST}:{origin.port}\r\n\r\n").encode()

        def slow_readers(count):
            clients = []
            for _ in range(count):
                s = connect_waiting(p)
                s.sendall(request)
                clients.append(s)
            # A slow reader: each reads the first KiB of its response (waiting for it to come),
            # then nothing more while the origin sends 64 MiB.
            for s in clients:
                recv_exact(s, 1024)
            return clients

        warm = slow_readers(2)
        for s in warm:
            s.close()
        self.assertTrue(wait_until(lambda: origin.open_count() == 0, 5))
        wait_slots_free(p)
        before = self.snapshot(p)
        clients = slow_readers(n)
        try:
            # Man page: the response head (here ~100 bytes; at most 64 KiB) and one 16 KiB read
            # queued for the client; the upstream's reads pause meanwhile. The bound is two reads:
            # a second read queued goes past it; the connection and exchange objects and the
            # rewritten head (a few KiB, not sized by the man page) do not.
            self.per_client(p, n, before, "slow readers of a 64 MiB response", 2 * READ_CHUNK_KIB,
                            "fewer than two 16 KiB reads queued")
            # Still slow, still served: one client reads on and gets bytes of its body.
            s = clients[0]
            s.settimeout(5)
            got = 0
            for _ in range(100):
                got += len(s.recv(65536))
                if got >= 1 << 20:
                    break
            self.assertGreaterEqual(got, 1 << 20)
        finally:
            for s in clients:
                s.close()
        self.assertTrue(wait_until(lambda: origin.open_count() == 0, 5), "upstream connections left open")

    def test_response_head_without_end_is_cut_at_64k(self):
        # Man page: "a plain-HTTP response head at most 64 KiB; past that the connection closes."
        origin = self.origin("endless-head", body_size=1 << 30)
        p = self.proxy(log_file=True, env=proxy_env())
        s = p.connect()
        s.sendall(f"GET http://{ORIGIN_HOST}:{origin.port}/ HTTP/1.1\r\nHost: {ORIGIN_HOST}:{origin.port}\r\n\r\n"
                  .encode())
        self.assertTrue(closed_within(s, 5), "the client waited on an endless response head")
        s.close()
        (done,) = p.wait_log(kind="http", cls="done")
        self.assertEqual(done.down, 0)
        self.assertTrue(wait_until(lambda: origin.open_count() == 0, 5))


if __name__ == "__main__":
    unittest.main()
