# SPDX-License-Identifier: Apache-2.0
"""curl as a real client of the proxy's Unix socket (SPEC §0: `curl --proxy socks5h://localhost/PATH`)."""

import os
import shutil
import socket
import subprocess
import threading
import unittest

from harness import OriginsMixin, ProxyTestCase, recv_all

CURL = shutil.which("curl")


def curl(*args, timeout=15):
    """Runs curl (never through any proxy from the environment); returns (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    proc = subprocess.run([CURL, "-sS", "--max-time", "10", *args], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


def curl_sends_absolute_form_over_unix_socket():
    """Whether `curl --unix-socket PATH -x http://localhost http://name/` speaks to the socket as
    to an HTTP proxy (absolute-form request). Asked of a throwaway socket of our own."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "probe.sock")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(path)
        listener.listen(1)
        listener.settimeout(5)
        seen = []

        def serve():
            try:
                conn, _ = listener.accept()
                conn.settimeout(3)
                seen.append(conn.recv(4096))
                conn.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                conn.close()
            except OSError:
                pass

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        curl("--unix-socket", path, "-x", "http://localhost", "http://probe.test/x", timeout=10)
        t.join(timeout=6)
        listener.close()
        return bool(seen) and seen[0].startswith(b"GET http://probe.test/"), (seen[0][:60] if seen else b"")


@unittest.skipIf(CURL is None, "curl is not installed")
class CurlTest(OriginsMixin, ProxyTestCase):

    def start(self, *args, **kwargs):
        return self.proxy("--resolve", "origin.test=127.0.0.2", *args, **kwargs)

    def url(self, host="origin.test", path="/get"):
        return f"http://{host}:{self.http.port}{path}"

    def test_socks5h_get(self):
        p = self.start()
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", self.url())
        self.assertEqual(code, 0, err)
        self.assertEqual(out, b"x" * 511 + b"\n")
        (line,) = p.wait_log(kind="socks", cls="ok")
        self.assertEqual(line.host, "origin.test")
        (done,) = p.wait_log(kind="socks", cls="done")
        self.assertGreater(done.down, 512)

    def test_socks5_with_address(self):
        p = self.start()
        code, out, err = curl("--proxy", f"socks5://localhost{p.socket_path}", self.url(host="127.0.0.2"))
        self.assertEqual(code, 0, err)
        self.assertEqual(len(out), 512)
        p.wait_log(kind="socks", cls="ok", ip="127.0.0.2")

    def test_socks5h_post(self):
        p = self.start()
        body = "field=" + "v" * 3000
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--data-binary", body,
                              self.url(path="/post"))
        self.assertEqual(code, 0, err)
        self.assertEqual(out, body.encode())

    def test_socks5h_over_http_tunnel_to_redirect_is_not_followed(self):
        p = self.start()
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "-o", "/dev/null",
                              "-w", "%{http_code}", self.url(path="/redirect"))
        self.assertEqual((code, out), (0, b"302"), err)

    def test_socks4a_get(self):
        p = self.start()
        code, out, err = curl("--proxy", f"socks4a://localhost{p.socket_path}", self.url())
        self.assertEqual(code, 0, err)
        self.assertEqual(len(out), 512)
        p.wait_log(kind="socks4", cls="ok", host="origin.test")

    def test_socks4_with_address(self):
        p = self.start()
        code, out, err = curl("--proxy", f"socks4://localhost{p.socket_path}", self.url(host="127.0.0.2"))
        self.assertEqual(code, 0, err)
        self.assertEqual(len(out), 512)

    def test_socks5h_refused(self):
        p = self.start("--resolve", "mix.test=127.0.0.2,10.0.0.1")
        for host, cls in [("mix.test", "private"), ("10.0.0.1", "private"), ("localhost", "loopback"),
                          ("nx.test", "name not resolved")]:
            with self.subTest(host=host):
                code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", f"http://{host}/")
                self.assertNotEqual(code, 0)
                self.assertEqual(out, b"")
                p.wait_log(kind="socks", cls=cls, host=host)

    def test_socks5h_with_token(self):
        import tempfile
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        token_file = os.path.join(d.name, "token")
        with open(token_file, "w") as f:
            f.write("curl-token-123\n")
        p = self.start("--auth-token-file", token_file)
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--proxy-user",
                              "anyone:curl-token-123", self.url())
        self.assertEqual(code, 0, err)
        self.assertEqual(len(out), 512)
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--proxy-user",
                              "anyone:wrong", self.url())
        self.assertNotEqual(code, 0)
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", self.url())
        self.assertNotEqual(code, 0)
        self.assertNotIn("curl-token-123", p.stderr_text())

    def test_http_proxy_over_unix_socket(self):
        works, seen = curl_sends_absolute_form_over_unix_socket()
        if not works:
            self.skipTest("this curl sends an origin-form request when --unix-socket is set (it ignores -x), "
                          f"so it cannot use the socket as an HTTP proxy: it sent {seen!r}")
        p = self.start()
        code, out, err = curl("--unix-socket", p.socket_path, "-x", "http://localhost", self.url())
        self.assertEqual(code, 0, err)
        self.assertEqual(len(out), 512)
        p.wait_log(kind="http", cls="ok")


if __name__ == "__main__":
    unittest.main()
