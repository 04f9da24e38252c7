# SPDX-License-Identifier: Apache-2.0
"""Request inspection (SPEC §18) through the real binary and its inspector (boxproxy-inspect): a TLS
origin of the test's own on 127.0.0.2, with a certificate made here and given to the proxy with
--upstream-ca; curl as the box's client, trusting the session CA that --ca-out wrote. Allowed
requests reach the origin, refused ones get the proxy's answer inside TLS and never reach it, and
each is logged (JSON log: the request lines' own keys). Connection-level refusals (not tls, sni
mismatch, upstream tls) close or answer as the spec says."""

import json
import os
import socket
import ssl
import subprocess
import time
import unittest

from fault_support import stats_line
from harness import HttpOrigin, ProxyTestCase, binary, closed_within, recv_all, recv_exact
from inspect_support import CURL, INSPECTOR, InspectRig, curl

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


def tls_closed_within(sock, timeout):
    """True when the TLS peer ends the connection (close_notify, EOF or reset) within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return True
    return False


@unittest.skipIf(CURL is None, "curl is not installed")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectTest(InspectRig, ProxyTestCase):

    def start(self, *args, endpoints=None, trust_origin=True):
        """A proxy inspecting origin.test at the origin's port: with no rules, or with `endpoints`
        (the config's "inspect" array) given in a config file."""
        argv = ["--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca, *args]
        if trust_origin:
            argv += ["--upstream-ca", self.cert]
        if endpoints is None:
            argv += ["--inspect", f"origin.test:{self.origin.port}"]
        else:
            config = os.path.join(self.dir, "config.json")
            with open(config, "w") as f:
                json.dump({"inspect": endpoints}, f)
            argv += ["--config", config]
        return self.proxy(*argv)

    def get(self, p, path, *extra):
        """curl through the proxy's socket (SOCKS5): (exit code, status, x-egress-refused, body)."""
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.ca, "--path-as-is",
                              "-D", "-", *extra, f"https://origin.test:{self.origin.port}{path}")
        head, _, body = out.partition("\r\n\r\n")
        lines = head.split("\r\n")
        status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else None
        refused = next((l.split(":", 1)[1].strip() for l in lines if l.lower().startswith("x-egress-refused:")), None)
        return code, status, refused, body, err

    def requests(self, p, count):
        return [line.obj for line in p.wait_log(kind="request", count=count)]

    def origin_paths(self):
        return [r["path"] for r in self.origin.requests]

    def test_an_allowed_request_reaches_the_origin_through_the_proxys_own_tls(self):
        p = self.start()
        code, status, refused, body, err = self.get(p, "/hello")
        self.assertEqual((code, status, refused), (0, 200, None), err)
        self.assertEqual(body, "x" * 511 + "\n")
        self.assertEqual(self.origin_paths(), ["/hello"])
        (line,) = self.requests(p, 1)
        self.assertEqual((line["method"], line["rule"], line["class"], line["status"]), ("GET", "-", "ok", 200))
        self.assertNotIn("path", line)  # no --log-paths
        # The CA --ca-out wrote is the session's: CN=boxproxy <label or pid>.
        subject = subprocess.run(["openssl", "x509", "-noout", "-subject", "-in", self.ca], capture_output=True,
                                 text=True, timeout=30).stdout
        self.assertIn("CN = boxproxy", subject)

    def test_rules_refuse_inside_tls_and_the_origin_never_sees_it(self):
        p = self.start("--log-paths", endpoints=[{
            "host": f"origin.test:{self.origin.port}",
            "rules": [{"method": "GET", "path": "/repos/acme/**", "name": "acme"}],
            "deny": [{"method": "*", "path": "/repos/acme/secret"}]}])
        self.assertEqual(self.get(p, "/repos/acme/x")[1:3], (200, None))
        self.assertEqual(self.get(p, "/repos/other/x")[1:3], (403, "request denied"))
        self.assertEqual(self.get(p, "/repos/acme/secret")[1:3], (403, "request denied"))
        self.assertEqual(self.get(p, "/repos/acme/x", "-X", "DELETE")[1:3], (403, "request denied"))
        for bad in ("/repos/acme/%2Fx", "/repos/acme/../other", "/repos//acme/x", "/repos/acme/%2e%2e/secret"):
            with self.subTest(path=bad):
                self.assertEqual(self.get(p, bad)[1:3], (400, "bad path"))
        self.assertEqual(self.origin_paths(), ["/repos/acme/x"])
        lines = self.requests(p, 8)
        self.assertEqual([(l["class"], l["rule"]) for l in lines[:4]],
                         [("ok", "acme"), ("request denied", "-"), ("request denied", "deny[0]"),
                          ("request denied", "-")])
        self.assertEqual(lines[0]["path"], "/repos/acme/x")

    def test_a_refusal_names_what_was_judged_and_a_hint_what_is_allowed(self):
        entry = f"origin.test:{self.origin.port}"
        p = self.start(endpoints=[
            {"host": entry, "rules": [{"method": "GET", "path": "/repos/acme/**"}],
             "deny": [{"method": "*", "path": "/repos/acme/secret"}], "hint": True}])
        code, status, refused, body, err = self.get(p, "/repos/other/x?token=t0ps3cret", "-X", "DELETE")
        self.assertEqual((code, status, refused), (0, 403, "request denied"), err)
        self.assertEqual(body, "egress refused: request denied\n"
                               f"judged: DELETE /repos/other/x at endpoint {entry}\n"
                               "allowed: GET /repos/acme/** (denied first: * /repos/acme/secret)\n")
        # Over HTTP/2 the same body on the refused stream.
        code, status, refused, body, err = self.get(p, "/repos/acme/secret", "--http2")
        self.assertEqual((code, status, refused), (0, 403, "request denied"), err)
        self.assertIn(f"judged: GET /repos/acme/secret at endpoint {entry}\nallowed: ", body)
        # A bad path names what was judged, never the rules.
        code, status, refused, body, err = self.get(p, "/repos/acme/%2Fx")
        self.assertEqual((status, body), (400, "egress refused: bad path\n"
                                               f"judged: GET /repos/acme/%2Fx at endpoint {entry}\n"), err)
        self.assertEqual(self.origin_paths(), [])

    def test_without_a_hint_the_rules_stay_unsaid(self):
        entry = f"origin.test:{self.origin.port}"
        p = self.start(endpoints=[{"host": entry, "access": "read-only"}])
        code, status, refused, body, err = self.get(p, "/x", "-X", "POST", "--data", "hi")
        self.assertEqual((status, body), (403, "egress refused: request denied\n"
                                               f"judged: POST /x at endpoint {entry}\n"), err)

    def test_report_mode_lets_a_denied_request_through_and_says_so(self):
        p = self.start(endpoints=[{"host": f"origin.test:{self.origin.port}", "access": "read-only",
                                   "mode": "report"}])
        self.assertEqual(self.get(p, "/x?token=t0ps3cret", "-X", "POST", "--data", "hi")[1:3], (200, None))
        self.assertEqual(self.origin_paths(), ["/x?token=t0ps3cret"])
        (line,) = self.requests(p, 1)
        self.assertEqual((line["class"], line["rule"], line.get("report")), ("request denied", "access", True))
        # Said plainly, with the path (no query) although --log-paths is not given: the operator
        # asked to see what would be denied.
        self.assertEqual((line.get("would"), line.get("path")), ("deny", "/x"))
        # An allowed request carries no path and no would=.
        self.assertEqual(self.get(p, "/y")[1:3], (200, None))
        allowed = self.requests(p, 2)[1]
        self.assertEqual((allowed["class"], "path" in allowed, "would" in allowed), ("ok", False, False))
        # A bad path is refused in report mode too.
        self.assertEqual(self.get(p, "/a/%2F")[1:3], (400, "bad path"))
        # Counted apart: a would-be denial is not a refusal.
        stats = stats_line(p)
        self.assertEqual((stats["reported"], stats["refused"]), (1, {"bad path": 1}))

    def test_one_connection_carries_several_requests(self):
        p = self.start(endpoints=[{"host": f"origin.test:{self.origin.port}", "access": "read-only"}])
        url = f"https://origin.test:{self.origin.port}"
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.ca, "-o", "/dev/null",
                              "-w", "%{http_code}\n", f"{url}/one", "-o", "/dev/null", "-X", "GET", f"{url}/two")
        self.assertEqual((code, out.split()), (0, ["200", "200"]), err)
        lines = self.requests(p, 2)
        self.assertEqual(len({l["id"] for l in lines}), 1)  # one client connection
        self.assertEqual(len(p.find_logs(kind="socks", cls="ok")), 1)

    def test_serve_lets_go_of_the_sockets_it_hands_over(self):
        # serve batches its epoll changes; a socket it handed to the inspector and closed before the
        # batch went in stayed in serve's epoll set (the inspector's copy kept it open), so serve
        # woke for it for ever: a spinning loop for every inspected connection. Now every socket in
        # serve's epoll set is one serve still has open, and serve sleeps while a connection idles.
        p = self.start()
        raw = p.connect()
        raw.sendall(b"\x05\x01\x00")
        self.assertEqual(recv_exact(raw, 2), b"\x05\x00")
        raw.sendall(b"\x05\x01\x00\x03\x0borigin.test" + self.origin.port.to_bytes(2, "big"))
        self.assertEqual(recv_exact(raw, 10)[:2], b"\x05\x00")
        tls = ssl.create_default_context(cafile=self.ca).wrap_socket(raw, server_hostname="origin.test")
        self.addCleanup(tls.close)
        tls.sendall(f"GET /held HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
        self.assertTrue(tls.recv(4096).startswith(b"HTTP/1.1 200"))
        self.requests(p, 1)  # the request's line: serve has long since handed the sockets over
        watched, open_fds = set(), set(os.listdir(f"/proc/{p.pid}/fd"))
        for fd in open_fds:
            if os.readlink(f"/proc/{p.pid}/fd/{fd}") == "anon_inode:[eventpoll]":
                with open(f"/proc/{p.pid}/fdinfo/{fd}") as f:
                    watched |= {line.split()[1] for line in f if line.startswith("tfd:")}
        self.assertTrue(watched)
        self.assertLessEqual(watched, open_fds, "serve's epoll set holds sockets serve has closed")

        def cpu_seconds():
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        before = cpu_seconds()
        time.sleep(1.0)  # a sleep: what is measured is the CPU used within a period
        self.assertLess(cpu_seconds() - before, 0.3, "serve is busy while the only connection idles")

    def test_an_origin_the_store_does_not_trust_is_upstream_tls(self):
        p = self.start(trust_origin=False)
        code, status, refused, _, _ = self.get(p, "/x")
        self.assertEqual((status, refused), (502, "upstream tls"))
        self.assertEqual(self.origin_paths(), [])

    def test_a_client_that_does_not_start_tls_is_closed(self):
        p = self.start()
        s = p.connect()
        try:
            s.sendall(f"CONNECT origin.test:{self.origin.port} HTTP/1.1\r\n\r\n".encode())
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            s.sendall(b"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n")
            self.assertEqual(recv_all(s, timeout=5), b"")
        finally:
            s.close()
        p.wait_log(kind="connect", cls="not tls")
        self.assertEqual(self.origin_paths(), [])

    def test_a_client_hello_naming_another_host_is_closed(self):
        p = self.start()
        s = p.connect()
        try:
            s.sendall(f"CONNECT origin.test:{self.origin.port} HTTP/1.1\r\n\r\n".encode())
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            context = ssl.create_default_context(cafile=self.ca)
            context.check_hostname = False
            with self.assertRaises((ssl.SSLError, OSError)):
                context.wrap_socket(s, server_hostname="other.test").do_handshake()
        finally:
            s.close()
        p.wait_log(kind="connect", cls="sni mismatch")

    def test_plain_http_to_an_inspected_port_is_judged_too(self):
        plain = HttpOrigin()
        self.addCleanup(plain.close)
        p = self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--upstream-ca", self.cert,
                       "--config", self._config([{"host": f"origin.test:{plain.port}", "access": "read-only"}]))
        for method, status in (("GET", 200), ("DELETE", 403)):
            s = p.connect()
            try:
                s.sendall(f"{method} http://origin.test:{plain.port}/p HTTP/1.1\r\nHost: origin.test:{plain.port}\r\n"
                          f"Connection: close\r\n\r\n".encode())
                self.assertTrue(recv_all(s, timeout=5).startswith(f"HTTP/1.1 {status}".encode()))
            finally:
                s.close()
        self.assertEqual([r["method"] for r in plain.requests], ["GET"])
        lines = self.requests(p, 2)
        self.assertEqual(sorted(l["class"] for l in lines), ["ok", "request denied"])

    def test_plain_http_in_report_mode_says_what_would_be_denied(self):
        plain = HttpOrigin()
        self.addCleanup(plain.close)
        p = self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--config",
                       self._config([{"host": f"origin.test:{plain.port}", "access": "read-only", "mode": "report"}]))
        s = p.connect()
        try:
            s.sendall(f"POST http://origin.test:{plain.port}/p/q?x=1 HTTP/1.1\r\nHost: origin.test:{plain.port}\r\n"
                      f"Content-Length: 2\r\nConnection: close\r\n\r\nhi".encode())
            self.assertTrue(recv_all(s, timeout=5).startswith(b"HTTP/1.1 200"))
        finally:
            s.close()
        self.assertEqual([r["method"] for r in plain.requests], ["POST"])
        (line,) = self.requests(p, 1)
        self.assertEqual((line["class"], line["rule"], line.get("report"), line.get("would"), line.get("path")),
                         ("request denied", "access", True, "deny", "/p/q"))
        stats = stats_line(p)
        self.assertEqual((stats["reported"], stats["refused"]), (1, {}))

    # serve's --head-timeout, --idle-timeout and --max-head-bytes hold inside TLS as well (SPEC §18):
    # the inspector takes them from serve, not bounds of its own (10 s, none, 32 KiB).

    def _connect_tunnel(self, p):
        s = p.connect()
        s.sendall(f"CONNECT origin.test:{self.origin.port} HTTP/1.1\r\n\r\n".encode())
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        return s

    def test_a_client_that_stalls_in_its_tls_handshake_is_closed_after_the_head_timeout(self):
        p = self.start("--head-timeout", "1")
        s = self._connect_tunnel(p)
        try:
            # A TLS handshake record that says 200 bytes follow, and then only a few of them.
            s.sendall(b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + b"\x00" * 10)
            started = time.monotonic()
            # Within half the 30 s default head timeout that would otherwise end it.
            self.assertTrue(closed_within(s, 15), "a handshake stalled past --head-timeout must be closed")
            self.assertLess(time.monotonic() - started, 15)
        finally:
            s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual(done.end, "idle-timeout")

    def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(self):
        p = self.start("--idle-timeout", "1")
        s = self._connect_tunnel(p)
        context = ssl.create_default_context(cafile=self.ca)
        tls = context.wrap_socket(s, server_hostname="origin.test")
        try:
            tls.sendall(f"GET /a HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = tls.recv(65536)
                self.assertTrue(chunk, f"closed before the response head: {head!r}")
                head += chunk
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
            self.assertNotIn(b"connection: close", head.lower())  # kept alive: only the idle timeout ends it
            started = time.monotonic()
            self.assertTrue(tls_closed_within(tls, 15), "an inspected connection idle for --idle-timeout must be closed")
            self.assertLess(time.monotonic() - started, 15)  # the head timeout (30 s) is not what ended it
        finally:
            tls.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual(done.end, "idle-timeout")
        self.assertEqual(self.origin_paths(), ["/a"])

    def test_a_request_head_over_max_head_bytes_is_refused_inside_tls(self):
        p = self.start("--max-head-bytes", "1024")
        code, status, refused, _, err = self.get(p, "/big", "-H", "x-big: " + "a" * 2000)
        self.assertEqual((status, refused), (431, "head too large"), err)
        small = self.get(p, "/small")
        self.assertEqual(small[1:3], (200, None), small[4])  # a head within the bound still goes
        self.assertEqual(self.origin_paths(), ["/small"])
        lines = self.requests(p, 2)
        self.assertEqual(sorted((l["class"], l["status"]) for l in lines), [("head too large", 431), ("ok", 200)])

    def _config(self, endpoints):
        config = os.path.join(self.dir, "plain.json")
        with open(config, "w") as f:
            json.dump({"inspect": endpoints}, f)
        return config


if __name__ == "__main__":
    unittest.main()
