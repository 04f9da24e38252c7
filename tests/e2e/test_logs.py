"""Decision logs, the audit file and stats (SPEC §12), and standard output's one line (§4)."""

import json
import os
import re
import signal
import socket
import time
import unittest

from harness import (ORIGIN_HOST, OriginsMixin, ProxyTestCase, connect_request, free_port, parse_log_line,
                     read_http_response, recv_all, recv_exact, socks4_connect, socks5_connect, wait_until)

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
        self.assertIn(f'egress connect host="origin.test" port={port} ip=127.0.0.2 class=ok', raw)
        done = [l for l in raw if " class=done " in l]
        self.assertEqual(len(done), 1, raw)
        self.assertRegex(done[0], rf'^egress connect host="origin.test" port={port} ip=127\.0\.0\.2 '
                                  r"class=done up=10 down=10 ms=\d+$")
        self.assertIn('egress connect host="mix.test" port=443 ip=10.0.0.1 class=private', raw)
        bad = [l for l in raw if "class=invalid host" in l]
        self.assertEqual(len(bad), 1, raw)
        self.assertRegex(bad[0], r'^egress connect host="bad!host" port=443 ip=- class=invalid host$')

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

    def fail_the_nameserver(self, *args):
        # A nameserver that never answers: after a few timed-out requests evdns reports
        # "[msg] Nameserver ... has failed", a message libevent writes itself unless it is routed.
        from harness import DnsServer
        dns = DnsServer(silent=True)
        self.addCleanup(dns.close)
        p = self.proxy("--dns-timeout", "2", *args, dns=dns)
        clients = []
        for i in range(3):
            s = p.connect()
            s.sendall(connect_request(f"nx{i}.test:443"))
            clients.append(s)
        for s in clients:
            recv_all(s)
            s.close()
        p.wait_log(kind="connect", cls="name not resolved", count=3)
        return p

    def test_libevent_messages_are_json_lines_with_log_json(self):
        p = self.fail_the_nameserver("--log", "json")
        message = p.wait_raw(r'"event":"message".*libevent.*[Nn]ameserver')
        p.stop()
        for line in p.stderr_text().splitlines():
            obj = json.loads(line)  # every line on standard error is JSON
            self.assertIsInstance(obj, dict)
        obj = json.loads(message)
        self.assertEqual(set(obj), {"ts", "event", "text"})
        self.assertTrue(obj["text"].startswith("libevent: "), obj)

    def test_libevent_messages_are_text_lines_with_log_text(self):
        p = self.fail_the_nameserver()
        line = p.wait_raw(r"^boxproxy: libevent: \[\w+\] .*[Nn]ameserver")
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
        recv_exact(s, len(ESTABLISHED))
        time.sleep(0.5)
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertGreaterEqual(done.ms, 400)
        self.assertLess(done.ms, 5000)

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
        self.assertEqual(set(ok), {"ts", "kind", "host", "port", "ip", "class"})
        self.assertEqual((ok["host"], ok["port"], ok["ip"]), ("origin.test", self.echo.port, ORIGIN_HOST))
        done = [o for o in objs if o["class"] == "done"][0]
        self.assertEqual(set(done), {"ts", "kind", "host", "port", "ip", "class", "up", "down", "ms"})
        self.assertEqual((done["up"], done["down"]), (6, 6))
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
            self.assertLessEqual({"ts", "kind", "host", "port", "ip", "class"}, set(o))
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
        idle = p.connect()  # a client still in its handshake
        time.sleep(0.2)
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


if __name__ == "__main__":
    unittest.main()
