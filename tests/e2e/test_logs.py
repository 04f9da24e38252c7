# SPDX-License-Identifier: Apache-2.0
"""Decision logs, the audit file and stats (SPEC §12), and standard output's one line (§4)."""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from control_support import (advance_clock, has_clock_hooks, past_the_timeout, proxy_on_clock,
                             proxy_with_control_fd)
from harness import (ORIGIN_HOST, HalfCloseServer, OriginsMixin, ProxyTestCase, SilentServer, _TcpServer, binary,
                     closed_within, connect_request, free_port, parse_log_line, read_http_response, recv_all,
                     recv_exact, socks4_connect, socks5_connect, wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


class LogTest(OriginsMixin, ProxyTestCase):

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    def tunnel(self, p, payload=b"", reply_len=None):
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        if payload:
            s.sendall(payload)
            recv_exact(s, len(payload) if reply_len is None else reply_len)
        s.close()

    def refuse(self, p, target):
        s = p.connect()
        s.sendall(connect_request(target))
        recv_all(s)
        s.close()

    # -- text

    def test_text_lines_exact_shape(self):
        p = self.start("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        self.tunnel(p, b"0123456789")
        self.refuse(p, "mix.test:443")
        self.refuse(p, "bad!host:443")
        p.wait_log(kind="connect", cls="done")
        p.wait_log(kind="connect", cls="invalid host")
        raw = [l for l in p.raw_log_lines() if l.startswith("egress ")]
        port = self.echo.port
        # Connection numbers count from 1, one a client: the tunnel is 1, the refusals 2 and 3.
        self.assertIn(f'egress connect host="origin.test" port={port} ip=127.0.0.2 class=ok id=1', raw)
        done = [l for l in raw if " class=done " in l]
        self.assertEqual(len(done), 1, raw)
        self.assertRegex(done[0], rf'^egress connect host="origin.test" port={port} ip=127\.0\.0\.2 '
                                  r"class=done up=10 down=10 ms=\d+ end=client-closed id=1$")
        self.assertIn('egress connect host="mix.test" port=443 ip=10.0.0.1 class=private id=2', raw)
        bad = [l for l in raw if "class=invalid host" in l]
        self.assertEqual(len(bad), 1, raw)
        self.assertRegex(bad[0], r'^egress connect host="bad!host" port=443 ip=- class=invalid host id=3$')

    def test_host_is_a_json_string_cut_at_255(self):
        p = self.start()
        for host in ['q"uote\\d', "x" * 300]:
            self.refuse(p, f"{host}:443")
        lines = p.wait_log(kind="connect", cls="invalid host", count=2)
        hosts = [l.host for l in lines]
        self.assertIn('q"uote\\d', hosts)
        self.assertIn("x" * 255, hosts)
        for l in lines:
            self.assertLessEqual(len(l.host), 255)

    # -- one format: bytes of 0x80 or more, libevent's own messages (SPEC §12)

    HIGH_BYTES_HOST = b"caf\xc3\xa9\x80\x9f\xff.example"
    HIGH_BYTES_TEXT = "caf\\xc3\\xa9\\x80\\x9f\\xff.example"  # what it decodes to: backslash, x, two digits

    def assert_no_c1(self, host, where):
        self.assertIsNotNone(host, where)
        bad = [hex(ord(c)) for c in host if 0x80 <= ord(c) <= 0x9F]
        self.assertEqual(bad, [], f"{where}: C1 controls in {host!r}")
        self.assertTrue(host.isascii(), f"{where}: {host!r}")

    def refuse_high_bytes(self, p):
        s, _method, _auth, reply = socks5_connect(p, self.HIGH_BYTES_HOST, 443)
        self.assertEqual(reply[:1], b"\x05")
        self.assertNotEqual(reply[1:2], b"\x00", "refused")
        s.close()

    def test_host_bytes_of_0x80_and_more_are_never_c1_controls(self):
        for fmt in ("text", "json"):
            with self.subTest(log=fmt):
                p, path = self.proxy_with_audit("--log", fmt)
                p.start()
                self.refuse_high_bytes(p)
                line = p.wait_log(kind="socks", cls="invalid host")[0]
                self.assert_no_c1(line.host, f"{fmt} log")
                self.assertEqual(line.host, self.HIGH_BYTES_TEXT)
                self.assertTrue(line.raw.isascii())
                p.stop()
                with open(path) as f:
                    audit = [json.loads(l) for l in f.read().splitlines()]
                hosts = [o["host"] for o in audit if o["class"] == "invalid host"]
                self.assertEqual(len(hosts), 1, audit)
                self.assert_no_c1(hosts[0], "audit")
                self.assertEqual(hosts[0], self.HIGH_BYTES_TEXT)

    def fail_the_nameserver(self, message, *args):
        """A nameserver that never answers: after a few timed-out requests evdns reports
        "[msg] Nameserver ... has failed", a message libevent writes itself unless it is routed.
        Returns (the proxy, the line that matched `message`). evdns times its requests out itself,
        in real time (half of --dns-timeout); the clients' own --dns-timeout is then run on the
        proxy's clock when the binary allows it, else waited for."""
        from harness import DnsServer
        dns = DnsServer(silent=True)
        self.addCleanup(dns.close)
        p, c = proxy_with_control_fd(self, "--dns-timeout", "2", *args, dns=dns)
        clients = []
        for i in range(3):
            s = p.connect()
            s.sendall(connect_request(f"nx{i}.test:443"))
            clients.append(s)
        line = p.wait_raw(message)
        if has_clock_hooks(c):
            advance_clock(c, 3)
        for s in clients:
            recv_all(s)
            s.close()
        p.wait_log(kind="connect", cls="name not resolved", count=3)
        return p, line

    def test_libevent_messages_are_json_lines_with_log_json(self):
        p, message = self.fail_the_nameserver(r'"event":"message".*libevent.*[Nn]ameserver', "--log", "json")
        p.stop()
        for line in p.stderr_text().splitlines():
            obj = json.loads(line)  # every line on standard error is JSON
            self.assertIsInstance(obj, dict)
        obj = json.loads(message)
        self.assertEqual(set(obj), {"ts", "event", "text"})
        self.assertTrue(obj["text"].startswith("libevent: "), obj)

    def test_libevent_messages_are_text_lines_with_log_text(self):
        p, line = self.fail_the_nameserver(r"^boxproxy: libevent: \[\w+\] .*[Nn]ameserver")
        self.assertTrue(line.isascii())
        p.stop()
        self.assertFalse([l for l in p.stderr_text().splitlines() if l.startswith("[")])

    def test_kinds(self):
        p = self.start()
        self.tunnel(p)
        s, *_ = socks5_connect(p, "origin.test", self.echo.port)
        s.close()
        s, _ = socks4_connect(p, self.echo.port, host="origin.test")
        s.close()
        s = p.connect()
        s.sendall(f"GET http://origin.test:{self.http.port}/ HTTP/1.1\r\nConnection: close\r\n\r\n".encode())
        recv_all(s)
        s.close()
        for kind in ["connect", "socks", "socks4", "http"]:
            with self.subTest(kind=kind):
                (ok,) = p.wait_log(kind=kind, cls="ok")
                self.assertEqual((ok.host, ok.ip), ("origin.test", ORIGIN_HOST))
                (done,) = p.wait_log(kind=kind, cls="done")
                self.assertEqual((done.host, done.ip), ("origin.test", ORIGIN_HOST))

    def test_done_bytes_are_counted_each_way(self):
        p = self.start()
        s, *_ = socks5_connect(p, "origin.test", self.echo.port, extra=b"a" * 1000)
        recv_exact(s, 1000)
        s.sendall(b"b" * 234)
        recv_exact(s, 234)
        s.close()
        (done,) = p.wait_log(kind="socks", cls="done")
        self.assertEqual((done.up, done.down), (1234, 1234))
        self.assertGreaterEqual(done.ms, 0)

    def test_done_ms_measures_the_tunnel(self):
        p = self.start()
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}"))
        began = time.monotonic()
        recv_exact(s, len(ESTABLISHED))
        time.sleep(0.5)  # a sleep: the tunnel's length is what is measured
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        # At least the half second it was held open; at most what the test saw, from before the
        # proxy's answer to the logged line (plus a millisecond of rounding).
        self.assertGreaterEqual(done.ms, 499)
        self.assertLessEqual(done.ms, (time.monotonic() - began) * 1000 + 1)

    # -- JSON

    def test_json_lines(self):
        p = self.start("--log", "json", "--resolve", "mix.test=127.0.0.2,10.0.0.1")
        self.tunnel(p, b"abcdef")
        self.refuse(p, "mix.test:443")
        self.refuse(p, "nx.test:443")
        p.wait_log(kind="connect", cls="done")
        p.wait_log(kind="connect", cls="name not resolved")
        objs = [json.loads(l) for l in p.raw_log_lines() if l.startswith("{") and '"kind"' in l]
        self.assertEqual(len(objs), 4, objs)
        for o in objs:
            self.assertTrue(RFC3339_UTC.match(o["ts"]), o["ts"])
            self.assertEqual(o["kind"], "connect")
            self.assertIsInstance(o["port"], int)
        ok = [o for o in objs if o["class"] == "ok"][0]
        self.assertEqual(set(ok), {"ts", "id", "kind", "host", "port", "ip", "class"})
        self.assertEqual((ok["host"], ok["port"], ok["ip"]), ("origin.test", self.echo.port, ORIGIN_HOST))
        done = [o for o in objs if o["class"] == "done"][0]
        self.assertEqual(set(done), {"ts", "id", "kind", "host", "port", "ip", "class", "up", "down", "ms", "end"})
        self.assertEqual((done["up"], done["down"]), (6, 6))
        self.assertEqual((ok["id"], done["id"], done["end"]), (1, 1, "client-closed"))
        self.assertEqual(sorted(o["id"] for o in objs), [1, 1, 2, 3])
        self.assertIsInstance(done["ms"], int)
        priv = [o for o in objs if o["class"] == "private"][0]
        self.assertEqual((priv["host"], priv["port"], priv["ip"]), ("mix.test", 443, "10.0.0.1"))
        nx = [o for o in objs if o["class"] == "name not resolved"][0]
        self.assertEqual(nx["host"], "nx.test")
        self.assertIn(nx["ip"], ("-", None))

    def test_log_file(self):
        p = self.start("--log", "json", log_file=True)
        self.tunnel(p, b"xy")
        p.wait_log(kind="connect", cls="done")
        self.assertFalse([l for l in p.stderr_lines if parse_log_line(l)],
                         "with --log-file, decision lines do not go to standard error")

    def fifo(self):
        d = tempfile.TemporaryDirectory(prefix="boxproxy-fifo-")
        self.addCleanup(d.cleanup)
        path = os.path.join(d.name, "log.fifo")
        os.mkfifo(path, 0o600)
        return path

    def test_log_file_a_fifo_nobody_reads_stops_the_start_at_once(self):
        # Opening a FIFO for writing waits for a reader: a supervisor that opens its end only after
        # READY would wait for ever. The start fails at once instead, saying why (exit 1).
        from harness import Proxy
        fifo = self.fifo()
        for option in ("--log-file", "--audit"):
            with self.subTest(option):
                proxy = Proxy(option, fifo)
                self.addCleanup(proxy.cleanup)
                began = time.monotonic()
                with self.assertRaises(AssertionError):
                    proxy.start()
                self.assertEqual(proxy.proc.wait(timeout=3), 1)
                self.assertLess(time.monotonic() - began, 3.0, "the start waited for a reader")
                wait_until(lambda: "nobody has open for reading" in proxy.stderr_text(), timeout=2)
                self.assertIn(f"{option} {fifo}: a FIFO that nobody has open for reading", proxy.stderr_text())
                self.assertFalse(os.path.exists(proxy.socket_path))

    def test_log_file_a_fifo_with_a_reader_gets_the_lines(self):
        fifo = self.fifo()
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the supervisor's end, open first
        self.addCleanup(os.close, reader)
        p = self.start("--log", "json", "--log-file", fifo)
        self.tunnel(p, b"xy")
        got = b""

        def done_line_read():
            nonlocal got
            try:
                got += os.read(reader, 65536)
            except BlockingIOError:
                pass
            return b'"class":"done"' in got

        self.assertTrue(wait_until(done_line_read, timeout=5), got)
        classes = [json.loads(line)["class"] for line in got.splitlines()]
        self.assertEqual(classes, ["ok", "done"])

    # -- what is never logged

    def test_never_a_path_query_header_body_or_credential(self):
        p, path = self.proxy_with_audit()
        p.start()
        s = p.connect()
        body = b"secret-body-bytes"
        s.sendall((f"POST http://origin.test:{self.http.port}/secret-path?secret-query=1 HTTP/1.1\r\n"
                   f"Host: origin.test:{self.http.port}\r\nX-Secret: secret-header-value\r\n"
                   f"Cookie: secret-cookie\r\nProxy-Authorization: Basic c2VjcmV0LXVzZXI6c2VjcmV0LXB3\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        resp = read_http_response(s, method="POST")
        self.assertEqual(resp.status, 200)
        s.close()
        s = p.connect()
        s.sendall(f"GET http://10.0.0.1/secret-path2?secret-query2 HTTP/1.1\r\nX-Secret: secret-h2\r\n\r\n".encode())
        recv_all(s)
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}", ["X-Secret: secret-connect-header"]))
        recv_exact(s, len(ESTABLISHED))
        s.sendall(b"secret-tunnel-bytes")
        recv_exact(s, 19)
        s.close()
        p.wait_log(kind="http", cls="done")
        p.wait_log(kind="connect", cls="done")
        p.wait_log(kind="http", cls="private")
        p.stop()
        with open(path) as f:
            audit = f.read()
        for text, where in [(p.stderr_text(), "log"), (audit, "audit")]:
            for secret in ["secret-path", "secret-query", "secret-header", "secret-cookie", "secret-body",
                           "c2VjcmV0", "secret-user", "secret-pw", "secret-h2", "secret-connect", "secret-tunnel"]:
                self.assertNotIn(secret, text, f"{secret} in the {where}")

    # -- audit

    def proxy_with_audit(self, *args):
        # The audit path must live beside the socket; the Proxy's temp dir is made before start.
        from harness import Proxy
        proxy = Proxy("--resolve", "origin.test=127.0.0.2", *args)
        path = os.path.join(proxy.dir, "audit.jsonl")
        proxy.argv += ["--audit", path]
        self.addCleanup(proxy.cleanup)
        self._proxies.append(proxy)
        return proxy, path

    def test_audit_has_every_decision_and_done_line(self):
        p, path = self.proxy_with_audit("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        with open(path, "w") as f:
            f.write('{"earlier":"line"}\n')
        p.start()
        self.tunnel(p, b"12345")
        self.refuse(p, "mix.test:443")
        s, *_ = socks5_connect(p, "10.0.0.1", 443)
        s.close()
        p.wait_log(kind="connect", cls="done")
        p.wait_log(kind="socks", cls="private")
        p.stop()
        with open(path) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], '{"earlier":"line"}', "the audit file is appended to, never truncated")
        objs = [json.loads(l) for l in lines[1:]]
        classes = [(o["kind"], o["class"]) for o in objs]
        self.assertEqual(sorted(classes), sorted([("connect", "ok"), ("connect", "done"), ("connect", "private"),
                                                  ("socks", "private")]))
        for o in objs:
            self.assertTrue(RFC3339_UTC.match(o["ts"]))
            self.assertLessEqual({"ts", "id", "kind", "host", "port", "ip", "class"}, set(o))
        done = [o for o in objs if o["class"] == "done"][0]
        self.assertEqual((done["up"], done["down"]), (5, 5))

    def test_audit_is_written_even_with_text_log(self):
        p, path = self.proxy_with_audit("--log", "text")
        p.start()
        self.refuse(p, "10.0.0.1:443")
        p.wait_log(kind="connect", cls="private")
        with open(path) as f:
            self.assertIn('"private"', f.read())

    def test_refusal_is_in_the_audit_before_it_is_sent(self):
        p, path = self.proxy_with_audit()
        p.start()
        for i, target in enumerate(["10.0.0.1:443", "127.0.0.1:22", "169.254.169.254:80"]):
            s = p.connect()
            s.sendall(connect_request(target))
            resp = read_http_response(s)
            self.assertEqual(resp.status, 403)
            # Read at once, no waiting: the line must already be on disk.
            with open(path) as f:
                n = len([l for l in f.read().splitlines() if '"class"' in l])
            self.assertEqual(n, i + 1, f"refusal {target} not in the audit when the client got it")
            s.close()

    def test_closed_standard_error_never_sends_log_lines_into_the_audit(self):
        # Started with standard error closed, the audit file would take its number and get the
        # text log lines too; serve opens /dev/null there first.
        p, path = self.proxy_with_audit()
        p.preexec_fn = lambda: os.close(2)
        p.start()
        self.refuse(p, "10.0.0.1:443")
        p.stop()
        with open(path) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertEqual(json.loads(lines[0])["class"], "private")

    def test_an_audit_fifo_whose_reader_falls_behind_never_holds_the_refusals(self):
        # The FIFO's reading end is open but never read: once its 64 KiB are full, the refusals are
        # still answered at once; the lines that did not fit are failed writes, reported once.
        fifo = self.fifo()
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.addCleanup(os.close, reader)
        p = self.start("--audit", fifo)
        began = time.monotonic()
        for _ in range(2000):  # about 270 KiB of audit lines, four times what the FIFO holds
            s = p.connect()
            s.sendall(connect_request("10.0.0.1:443"))
            self.assertTrue(recv_all(s).startswith(b"HTTP/1.1 403"))
            s.close()
        self.assertLess(time.monotonic() - began, 60)
        self.assertTrue(wait_until(lambda: any("audit: write failed" in l for l in p.raw_log_lines()), 5),
                        p.raw_log_lines()[-5:])
        self.assertEqual(sum("audit: write failed" in l for l in p.raw_log_lines()), 1)

    def test_audit_that_cannot_be_opened_stops_the_start(self):
        from harness import Proxy
        proxy = Proxy("--audit", "/nonexistent-dir-e2e/audit.jsonl")
        self.addCleanup(proxy.cleanup)
        with self.assertRaises(AssertionError):
            proxy.start()
        proxy.proc.wait(timeout=3)
        self.assertEqual(proxy.proc.returncode, 1)
        self.assertFalse(os.path.exists(proxy.socket_path))

    # -- stats

    def test_sigusr1_writes_one_stats_line(self):
        p = self.start("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        held = p.connect()
        held.sendall(connect_request(f"origin.test:{self.echo.port}"))
        recv_exact(held, len(ESTABLISHED))
        self.tunnel(p, b"hello")
        p.wait_log(kind="connect", cls="done")
        self.refuse(p, "mix.test:443")
        self.refuse(p, "10.0.0.1:443")
        self.refuse(p, "nx.test:443")
        p.wait_log(kind="connect", cls="name not resolved")
        fds = p.fd_count()
        idle = p.connect()  # a client still in its handshake
        self.assertTrue(wait_until(lambda: p.fd_count() > fds, 5), "the idle client was never accepted")
        os.kill(p.pid, signal.SIGUSR1)
        line = p.wait_raw(r'"event"\s*:\s*"stats"')
        stats = json.loads(line)
        self.assertEqual(stats["event"], "stats")
        self.assertEqual(stats["open"], 1)
        self.assertEqual(stats["used"], 2)
        self.assertGreaterEqual(stats["clients"], 2)
        self.assertEqual(stats["refused"].get("private"), 2)
        self.assertEqual(stats["refused"].get("name not resolved"), 1)
        self.assertEqual(stats["up"], 5)
        self.assertEqual(stats["down"], 5)
        self.assertEqual(len([l for l in p.raw_log_lines() if '"stats"' in l]), 1)
        held.close()
        idle.close()

    # -- standard output

    def test_stdout_has_only_the_listening_line(self):
        p = self.start()
        self.assertEqual(p.listening, {"event": "listening", "socket": p.socket_path, "pid": p.pid})
        self.tunnel(p, b"q")
        self.refuse(p, "10.0.0.1:443")
        os.kill(p.pid, signal.SIGUSR1)
        p.wait_raw('"stats"')
        p.stop()
        self.assertEqual(p.stdout_rest, b"")


# --------------------------------------------------------------------------------------------
# Lines that can be joined (SPEC §12): id=, end=, --label, the stats line at exit.


class ResetServer(_TcpServer):
    """Reads the first bytes, then closes with SO_LINGER 0: the proxy reads a reset (ECONNRESET)."""

    def handle(self, conn, record):
        self._read(conn, record)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def plain_get(port, path="/", headers=()):
    lines = [f"GET http://origin.test:{port}{path} HTTP/1.1", f"Host: origin.test:{port}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class JoinableLinesTest(OriginsMixin, ProxyTestCase):

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    def open_tunnel(self, p, port):
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        return s

    def only_done(self, p, **want):
        lines = p.wait_log(cls="done", **want)
        self.assertEqual(len(lines), 1, p.raw_log_lines())
        return lines[0]

    # -- id=

    def test_every_line_of_one_client_has_its_id_and_no_other_client_has_it(self):
        for fmt in ("text", "json"):
            with self.subTest(log=fmt):
                p = self.start("--log", fmt)
                first = self.open_tunnel(p, self.echo.port)
                second = self.open_tunnel(p, self.echo.port)
                refused = p.connect()
                refused.sendall(connect_request("10.0.0.1:443"))
                recv_all(refused)
                s, *_ = socks5_connect(p, "origin.test", self.echo.port)
                s.sendall(b"ping")
                recv_exact(s, 4)
                for sock in (second, first, s, refused):
                    sock.close()
                p.wait_log(cls="done", count=3)
                lines = [l for l in p.log_lines()]
                self.assertEqual(len(lines), 7, p.raw_log_lines())
                self.assertTrue(all(isinstance(l.id, int) and l.id >= 1 for l in lines), lines)
                by_id = {}
                for line in lines:
                    by_id.setdefault(line.id, []).append(line)
                # Four clients, four numbers: each allowed client's ok and done lines share one.
                self.assertEqual(len(by_id), 4, lines)
                for group in by_id.values():
                    classes = sorted(l.cls for l in group)
                    self.assertIn(classes, (["done", "ok"], ["private"]), group)
                    self.assertEqual(len({(l.kind, l.port) for l in group}), 1, group)
                p.stop()

    def test_keep_alive_requests_share_their_connection_id(self):
        p = self.start()
        s = p.connect()
        for path in ("/one", "/two"):
            s.sendall(plain_get(self.http.port, path))
            self.assertEqual(read_http_response(s).status, 200)
        other = p.connect()
        other.sendall(plain_get(self.http.port, "/three"))
        self.assertEqual(read_http_response(other).status, 200)
        s.close()
        other.close()
        p.wait_log(kind="http", cls="done", count=3)
        ok = p.find_logs(kind="http", cls="ok")
        done = p.find_logs(kind="http", cls="done")
        self.assertEqual(len(ok), 3, p.raw_log_lines())
        self.assertEqual([l.id for l in ok], [l.id for l in done])
        self.assertEqual(ok[0].id, ok[1].id)  # one keep-alive connection: one id
        self.assertNotEqual(ok[0].id, ok[2].id)

    def test_ids_are_never_reused_while_the_process_lives(self):
        p = self.start()
        for _ in range(5):
            s = p.connect()
            s.sendall(connect_request("10.0.0.1:443"))
            recv_all(s)
            s.close()
        lines = p.wait_log(cls="private", count=5)
        self.assertEqual([l.id for l in lines], [1, 2, 3, 4, 5])

    # -- end=

    def test_tunnel_closed_by_the_client_first(self):
        p = self.start()
        s = self.open_tunnel(p, self.echo.port)
        s.sendall(b"abc")
        recv_exact(s, 3)
        s.shutdown(socket.SHUT_WR)  # the client's FIN first; the echo origin answers with its own
        self.assertEqual(recv_all(s), b"")
        s.close()
        self.assertEqual(self.only_done(p, kind="connect").end, "client-closed")

    def test_tunnel_closed_by_the_origin_first(self):
        origin = HalfCloseServer()
        self.addCleanup(origin.close)
        p = self.start()
        s = self.open_tunnel(p, origin.port)
        self.assertEqual(recv_all(s), HalfCloseServer.GREETING)  # its FIN came first
        s.close()
        self.assertEqual(self.only_done(p, kind="connect").end, "upstream-closed")

    def test_tunnel_reset_by_the_origin_is_an_error(self):
        origin = ResetServer()
        self.addCleanup(origin.close)
        p = self.start()
        s = self.open_tunnel(p, origin.port)
        s.sendall(b"x")
        recv_all(s)
        s.close()
        self.assertEqual(self.only_done(p, kind="connect").end, "error")

    def test_idle_tunnel_and_idle_plain_request_end_by_idle_timeout(self):
        origin = SilentServer()
        self.addCleanup(origin.close)
        p, c = proxy_on_clock(self, "--idle-timeout", "30", start=self.start)
        s = self.open_tunnel(p, origin.port)
        past_the_timeout(self, c, s, 30, "a quiet tunnel")
        self.assertTrue(closed_within(s, 1))
        s.close()
        self.assertEqual(self.only_done(p, kind="connect").end, "idle-timeout")
        h = p.connect()
        h.sendall(plain_get(origin.port))  # the origin never answers
        p.wait_log(kind="http", cls="ok")  # allowed: the idle timer is armed
        past_the_timeout(self, c, h, 30, "a request the origin never answers")
        self.assertTrue(closed_within(h, 1))
        h.close()
        self.assertEqual(self.only_done(p, kind="http").end, "idle-timeout")

    def test_sigterm_ends_open_tunnels_and_requests_as_shutdown(self):
        origin = SilentServer()
        self.addCleanup(origin.close)
        p = self.start()
        s = self.open_tunnel(p, origin.port)
        h = p.connect()
        h.sendall(plain_get(origin.port))
        p.wait_log(kind="http", cls="ok")
        p.stop()
        self.assertEqual(self.only_done(p, kind="connect").end, "shutdown")
        self.assertEqual(self.only_done(p, kind="http").end, "shutdown")
        s.close()
        h.close()

    def test_plain_request_answered_whole_ends_upstream_closed(self):
        p = self.start("--log", "json")
        s = p.connect()
        s.sendall(plain_get(self.http.port, "/", ["Connection: close"]))
        self.assertEqual(read_http_response(s).status, 200)
        s.close()
        done = self.only_done(p, kind="http")
        self.assertEqual((done.end, done.obj["end"]), ("upstream-closed", "upstream-closed"))

    def test_plain_request_whose_client_leaves_mid_body_ends_client_closed(self):
        origin = SilentServer()
        self.addCleanup(origin.close)
        p = self.start()
        s = p.connect()
        s.sendall(plain_get(origin.port, "/up", ["Content-Length: 100"]) + b"only ten b")
        p.wait_log(kind="http", cls="ok")
        wait_until(lambda: origin.count() == 1 and len(origin.connections[0]["data"]) > 10)
        s.close()
        self.assertEqual(self.only_done(p, kind="http").end, "client-closed")

    # -- --label

    def test_label_ends_every_text_line(self):
        label = 'ci run 42/"x"'
        p = self.start("--label", label, "--resolve", "mix.test=10.0.0.1")
        s = self.open_tunnel(p, self.echo.port)
        s.close()
        r = p.connect()
        r.sendall(connect_request("mix.test:443"))
        recv_all(r)
        r.close()
        p.wait_log(cls="done")
        p.wait_log(cls="private")
        os.kill(p.pid, signal.SIGHUP)  # a message line
        p.wait_raw(r"^boxproxy: sighup")
        os.kill(p.pid, signal.SIGUSR1)
        stats = json.loads(p.wait_raw(r'"event":"stats"'))
        self.assertEqual(stats["label"], label)
        self.assertNotIn("id", stats)
        lines = p.log_lines()
        self.assertEqual(len(lines), 3, p.raw_log_lines())
        for line in lines:
            self.assertEqual(line.label, label, line)
            self.assertTrue(line.raw.endswith(" label=" + label), line)
        message = [l for l in p.raw_log_lines() if l.startswith("boxproxy: sighup")]
        self.assertEqual(message, ["boxproxy: sighup: host list re-read label=" + label])

    def test_label_is_a_key_of_every_json_line(self):
        label = "session-7"
        p = self.start("--log", "json", "--label", label)
        s = self.open_tunnel(p, self.echo.port)
        s.close()
        p.wait_log(cls="done")
        os.kill(p.pid, signal.SIGHUP)
        p.wait_raw(r'"event":"message"')
        os.kill(p.pid, signal.SIGUSR1)
        p.wait_raw(r'"event":"stats"')
        p.stop()
        objs = [json.loads(l) for l in p.raw_log_lines()]
        self.assertEqual([o.get("event", o.get("class")) for o in objs], ["ok", "done", "message", "stats", "stats"])
        for o in objs:
            self.assertEqual(o["label"], label, o)
            self.assertEqual("id" in o, "class" in o, o)  # decision and done lines only

    def test_label_from_the_config_file(self):
        path = os.path.join(self.echo_dir(), "serve.json")
        with open(path, "w") as f:
            json.dump({"label": "from-config", "log": "json"}, f)
        p = self.start("--config", path)
        s = self.open_tunnel(p, self.echo.port)
        s.close()
        self.assertEqual(p.wait_log(cls="done")[0].label, "from-config")

    def echo_dir(self):
        d = tempfile.mkdtemp(prefix="boxproxy-label-")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def test_a_label_outside_printable_ascii_or_too_long_is_a_usage_error(self):
        d = self.echo_dir()
        cases = [("a\tb", "holds a character outside printable ASCII"),
                 ("caf\u00e9", "holds a character outside printable ASCII"),
                 ("x" * 129, "is longer than 128 characters")]
        for label, words in cases:
            with self.subTest(label=label):
                sock = os.path.join(d, "s.sock")
                r = subprocess.run([binary(), "serve", "--socket", sock, "--label", label],
                                   capture_output=True, timeout=10)
                self.assertEqual(r.returncode, 2, r.stderr)
                err = r.stderr.decode("utf-8", "replace")
                self.assertIn("--label", err)
                self.assertIn(words, err)
                self.assertFalse(os.path.exists(sock))
        p = self.start("--label", "y" * 128)  # the longest
        s = self.open_tunnel(p, self.echo.port)
        s.close()
        self.assertEqual(p.wait_log(cls="done")[0].label, "y" * 128)

    # -- the stats line at exit

    def test_a_stats_line_is_the_last_line_at_exit(self):
        for fmt in ("text", "json"):
            with self.subTest(log=fmt):
                p = self.start("--log", fmt, "--label", "L")
                s = self.open_tunnel(p, self.echo.port)
                s.sendall(b"1234")
                recv_exact(s, 4)
                r = p.connect()
                r.sendall(connect_request("10.0.0.1:443"))
                recv_all(r)
                r.close()
                p.wait_log(cls="private")
                p.stop()
                raw = p.raw_log_lines()
                self.assertTrue(raw, raw)
                stats = json.loads(raw[-1])
                self.assertEqual(stats["event"], "stats", raw)
                self.assertEqual((stats["open"], stats["used"], stats["up"], stats["down"]), (0, 1, 4, 4))
                self.assertEqual(stats["refused"], {"private": 1})
                self.assertEqual(stats["label"], "L")
                done = [l for l in p.log_lines() if l.done]
                self.assertEqual([l.end for l in done], ["shutdown"])
                self.assertEqual(len([l for l in raw if '"stats"' in l]), 1, raw)
                s.close()


if __name__ == "__main__":
    unittest.main()
