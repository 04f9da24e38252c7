# SPDX-License-Identifier: Apache-2.0
"""Credentials the box never sees (SPEC §19: --secret, the control channel's "secret", "inject")
through the real binary and its inspector: a TLS origin of the test's own on 127.0.0.2 records the
headers it received; the box's side is a raw keep-alive TLS connection trusting the session CA.
The origin gets the injected credential and never the box's own; a value replaced (over the
control channel, or by rewriting the file and SIGHUP) applies from the next request of an open
connection; a revoked one makes the next request `secret missing` and the origin gets nothing; no
byte serve wrote (standard output and error, the log file, the audit, the control replies) holds a
value; --secret's usage errors exit 2 without quoting a file's contents."""

import json
import os
import signal
import ssl
import subprocess
import tempfile
import textwrap
import unittest

from box_support import BoxTestCase, TlsOrigin, make_certificate
from control_support import proxy_with_control_fd
from harness import HttpOrigin, ProxyTestCase, binary, read_http_response, recv_all, recv_exact, wait_until
from inspect_support import INSPECTOR, InspectRig

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
# Values no other byte of a session would hold by chance.
FIRST = "sk-first-7f3a9c1e0b5d4e2f"
SECOND = "sk-second-c0ffee4a11b5e6d7"
FROM_CONTROL = "sk-control-9d8e7f6a5b4c3d2e"


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class SecretsTest(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.host = f"origin.test:{self.origin.port}"
        self.secret_file = self.write("api.secret", FIRST + "\n")
        self.audit = os.path.join(self.dir, "audit.jsonl")
        self.replies = []  # every control reply, as sent back

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def config(self, **endpoint):
        """A config inspecting the origin with `endpoint`'s keys (by default injecting
        Authorization: Bearer {api})."""
        obj = {"host": self.host, "inject": {"Authorization": "Bearer {api}"}, **endpoint}
        return self.write("config.json", json.dumps({"inspect": [obj]}))

    def start(self, *args, secret=True, **endpoint):
        """serve with the config, --secret api=FILE (unless not `secret`), a log file, an audit and
        a control channel: (proxy, control client)."""
        more = ["--secret", f"api={self.secret_file}"] if secret else []
        return proxy_with_control_fd(self, "--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out",
                                     self.ca, "--upstream-ca", self.cert, "--audit", self.audit,
                                     "--config", self.config(**endpoint), *more, *args, log_file=True)

    def control(self, client, **fields):
        reply = client.request("secret", **fields)
        self.replies.append(json.dumps(reply))
        return reply

    def open_tls(self, p):
        s = p.connect()
        s.sendall(f"CONNECT {self.host} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        tls = ssl.create_default_context(cafile=self.ca).wrap_socket(s, server_hostname="origin.test")
        self.addCleanup(tls.close)
        return tls

    def get(self, tls, path, extra=""):
        """One keep-alive request on `tls` carrying the box's own Authorization: the response."""
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer box-own\r\n{extra}\r\n"
                    .encode())
        return read_http_response(tls)

    def authorizations(self):
        """The Authorization headers of each request the origin received, in order."""
        return [[v for k, v in r["headers"] if k.lower() == "authorization"] for r in self.origin.requests]

    def assert_no_value_in_anything_serve_wrote(self, p, values):
        p.stop()
        written = [p.stderr_text().encode(), p.stdout_rest or b"", "\n".join(self.replies).encode()]
        for path in (p.log_path, self.audit):
            with open(path, "rb") as f:
                written.append(f.read())
        everything = b"\n".join(written)
        self.assertIn(b"secret missing", everything)  # the grep reads what it should
        for value in values:
            for form in (value.encode(), value.encode().hex().encode()):
                self.assertNotIn(form, everything)

    def test_the_origin_gets_the_injected_credential_never_the_boxs(self):
        p, _ = self.start()
        tls = self.open_tls(p)
        response = self.get(tls, "/one", "authorization: Bearer second-of-the-box\r\n")
        self.assertEqual(response.status, 200)
        self.assertEqual(self.authorizations(), [[f"Bearer {FIRST}"]])
        self.assertNotIn(FIRST.encode(), response.raw_head + response.body)
        line = p.wait_log(kind="request", count=1)[0].obj
        self.assertEqual(line["class"], "ok")

    def test_a_value_replaced_or_revoked_applies_to_the_next_request_of_an_open_connection(self):
        p, client = self.start()
        tls = self.open_tls(p)
        self.assertEqual(self.get(tls, "/one").status, 200)
        self.assertEqual(self.control(client, name="api", value=SECOND), {"id": 1, "ok": True})
        self.assertEqual(self.get(tls, "/two").status, 200)  # the same connection
        self.assertEqual(self.control(client, name="api", value=None), {"id": 2, "ok": True})
        refused = self.get(tls, "/three")
        self.assertEqual((refused.status, refused.header("x-egress-refused")), (403, "secret missing"))
        self.assertEqual(self.control(client, name="api", value=FROM_CONTROL)["ok"], True)
        self.assertEqual(self.get(tls, "/four").status, 200)  # refused, and the connection went on
        self.assertEqual([r["path"] for r in self.origin.requests], ["/one", "/two", "/four"])
        self.assertEqual(self.authorizations(),
                         [[f"Bearer {FIRST}"], [f"Bearer {SECOND}"], [f"Bearer {FROM_CONTROL}"]])
        lines = [line.obj for line in p.wait_log(kind="request", count=4)]
        self.assertEqual([l["class"] for l in lines], ["ok", "ok", "secret missing", "ok"])
        self.assertEqual(lines[2]["status"], 403)
        self.assertEqual(len({l["id"] for l in lines}), 1)  # one client connection throughout
        self.assert_no_value_in_anything_serve_wrote(p, [FIRST, SECOND, FROM_CONTROL])

    def test_a_secret_never_set_is_secret_missing_in_report_mode_too(self):
        p, client = self.start(secret=False, mode="report", rules=[{"method": "GET", "path": "/allowed"}])
        tls = self.open_tls(p)
        for path in ("/allowed", "/denied"):
            refused = self.get(tls, path)
            self.assertEqual((refused.status, refused.header("x-egress-refused")), (403, "secret missing"))
        self.assertEqual(self.origin.requests, [])
        lines = [line.obj for line in p.wait_log(kind="request", count=2)]
        self.assertEqual([(l["class"], l.get("report")) for l in lines], [("secret missing", None)] * 2)
        self.control(client, name="api", value=SECOND)
        self.assert_no_value_in_anything_serve_wrote(p, [SECOND])

    def test_sighup_rereads_the_file_through_the_descriptor_opened_at_start(self):
        p, _ = self.start()
        tls = self.open_tls(p)
        with open(self.secret_file, "r+") as f:  # rewritten in place: the same file
            f.truncate(0)
            f.write(SECOND + "\n")
        p.proc.send_signal(signal.SIGHUP)
        p.wait_raw("sighup: --secret api re-read")
        self.assertEqual(self.get(tls, "/one").status, 200)
        # Emptied (half-written): the value in force is kept, and the log says why.
        with open(self.secret_file, "r+") as f:
            f.truncate(0)
        p.proc.send_signal(signal.SIGHUP)
        p.wait_raw("sighup: --secret api: kept the value in force: the file is empty")
        with open(self.secret_file, "r+") as f:
            f.write(SECOND + "\n")
        # Another file renamed over the path: the descriptor still reads the one named at start.
        os.rename(self.write("other", "sk-renamed-over-it\n"), self.secret_file)
        p.proc.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: "\n".join(p.raw_log_lines()).count("sighup: --secret api re-read") == 2, 5))
        self.assertEqual(self.get(tls, "/two").status, 200)
        self.assertEqual(self.authorizations(), [[f"Bearer {SECOND}"], [f"Bearer {SECOND}"]])
        self.assertNotIn(SECOND, "\n".join(p.raw_log_lines()))

    def test_a_value_under_12_bytes_is_refused_and_the_one_in_force_kept(self):
        # SPEC §19a: a short value would match at random in the responses searched for it. The
        # control op answers an error; a SIGHUP that reads one keeps the value in force and says so.
        p, client = self.start()
        tls = self.open_tls(p)
        short = "sk-short-11"  # 11 bytes
        reply = self.control(client, name="api", value=short)
        self.assertEqual(reply, {"id": 1, "ok": False, "error": (
            'secret: "value" is shorter than 12 bytes (a short value would match at random in the responses searched '
            "for it)")})
        self.assertEqual(self.get(tls, "/one").status, 200)
        with open(self.secret_file, "r+") as f:  # rewritten in place with a short value
            f.truncate(0)
            f.write(short + "\n")
        p.proc.send_signal(signal.SIGHUP)
        p.wait_raw("sighup: --secret api: kept the value in force: the file is shorter than 12 bytes")
        self.assertEqual(self.get(tls, "/two").status, 200)
        # Twelve bytes are enough, by either way in.
        twelve = "sk-twelve-12"
        self.assertEqual(self.control(client, name="api", value=twelve), {"id": 2, "ok": True})
        self.assertEqual(self.get(tls, "/three").status, 200)
        self.assertEqual(self.authorizations(), [[f"Bearer {FIRST}"], [f"Bearer {FIRST}"], [f"Bearer {twelve}"]])
        self.assertNotIn(short, "\n".join(p.raw_log_lines()))

    def test_the_live_inspect_op_refuses_a_credential_on_a_wildcard(self):
        # SPEC §19a, live as at start: an error reply, and nothing changed.
        p, client = self.start()
        for change in ({"add": [{"host": "*.example.test", "inject": {"x-key": "{api}"}}]},
                       {"set": [{"host": self.host}, {"host": "*.example.test:8443", "secrets": ["api"]}]}):
            with self.subTest(change=change):
                reply = client.request("inspect", **change)
                self.assertFalse(reply["ok"], reply)
                self.assertIn("is a wildcard endpoint and cannot carry", reply["error"])
        in_force = client.request("inspect", add=[])["inspect"]
        self.assertEqual([e["host"] for e in in_force], [self.host])
        self.assertEqual(in_force[0]["inject"], {"Authorization": "Bearer {api}"})

    def test_the_secret_op_without_an_inspector_is_refused(self):
        p, client = proxy_with_control_fd(self, "--log", "json")
        reply = client.request("secret", name="api", value=SECOND)
        self.assertFalse(reply["ok"])
        self.assertIn("no request inspector runs in this session", reply["error"])
        self.assertNotIn(SECOND, json.dumps(reply))

    def test_a_plain_request_to_an_injecting_endpoint_is_refused(self):
        plain = HttpOrigin()
        self.addCleanup(plain.close)
        self.host = f"origin.test:{plain.port}"
        p, _ = self.start()
        s = p.connect()
        try:
            s.sendall(f"GET http://{self.host}/p HTTP/1.1\r\nHost: {self.host}\r\nConnection: close\r\n\r\n".encode())
            self.assertTrue(recv_all(s, timeout=5).startswith(b"HTTP/1.1 403"))
        finally:
            s.close()
        self.assertEqual(plain.requests, [])
        self.assertEqual(p.wait_log(kind="request", count=1)[0].obj["class"], "secret missing")



@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class PlaceholderTest(InspectRig, ProxyTestCase):
    """serve --placeholder (SPEC §19): the stand-in is printed before the listening line, swapped
    for the value in the target and header values of a request to an endpoint whose "secrets"
    lists it, and refused as `secret misdirected` (secret=NAME, never the value) anywhere else the
    proxy can read: another inspected endpoint, plain HTTP."""

    def setUp(self):
        super().setUp()
        self.other = TlsOrigin(self.cert, self.key)
        self.addCleanup(self.other.close)
        self.plain = HttpOrigin()
        self.addCleanup(self.plain.close)
        self.host = f"origin.test:{self.origin.port}"
        path = os.path.join(self.dir, "api.secret")
        with open(path, "w") as f:
            f.write(FIRST + "\n")
        self.secret_file = path

    def start(self, *args, rules=None, secrets=("api",)):
        secrets = list(secrets) if isinstance(secrets, tuple) else secrets
        endpoints = [{"host": self.host, "secrets": secrets}, {"host": f"origin.test:{self.other.port}"}]
        if rules:
            endpoints[0]["rules"] = rules
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": endpoints}, f)
        return self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                          "--upstream-ca", self.cert, "--config", config, "--placeholder", "api", *args)

    def exchange(self, p, port, request):
        s = p.connect()
        target = f"origin.test:{port}"
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        tls = ssl.create_default_context(cafile=self.ca).wrap_socket(s, server_hostname="origin.test")
        self.addCleanup(tls.close)
        tls.sendall(request.encode())
        return read_http_response(tls)

    def test_the_placeholder_is_printed_and_swapped_at_the_places_named(self):
        # SPEC §19a: the object form names the places; the value goes in percent-encoded in a query.
        places = {"api": ["authorization", "header:x-api-key", "query:key"]}
        p = self.start("--secret", f"api={self.secret_file}", secrets=places)
        placeholder = p.placeholders["api"]
        self.assertRegex(placeholder, r"^bxp_api_[0-9a-f]{32}$")
        response = self.exchange(p, self.origin.port, f"GET /q?key={placeholder} HTTP/1.1\r\nHost: {self.host}\r\n"
                                                      f"X-Api-Key: {placeholder}\r\n"
                                                      f"Authorization: Bearer {placeholder}\r\n\r\n")
        self.assertEqual(response.status, 200)
        [got] = self.origin.requests
        self.assertEqual(got["path"], f"/q?key={FIRST}")
        headers = dict((k.lower(), v) for k, v in got["headers"])
        self.assertEqual((headers["x-api-key"], headers["authorization"]), (FIRST, f"Bearer {FIRST}"))
        self.assertNotIn(FIRST.encode(), response.raw_head + response.body)
        p.stop()
        self.assertNotIn(FIRST, p.stderr_text())

    def test_a_placeholder_elsewhere_than_its_places_is_misdirected(self):
        # SPEC §19a: the list form swaps in Authorization only; a header the origin may reflect
        # (X-Note) or the path is never a place, so the request is refused and nothing is sent.
        p = self.start("--secret", f"api={self.secret_file}")
        placeholder = p.placeholders["api"]
        for request in (f"GET /q HTTP/1.1\r\nHost: {self.host}\r\nX-Note: k={placeholder};\r\n\r\n",
                        f"GET /v1/{placeholder} HTTP/1.1\r\nHost: {self.host}\r\n\r\n",
                        f"GET /q?key={placeholder} HTTP/1.1\r\nHost: {self.host}\r\n\r\n"):
            response = self.exchange(p, self.origin.port, request)
            self.assertEqual((response.status, response.header("x-egress-refused")), (403, "secret misdirected"))
        self.assertEqual(self.origin.requests, [])

    def test_a_placeholder_whose_secret_is_not_set_is_secret_missing(self):
        p = self.start()
        response = self.exchange(p, self.origin.port, f"GET /q HTTP/1.1\r\nHost: {self.host}\r\n"
                                                      f"Authorization: Bearer {p.placeholders['api']}\r\n\r\n")
        self.assertEqual((response.status, response.header("x-egress-refused")), (403, "secret missing"))
        self.assertEqual(self.origin.requests, [])

    def test_a_query_value_goes_in_percent_encoded_and_never_changes_the_path(self):
        with open(self.secret_file, "w") as f:
            f.write("../admin?x=1&y/z\n")
        p = self.start("--secret", f"api={self.secret_file}", rules=[{"method": "GET", "path": "/files/*"}],
                       secrets={"api": ["query:key"]})
        response = self.exchange(p, self.origin.port, f"GET /files/a?key={p.placeholders['api']} HTTP/1.1\r\n"
                                                      f"Host: {self.host}\r\n\r\n")
        self.assertEqual(response.status, 200)
        [got] = self.origin.requests
        self.assertEqual(got["path"], "/files/a?key=..%2Fadmin%3Fx%3D1%26y%2Fz")

    def test_a_placeholder_sent_to_another_inspected_endpoint_is_misdirected(self):
        p = self.start("--secret", f"api={self.secret_file}")
        spelled = p.placeholders["api"].upper().replace("_", "%5F")  # any spelling is found
        response = self.exchange(p, self.other.port, f"GET /x HTTP/1.1\r\nHost: origin.test:{self.other.port}\r\n"
                                                     f"Cookie: s={spelled}\r\n\r\n")
        self.assertEqual((response.status, response.header("x-egress-refused")), (403, "secret misdirected"))
        self.assertEqual(self.other.requests, [])
        line = p.wait_log(kind="request", count=1)[0].obj
        self.assertEqual((line["class"], line["secret"]), ("secret misdirected", "api"))

    def test_a_placeholder_in_a_plain_request_is_misdirected(self):
        p = self.start("--secret", f"api={self.secret_file}")
        target = f"origin.test:{self.plain.port}"
        s = p.connect()
        try:
            s.sendall(f"GET http://{target}/?k={p.placeholders['api']} HTTP/1.1\r\nHost: {target}\r\n"
                      f"Connection: close\r\n\r\n".encode())
            answer = recv_all(s, timeout=5)
        finally:
            s.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 403"), answer[:200])
        self.assertIn(b"x-egress-refused: secret misdirected", answer)
        self.assertEqual(self.plain.requests, [])
        line = p.wait_log(kind="http", count=1)[0].obj
        self.assertEqual((line["class"], line["secret"]), ("secret misdirected", "api"))

    def test_a_placeholder_in_a_tunnels_target_name_is_misdirected_before_any_lookup(self):
        p = self.start()
        target = f"{p.placeholders['api']}.evil.example:443"
        s = p.connect()
        try:
            s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            answer = recv_all(s, timeout=5)
        finally:
            s.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 403"), answer[:200])
        line = p.wait_log(kind="connect", count=1)[0].obj
        self.assertEqual((line["class"], line["secret"]), ("secret misdirected", "api"))
        # SOCKS5 (socks5h: the name goes to the proxy): reply 2, not allowed.
        name = f"{p.placeholders['api']}.evil.example".encode()
        s = p.connect()
        try:
            s.sendall(b"\x05\x01\x00")
            self.assertEqual(recv_exact(s, 2), b"\x05\x00")
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + b"\x01\xbb")
            self.assertEqual(recv_exact(s, 2), b"\x05\x02")
        finally:
            s.close()
        self.assertEqual(p.wait_log(kind="socks", count=1)[0].obj["secret"], "api")


# In the box: what it may learn of the secret, one line each (a value found prints FOUND).
BOX_LOOK = textwrap.dedent("""
    value="$1"; file="$2"; url="$3"
    if cat "$file" > seen 2>/dev/null && [ -s seen ]; then echo "file readable"; else echo "file masked"; fi
    grep -q -- "$value" seen 2>/dev/null && echo "FOUND in the file"
    env | grep -q -- "$value" && echo "FOUND in the environment"
    grep -q -- "$value" /proc/self/environ && echo "FOUND in /proc/self/environ"
    curl -sS --max-time 20 -D head -o body -H "Authorization: Bearer the-box-own" "$url" || echo "curl failed"
    cat head body | grep -q -- "$value" && echo "FOUND in the response"
    echo "status $(head -1 head | cut -d' ' -f2)"
""")


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class RunSecretsTest(BoxTestCase):
    """`run --secret`: the origin (in this test's process, out of the box's reach) gets the
    credential; the box cannot read the secret's file, and neither its environment nor any
    response holds the value."""

    def test_the_box_never_holds_the_value_its_requests_carry(self):
        d = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-run-secret-"))
        cert, key = make_certificate(d)
        origin = TlsOrigin(cert, key)
        self.addCleanup(origin.close)
        secret_file = os.path.join(d, "api.key")
        with open(secret_file, "w") as f:
            f.write(FIRST + "\n")
        config = os.path.join(d, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": f"origin.test:{origin.port}",
                                    "inject": {"Authorization": "Bearer {api}"}}]}, f)
        script = os.path.join(d, "look.sh")
        with open(script, "w") as f:
            f.write(BOX_LOOK)
        r = self.box.run(["--resolve", "origin.test=127.0.0.2", "--upstream-ca", cert, "--config", config,
                          "--secret", f"api={secret_file}"],
                         ["sh", script, FIRST, secret_file, f"https://origin.test:{origin.port}/x"], cwd=d)
        out = r.stdout.decode()
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertEqual(out.splitlines(), ["file masked", "status 200"], r.stderr[-3000:])
        headers = [[v for k, v in q["headers"] if k.lower() == "authorization"] for q in origin.requests]
        self.assertEqual(headers, [[f"Bearer {FIRST}"]])
        self.assertNotIn(FIRST.encode(), r.stderr)  # the proxy's log, run's own words
        with open(secret_file) as f:
            self.assertEqual(f.read(), FIRST + "\n")  # the host's file untouched

    def test_secret_env_gives_the_box_a_placeholder_that_only_the_proxy_swaps(self):
        d = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-run-placeholder-"))
        cert, key = make_certificate(d)
        origin = TlsOrigin(cert, key)
        self.addCleanup(origin.close)
        secret_file = os.path.join(d, "api.key")
        with open(secret_file, "w") as f:
            f.write(FIRST + "\n")
        config = os.path.join(d, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": f"origin.test:{origin.port}", "secrets": {"api": ["header:x-api-key"]}}]}, f)
        script = os.path.join(d, "use.sh")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""
                echo "var ${API_KEY%_*}"
                env | grep -q -- "$1" && echo "FOUND in the environment"
                curl -sS --max-time 20 -o body -w '%{http_code}\\n' -H "X-Api-Key: $API_KEY" "$2"
                grep -q -- "$1" body && echo "FOUND in the response"
                true
            """))
        r = self.box.run(["--resolve", "origin.test=127.0.0.2", "--upstream-ca", cert, "--config", config,
                          "--secret", f"api={secret_file}", "--secret-env", "API_KEY=api"],
                         ["sh", script, FIRST, f"https://origin.test:{origin.port}/x"], cwd=d)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertEqual(r.stdout.decode().splitlines(), ["var bxp_api", "200"], r.stderr[-3000:])
        [got] = origin.requests
        self.assertEqual([v for k, v in got["headers"] if k.lower() == "x-api-key"], [FIRST])
        self.assertNotIn(FIRST.encode(), r.stderr)

    def test_secret_env_with_a_running_proxy_is_a_usage_error(self):
        r = subprocess.run([binary(), "run", "--socket", "/nonexistent/s.sock", "--secret-env", "K=api", "--", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--secret-env", r.stderr)


class SecretUsageTest(unittest.TestCase):
    """--secret's usage errors: exit 2, naming the option and the value given, never the file's
    contents."""

    def setUp(self):
        self.dir = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-secret-"))

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def serve(self, *args):
        return subprocess.run([binary(), "serve", "--socket", os.path.join(self.dir, "s.sock"), *args],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=20)

    def test_bad_secrets_are_usage_errors_that_never_show_the_contents(self):
        good = self.write("good", b"VISIBLE-good\n")
        cases = [
            ("Bad-Name=" + good, None),
            ("api", None),
            ("api=" + os.path.join(self.dir, "missing"), None),
            ("api=" + self.dir, None),  # a directory
            ("api=" + self.write("space", b"VISIBLE has space\n"), b"VISIBLE has space"),
            ("api=" + self.write("crlf", b"VISIBLE\r\nX-Injected: 1\n"), b"X-Injected"),
            ("api=" + self.write("nul", b"VISIBLE\0x\n"), b"VISIBLE"),
            ("api=" + self.write("empty", b"\n"), None),
            ("api=" + self.write("short", b"VISIBLE-sho\n"), b"VISIBLE-sho"),  # 11 bytes (SPEC §19a)
            ("api=" + self.write("long", b"V" * 4097), b"V" * 64),
        ]
        for value, contents in cases:
            with self.subTest(value=value):
                r = self.serve("--inspect", "origin.test", "--secret", value)
                self.assertEqual(r.returncode, 2, r.stderr)
                err = r.stderr.decode("utf-8", "replace")
                self.assertIn("--secret", err)
                self.assertIn(value, err)
                if contents is not None:
                    self.assertNotIn(contents, r.stderr)
        r = self.serve("--inspect", "origin.test", "--secret", "api=" + os.path.join(self.dir, "short"))
        self.assertIn(b"FILE is shorter than 12 bytes", r.stderr)
        self.assertEqual(self.serve("--inspect", "origin.test", "--secret", f"api={good}",
                                    "--secret", f"api={good}").returncode, 2)
        too_many = [a for i in range(65) for a in ("--secret", f"s{i}={good}")]
        r = self.serve("--inspect", "origin.test", *too_many)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"64", r.stderr)
        r = self.serve("--secret", f"api={good}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--secret needs an inspected endpoint", r.stderr)
        self.assertNotIn(b"VISIBLE-good", r.stderr)


if __name__ == "__main__":
    unittest.main()
