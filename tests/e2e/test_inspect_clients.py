# SPDX-License-Identifier: Apache-2.0
"""Real client families through an inspected endpoint that injects a credential (SPEC §18-19,
issue 25's client list): curl --http2, Python's httpx over HTTP/1.1 and over HTTP/2 (python3-h2),
Node's fetch (Node 24 through the proxy variables; the node on PATH, which reads none, under
--transparent capture) and Go's net/http with its default transport (HTTP/2 over TLS), each inside
`boxproxy run` trusting the session's CA by what run sets up, nothing of its own.

The origin is the test's own (TLS on 127.0.0.2, the harness's HttpOrigin) and records what it gets
in this process's memory, where the box cannot reach. The endpoint injects `Authorization: Bearer
{api}` from `--secret api=FILE` (a file run masks in the box) and denies /denied/**. Each client
sends its own Authorization and asks for /allowed/CLIENT and /denied/CLIENT, printing every response
whole (status, protocol, headers, body); the box also writes out its environment. Then: the allowed
path is 200 with the origin's body, over the protocol the client should have chosen; the origin got
the injected credential and never the box's; the denied path is 403 with x-egress-refused and never
reached the origin; nothing the box got or held carries the value.

One `boxproxy run` a class (so one proxy): a shell script in the box runs each client in turn,
each under timeout(1), its output in a file of its own. Where the system cannot make a box, or
cannot capture, or lacks a client, the tests say so and skip."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import types
import unittest

from box_support import RUN_TIMEOUT, BoxRun, BoxTestCase, TlsOrigin, build_go, make_certificate
from inspect_support import INSPECTOR
from test_run_env import NODE24
from test_transparent import CaptureTestCase

SECRET = "sk-clients-5e1f0a9d2c7b4e38"  # no other byte of a session holds this by chance
BODY = "x" * 511 + "\n"  # what the harness's origin answers GET with
DEBIAN_PYTHON = "/usr/bin/python3"  # where python3-httpx and python3-h2 are, whatever python3 is first on PATH
CLIENT_TIMEOUT = 60  # seconds for one client in the box, all its requests

# Each URL of argv: its response whole, one JSON line {"url", "status", "version", "headers", "body"}.
HTTPX_CLIENT = textwrap.dedent("""
    import json, sys
    import httpx
    with httpx.Client(http2=sys.argv[1] == "h2", timeout=20) as client:
        for url in sys.argv[2:]:
            r = client.get(url, headers={"authorization": "Bearer box-own"})
            print(json.dumps({"url": url, "status": r.status_code, "version": r.http_version,
                              "headers": dict(r.headers), "body": r.text}), flush=True)
""")

NODE_CLIENT = textwrap.dedent("""
    (async () => {
      for (const url of process.argv.slice(2)) {
        const r = await fetch(url, {headers: {authorization: 'Bearer box-own'}, signal: AbortSignal.timeout(20000)});
        const headers = Object.fromEntries(r.headers);
        console.log(JSON.stringify({url, status: r.status, version: null, headers, body: await r.text()}));
      }
    })().catch(e => { console.log(String(e), e.cause); process.exitCode = 1; });
""")

GO_CLIENT = textwrap.dedent("""
    package main

    import (
    \t"encoding/json"
    \t"fmt"
    \t"io"
    \t"net/http"
    \t"os"
    \t"time"
    )

    func main() {
    \tclient := &http.Client{Timeout: 20 * time.Second} // its Transport: http.DefaultTransport
    \tfor _, url := range os.Args[1:] {
    \t\treq, _ := http.NewRequest("GET", url, nil)
    \t\treq.Header.Set("Authorization", "Bearer box-own")
    \t\tresp, err := client.Do(req)
    \t\tif err != nil {
    \t\t\tfmt.Println("error", err)
    \t\t\tos.Exit(1)
    \t\t}
    \t\tbody, _ := io.ReadAll(resp.Body)
    \t\tresp.Body.Close()
    \t\theaders := map[string]string{}
    \t\tfor name := range resp.Header {
    \t\t\theaders[name] = resp.Header.Get(name)
    \t\t}
    \t\tline, _ := json.Marshal(map[string]any{"url": url, "status": resp.StatusCode, "version": resp.Proto,
    \t\t\t"headers": headers, "body": string(body)})
    \t\tfmt.Println(string(line))
    \t}
    }
""")

# curl prints each response's head and body as it got them, then "version=" and its protocol.
CURL_CLIENT = textwrap.dedent("""
    for url in "$@"; do
      curl -sS --http2 --max-time 20 -D - -H 'Authorization: Bearer box-own' -w '\\nversion=%{http_version}\\n' \\
        "$url" || exit 1
    done
""")


def curl_records(text):
    """curl's output (CURL_CLIENT) as the JSON clients print theirs: one record a response."""
    parts = re.split(r"\nversion=(\S*)\n", text)  # [response, its version, response, its version, ""]
    records = []
    for response, version in zip(parts[0::2], parts[1::2]):
        head, _, body = response.partition("\r\n\r\n")
        while body.startswith("HTTP/"):  # that was the proxy's answer to curl's CONNECT
            head, _, body = body.partition("\r\n\r\n")
        lines = head.split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        records.append({"status": int(lines[0].split()[1]), "version": version, "headers": headers, "body": body})
    return records


class InspectedClients(BoxTestCase):
    """One `boxproxy run` for the class, each of CLIENTS in its box: name -> its command line
    (formatted with {urls}, its two URLs, and {dir}, the class's directory and the box's working
    one); a client missing here is left out, and its test skips saying why."""

    CLIENTS = {}
    TRANSPARENT = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.path.exists(INSPECTOR):
            raise unittest.SkipTest("boxproxy-inspect is not built next to boxproxy")
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspect-clients-")
        cls.addClassCleanup(tmp.cleanup)
        cls.dir = d = tmp.name
        cert, key = make_certificate(d)
        cls.origin = TlsOrigin(cert, key)
        cls.addClassCleanup(cls.origin.close)
        cls.target = f"origin.test:{cls.origin.port}"
        secret_file = os.path.join(d, "api.secret")
        with open(secret_file, "w") as f:
            f.write(SECRET + "\n")
        config = os.path.join(d, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": cls.target, "inject": {"Authorization": "Bearer {api}"},
                                    "deny": [{"method": "*", "path": "/denied/**"}]}]}, f)
        cls.decisions = os.path.join(d, "decisions.log")
        cls.missing = {}
        script = ["cd \"$1\"", "env > out/env"]
        for name, argv in cls.CLIENTS.items():
            why = cls.missing_client(name)
            if why:
                cls.missing[name] = why
                continue
            urls = f"https://{cls.target}/allowed/{name} https://{cls.target}/denied/{name}"
            script.append(f"timeout -k 5 {CLIENT_TIMEOUT} {argv.format(urls=urls, dir=d)} "
                          f">out/{name}.out 2>out/{name}.err; echo $? >out/{name}.rc")
        if len(script) == 2:
            raise unittest.SkipTest("; ".join(cls.missing.values()))
        os.mkdir(os.path.join(d, "out"))
        for source, text in (("httpx_client.py", HTTPX_CLIENT), ("node.js", NODE_CLIENT), ("curl.sh", CURL_CLIENT)):
            with open(os.path.join(d, source), "w") as f:
                f.write(text)
        driver = os.path.join(d, "driver.sh")
        with open(driver, "w") as f:
            f.write("\n".join(script) + "\n")
        box = BoxRun(types.SimpleNamespace(addCleanup=cls.addClassCleanup))
        cls.leftovers = box.leftovers
        serve = ["--resolve", "origin.test=127.0.0.2", "--upstream-ca", cert, "--config", config,
                 "--secret", f"api={secret_file}", "--log", "json", "--log-file", cls.decisions, "--log-paths"]
        cls.ran = box.run((["--transparent"] if cls.TRANSPARENT else []) + serve, ["sh", driver, d], cwd=d,
                          timeout=RUN_TIMEOUT + CLIENT_TIMEOUT * len(cls.CLIENTS))

    @classmethod
    def missing_client(cls, name):
        """Why the client `name` cannot run here, or None (it may build it: Go)."""
        raise NotImplementedError

    def output(self, name):
        """What the box wrote for `name`: (exit code, standard output, standard error)."""
        if name in self.missing:
            self.skipTest(self.missing[name])
        self.assertEqual(self.ran.returncode, 0, self.ran.stderr[-3000:])
        texts = []
        for ending in ("rc", "out", "err"):
            path = os.path.join(self.dir, "out", f"{name}.{ending}")
            with open(path, encoding="utf-8", errors="replace", newline="") as f:  # curl's heads end in CR LF
                texts.append(f.read())
        return int(texts[0]), texts[1], texts[2]

    def check(self, name, version, records=None):
        """The client `name` got /allowed/NAME (200, the body, over `version` where it tells) and
        /denied/NAME (403, x-egress-refused); the origin got the one with the injected credential
        and never the other; nothing the box got holds the value."""
        code, out, err = self.output(name)
        self.assertEqual(code, 0, f"{name}: stdout={out[-2000:]!r} stderr={err[-3000:]!r}")
        got = records(out) if records else [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(got), 2, out)
        allowed, denied = got
        headers = {k.lower(): v for k, v in denied["headers"].items()}
        self.assertEqual((allowed["status"], allowed["body"]), (200, BODY), out[:1000])
        if version is not None:
            self.assertEqual(allowed["version"], version, allowed)
            self.assertEqual(denied["version"], version, denied)
        self.assertEqual((denied["status"], headers.get("x-egress-refused")), (403, "request denied"), denied)
        seen = [q for q in self.origin.requests if q["path"].endswith(f"/{name}")]
        self.assertEqual([q["path"] for q in seen], [f"/allowed/{name}"])
        self.assertEqual([v for k, v in seen[0]["headers"] if k.lower() == "authorization"], [f"Bearer {SECRET}"])
        self.assertNotIn(SECRET, out + err)
        lines = self.log_lines(kind="request")
        self.assertEqual(sorted((l["path"], l["class"], l["status"]) for l in lines if l["path"].endswith(f"/{name}")),
                         [(f"/allowed/{name}", "ok", 200), (f"/denied/{name}", "request denied", 403)])

    def log_lines(self, **fields):
        with open(self.decisions) as f:
            lines = [json.loads(line) for line in f if line.startswith("{")]
        return [l for l in lines if all(l.get(k) == v for k, v in fields.items())]

    def test_nothing_in_the_box_holds_the_value(self):
        self.assertEqual(self.ran.returncode, 0, self.ran.stderr[-3000:])
        self.assertEqual(self.leftovers(), [], "run left its private directory behind")
        everything = self.ran.stdout + self.ran.stderr
        for entry in sorted(os.listdir(os.path.join(self.dir, "out"))):
            with open(os.path.join(self.dir, "out", entry), "rb") as f:
                everything += f.read()
        self.assertIn(b"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", everything)  # the environment is in it
        self.assertIn(BODY.strip().encode(), everything)  # and the responses
        self.assertNotIn(SECRET.encode(), everything)
        with open(self.decisions, "rb") as f:
            self.assertNotIn(SECRET.encode(), f.read())
        self.assertFalse([q for q in self.origin.requests if q["path"].startswith("/denied/")])


SOCKS_ALL_PROXY = "socks5h://127.0.0.1:3128"  # what run once set ALL_PROXY to


class ThroughTheProxyVariablesTest(InspectedClients):
    """Clients that read HTTPS_PROXY, under plain `run`: their CONNECT, then TLS with the proxy."""

    CLIENTS = {
        "curl": "sh curl.sh {urls}",
        # With the box's whole environment: httpx reads ALL_PROXY too when a client is made, and
        # would fail there on a SOCKS one (run sets it to the HTTP proxy for that reason).
        "httpx": f"{DEBIAN_PYTHON} httpx_client.py h1 {{urls}}",
        "httpx-h2": f"{DEBIAN_PYTHON} httpx_client.py h2 {{urls}}",
        "httpx-socks": (f"env ALL_PROXY={SOCKS_ALL_PROXY} all_proxy={SOCKS_ALL_PROXY} {DEBIAN_PYTHON} "
                        "-c 'import httpx; httpx.Client()'"),
        "go": "{dir}/client {urls}",
        "node24": f"{NODE24} node.js {{urls}}",
    }

    @classmethod
    def missing_client(cls, name):
        if name == "curl":
            return None if shutil.which("curl") else "curl is not installed"
        if name.startswith("httpx"):
            probe = subprocess.run([DEBIAN_PYTHON, "-c", "import httpx, h2"], capture_output=True, timeout=30)
            return None if probe.returncode == 0 else f"{DEBIAN_PYTHON} lacks httpx or h2 (python3-httpx, python3-h2)"
        if name == "go":
            try:
                build_go(GO_CLIENT, cls.dir)
            except unittest.SkipTest as why:
                return str(why)
            return None
        return None if os.access(NODE24, os.X_OK) else f"no Node 24 at {NODE24} (scripts/install-deps)"

    def test_curl_http2(self):
        self.check("curl", "2", records=curl_records)

    def test_httpx_http1(self):
        self.check("httpx", "HTTP/1.1")

    def test_httpx_http2(self):
        self.check("httpx-h2", "HTTP/2")

    def test_httpx_would_refuse_a_socks5h_all_proxy(self):
        # Why run's ALL_PROXY is the HTTP proxy (the manual says so, under the variables run sets).
        code, _, err = self.output("httpx-socks")
        self.assertNotEqual(code, 0)
        self.assertIn("Unknown scheme for proxy URL URL('socks5h://127.0.0.1:3128')", err)

    def test_go_net_http_default_transport_speaks_http2(self):
        self.check("go", "HTTP/2.0")

    def test_node24_fetch(self):
        self.check("node24", None)  # fetch tells no protocol; undici speaks HTTP/1.1 unless told


class UnderCaptureTest(InspectedClients, CaptureTestCase):
    """Node before 24 reads no proxy variable: under `run --transparent` its connection is captured
    and inspected like any other (CaptureTestCase: skipped where this system cannot capture)."""

    CLIENTS = {"node": "node node.js {urls}"}
    TRANSPARENT = True

    @classmethod
    def missing_client(cls, name):
        return None if shutil.which("node") else "nodejs is not installed"

    def test_node_fetch_captured(self):
        self.check("node", None)


del InspectedClients  # a base: its tests run in the classes above

if __name__ == "__main__":
    unittest.main()
