# SPDX-License-Identifier: Apache-2.0
"""The Host check (SPEC §16, the SNI check's twin for cleartext): with a host list, a tunnel whose
first bytes are an HTTP/1.x request must name the decided host and port in its target and Host, or
it is closed as `host mismatch` before any of its bytes reach the origin; anything else passes.

The attacker is a box allowed good.test:PORT, whose address (127.0.0.2) also serves other sites:
it opens a tunnel there and asks, in cleartext, for evil.test."""

import signal
import socket
import sys
import textwrap
import unittest

from harness import trickle, HttpOrigin, closed_within, connect_request, read_http_response, recv_exact

from test_sni import CheckedTunnelCase, client_hello
from test_transparent import CaptureTestCase

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


class TunnelHostTest(CheckedTunnelCase):
    HOST, OTHER, MISMATCH = "good.test", "evil.test", "host mismatch"

    def request(self, host, target="/", more=b""):
        head = f"GET {target} HTTP/1.1\r\n" + (f"Host: {host}\r\n" if host is not None else "") + "\r\n"
        return head.encode() + more

    def assert_origin_got_nothing_to_act_on(self, data):
        # At most the request line's first bytes, sent on while the check waited: never a line end.
        self.assertNotIn(b"\n", data)
        self.assertNotIn(b"\r", data)
        self.assertNotIn(b"Host", data)

    def assert_refused(self, first_bytes, *args, kind="connect"):
        p = self.start(*args)
        before = self.echo.count()
        s = self.tunnel(p, kind)
        s.sendall(first_bytes)
        self.assert_closed_as_mismatch(p, s, kind, before)

    def assert_passes_intact(self, s, data):
        self.assertEqual(recv_exact(s, len(data)), data)

    # -- another site: closed and logged

    def test_connect_request_naming_another_host_is_closed(self):
        self.assert_refused(self.request("evil.test"))

    def test_socks5_request_naming_another_host_is_closed(self):
        self.assert_refused(self.request("evil.test"), kind="socks")

    def test_request_sent_with_the_connect_is_checked_too(self):
        p = self.start()
        before = self.echo.count()
        s = self.tunnel(p, extra=self.request("evil.test"))
        self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_the_port_is_the_tunnels_80_when_the_host_has_none(self):
        # The tunnel goes to good.test:PORT (not 80): "Host: good.test" means good.test:80.
        self.assert_refused(self.request("good.test"))

    def test_an_absolute_form_target_naming_another_host_is_closed(self):
        self.assert_refused(self.request(f"good.test:{self.echo.port}", target="http://evil.test/"))

    def test_two_hosts_no_host_and_bare_lf_heads_are_closed(self):
        good = f"good.test:{self.echo.port}"
        for first in (f"GET / HTTP/1.1\r\nHost: {good}\r\nHost: evil.test\r\n\r\n".encode(),
                      b"GET / HTTP/1.1\r\n\r\n",
                      b"GET / HTTP/1.1\nHost: evil.test\n\n",
                      b"GET\x0b/\x0bHTTP/1.1\r\nHost: evil.test\r\n\r\n"):
            with self.subTest(first=first):
                self.assert_refused(first)

    def test_a_request_split_over_many_small_writes(self):
        for host, passes in ((f"good.test:{self.echo.port}", True), ("evil.test", False)):
            with self.subTest(host=host):
                p = self.start()
                before = self.echo.count()
                data = self.request(host)
                s = self.tunnel(p)
                trickle(s, data)
                if passes:
                    self.assert_passes_intact(s, data)
                    s.close()
                else:
                    self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_a_head_that_never_ends_is_closed_within_max_head_bytes(self):
        p = self.start("--max-head-bytes", "1024")
        before = self.echo.count()
        s = self.tunnel(p)
        stream = b"GET / HTTP/1.1\r\n" + b"X: " + b"y" * 200000
        sent = 0
        try:
            while sent < len(stream):
                s.sendall(stream[sent:sent + 512])
                sent += 512
        except OSError:
            pass
        self.assert_closed_as_mismatch(p, s, "connect", before)
        self.assertLess(sent, len(stream))  # closed long before the stream's end

    def test_client_fin_after_an_unfinished_head_is_closed(self):
        p = self.start()
        before = self.echo.count()
        s = self.tunnel(p)
        s.sendall(b"GET / HTTP/1.1\r\nHost: evil.test\r\n")
        s.shutdown(socket.SHUT_WR)
        self.assert_closed_as_mismatch(p, s, "connect", before)

    def test_the_mismatch_line_follows_the_schema_and_is_counted(self):
        from test_schemas import errors
        p = self.start("--log", "json")
        s = self.tunnel(p)
        s.sendall(self.request("evil.test"))
        self.assertTrue(closed_within(s, 5))
        (line,) = p.wait_log(cls="host mismatch")
        self.assertEqual(errors("decision-line", line.obj), [], line.raw)
        p.proc.send_signal(signal.SIGUSR1)
        self.assertIn('"host mismatch":1', p.wait_raw(r'"event":"stats"'))

    # -- the decided host: passes intact

    def test_the_decided_host_and_port_pass_intact(self):
        p = self.start()
        port = self.echo.port
        for host in (f"good.test:{port}", f"GOOD.Test:{port}", f"good.test.:{port}"):
            for kind in ("connect", "socks"):
                with self.subTest(host=host, kind=kind):
                    data = self.request(host, more=b"body bytes")
                    s = self.tunnel(p, kind)
                    s.sendall(data)
                    self.assert_passes_intact(s, data)
                    s.close()
        self.assertEqual(p.find_logs(cls="host mismatch"), [])

    def test_a_real_origin_answers_through_the_checked_tunnel(self):
        origin = HttpOrigin()
        try:
            p = self.proxy("--resolve", "good.test=127.0.0.2", "--allow", f"good.test:{origin.port}")
            s = p.connect()
            s.sendall(connect_request(f"good.test:{origin.port}"))
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            s.sendall(f"GET / HTTP/1.1\r\nHost: good.test:{origin.port}\r\n\r\n".encode())
            self.assertEqual(read_http_response(s).status, 200)
            self.assertEqual(len(origin.requests), 1)
        finally:
            origin.close()

    def test_only_the_first_request_is_read(self):
        # As the manual says: a later request on the same connection is not parsed.
        p = self.start()
        data = self.request(f"good.test:{self.echo.port}") + self.request("evil.test")
        s = self.tunnel(p)
        s.sendall(data)
        self.assert_passes_intact(s, data)

    # -- other protocols, and when the check is off

    def test_tls_and_other_protocols_pass(self):
        p = self.start()
        for first in (client_hello("good.test"), client_hello(None),
                      b"SSH-2.0-test\r\n", b"EHLO box\r\n", b"\x00\x01\x02", b"GET /\r\n",
                      b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"):
            with self.subTest(first=first):
                s = self.tunnel(p)
                s.sendall(first)
                self.assert_passes_intact(s, first)
                s.close()
        self.assertEqual(p.find_logs(cls="host mismatch") + p.find_logs(cls="sni mismatch"), [])

    def test_a_short_message_with_no_line_end_is_answered(self):
        # An echo's `ping`, a greeting that waits for its answer: the first line so far goes up
        # while the check waits, so the answer comes back without the client sending more.
        p = self.start()
        for kind in ("connect", "socks"):
            with self.subTest(kind=kind):
                s = self.tunnel(p, kind)
                s.sendall(b"ping")
                self.assert_passes_intact(s, b"ping")
                s.sendall(b" pong\n")
                self.assert_passes_intact(s, b" pong\n")
                s.close()
        self.assertEqual(p.find_logs(cls="host mismatch"), [])

    def test_client_fin_after_an_unfinished_line_passes_what_was_sent(self):
        p = self.start()
        s = self.tunnel(p)
        s.sendall(b"GET / HT")
        s.shutdown(socket.SHUT_WR)
        self.assert_passes_intact(s, b"GET / HT")
        self.assertTrue(closed_within(s, 5))

    def test_without_a_host_list_any_host_passes(self):
        p = self.start(allow=False)
        data = self.request("evil.test")
        s = self.tunnel(p)
        s.sendall(data)
        self.assert_passes_intact(s, data)

    def test_no_sni_check_turns_it_off(self):
        p = self.start("--no-sni-check")
        data = self.request("evil.test")
        for kind in ("connect", "socks"):
            with self.subTest(kind=kind):
                s = self.tunnel(p, kind)
                s.sendall(data)
                self.assert_passes_intact(s, data)
                s.close()


# In a `run --transparent` box, a program that ignores proxy variables dials the listed name
# itself: its cleartext request goes through a checked tunnel (SPEC §16).
BOX_CLIENT = textwrap.dedent("""
    import socket, sys
    port = int(sys.argv[1])
    for host in ("evil.test", "origin.test:%d" % port):
        s = socket.create_connection(("origin.test", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % host.encode())
        try:
            got = s.recv(12)
        except OSError:
            got = b""
        print(host, got.decode() or "closed")
        s.close()
""")


class TransparentHostTest(CaptureTestCase):
    WITH_ORIGIN = True

    def test_a_boxed_program_asking_for_another_host_is_closed_and_the_listed_one_answered(self):
        box, log = self.box, self.log
        port = self.origin.port
        r = box.run(["--transparent", "--allow", f"origin.test:{port}", "--resolve", "origin.test=127.0.0.2",
                     "--resolve", "evil.test=127.0.0.2", "--log-file", log],
                    [sys.executable, "-c", BOX_CLIENT, str(port)])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-2000:])
        self.assertEqual(r.stdout.decode().splitlines(), ["evil.test closed", f"origin.test:{port} HTTP/1.1 200"])
        with open(log, encoding="utf-8") as f:
            self.assertEqual(f.read().count("class=host mismatch"), 1)
        hosts = [value for request in self.origin.requests for name, value in request["headers"] if name == "Host"]
        self.assertEqual(hosts, [f"origin.test:{port}"])


if __name__ == "__main__":
    unittest.main()
