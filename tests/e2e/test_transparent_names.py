# SPDX-License-Identifier: Apache-2.0
"""Names in a captured box (SPEC §16, issue 14): inside `run --transparent`, programs that ignore
every proxy variable resolve a listed name through the bridge's DNS responder and reach it by
that name: Python's socket.create_connection, curl --noproxy '*', Node's fetch and http.get
(Debian's nodejs), a Go net/http client (Debian's golang-go), over IPv4 and IPv6. An off-list name
is NXDOMAIN and no query for it leaves; a ClientHello naming another host is closed.

The origin is the test's own on 127.0.0.2, named with --resolve; the tests skip, saying why, where
this system cannot make a box or lacks libnftables, and the Node and Go ones where those are not
installed."""

import shutil
import sys
import tempfile
import textwrap
import unittest

from box_support import build_go
from test_transparent import CaptureTestCase

PY_CLIENT = textwrap.dedent("""
    import json, socket, sys
    port = int(sys.argv[1])
    out = {}
    # The Host names the port, as every client does: the tunnel's Host check (SPEC §16) reads it.
    request = b"GET / HTTP/1.0\\r\\nHost: origin.test:%d\\r\\n\\r\\n" % port
    s = socket.create_connection(("origin.test", port), timeout=10)
    s.sendall(request)
    out["v4"] = s.recv(12).decode()
    out["v4_peer"] = s.getpeername()[0]
    s.close()
    # IPv6: the AAAA answer, captured the same way.
    family, kind, proto, _, address = socket.getaddrinfo("origin.test", port, socket.AF_INET6, socket.SOCK_STREAM)[0]
    s = socket.socket(family, kind, proto)
    s.settimeout(10)
    s.connect(address)
    s.sendall(request)
    out["v6"] = s.recv(12).decode()
    out["v6_peer"] = s.getpeername()[0]
    s.close()
    try:
        socket.getaddrinfo("other.test", port)
        out["other"] = "resolved"
    except socket.gaierror as e:
        out["other"] = e.errno
    print(json.dumps(out))
""")

TLS_CLIENT = textwrap.dedent("""
    import socket, ssl, sys
    port = int(sys.argv[1])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("origin.test", port), timeout=10)
    try:
        context.wrap_socket(raw, server_hostname="other.example")
        print("handshake")
    except (ssl.SSLError, OSError) as e:
        print("closed", type(e).__name__)
""")

NODE_CLIENT = textwrap.dedent("""
    const http = require('http');
    const port = process.argv[1];
    fetch(`http://origin.test:${port}/`).then(r => {
      console.log('fetch', r.status);
      http.get(`http://origin.test:${port}/`, res => { console.log('get', res.statusCode); res.resume(); });
    }).catch(e => { console.log('error', e.cause ? e.cause.code : e.message); process.exit(1); });
""")

GO_CLIENT = textwrap.dedent("""
    package main

    import (
    \t"fmt"
    \t"net/http"
    \t"os"
    )

    func main() {
    \tresp, err := http.Get("http://origin.test:" + os.Args[1] + "/")
    \tif err != nil {
    \t\tfmt.Println("error", err)
    \t\tos.Exit(1)
    \t}
    \tfmt.Println("go", resp.StatusCode)
    }
""")


class TransparentNamesTest(CaptureTestCase):
    WITH_ORIGIN = True

    def run_box(self, command, extra=(), env=None):
        port = self.origin.port
        r = self.box.run(["--transparent", "--allow", f"origin.test:{port}", "--resolve", "origin.test=127.0.0.2",
                          "--log-file", self.log, *extra], command, env=env)
        return r

    def log_text(self):
        with open(self.log, encoding="utf-8") as f:
            return f.read()

    def test_python_reaches_a_listed_name_over_v4_and_v6_and_an_off_list_name_is_nxdomain(self):
        import json
        r = self.run_box([sys.executable, "-c", PY_CLIENT, str(self.origin.port)])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-3000:])
        out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        self.assertRegex(out["v4"], r"^HTTP/1\.[01] 200$")
        self.assertRegex(out["v6"], r"^HTTP/1\.[01] 200$")
        self.assertTrue(out["v4_peer"].startswith("198.18.") or out["v4_peer"].startswith("198.19."), out)
        self.assertTrue(out["v6_peer"].startswith("fd62:6f78:7072::"), out)
        self.assertEqual(out["other"], -2, out)  # EAI_NONAME
        text = self.log_text()
        self.assertIn(f'egress socks host="origin.test" port={self.origin.port} ip=127.0.0.2 class=ok', text)
        self.assertIn('egress resolve host="other.test"', text)
        self.assertIn("class=not-listed", text)
        # No query for the off-list name left the machine (the proxy's nameserver never heard of it).
        self.assertNotIn("other.test", self.box.dns.names_asked())

    def test_curl_without_proxy_variables(self):
        if not shutil.which("curl"):
            self.skipTest("curl is not installed")
        r = self.run_box(["curl", "-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                          f"http://origin.test:{self.origin.port}/"])
        self.assertEqual(r.stdout.decode(), "200", r.stderr.decode(errors="replace")[-2000:])

    def test_node_fetch_and_http_get(self):
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            self.skipTest("nodejs is not installed")
        r = self.run_box([node, "-e", NODE_CLIENT, str(self.origin.port)])
        self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode(errors="replace")[-2000:])
        self.assertIn("fetch 200", r.stdout.decode())
        self.assertIn("get 200", r.stdout.decode())

    def test_go_net_http(self):
        with tempfile.TemporaryDirectory(prefix="boxproxy-go-") as d:
            r = self.run_box([build_go(GO_CLIENT, d), str(self.origin.port)])
        self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode(errors="replace")[-2000:])
        self.assertIn("go 200", r.stdout.decode())

    def test_a_client_hello_naming_another_host_is_closed(self):
        r = self.run_box([sys.executable, "-c", TLS_CLIENT, str(self.origin.port)])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-2000:])
        self.assertTrue(r.stdout.decode().startswith("closed"), r.stdout)
        self.assertIn("class=sni mismatch", self.log_text())


if __name__ == "__main__":
    unittest.main()
