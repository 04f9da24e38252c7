# SPDX-License-Identifier: Apache-2.0
"""What a plain-HTTP exchange delivers, and what its done line says (SPEC §8, §12; issue 10 items 4
and 9): interim (1xx) responses pass one at a time under the client's back-pressure and never to
an HTTP/1.0 client; a client that half-closes after its request still gets every byte; `down` and
`up` count what was written to the other side, never what was read or queued and then lost.

The origins here are scripted: each accepted connection has its request head read, then a script
of the test's own writes the answer (so an origin can misbehave exactly as the test needs). They
listen on 127.0.0.2 only; every wait is bounded.
"""

import fcntl
import socket
import struct
import sys
import termios
import threading
import time
import unittest

from fault_support import anon_kib, memory_compared, proxy_env, wait_settled
from harness import ORIGIN_HOST, ProxyTestCase, connect_request, recv_exact, recv_until, wait_until

MIB = 1 << 20


class ScriptedOrigin:
    """An origin on ORIGIN_HOST: for each connection, reads the request head (to the blank line),
    then calls script(conn, head) in the connection's own thread. The connection is closed when
    the script returns (or when the origin is closed)."""

    def __init__(self, script):
        self.script = script
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((ORIGIN_HOST, 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.closing = threading.Event()
        self.conns = []
        self.heads = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(5)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.heads.append(head)
            self.script(conn, head)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.closing.set()
        self.listener.close()
        self.thread.join(timeout=2)
        for conn in self.conns:
            try:
                conn.close()
            except OSError:
                pass


def unread_bytes(sock):
    """Bytes waiting in `sock`'s receive queue, not yet read (FIONREAD, SIOCINQ for a Unix socket)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def read_to_eof(sock, timeout=20, limit=64 * MIB, piece=1 << 16):
    """Everything until the peer closes (bounded in time and size), `piece` bytes a read at most."""
    sock.settimeout(timeout)
    data = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(data) < limit:
        chunk = sock.recv(piece)
        if not chunk:
            return bytes(data)
        data += chunk
    raise AssertionError(f"no EOF after {len(data)} bytes")


def get(uri_port, path="/", version="HTTP/1.1", headers=()):
    lines = [f"GET http://{ORIGIN_HOST}:{uri_port}{path} {version}", f"Host: {ORIGIN_HOST}:{uri_port}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class HttpDeliveryTest(ProxyTestCase):

    def origin(self, script):
        o = ScriptedOrigin(script)
        self.addCleanup(o.close)
        return o

    # -- interim responses (item 4)

    def test_endless_interim_responses_to_a_client_that_does_not_read_stay_bounded(self):
        # An origin sends "100 Continue" without end; the client sends its request and never reads.
        # Before: the proxy read on and queued every interim head for the client (2 MB -> 737 MB in
        # 8 s). Now the upstream's reads pause while the client's queue is not empty, so the
        # origin's sends block once the kernel's buffers are full.
        sent = [0]
        stop = threading.Event()
        block = b"HTTP/1.1 100 Continue\r\n\r\n" * 2600  # 65 KiB of interim heads

        def endless_continue(conn, head):
            conn.settimeout(0.2)
            deadline = time.monotonic() + 30
            while not stop.is_set() and time.monotonic() < deadline and sent[0] < 2048 * MIB:
                try:
                    sent[0] += conn.send(block)
                except socket.timeout:
                    continue
        self.addCleanup(stop.set)
        origin = self.origin(endless_continue)
        p = self.proxy(env=proxy_env())
        # Warm-up: one exchange the same way, so the code and the allocator's first pages are in.
        warm = p.connect()
        warm.sendall(get(origin.port))
        recv_until(warm, b"100 Continue\r\n")
        warm.close()
        before = wait_settled(lambda: anon_kib(p.pid), timeout=3)
        s = p.connect()
        s.sendall(get(origin.port))
        wait_until(lambda: sent[0] > 0, 5)
        # The proxy stops reading once its queue to the client is full: the origin's sends stop
        # moving (settled for a second; at most 10 s, by when a proxy reading on has taken far
        # more than 32 MiB).
        wait_settled(lambda: sent[0], timeout=10, still=1.0)
        after = wait_settled(lambda: anon_kib(p.pid), timeout=3)
        print(f"\ninterim flood: origin sent {sent[0] >> 10} KiB; proxy anonymous memory {before} -> {after} KiB",
              file=sys.stderr)
        self.assertLess(sent[0], 32 * MIB, "the proxy read on while its client did not")
        # What it read and did not pass on it holds: less than half of what the origin sent, or
        # it buffered the flood (the rest of what was sent sits in the kernel's socket buffers).
        if memory_compared("interim flood"):
            self.assertLess((after - before) * 1024, max(sent[0] // 2, 1 * MIB), f"the proxy grew by {after - before} KiB")
        # The client still gets well-formed interim heads when it reads, and the proxy serves others.
        got = recv_exact(s, 4096)
        self.assertTrue(got.startswith(b"HTTP/1.1 100 Continue\r\n"), got[:80])
        stop.set()
        s.close()

    def test_interim_heads_buffered_while_paused_are_passed_on_when_the_client_reads(self):
        # The origin sends all its interim heads and the final response in one go, then waits: the
        # heads the proxy read but could not queue must be parsed when the client drains its queue,
        # not only on the origin's next read (there is none).
        count = 40000
        body = b"final body\n"
        done = threading.Event()

        def burst(conn, head):
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * count
                         + b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            done.wait(20)
        self.addCleanup(done.set)
        origin = self.origin(burst)
        p = self.proxy()
        s = p.connect()
        s.sendall(get(origin.port, headers=["Connection: close"]))
        # The client does not read yet: the proxy's queue fills and it pauses (what the client
        # has waiting stops growing).
        wait_settled(lambda: unread_bytes(s), timeout=5, still=0.3)
        data = read_to_eof(s)
        done.set()
        self.assertEqual(data.count(b"HTTP/1.1 100 Continue\r\n"), count)
        self.assertTrue(data.endswith(b"\r\n\r\n" + body), data[-200:])
        self.assertIn(b"HTTP/1.1 200 OK\r\n", data)

    def test_no_interim_response_goes_to_an_http_1_0_client(self):
        # RFC 9110 §15.2: a server must not send a 1xx response to an HTTP/1.0 client.
        body = b"hello\n"

        def interim_then_final(conn, head):
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX-A: 1\r\n\r\n"
                         b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"
                         b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        origin = self.origin(interim_then_final)
        p = self.proxy(log_file=True)
        s = p.connect()
        s.sendall(get(origin.port, version="HTTP/1.0"))
        data = read_to_eof(s)
        self.assertTrue(data.startswith(b"HTTP/1.1 200 OK\r\n"), data[:200])
        self.assertNotIn(b" 100 ", data)
        self.assertNotIn(b" 102 ", data)
        self.assertNotIn(b" 103 ", data)
        self.assertTrue(data.endswith(b"\r\n\r\n" + body))
        (done,) = p.wait_log(kind="http", cls="done")
        self.assertEqual(done.down, len(data))
        # An HTTP/1.1 client gets them, each passed on.
        s = p.connect()
        s.sendall(get(origin.port, headers=["Connection: close"]))
        data = read_to_eof(s)
        self.assertTrue(data.startswith(b"HTTP/1.1 100 Continue\r\n"), data[:200])
        self.assertIn(b"HTTP/1.1 102 Processing\r\n", data)
        self.assertIn(b"HTTP/1.1 103 Early Hints\r\n", data)
        self.assertTrue(data.endswith(b"\r\n\r\n" + body))

    # -- half-close and the done line's counts (item 9)

    def body_origin(self, size=None):
        """Answers GET /size/N (or `size`) with N bytes of body, framed by Content-Length and sent
        in one go; the origin does not close first (the length ends the response)."""
        def answer(conn, head):
            path = head.split(b" ", 2)[1].decode()
            n = int(path.rsplit("/", 1)[1]) if path.startswith("/size/") else size
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n + b"b" * n)
            time.sleep(0.5)  # a sleep: an origin that keeps its end open a while, as a real one does
        return self.origin(answer)

    def half_closed_exchange(self, p, origin, body_size, read_late=False):
        """A keep-alive request, shut down for writing at once; returns every byte until EOF. With
        `read_late`, reading starts only once what the proxy has sent stops growing."""
        s = p.connect()
        s.sendall(get(origin.port, f"/size/{body_size}", headers=["Connection: keep-alive"]))
        s.shutdown(socket.SHUT_WR)
        if read_late:
            wait_settled(lambda: unread_bytes(s), timeout=5, still=0.3)
        data = read_to_eof(s)
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200 OK"), head[:100])
        self.assertEqual(len(body), body_size, "the response was cut short")
        return data

    def test_half_close_after_a_keep_alive_request_loses_nothing(self):
        # The client shuts down its writing right after its request (it still reads). Before: the
        # proxy ended the exchange once it had read the response's last byte, went back to reading
        # the next request, saw the EOF and closed, with the response's tail still queued when the
        # client's socket was full at that moment (68 bytes of a 4 MiB body were lost); its done
        # line counted them. Now every byte reaches the client, then the proxy closes, and `down`
        # is exactly what the client received.
        origin = self.body_origin()
        p = self.proxy(log_file=True)
        done_lines = 0

        def check_done(data):
            nonlocal done_lines
            done_lines += 1
            line = p.wait_log(kind="http", cls="done", count=done_lines)[done_lines - 1]
            self.assertEqual(line.down, len(data))
            self.assertEqual(line.up, len(origin.heads[-1]))

        check_done(self.half_closed_exchange(p, origin, 4 * MIB))
        # Made certain: how much the proxy writes to a client that reads nothing before the
        # client's socket is full (measured, not assumed) ...
        s = p.connect()
        s.sendall(get(origin.port, f"/size/{MIB}", headers=["Connection: keep-alive"]))
        s.shutdown(socket.SHUT_WR)
        fits = wait_settled(lambda: unread_bytes(s), timeout=5, still=0.5)
        data = read_to_eof(s)
        head_size = data.index(b"\r\n\r\n") + 4
        s.close()
        check_done(data)
        # ... then a response a little larger, read only once the proxy has read all of it: its last
        # piece finds the socket full, and the exchange ends with it queued.
        body_size = fits + 8192 - head_size
        for attempt in range(3):
            with self.subTest(attempt=attempt):
                data = self.half_closed_exchange(p, origin, body_size, read_late=True)
                check_done(data)

    def test_pipelined_keep_alive_requests_each_get_their_whole_response(self):
        size = 1 * MIB
        origin = self.body_origin(size)
        p = self.proxy(log_file=True)
        s = p.connect()
        s.sendall(get(origin.port, "/one") + get(origin.port, "/two") + get(origin.port, "/three",
                                                                          headers=["Connection: close"]))
        data = read_to_eof(s)
        s.close()
        responses = data.split(b"HTTP/1.1 200 OK\r\n")
        self.assertEqual(responses[0], b"")
        self.assertEqual(len(responses), 4, [r[:60] for r in responses])
        for r in responses[1:]:
            self.assertEqual(len(r.partition(b"\r\n\r\n")[2]), size)
        self.assertEqual([h.split(b" ")[1] for h in origin.heads], [b"/one", b"/two", b"/three"])
        lines = p.wait_log(kind="http", cls="done", count=3)
        self.assertEqual(sum(line.down for line in lines), len(data))
        for line, r in zip(lines, responses[1:]):
            self.assertEqual(line.down, len(b"HTTP/1.1 200 OK\r\n") + len(r))

    def test_tunnel_ended_by_an_error_counts_only_what_was_written(self):
        # The origin floods; the client reads some, then stops, then closes without reading the
        # rest (an error for the proxy's next write). `down` must be what the proxy wrote to the
        # client's socket (what the client read, plus what was waiting unread in its receive queue),
        # not what it read from the origin (bytes still queued in the proxy, or in a splice pipe).
        stop = threading.Event()

        def flood(conn, head):
            conn.settimeout(0.2)
            block = b"f" * (1 << 16)
            deadline = time.monotonic() + 20
            while not stop.is_set() and time.monotonic() < deadline:
                try:
                    conn.send(block)
                except socket.timeout:
                    continue
        self.addCleanup(stop.set)
        origin = self.origin(flood)
        p = self.proxy(log_file=True)
        s = p.connect()
        s.sendall(connect_request(f"{ORIGIN_HOST}:{origin.port}") + b"GET / HTTP/1.1\r\n\r\n")
        established = b"HTTP/1.1 200 Connection Established\r\n\r\n"
        self.assertEqual(recv_exact(s, len(established)), established)
        received = 0
        while received < 8 * MIB:  # bulk data: the direction moves to a splice pipe
            received += len(s.recv(1 << 16))
        # Stop reading; wait until the proxy can write no more (the receive queue stays still).
        unread = wait_settled(lambda: unread_bytes(s), timeout=5, still=0.5)
        self.assertGreater(unread, 0)
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        stop.set()
        print(f"\ntunnel ended by an error: client read {received}, left {unread} unread; done down={done.down}",
              file=sys.stderr)
        self.assertEqual(done.down, received + unread)
        self.assertEqual(done.up, len(b"GET / HTTP/1.1\r\n\r\n"))


if __name__ == "__main__":
    unittest.main()
