# SPDX-License-Identifier: Apache-2.0
"""Inside the box (issue 7): `boxproxy bridge` on its own, and `boxproxy run` with real clients
(curl, Python's urllib, git) in a real network namespace, against origins on the host's 127.0.0.2.

The bridge tests need no namespace. The run tests skip, saying why, where this system does not let
boxproxy make one (they run as root in CI)."""

import hashlib
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from box_support import (RUN_TIMEOUT, Bridge, BoxRun, GitOrigin, TlsOrigin, listening_unix_socket, make_certificate,
                         namespaces_usable, processes_mentioning, wait_gone)
from harness import (ORIGIN_HOST, EchoServer, HalfCloseServer, HttpOrigin, OriginsMixin, ProxyTestCase,
                     ReplyAfterEofServer, SilentServer, binary, closed_within, connect_request, free_port,
                     read_http_response, recv_all, recv_exact, socks5_greeting, socks5_reply, socks5_request,
                     wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
BODY = b"x" * 511 + b"\n"  # what the harness's HTTP origin answers GET / with


# ------------------------------------------------------------------------------------------------
# The bridge on its own


class BridgeTest(OriginsMixin, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.p = self.proxy("--resolve", "origin.test=127.0.0.2")

    def bridge(self, *listen, socket_path=None, **kwargs):
        b = Bridge(socket_path or self.p.socket_path, *listen, **kwargs)
        self.addCleanup(b.kill)
        return b

    def tunnel(self, bridge, target):
        s = bridge.connect()
        s.sendall(connect_request(target))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        return s

    def test_listening_line_names_socket_addresses_and_pid(self):
        b = self.bridge()
        self.assertEqual(b.listening["socket"], self.p.socket_path)
        self.assertEqual(b.listening["pid"], b.pid)
        self.assertEqual(len(b.listening["listen"]), 1)
        self.assertTrue(b.listening["listen"][0].startswith("127.0.0.1:"))
        self.assertNotEqual(b.port, 0)
        self.assertEqual(b.stop(), 0)

    def test_connect_tunnel_through_bridge(self):
        b = self.bridge()
        s = self.tunnel(b, f"origin.test:{self.echo.port}")
        s.sendall(b"hello bridge")
        self.assertEqual(recv_exact(s, 12), b"hello bridge")
        s.close()
        (done,) = self.p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.up, done.down), (12, 12))

    def test_socks5_and_plain_http_through_the_same_port(self):
        # The bridge knows no protocol: the proxy sniffs the first byte.
        b = self.bridge()
        s = b.connect()
        s.sendall(socks5_greeting() + socks5_request("origin.test", self.echo.port) + b"early")
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        self.assertEqual(recv_exact(s, 10), socks5_reply(0))
        self.assertEqual(recv_exact(s, 5), b"early")
        s.close()
        h = b.connect()
        h.sendall(f"GET http://origin.test:{self.http.port}/ HTTP/1.1\r\nHost: origin.test:{self.http.port}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        response = read_http_response(h)
        self.assertEqual((response.status, response.body), (200, BODY))
        h.close()

    def test_client_half_close_is_passed_on_and_reply_still_arrives(self):
        origin = ReplyAfterEofServer()
        self.addCleanup(origin.close)
        b = self.bridge()
        s = self.tunnel(b, f"origin.test:{origin.port}")
        s.sendall(b"abc")
        s.shutdown(socket.SHUT_WR)
        self.assertEqual(recv_all(s), b"got 3 bytes: abc")
        s.close()

    def test_origin_half_close_is_passed_on_and_client_can_still_send(self):
        origin = HalfCloseServer()
        self.addCleanup(origin.close)
        b = self.bridge()
        s = self.tunnel(b, f"origin.test:{origin.port}")
        self.assertEqual(recv_all(s), HalfCloseServer.GREETING)  # then EOF: the FIN came through
        s.sendall(b"after your FIN")
        s.shutdown(socket.SHUT_WR)
        self.assertTrue(wait_until(lambda: origin.connections and origin.connections[0]["eof"], 5))
        self.assertEqual(bytes(origin.connections[0]["data"]), b"after your FIN")
        s.close()

    def test_big_transfer_both_ways_is_byte_exact(self):
        # 16 MiB each way at once through the echo origin: back-pressure and the splice path.
        b = self.bridge()
        s = self.tunnel(b, f"origin.test:{self.echo.port}")
        s.settimeout(30)
        size = 16 << 20
        data = os.urandom(1 << 20) * 16
        sent_digest = hashlib.sha256(data).hexdigest()

        def send():
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        got = hashlib.sha256()
        n = 0
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got.update(chunk)
            n += len(chunk)
        t.join(30)
        self.assertEqual(n, size)
        self.assertEqual(got.hexdigest(), sent_digest)
        s.close()
        (done,) = self.p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.up, done.down), (size, size))

    def test_descriptors_back_to_baseline_after_impatient_clients(self):
        silent = SilentServer()
        self.addCleanup(silent.close)
        b = self.bridge()
        baseline = b.fd_count()
        clients = []
        for i in range(40):
            c = b.connect()
            if i % 4 == 0:
                pass  # says nothing at all
            elif i % 4 == 1:
                c.sendall(b"CONNECT origin.te")  # half a head
            elif i % 4 == 2:
                c.sendall(connect_request(f"origin.test:{silent.port}"))
            else:
                c.sendall(connect_request(f"origin.test:{silent.port}") + b"x" * 100000)
            clients.append(c)
        self.assertTrue(wait_until(lambda: b.fd_count() >= baseline + 40, 5), "the bridge did not take the clients")
        for i, c in enumerate(clients):
            if i % 2:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset
            c.close()
        settled = wait_until(lambda: b.fd_count() <= baseline, timeout=5)
        self.assertTrue(settled, f"bridge holds {b.fd_count()} descriptors, {baseline} before the clients came")
        self.assertEqual(b.stop(), 0)

    def test_sigterm_with_open_tunnels_exits_0_and_closes_them(self):
        b = self.bridge()
        s = self.tunnel(b, f"origin.test:{self.echo.port}")
        started = time.monotonic()
        self.assertEqual(b.stop(), 0)
        self.assertLess(time.monotonic() - started, 1.5)
        self.assertTrue(closed_within(s, 2))
        s.close()

    def test_sigint_exits_0(self):
        b = self.bridge()
        b.proc.send_signal(signal.SIGINT)
        self.assertEqual(b.proc.wait(timeout=3), 0)

    def test_unreachable_socket_resets_the_client_and_the_bridge_lives_on(self):
        with tempfile.TemporaryDirectory() as d:
            # A socket whose proxy has gone: its name is there, nobody listens (the bridge must
            # find a socket at start; it holds that one, issue 21).
            path = os.path.join(d, "nobody.sock")
            listening_unix_socket(path).close()
            b = self.bridge(socket_path=path)
            for _ in range(3):
                # The reset may come before the connect is seen to finish, or at the first read.
                with self.assertRaises((ConnectionResetError, BrokenPipeError)):
                    with b.connect() as c:
                        c.sendall(b"CONNECT x:1 HTTP/1.1\r\n\r\n")
                        data = c.recv(100)
                        if data == b"":
                            raise AssertionError("a clean EOF, not a reset")
            self.assertTrue(wait_until(lambda: "cannot reach" in b.stderr_text(), 3), b.stderr_text())
            # Rate-limited: three failures within a second make one line.
            self.assertEqual(b.stderr_text().count("cannot reach"), 1, b.stderr_text())
            self.assertEqual(b.stop(), 0)

    def test_emfile_backs_off_and_recovers(self):
        # Under a low descriptor limit the bridge pauses accepting instead of spinning or dying,
        # and serves again once descriptors are free.
        def low_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24))

        b = self.bridge(preexec_fn=low_limit)
        held = []
        for _ in range(30):
            try:
                held.append(b.connect(timeout=2))
            except OSError:
                pass  # reset: accepted just as descriptors ran out
        self.assertTrue(wait_until(lambda: "pausing accepts" in b.stderr_text(), 5), b.stderr_text())
        for c in held:
            c.close()
        s = self.tunnel(b, f"origin.test:{self.echo.port}")
        s.sendall(b"again")
        self.assertEqual(recv_exact(s, 5), b"again")
        s.close()
        self.assertEqual(b.stop(), 0)

    def test_two_listen_addresses(self):
        port = free_port("127.0.0.1")
        b = self.bridge("127.0.0.1:0", f"127.0.0.1:{port}")
        self.assertEqual(b.listening["listen"][1], f"127.0.0.1:{port}")
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(connect_request(f"origin.test:{self.echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.close()


class BridgeUsageTest(unittest.TestCase):

    def bridge(self, *args):
        return subprocess.run([binary(), "bridge", *args], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)

    def test_usage_errors_exit_2_naming_option_and_value(self):
        for args, words in [
            ((), "--socket PATH is required"),
            (("--socket", "/x", "--listen", "1.2.3:80"), '--listen: "1.2.3:80"'),
            (("--socket", "/x", "--listen", "127.0.0.1:65536"), '--listen: "127.0.0.1:65536"'),
            (("--socket", "/x", "--listen", "localhost:3128"), '--listen: "localhost:3128"'),
            (("--socket", "/x", "--listen", "::1:3128"), '--listen: "::1:3128"'),
            (("--socket", "/x", "--frobnicate"), '"--frobnicate"'),
            (("--socket", "/" + "a" * 200), "--socket"),
            (("--socket",), "--socket: a value is needed"),
        ]:
            with self.subTest(args=args):
                r = self.bridge(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(words, r.stderr.decode())
                self.assertEqual(r.stdout, b"")

    def test_a_path_that_is_not_a_socket_exits_1(self):
        r = self.bridge("--socket", "/etc/passwd", "--listen", "127.0.0.1:0")
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a socket", r.stderr.decode())

    def test_help(self):
        r = self.bridge("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"--listen", r.stdout)


# ------------------------------------------------------------------------------------------------
# boxproxy run: real clients in a real namespace


class BoxTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        why = namespaces_usable()
        if why:
            raise unittest.SkipTest(why)
        cls.http = HttpOrigin()

    @classmethod
    def tearDownClass(cls):
        cls.http.close()

    def setUp(self):
        self.box = BoxRun(self)

    def run_box(self, command, *serve_args, **kwargs):
        r = self.box.run(["--resolve", "origin.test=127.0.0.2", *serve_args], command, **kwargs)
        self.assertEqual(self.box.leftovers(), [], "run left its private directory behind")
        return r

    def assert_ok(self, r):
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")

    # -- clients through the proxy

    def test_curl_plain_http_via_http_proxy(self):
        r = self.run_box(["curl", "-sS", "--max-time", "20", f"http://origin.test:{self.http.port}/"])
        self.assert_ok(r)
        self.assertEqual(r.stdout, BODY)
        self.assertIn(f'egress http host="origin.test" port={self.http.port} ip=127.0.0.2 class=ok'.encode(), r.stderr)

    def test_curl_https_via_connect_to_a_tls_origin(self):
        with tempfile.TemporaryDirectory() as d:
            cert, key = make_certificate(d)
            origin = TlsOrigin(cert, key)
            self.addCleanup(origin.close)
            r = self.run_box(["curl", "-sS", "--max-time", "20", "--cacert", cert,
                              f"https://origin.test:{origin.port}/"])
        self.assert_ok(r)
        self.assertEqual(r.stdout, BODY)
        self.assertIn(f'egress connect host="origin.test" port={origin.port} ip=127.0.0.2 class=ok'.encode(), r.stderr)
        self.assertEqual(len(origin.requests), 1)

    def test_curl_socks5h_on_the_bridge_and_all_proxy(self):
        url = f"http://origin.test:{self.http.port}/"
        # SOCKS5 on the bridge's port, explicitly; and ALL_PROXY alone (run sets it to the HTTP proxy).
        script = (f"curl -sS --max-time 20 --proxy socks5h://127.0.0.1:3128 {url} && "
                  f"env -u http_proxy -u HTTP_PROXY curl -sS --max-time 20 {url}")
        r = self.run_box(["sh", "-c", script])
        self.assert_ok(r)
        self.assertEqual(r.stdout, BODY + BODY)
        self.assertEqual(r.stderr.count(f'egress socks host="origin.test" port={self.http.port} '
                                        f'ip=127.0.0.2 class=ok'.encode()), 1, r.stderr)
        self.assertEqual(r.stderr.count(f'egress http host="origin.test" port={self.http.port} '
                                        f'ip=127.0.0.2 class=ok'.encode()), 1, r.stderr)

    def test_python_urllib_inside_the_box(self):
        code = ("import urllib.request, sys; "
                f"sys.stdout.buffer.write(urllib.request.urlopen('http://origin.test:{self.http.port}/x', "
                "timeout=20).read())")
        r = self.run_box([sys.executable, "-c", code])
        self.assert_ok(r)
        self.assertEqual(r.stdout, BODY)

    def test_git_clone_over_plain_http(self):
        with tempfile.TemporaryDirectory() as d:
            origin = GitOrigin(d)
            self.addCleanup(origin.close)
            dest = os.path.join(d, "clone")
            r = self.run_box(["git", "clone", "-q", f"http://origin.test:{origin.port}/repo.git", dest],
                             env={"HOME": d, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"})
            self.assert_ok(r)
            with open(os.path.join(dest, "README")) as f:
                self.assertEqual(f.read(), GitOrigin.CONTENT)
        self.assertTrue(any(p.endswith("info/refs?service=git-upload-pack") for p in origin.hits), origin.hits)

    # -- no other way out, and refusals

    def test_direct_connection_to_the_origin_fails(self):
        # The box's loopback is its own: 127.0.0.2 there has nobody listening, and lo is the only
        # interface, so nothing reaches the host's origin except through the proxy.
        before = len(self.http.requests)
        code = ("import socket, sys\n"
                "print(sorted(n for _, n in socket.if_nameindex()))\n"
                "s = socket.socket()\n"
                "s.settimeout(5)\n"
                "try:\n"
                f"    s.connect(('127.0.0.2', {self.http.port}))\n"
                "    print('CONNECTED')\n"
                "except OSError as e:\n"
                "    print('refused' if isinstance(e, ConnectionRefusedError) else 'failed: %r' % e)\n")
        r = self.run_box(["sh", "-c",
                          f"curl --noproxy '*' -sS --max-time 5 http://127.0.0.2:{self.http.port}/; "
                          f"echo curl=$?; {sys.executable} -c \"$0\"", code])
        self.assert_ok(r)
        out = r.stdout.decode()
        self.assertIn("curl=7", out)  # couldn't connect
        self.assertIn("['lo']", out)
        self.assertIn("refused", out)
        self.assertNotIn("CONNECTED", out)
        self.assertEqual(len(self.http.requests), before)

    def test_a_name_resolving_to_a_private_address_is_refused(self):
        r = self.run_box(["curl", "-sS", "-i", "--max-time", "20", "http://bad.test/"],
                         "--resolve", "bad.test=10.0.0.1")
        self.assert_ok(r)
        self.assertIn(b"HTTP/1.1 403", r.stdout)
        self.assertIn(b"x-egress-refused: private", r.stdout)
        self.assertIn(b'egress http host="bad.test" port=80 ip=10.0.0.1 class=private', r.stderr)
        self.assertNotIn(b"class=done", r.stderr)  # no exchange: nothing was dialled
        # And through CONNECT: curl sees the proxy's refusal.
        r = self.run_box(["curl", "-sS", "--max-time", "20", "https://bad.test/"], "--resolve", "bad.test=10.0.0.1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"403", r.stderr)
        self.assertIn(b'egress connect host="bad.test" port=443 ip=10.0.0.1 class=private', r.stderr)

    def test_an_ip_literal_off_the_host_list_is_refused(self):
        before = len(self.http.requests)
        r = self.run_box(["sh", "-c",
                          f"curl -sS -i --max-time 20 http://127.0.0.2:{self.http.port}/; echo; "
                          f"curl -sS --max-time 20 http://origin.test:{self.http.port}/"],
                         "--allow", f"origin.test:{self.http.port}")
        self.assert_ok(r)
        self.assertIn(b"HTTP/1.1 403", r.stdout)
        self.assertIn(b"x-egress-refused: not-listed", r.stdout)
        self.assertIn(b"127.0.0.2 is an address, not a name on this box's network list", r.stdout)
        self.assertTrue(r.stdout.endswith(BODY), r.stdout[-600:])  # the listed name gets through
        self.assertEqual(len(self.http.requests), before + 1)

    # -- run itself: status, environment, teardown

    def test_environment_inside(self):
        r = self.run_box(["env"])
        self.assert_ok(r)
        env = dict(line.split("=", 1) for line in r.stdout.decode().splitlines() if "=" in line)
        # ALL_PROXY too: Python's httpx fails at once on a SOCKS one (test_inspect_clients).
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            self.assertEqual(env.get(name), "http://127.0.0.1:3128")
        for name in ("NO_PROXY", "no_proxy"):
            self.assertEqual(env.get(name), "localhost,127.0.0.1,::1")
        self.assertTrue(env.get("BOXPROXY_SOCKET", "").endswith("/egress.sock"))

    # -- the session token in the variables (issue 10 item 14)

    # ':', '@', '/' and '%' must not change where the proxy URL points: run percent-encodes them.
    TOKEN = "s3cret:t@ken/%x"
    TOKEN_IN_URL = "s3cret%3At%40ken%2F%25x"

    def token_file(self):
        path = os.path.join(self.box.dir, "token")
        with open(path, "w") as f:
            f.write(self.TOKEN + "\n")
        return path

    def curl_through_http_proxy_and_all_proxy(self):
        url = f"http://origin.test:{self.http.port}/"
        return ["sh", "-c", f"echo $HTTP_PROXY $ALL_PROXY; curl -sS --max-time 20 {url} && "
                            f"env -u http_proxy -u HTTP_PROXY curl -sS --max-time 20 {url}"]

    def assert_token_carried(self, r):
        self.assert_ok(r)
        self.assertEqual(r.stdout, f"http://box:{self.TOKEN_IN_URL}@127.0.0.1:3128 "
                                   f"http://box:{self.TOKEN_IN_URL}@127.0.0.1:3128\n".encode() + BODY + BODY)

    def test_the_variables_carry_the_token_of_the_proxy_run_starts(self):
        r = self.run_box(self.curl_through_http_proxy_and_all_proxy(), "--auth-token-file", self.token_file())
        self.assert_token_carried(r)
        self.assertEqual(r.stderr.count(f'egress http host="origin.test" port={self.http.port} ip=127.0.0.2 '
                                        f'class=ok'.encode()), 2, r.stderr)
        self.assertNotIn(b"auth required", r.stderr)

    def test_the_variables_carry_a_token_file_named_in_the_config(self):
        config = os.path.join(self.box.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"auth-token-file": self.token_file()}, f)
        self.assert_token_carried(self.run_box(self.curl_through_http_proxy_and_all_proxy(), "--config", config))

    def test_the_variables_carry_the_token_given_with_socket(self):
        from harness import Proxy
        token = self.token_file()
        p = Proxy("--resolve", "origin.test=127.0.0.2", "--auth-token-file", token, dns=self.box.dns)
        self.addCleanup(p.cleanup)
        p.start()
        r = subprocess.run([binary(), "run", "--socket", p.socket_path, "--auth-token-file", token, "--",
                            *self.curl_through_http_proxy_and_all_proxy()], capture_output=True, timeout=RUN_TIMEOUT,
                           env=self.box.env(), stdin=subprocess.DEVNULL)
        self.assert_token_carried(r)
        p.wait_log(kind="http", cls="ok", host="origin.test", count=2)
        self.assertEqual(p.find_logs(cls="auth required"), [])
        # run reads the file by serve's rules, and names only the file.
        r = subprocess.run([binary(), "run", "--socket", p.socket_path, "--auth-token-file", "/nonexistent/token",
                            "--", "true"], capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env(),
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn(b"boxproxy run: --auth-token-file: ", r.stderr)
        p.stop()

    # -- the service manager's variables (issue 10 item 15)

    def test_service_manager_variables_reach_neither_the_proxy_nor_the_command(self):
        notify_path = os.path.join(self.box.dir, "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(notify.close)
        notify.bind(notify_path)
        names = ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")
        r = self.run_box(["env"], env={"NOTIFY_SOCKET": notify_path, "LISTEN_FDS": "1",
                                       "LISTEN_PID": str(os.getpid()), "LISTEN_FDNAMES": "run"})
        self.assert_ok(r)
        env = dict(line.split("=", 1) for line in r.stdout.decode().splitlines() if "=" in line)
        for name in names:
            self.assertNotIn(name, env)
        # The proxy was ready before COMMAND started: a READY=1 would be queued by now.
        notify.setblocking(False)
        with self.assertRaises(BlockingIOError):
            notify.recv(4096)

    def test_the_ready_descriptor_is_the_proxys_alone(self):
        # COMMAND must not be able to say READY=1 in the proxy's name, nor hold off the EOF.
        read_end, write_end = os.pipe()
        self.addCleanup(os.close, read_end)
        try:
            code = (f"import os\ntry:\n    os.fstat({write_end})\n    print('inherited')\n"
                    "except OSError:\n    print('closed')\n")
            r = self.run_box([sys.executable, "-c", code], "--ready-fd", write_end, pass_fds=(write_end,))
        finally:
            os.close(write_end)
        self.assert_ok(r)
        self.assertEqual(r.stdout, b"closed\n")
        for expected in (b"READY=1\n", b""):  # then EOF: every copy closed, nobody else can write
            self.assertTrue(select.select([read_end], [], [], 5)[0], f"waiting for {expected!r}")
            self.assertEqual(os.read(read_end, 100), expected)

    def test_the_control_descriptor_is_the_proxys_alone(self):
        # With the supervisor's channel COMMAND could edit the host list or answer its own asks.
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        fd = theirs.fileno()
        try:
            code = (f"import os\ntry:\n    os.fstat({fd})\n    print('inherited')\n"
                    "except OSError:\n    print('closed')\n")
            r = self.run_box([sys.executable, "-c", code], "--control-fd", fd, pass_fds=(fd,))
        finally:
            theirs.close()
        self.assert_ok(r)
        self.assertEqual(r.stdout, b"closed\n")
        # The proxy held it, and let go at its exit: every copy is closed now.
        ours.settimeout(5)
        self.assertEqual(ours.recv(100), b"")

    def test_exit_status_is_the_commands(self):
        self.assertEqual(self.run_box(["sh", "-c", "exit 7"]).returncode, 7)
        self.assertEqual(self.run_box(["sh", "-c", "kill -TERM $$"]).returncode, 128 + signal.SIGTERM)
        r = self.run_box(["/nonexistent/command"])
        self.assertEqual(r.returncode, 127)
        self.assertIn(b"/nonexistent/command", r.stderr)

    def test_usage_errors_exit_2(self):
        for args, words in [
            (["run", "true"], b"-- COMMAND is needed"),
            (["run", "--"], b"a COMMAND is needed"),
            (["run", "--max-tunnels", "0", "--", "true"], b'--max-tunnels: "0"'),
            (["run", "--socket", "/x", "--permit", "127.0.0.3/32", "--", "true"], b"--permit"),
        ]:
            with self.subTest(args=args):
                r = subprocess.run([binary(), *args], capture_output=True, timeout=RUN_TIMEOUT,
                                   env=self.box.env(), stdin=subprocess.DEVNULL)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(words, r.stderr)
                self.assertEqual(self.box.leftovers(), [])

    def test_sigterm_to_run_ends_the_command_and_tears_everything_down(self):
        marker = f"boxproxy-box-{os.getpid()}-{time.monotonic_ns()}"
        proc = subprocess.Popen(self.box.argv([], ["sh", "-c", f"echo ready; exec sleep 30 # {marker}"]),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.box.env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        ready = [None]
        t = threading.Thread(target=lambda: ready.__setitem__(0, proc.stdout.readline()), daemon=True)
        t.start()
        t.join(20)
        self.assertEqual(ready[0], b"ready\n")
        helpers = processes_mentioning(self.box.dir)  # serve and bridge name the socket in it
        self.assertGreaterEqual(len(helpers), 2, helpers)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=10), 128 + signal.SIGTERM)
        proc.stdout.close()
        proc.stderr.close()
        self.assertTrue(wait_gone(helpers + processes_mentioning(marker)), "a process outlived run")
        self.assertEqual(self.box.leftovers(), [])

    def test_socket_of_a_running_proxy(self):
        from harness import Proxy
        p = Proxy("--resolve", "origin.test=127.0.0.2", dns=self.box.dns)
        self.addCleanup(p.cleanup)
        p.start()
        r = subprocess.run([binary(), "run", "--socket", p.socket_path, "--", "curl", "-sS", "--max-time", "20",
                            f"http://origin.test:{self.http.port}/"], capture_output=True, timeout=RUN_TIMEOUT,
                           env=self.box.env(), stdin=subprocess.DEVNULL)
        self.assert_ok(r)
        self.assertEqual(r.stdout, BODY)
        p.wait_log(kind="http", cls="ok", host="origin.test")
        self.assertTrue(p.alive(), "run must leave a proxy it did not start")
        p.stop()

    def test_unprivileged_user_gets_a_user_namespace(self):
        if os.geteuid() != 0:
            self.skipTest("already unprivileged: every other test covers it")
        nobody = 65534
        probe = subprocess.run([binary(), "--version"], capture_output=True, timeout=10,
                               preexec_fn=lambda: (os.setgid(nobody), os.setuid(nobody)))
        if probe.returncode != 0:
            self.skipTest(f"user {nobody} cannot run {binary()} here")
        os.chmod(self.box.dir, 0o777)

        def drop():
            os.setgroups([])
            os.setgid(nobody)
            os.setuid(nobody)

        r = self.box.run(["--resolve", "origin.test=127.0.0.2"],
                         ["sh", "-c", f"id -u; curl -sS --max-time 20 http://origin.test:{self.http.port}/"],
                         preexec_fn=drop)
        if r.returncode == 125 and b"namespace" in r.stderr:
            self.skipTest("unprivileged user namespaces are off here: " + r.stderr.decode()[:300])
        self.assert_ok(r)
        self.assertEqual(r.stdout, b"0\n" + BODY)  # root inside, the caller outside


if __name__ == "__main__":
    unittest.main()
