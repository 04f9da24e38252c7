# SPDX-License-Identifier: Apache-2.0
"""The published formats (SPEC §12, §15): schemas/*.v1.json, JSON Schema draft 2020-12.

Real output is validated against them: the JSON log and audit lines of every protocol (ok, refused,
done), the stats lines (SIGUSR1 and at exit), a message line and a log-dropped line, the listening
lines of serve and of the bridge, the bridge's stats line, real config files (the schema and serve's
own reading must agree on each) and what --check-config prints, and, once the binary has the control
channel, its replies and events. The schemas are also shown to refuse what breaks the promises (a
line without an id, a C1 control in a host, an unknown class), so these tests can fail. Their
descriptions point at sections of the manual the package carries, never at a document it does not.

Needs Debian's python3-jsonschema (scripts/install-deps).
"""

import copy
import glob
import inspect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import jsonschema
except ImportError:  # an interpreter of its own (pyenv): Debian's package is where install-deps put it
    sys.path.append("/usr/lib/python3/dist-packages")
    import jsonschema

from box_support import Bridge
from harness import (OriginsMixin, Proxy, ProxyTestCase, binary, connect_request, read_http_response, recv_all,
                     recv_exact, socks4_connect, socks5_connect, wait_until)
from test_log_bounds import StalledReaderProxy
from test_ask import resolve_reply

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMAS = os.path.join(SOURCE, "schemas")
ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
LINE_SCHEMAS = ("decision-line", "done-line", "request-line", "stats-line", "log-dropped-line", "message-line")
OTHER_SCHEMAS = ("config", "check-config", "listening-line", "placeholder-line", "bridge-stats-line",
                 "control-request", "control-reply", "control-event")


def load_schema(name):
    with open(os.path.join(SCHEMAS, f"{name}.v1.json")) as f:
        return json.load(f)


def validator(name):
    return jsonschema.Draft202012Validator(load_schema(name))


def errors(name, instance):
    return [e.message for e in validator(name).iter_errors(instance)]


class SchemaFilesTest(unittest.TestCase):

    def test_every_schema_is_draft_2020_12_and_carries_its_version(self):
        files = sorted(glob.glob(os.path.join(SCHEMAS, "*.json")))
        names = {os.path.basename(f) for f in files}
        self.assertEqual(names, {f"{n}.v1.json" for n in LINE_SCHEMAS + OTHER_SCHEMAS})
        for path in files:
            with self.subTest(schema=os.path.basename(path)):
                with open(path) as f:
                    schema = json.load(f)
                jsonschema.Draft202012Validator.check_schema(schema)
                self.assertEqual(schema["$schema"], "https://json-schema.org/draft/2020-12/schema")
                self.assertEqual(schema["$id"], "https://boxproxy.invalid/schemas/" + os.path.basename(path))
                self.assertEqual(schema["version"], 1)
                with open(path, "rb") as f:
                    f.read().decode("ascii")

    def test_the_control_channels_endpoints_are_the_config_files(self):
        # The inspect op takes the config file's objects and answers with --check-config's: each
        # schema carries its own copy (a schema stands alone), and the copies never drift.
        for name, source in (("control-request", "config"), ("control-reply", "check-config")):
            for definition in ("inspect-endpoint", "inspect-rule"):
                with self.subTest(schema=name, definition=definition):
                    self.assertEqual(load_schema(name)["$defs"][definition], load_schema(source)["$defs"][definition])

    def test_descriptions_point_at_the_manual(self):
        with open(os.path.join(SOURCE, "man", "boxproxy.1")) as f:
            sections = {line[4:].strip('"') for line in f.read().splitlines() if line.startswith((".SH ", ".SS "))}
        for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.json"))):
            with open(path) as f:
                text = f.read()
            with self.subTest(schema=os.path.basename(path)):
                self.assertNotIn("SPEC", text, "the package carries no SPEC: point at the manual")
                self.assertNotIn("\\u00a7", text)
                # "boxproxy(1), A SECTION", "... and ANOTHER", "..., A SECTION, Subsection"
                for cited in re.findall(r"boxproxy\(1\), ([^)]*)\)", text):
                    for name in re.split(r", | and |; ", cited):
                        self.assertIn(name, sections, cited)
                self.assertIn("boxproxy(1), ", json.loads(text)["description"])

    def test_cmake_installs_them_under_share_boxproxy_schemas(self):
        build = os.path.dirname(os.path.dirname(os.path.abspath(binary())))
        if not os.path.exists(os.path.join(build, "cmake_install.cmake")):
            self.skipTest(f"{binary()} is not in a CMake build directory")
        with tempfile.TemporaryDirectory() as prefix:
            r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            installed = sorted(os.listdir(os.path.join(prefix, "share", "boxproxy", "schemas")))
        self.assertEqual(installed, sorted(os.path.basename(f) for f in glob.glob(os.path.join(SCHEMAS, "*.json"))))


def line_schema_for(obj):
    """The schema a JSON log line claims to follow, by its shape."""
    if "event" in obj:
        return {"stats": "stats-line", "log-dropped": "log-dropped-line", "message": "message-line"}.get(obj["event"])
    if obj.get("kind") == "request":
        return "request-line"
    return "done-line" if obj.get("class") == "done" else "decision-line"


class LogLinesTest(OriginsMixin, ProxyTestCase):

    def assert_line_valid(self, raw):
        obj = json.loads(raw)
        name = line_schema_for(obj)
        self.assertIsNotNone(name, raw)
        self.assertEqual(errors(name, obj), [], raw)
        # Exactly one line schema takes it: a consumer can tell the kinds of line apart by schema.
        taking = [n for n in LINE_SCHEMAS if validator(n).is_valid(obj)]
        self.assertEqual(taking, [name], raw)
        return name, obj

    def test_every_json_log_and_audit_line_validates(self):
        audit_dir = tempfile.mkdtemp(prefix="boxproxy-schema-")
        self.addCleanup(shutil.rmtree, audit_dir, True)
        audit = os.path.join(audit_dir, "audit.jsonl")
        p = self.proxy("--log", "json", "--audit", audit, "--label", "schema test",
                       "--resolve", "origin.test=127.0.0.2", "--resolve", "mix.test=127.0.0.2,10.0.0.1")
        port = self.echo.port
        # CONNECT: ok and done, and refusals.
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.sendall(b"abc")
        recv_exact(s, 3)
        s.close()
        for target in ("mix.test:443", "10.0.0.1:443", "nx.test:443", "bad!host:443"):
            r = p.connect()
            r.sendall(connect_request(target))
            recv_all(r)
            r.close()
        high, *_ = socks5_connect(p, b"caf\xc3\xa9\x85\xff.test", 443)  # a host of bytes >= 0x80
        high.close()
        # Plain HTTP: ok and done, and a refusal that names no host.
        h = p.connect()
        h.sendall(f"GET http://origin.test:{self.http.port}/ HTTP/1.1\r\nHost: origin.test:{self.http.port}\r\n"
                  "Connection: close\r\n\r\n".encode())
        self.assertEqual(read_http_response(h).status, 200)
        h.close()
        h = p.connect()
        h.sendall(b"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n")
        recv_all(h)
        h.close()
        # SOCKS5 and SOCKS4a: ok and done, and refusals.
        s5, *_ = socks5_connect(p, "origin.test", port)
        s5.sendall(b"x")
        recv_exact(s5, 1)
        s5.close()
        s5, *_ = socks5_connect(p, "10.0.0.1", 443)
        s5.close()
        s4, *_ = socks4_connect(p, port, host=b"origin.test")
        s4.sendall(b"y")
        recv_exact(s4, 1)
        s4.close()
        s4, *_ = socks4_connect(p, 443, host=b"mix.test")
        s4.close()
        p.wait_log(cls="done", count=4)
        p.wait_log(kind="socks4", cls="private")
        os.kill(p.pid, signal.SIGHUP)  # a message line
        p.wait_raw(r'"event":"message"')
        os.kill(p.pid, signal.SIGUSR1)
        p.wait_raw(r'"event":"stats"')
        p.stop()  # and the stats line at exit

        raw = p.raw_log_lines()
        seen = {}
        for line in raw:
            name, obj = self.assert_line_valid(line)
            seen.setdefault(name, []).append(obj)
        self.assertEqual(len(seen["stats-line"]), 2, raw)
        self.assertEqual(len(seen["message-line"]), 1, raw)
        self.assertEqual({o["kind"] for o in seen["done-line"]}, {"connect", "http", "socks", "socks4"})
        refused = [o for o in seen["decision-line"] if o["class"] != "ok"]
        self.assertEqual({o["kind"] for o in refused}, {"connect", "http", "socks", "socks4"})
        self.assertIn(None, [o["host"] for o in refused], "a refusal without a host")
        self.assertIn("caf\\xc3\\xa9\\x85\\xff.test", [o["host"] for o in refused], "a host of high bytes")
        # The audit: the decision and done lines again, every one valid.
        with open(audit) as f:
            audit_lines = f.read().splitlines()
        self.assertEqual(len(audit_lines), len(seen["decision-line"]) + len(seen["done-line"]))
        for line in audit_lines:
            self.assertIn(self.assert_line_valid(line)[0], ("decision-line", "done-line"))

    def test_stats_lines_of_a_text_log_validate(self):
        p = self.proxy()
        r = p.connect()
        r.sendall(connect_request("10.0.0.1:443"))
        recv_all(r)
        r.close()
        p.wait_log(cls="private")
        os.kill(p.pid, signal.SIGUSR1)
        p.wait_raw(r'"event":"stats"')
        p.stop()
        stats = [l for l in p.raw_log_lines() if l.startswith("{")]
        self.assertEqual(len(stats), 2, p.raw_log_lines())
        for line in stats:
            self.assertEqual(self.assert_line_valid(line)[0], "stats-line")

    def test_a_log_dropped_line_validates(self):
        # Standard error is a pipe nobody reads for a while: lines past the queue are dropped and
        # counted, and the count comes as a log-dropped line once the reader is back.
        p = StalledReaderProxy("--log", "json", "--label", "dropped")
        self.addCleanup(p.cleanup)
        self._proxies.append(p)
        p.start()
        name = ("a" * 60 + ".") * 3 + "b" * 16 + ".test"
        for _ in range(2500):
            r = p.connect(timeout=3)
            r.sendall(connect_request(f"{name}:443"))
            recv_all(r, timeout=3)
            r.close()
        p.start_reading()
        line = p.wait_raw(r'^\{"event":"log-dropped"', timeout=10)
        self.assertEqual(self.assert_line_valid(line)[0], "log-dropped-line")
        self.assertEqual(json.loads(line)["label"], "dropped")
        p.stop()


class ListeningAndBridgeLinesTest(ProxyTestCase):
    """serve's and the bridge's listening lines, and the bridge's stats line, as they really come."""

    def bridge(self, *extra):
        b = Bridge(self.p.socket_path, "127.0.0.1:0", extra=extra)
        self.addCleanup(b.proc.stderr.close)  # after stop, which leaves it to the reader
        self.addCleanup(b.stop)
        return b

    def bridge_stats(self, b):
        os.kill(b.pid, signal.SIGUSR1)
        line = wait_until(lambda: next((l for l in b.stderr_lines if l.startswith('{"event":"stats"')), None), 5)
        self.assertIsNotNone(line, b.stderr_text())
        return json.loads(line)

    def test_listening_lines_and_the_bridge_stats_line_validate(self):
        self.p = self.proxy()
        self.assertEqual(errors("listening-line", self.p.listening), [], self.p.listening)
        self.assertEqual(set(self.p.listening), {"event", "socket", "pid"})
        plain = self.bridge()
        self.assertEqual(errors("listening-line", plain.listening), [], plain.listening)
        every = self.bridge("--transparent", "127.0.0.1:0", "--dns", "127.0.0.1:0")
        self.assertEqual(errors("listening-line", every.listening), [], every.listening)
        self.assertLessEqual({"listen", "transparent", "dns"}, set(every.listening))
        with socket.create_connection((plain.host, plain.port), timeout=5) as c:  # one connection counted
            c.sendall(connect_request("10.0.0.1:443"))
            recv_all(c)
        for b, has_dns, accepted in ((plain, False, 1), (every, True, 0)):
            stats = self.bridge_stats(b)
            self.assertEqual(errors("bridge-stats-line", stats), [], stats)
            self.assertEqual(("dns" in stats, stats["accepted"]), (has_dns, accepted), stats)
            self.assertEqual([n for n in LINE_SCHEMAS if validator(n).is_valid(stats)], [], stats)


class SchemasRefuseTest(unittest.TestCase):
    """What breaks a promise does not validate: a schema that took anything would prove nothing."""

    DECISION = {"ts": "2026-12-01T12:49:22.233Z", "id": 8, "kind": "connect", "host": "10.0.0.1", "port": 443,
                "ip": "10.0.0.1", "class": "private"}
    DONE = {"ts": "2026-12-01T12:49:22.233Z", "id": 7, "kind": "socks", "host": "example.com", "port": 443,
            "ip": "93.184.215.14", "class": "done", "up": 517, "down": 4420, "ms": 212, "end": "client-closed"}
    STATS = {"event": "stats", "open": 1, "used": 17, "lookups": 9, "clients": 3,
             "refused": {"not-listed": 2, "private": 1, "lookup budget": 1}, "reported": 0, "up": 52311,
             "down": 904113}

    def check(self, name, good, breakages):
        self.assertEqual(errors(name, good), [])
        for what, change in breakages:
            with self.subTest(schema=name, breakage=what):
                bad = copy.deepcopy(good)
                change(bad)
                self.assertNotEqual(errors(name, bad), [], f"{what}: {bad}")

    def test_decision_line(self):
        self.check("decision-line", self.DECISION, [
            ("no id", lambda o: o.pop("id")),
            ("id 0", lambda o: o.update(id=0)),
            ("id as text", lambda o: o.update(id="8")),
            ("an unknown class", lambda o: o.update({"class": "maybe"})),
            ("an unknown kind", lambda o: o.update(kind="socks6")),
            ("a C1 control in the host", lambda o: o.update(host="a\u0085b")),
            ("a host longer than 255 escaped bytes can make", lambda o: o.update(host="a" * 1021)),
            ("a port out of range", lambda o: o.update(port=65536)),
            ("an ip that is not one", lambda o: o.update(ip="example.com")),
            ("a time stamp that is not UTC", lambda o: o.update(ts="2026-12-01T12:49:22.233+01:00")),
            ("a label outside printable ASCII", lambda o: o.update(label="caf\u00e9")),
            ("a label too long", lambda o: o.update(label="x" * 129)),
            ("a key of its own", lambda o: o.update(path="/secret")),
            ("an end on a decision", lambda o: o.update(end="error")),
        ])

    def test_done_line(self):
        self.check("done-line", self.DONE, [
            ("no end", lambda o: o.pop("end")),
            ("an unknown end", lambda o: o.update(end="eof")),
            ("no id", lambda o: o.pop("id")),
            ("negative bytes", lambda o: o.update(up=-1)),
            ("a null host", lambda o: o.update(host=None)),
            ("not done", lambda o: o.update({"class": "ok"})),
            ("a tls word not in the vocabulary", lambda o: o.update(tls="unknown_ca")),
        ])
        self.assertEqual(errors("done-line", dict(self.DONE, end="error", tls="unknown-ca")), [])

    def test_stats_line(self):
        self.check("stats-line", self.STATS, [
            ("an id", lambda o: o.update(id=3)),
            ("a time stamp", lambda o: o.update(ts="2026-12-01T12:49:22.233Z")),
            ("an unknown class refused", lambda o: o["refused"].update(maybe=1)),
            ("no open", lambda o: o.pop("open")),
            ("no lookups", lambda o: o.pop("lookups")),
            ("negative lookups", lambda o: o.update(lookups=-1)),
            ("no reported", lambda o: o.pop("reported")),
        ])

    def test_small_lines(self):
        self.check("log-dropped-line", {"event": "log-dropped", "n": 3},
                   [("n 0", lambda o: o.update(n=0)), ("another event", lambda o: o.update(event="dropped"))])
        self.check("message-line", {"ts": "2026-12-01T12:49:22.233Z", "event": "message", "text": "sighup"},
                   [("non-ASCII text", lambda o: o.update(text="\u009b2J")), ("no ts", lambda o: o.pop("ts"))])

    def test_listening_lines(self):
        self.check("listening-line", {"event": "listening", "socket": "/run/boxproxy/s1.sock", "pid": 4242}, [
            ("no pid", lambda o: o.pop("pid")),
            ("pid 0", lambda o: o.update(pid=0)),
            ("no socket", lambda o: o.pop("socket")),
            ("another event", lambda o: o.update(event="ready")),
            ("a key of its own", lambda o: o.update(port=3128)),
            ("transparent without listen", lambda o: o.update(transparent=["127.0.0.1:3129"])),
        ])
        self.check("listening-line", {"event": "listening", "socket": "/run/egress.sock",
                                      "listen": ["127.0.0.1:3128", "[::1]:3128"], "transparent": ["127.0.0.1:3129"],
                                      "dns": ["[::1]:53"], "pid": 42}, [
            ("a name for an address", lambda o: o.update(listen=["localhost:3128"])),
            ("no port", lambda o: o.update(listen=["127.0.0.1"])),
            ("IPv6 without brackets", lambda o: o.update(dns=["::1:53"])),
            ("an empty list", lambda o: o.update(transparent=[])),
            ("dns as a string", lambda o: o.update(dns="127.0.0.1:53")),
        ])

    def test_bridge_stats_line(self):
        line = {"event": "stats", "open": 1, "accepted": 9, "failed": 0, "captured": 2, "refused": 1,
                "dns": {"queries": 3, "refused": 1, "busy": 0}}
        self.check("bridge-stats-line", line, [
            ("no accepted", lambda o: o.pop("accepted")),
            ("negative open", lambda o: o.update(open=-1)),
            ("refused by class, as serve's", lambda o: o.update(refused={"private": 1})),
            ("dns without busy", lambda o: o["dns"].pop("busy")),
            ("a serve key", lambda o: o.update(lookups=3)),
        ])
        # The two stats lines are told apart by their keys: neither schema takes the other's line.
        self.assertFalse(validator("bridge-stats-line").is_valid(self.STATS))
        self.assertEqual([n for n in LINE_SCHEMAS if validator(n).is_valid(line)], [])

    def test_check_config(self):
        printed = {"socket": "/run/s1.sock", "allow": ["example.com", "*.example.org:8443"], "max-tunnels": 64,
                   "max-connections": 65536, "max-lookups": 65536, "head-timeout": 30.0, "dns-timeout": 5.0,
                   "connect-timeout": 20.0, "idle-timeout": 0.0, "max-head-bytes": 32768, "log": "json",
                   "die-with-parent": False, "log-paths": False, "no-sni-check": False, "ask": False,
                   "ask-timeout": 30.0}
        self.assertEqual(errors("config", printed), [])
        self.check("check-config", printed, [
            ("a config key", lambda o: o.update(config="/etc/boxproxy/s1.json")),
            ("no max-tunnels", lambda o: o.pop("max-tunnels")),
            ("an entry not canonical", lambda o: o.update(allow=["Example.com."])),
            ("two entries in one item", lambda o: o.update(allow=["a.example, b.example"])),
            ("an unset value as null", lambda o: o.update(audit=None)),
            ("an empty label", lambda o: o.update(label="")),
            ("an empty list", lambda o: o.update(permit=[])),
            ("a no-confine key", lambda o: o.update({"no-confine": True})),
        ])

    def test_control_messages(self):
        self.check("control-request", {"op": "allow", "id": 1, "add": ["example.com"]}, [
            ("an unknown op", lambda o: o.update(op="delete")),
            ("allow with nothing to do", lambda o: o.pop("add")),
            ("add and set at once", lambda o: o.update(set=None)),
            ("add and remove at once", lambda o: o.update(remove=["example.com"])),
            ("a misspelt key", lambda o: o.update(sett=[])),
            ("entries that are not strings", lambda o: o.update(add=[1])),
        ])
        endpoint = {"host": "api.example.com", "deny": [{"method": "DELETE", "path": "/**"}]}
        self.check("control-request", {"op": "inspect", "id": 2, "set": [endpoint]}, [
            ("inspect with nothing to do", lambda o: o.pop("set")),
            ("set and remove at once", lambda o: o.update(remove=["api.example.com"])),
            ("a bare entry to set", lambda o: o.update(set=["api.example.com"])),
            ("set null", lambda o: o.update(set=None)),
            ("an endpoint without a host", lambda o: o.update(set=[{"access": "read-only"}])),
            ("access and rules at once", lambda o: o.update(set=[{"host": "a.test", "access": "read-only",
                                                                  "rules": []}])),
        ])
        self.check("control-request", {"op": "inspect", "remove": ["api.example.com:443"]}, [
            ("an object to remove", lambda o: o.update(remove=[endpoint])),
        ])
        self.check("control-request", {"op": "answer", "ask": 3, "verdict": "once"}, [
            ("an unknown verdict", lambda o: o.update(verdict="maybe")),
            ("no ask", lambda o: o.pop("ask")),
        ])
        self.check("control-reply", {"id": None, "ok": True, "v": 1, "version": "1.2.3", "pid": 42}, [
            ("no ok", lambda o: o.pop("ok")),
            ("an event", lambda o: o.update(event="decision")),
        ])
        self.check("control-reply", {"id": 2, "ok": True, "inspect": [
                {"host": "api.example.com:443", "deny": [{"method": "DELETE", "path": "/**"}], "mode": "enforce"}]}, [
            ("null for none", lambda o: o.update(inspect=None)),
            ("a bare entry", lambda o: o.update(inspect=["api.example.com:443"])),
            ("a list beside them", lambda o: o.update(list=[])),
        ])
        self.check("control-reply", {"id": 5, "ok": False, "error": "allow: bad entry"}, [
            ("an error without words", lambda o: o.pop("error")),
        ])
        event = {"event": "decision", **self.DECISION}
        self.check("control-event", event, [
            ("ok in an event", lambda o: o.update(ok=True)),
            ("no id", lambda o: o.pop("id")),
        ])
        self.check("control-event", {"event": "ask", "ask": 1, "host": "example.org", "port": 443,
                                     "kind": "connect", "id": 4}, [
            ("an ask without a connection id", lambda o: o.pop("id")),
            ("an ask about port 0", lambda o: o.update(port=0)),
        ])


class ConfigTest(unittest.TestCase):
    """The config schema and serve's own reading of --config agree (serve --check-config)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="boxproxy-schema-config-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.allow_file = os.path.join(self.dir, "allow.txt")
        with open(self.allow_file, "w") as f:
            f.write("example.com\n")

    def serve_accepts(self, config):
        path = os.path.join(self.dir, "serve.json")
        with open(path, "w") as f:
            json.dump(config, f)
        r = subprocess.run([binary(), "serve", "--check-config", "--config", path], capture_output=True, timeout=10)
        self.assertIn(r.returncode, (0, 2), r.stderr)
        return r.returncode == 0

    def test_the_schema_names_every_key_serve_reads(self):
        # Every option of --help but the five a config refuses (test_check_config.py shows serve
        # refuses them, and prints every other key).
        r = subprocess.run([binary(), "serve", "--help"], capture_output=True, text=True, timeout=10)
        options = set(re.findall(r"^\s+--([a-z-]+)", r.stdout, re.MULTILINE)) - {"help"}
        self.assertEqual(set(load_schema("config")["properties"]),
                         options - {"config", "check-config", "no-confine", "secret", "placeholder"})
        self.assertEqual(set(load_schema("check-config")["properties"]), set(load_schema("config")["properties"]))

    def test_schema_and_serve_agree_on_each_config(self):
        valid = [
            {},
            {"socket": os.path.join(self.dir, "egress.sock"), "allow": ["example.com, *.example.org:8443"],
             "allow-file": self.allow_file, "allow-hint": "ask the admin", "permit": ["127.0.0.2/32"],
             "deny": ["203.0.113.0/24"], "resolve": ["origin.test=127.0.0.2"], "nameserver": ["127.0.0.1:53"],
             "max-tunnels": 64, "max-connections": 1000, "head-timeout": 0.5, "dns-timeout": 2,
             "connect-timeout": 3, "idle-timeout": 0, "max-head-bytes": 4096, "log": "json", "label": "ci 42",
             "die-with-parent": True},
            {"log": "text", "audit": os.path.join(self.dir, "audit.jsonl"), "log-file": os.path.join(self.dir, "l")},
        ]
        invalid = [
            {"no-such-key": 1},
            {"max-tunnels": "64"},
            {"max-tunnels": 0},
            {"allow": "example.com"},
            {"allow": [1]},
            {"die-with-parent": 1},
            {"log": "xml"},
            {"label": "caf\u00e9"},
            {"label": "x" * 129},
            {"allow-hint": "a\tb"},
            {"idle-timeout": -1},
            {"head-timeout": 0},
            {"max-head-bytes": 10},
            {"ready-fd": 2},
            {"config": "other.json"},
            [],
        ]
        config_validator = validator("config")
        for config in valid + invalid:
            with self.subTest(config=config):
                by_schema = config_validator.is_valid(config)
                self.assertEqual(by_schema, config in valid, list(config_validator.iter_errors(config)))
                self.assertEqual(self.serve_accepts(config), by_schema)


    def test_what_check_config_prints_reads_back_as_a_valid_config(self):
        # A real config, written by serve itself: every value in force, as --check-config prints it.
        r = subprocess.run([binary(), "serve", "--check-config", "--allow", "a.example, *.b.example:8443",
                            "--allow-file", self.allow_file, "--resolve", "n.test=192.0.2.1", "--deny", "192.0.2.0/24",
                            "--permit", "127.0.0.2/32", "--idle-timeout", "2.5", "--label", "round trip",
                            "--log", "json", "--nameserver", "127.0.0.1:5353", "--die-with-parent"],
                           capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        config = json.loads(r.stdout)  # as printed: nothing to take out
        self.assertEqual(list(validator("config").iter_errors(config)), [], config)
        self.assertEqual(list(validator("check-config").iter_errors(config)), [], config)
        self.assertTrue(self.serve_accepts(config))

    def test_where_the_schema_is_looser_than_serve(self):
        # JSON Schema's "integer" is any number with no fraction, so 64.0 passes it; serve wants 64
        # (the manual says so), and checks each value's syntax (a CIDR, a name) itself.
        for config in ({"max-tunnels": 64.0}, {"permit": ["10.0.0.1/8"]}):
            with self.subTest(config=config):
                self.assertTrue(validator("config").is_valid(config))
                self.assertFalse(self.serve_accepts(config))


def binary_has_control_channel():
    r = subprocess.run([binary(), "serve", "--help"], capture_output=True, text=True, timeout=10)
    return "--control-fd" in r.stdout


@unittest.skipUnless(binary_has_control_channel(),
                     "this binary has no --control-fd (SPEC §15's channel has not landed): its messages are "
                     "checked against the schemas once it has")
class ControlMessagesTest(OriginsMixin, ProxyTestCase):
    """Every reply and event of a real control channel validates; so does every request we send."""

    def setUp(self):
        super().setUp()
        if "pass_fds" not in inspect.signature(Proxy.__init__).parameters:
            self.fail("the harness cannot pass --control-fd's descriptor (Proxy(pass_fds=...))")
        self.ours, theirs = socket.socketpair()
        self.addCleanup(self.ours.close)
        self.theirs = theirs
        self.ours.settimeout(5)
        self.buffer = b""
        self.requests = validator("control-request")
        self.replies = validator("control-reply")
        self.events = validator("control-event")
        self.seen_events = []

    def start(self, *args):
        p = self.proxy("--control-fd", str(self.theirs.fileno()), "--resolve", "origin.test=127.0.0.2",
                       "--resolve", "mix.test=10.0.0.1", *args, pass_fds=(self.theirs.fileno(),))
        self.theirs.close()
        return p

    def read_line(self):
        deadline = time.monotonic() + 5
        while b"\n" not in self.buffer:
            self.assertLess(time.monotonic(), deadline, "no line from the control channel")
            chunk = self.ours.recv(65536)
            self.assertTrue(chunk, "the control channel closed")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def request(self, obj, valid=True):
        self.assertEqual(self.requests.is_valid(obj), valid, obj)
        self.ours.sendall(json.dumps(obj).encode() + b"\n")
        return self.reply()

    def reply(self):
        for _ in range(1000):
            msg = self.read_line()
            if "ok" in msg:
                self.assertEqual(list(self.replies.iter_errors(msg)), [], msg)
                return msg
            self.assertEqual(list(self.events.iter_errors(msg)), [], msg)
            self.seen_events.append(msg)
        self.fail("no reply among 1000 events")

    def test_replies_and_events_validate(self):
        p = self.start("--allow", "origin.test", "--ask", "--ask-timeout", "5")
        self.assertTrue(self.request({"op": "hello", "id": 1})["ok"])
        self.assertTrue(self.request({"op": "stats", "id": "s"})["ok"])
        self.assertTrue(self.request({"op": "allow", "add": [f"origin.test:{self.echo.port}"]})["ok"])
        self.assertFalse(self.request({"op": "allow", "add": ["not a name!"]})["ok"])
        # Exactly one of add, remove and set: the schema refuses two, and so does the proxy.
        self.assertFalse(self.request({"op": "allow", "add": ["a.test"], "set": None}, valid=False)["ok"])
        self.assertFalse(self.request({"op": "no-such-op"}, valid=False)["ok"])
        self.assertFalse(self.request({"op": "answer", "ask": 999, "verdict": "once"})["ok"])
        self.ours.sendall(b"{not json\n")
        self.assertFalse(self.reply()["ok"])
        self.assertTrue(self.request({"op": "subscribe"})["ok"])
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.close()
        # A RESOLVE of a name off the list is answered by name, not asked about: asked=deferred.
        self.assertEqual(resolve_reply(p, "later.test")[:2], (0, 3))
        r = p.connect()
        r.sendall(connect_request("mix.test:443"))  # off the list: asked about
        ask = None
        for _ in range(100):
            msg = self.read_line()
            self.assertEqual(list(self.events.iter_errors(msg)), [], msg)
            self.seen_events.append(msg)
            if msg.get("event") == "ask":
                ask = msg
                break
        self.assertIsNotNone(ask, self.seen_events)
        self.assertTrue(self.request({"op": "answer", "ask": ask["ask"], "verdict": "once"})["ok"])
        recv_all(r)  # mix.test is private: refused after the approval
        r.close()
        wait_until(lambda: len(p.find_logs(cls="private")) == 1)
        self.assertTrue(self.request({"op": "allow", "set": None})["ok"])
        self.assertTrue(self.request({"op": "stats"})["ok"])
        def both_came():  # the events come between replies: ask until both have come
            classes = {e.get("class") for e in self.seen_events}
            if {"done", "private"} <= classes and any(e.get("asked") == "deferred" for e in self.seen_events):
                return True
            self.request({"op": "hello"})
            return False
        wait_until(both_came, 5, interval=0.05)
        classes = [e.get("class") for e in self.seen_events if e.get("event") == "decision"]
        self.assertIn("ok", classes)
        self.assertIn("done", classes)
        self.assertIn("private", classes)
        private = [e for e in self.seen_events if e.get("class") == "private"]
        self.assertEqual(private[0].get("asked"), "once", private)
        deferred = [e for e in self.seen_events if e.get("asked") == "deferred"]
        self.assertEqual([(e["kind"], e["host"], e["port"]) for e in deferred], [("resolve", "later.test", 0)])
        self.assertTrue(self.request({"op": "drain"})["ok"])

    @unittest.skipUnless(os.path.exists(os.path.join(os.path.dirname(binary()), "boxproxy-inspect")),
                         "boxproxy-inspect is not built next to boxproxy")
    def test_inspect_replies_validate(self):
        self.start("--inspect", "origin.test")
        endpoint = {"host": "origin.test", "name": "origin", "rules": [{"method": "get", "path": "/v1/*.json"}],
                    "deny": [{"method": "*", "path": "/v1/secret/**", "name": "secret"}], "mode": "report"}
        reply = self.request({"op": "inspect", "id": 1, "set": [endpoint]})
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["inspect"][0]["host"], "origin.test:443")
        reply = self.request({"op": "inspect", "add": [{"host": "*.other.test:8443", "access": "read-only"}]})
        self.assertEqual([e["host"] for e in reply["inspect"]], ["origin.test:443", "*.other.test:8443"])
        self.assertFalse(self.request({"op": "inspect", "add": [{"host": "origin.test"}]})["ok"])
        self.assertFalse(self.request({"op": "inspect", "set": ["origin.test"]}, valid=False)["ok"])
        self.assertEqual(self.request({"op": "inspect", "remove": ["origin.test", "*.other.test:8443"]})["inspect"], [])


if __name__ == "__main__":
    unittest.main()
