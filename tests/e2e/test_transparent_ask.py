# SPDX-License-Identifier: Apache-2.0
"""Asks in a captured box (SPEC §15, §16, issue 21 item 8): under `run --transparent --ask`, a
program that ignores every proxy variable looks a name off the host list up through the bridge's
DNS and connects to it. The lookup is not asked about (it has no port): it gets the bridge's
stand-in address at once, and the connection is asked about, once, with the port it uses, for as
long as --ask-timeout allows; `deny` resets it; every decision line for the name says asked=.

The supervisor is a thread of the test on `run --control-fd`; the origin is the test's own on
127.0.0.2, named with --resolve. Skips, saying why, where this system cannot make a box or lacks
libnftables."""

import json
import shutil
import sys
import textwrap
import threading
import unittest

from control_support import ControlClient, control_pair
from test_transparent import CaptureTestCase

# In the box: the lookup timed, then one request over the connection to the address it gave.
PY_CLIENT = textwrap.dedent("""
    import json, socket, sys, time
    port = int(sys.argv[1])
    out = {}
    started = time.monotonic()
    try:
        address = socket.getaddrinfo("asked.test", port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    except socket.gaierror as e:
        print(json.dumps({"lookup": e.errno, "lookup_s": time.monotonic() - started}))
        sys.exit(0)
    out["lookup_s"] = time.monotonic() - started
    out["address"] = address[0]
    s = socket.create_connection(address, timeout=30)
    # The Host names the port: with a host list in force the tunnel's Host check (SPEC §16) reads it.
    s.sendall(b"GET / HTTP/1.0\\r\\nHost: asked.test:%d\\r\\n\\r\\n" % port)
    out["status"] = s.recv(12).decode()
    print(json.dumps(out))
""")


class Supervisor:
    """Answers every ask on our end of --control-fd with `verdict`, `delay` seconds after it came
    (an ask whose port is not `only_port`, when given, is left unanswered); keeps every ask."""

    def __init__(self, ours, verdict, delay, only_port=None):
        self.client = ControlClient(ours)
        self.verdict = verdict
        self.delay = delay
        self.only_port = only_port
        self.asks = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop.is_set():
            try:
                obj = self.client.read_line(timeout=0.2)
            except AssertionError:
                continue  # nothing yet
            except OSError:
                return
            if obj is None:
                return
            if obj.get("event") != "ask":
                continue
            self.asks.append(obj)
            if self.only_port is not None and obj["port"] != self.only_port:
                continue
            threading.Timer(self.delay, self._answer, args=(obj["ask"],)).start()

    def _answer(self, ask):
        try:
            self.client.send({"op": "answer", "ask": ask, "verdict": self.verdict})
        except OSError:
            pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=2)
        self.client.close()


class TransparentAskTest(CaptureTestCase):
    WITH_ORIGIN = True

    def run_box(self, command, verdict, delay, ask_timeout=30, only_port=None):
        """`run --transparent --ask` with asked.test off the list; returns (result, supervisor)."""
        ours, theirs = control_pair()
        supervisor = Supervisor(ours, verdict, delay, only_port)
        self.addCleanup(supervisor.close)
        fd = theirs.fileno()
        try:
            r = self.box.run(["--transparent", "--control-fd", str(fd), "--ask", "--ask-timeout", str(ask_timeout),
                              "--allow", "listed.test", "--resolve", "asked.test=127.0.0.2",
                              "--log", "json", "--log-file", self.log], command, pass_fds=(fd,))
        finally:
            theirs.close()
        return r, supervisor

    def decisions(self, host="asked.test"):
        """The decision lines (not done lines) for `host`, as JSON objects."""
        with open(self.log, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.startswith("{")]
        return [l for l in lines if l.get("host") == host and l.get("class") != "done"]

    def assert_lines(self, want_asked):
        """Every decision line for asked.test says asked=: `want_asked` on the connection's lines, with
        the origin's port; deferred on the lookups' (port 0, no address)."""
        lines = self.decisions()
        connection = [l for l in lines if l["kind"] != "resolve"]
        self.assertTrue(connection, lines)
        for line in lines:
            self.assertIn("asked", line, line)
            if line["kind"] == "resolve":
                self.assertEqual((line["asked"], line["port"], line["ip"]), ("deferred", 0, "-"), line)
            else:
                self.assertEqual((line["asked"], line["port"]), (want_asked, self.origin.port), line)
        return connection

    def test_curl_is_asked_once_about_the_port_it_uses(self):
        if not shutil.which("curl"):
            self.skipTest("curl is not installed")
        r, supervisor = self.run_box(["curl", "-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                                      f"http://asked.test:{self.origin.port}/"], "once", 0.3)
        self.assertEqual(r.stdout.decode(), "200", r.stderr.decode(errors="replace")[-2000:])
        # One ask (a second connection of curl's, IPv6 beside IPv4, shares it), about the port used.
        self.assertEqual([(a["host"], a["port"]) for a in supervisor.asks], [("asked.test", self.origin.port)])
        connection = self.assert_lines("once")
        self.assertIn("ok", [l["class"] for l in connection])

    def test_the_lookup_never_waits_on_the_ask(self):
        # The supervisor answers only an ask about the port the program connects to: a lookup that
        # waited on an ask of its own (the bridge's DNS cut it at its own bound, or --ask-timeout)
        # would fail the program.
        r, supervisor = self.run_box([sys.executable, "-c", PY_CLIENT, str(self.origin.port)], "once", 0.5,
                                     ask_timeout=4, only_port=self.origin.port)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-3000:])
        out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        self.assertLess(out["lookup_s"], 4 / 2, out)  # half the --ask-timeout an ask of its own would wait
        self.assertTrue(out["address"].startswith(("198.18.", "198.19.")), out)  # the stand-in, never the real one
        self.assertRegex(out["status"], r"^HTTP/1\.[01] 200$")
        self.assertEqual([a["port"] for a in supervisor.asks], [self.origin.port])
        self.assert_lines("once")

    def test_an_answer_after_the_bridges_old_ten_seconds_still_counts(self):
        # Slow (11 s) on purpose: the bridge once dropped the box's question after 10 s whatever
        # --ask-timeout said. An answer within --ask-timeout reaches the program.
        r, supervisor = self.run_box([sys.executable, "-c", PY_CLIENT, str(self.origin.port)], "once", 11,
                                     ask_timeout=15)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-3000:])
        out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        self.assertRegex(out.get("status", ""), r"^HTTP/1\.[01] 200$", out)
        self.assertEqual([a["port"] for a in supervisor.asks], [self.origin.port])

    def test_deny_resets_the_connection(self):
        r, supervisor = self.run_box([sys.executable, "-c", PY_CLIENT, str(self.origin.port)], "deny", 0.3)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ConnectionResetError", r.stderr.decode(errors="replace"))
        self.assertEqual([(a["host"], a["port"]) for a in supervisor.asks], [("asked.test", self.origin.port)])
        connection = self.assert_lines("deny")
        self.assertEqual({l["class"] for l in connection}, {"not-listed"})


if __name__ == "__main__":
    unittest.main()
