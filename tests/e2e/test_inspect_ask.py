# SPDX-License-Identifier: Apache-2.0
"""Asking the supervisor about each request (SPEC §20, "Ask per request"; issue 36 item 1) through the
real binary and its inspector: a request that an "ask" rule allows is held, the supervisor gets a
`kind: "request"` ask on the control channel, and once, always (the same method and path not asked
again), deny, the timeout and no control client each do what the manual says, over HTTP/1.1 here
(HTTP/2 in test_inspect_ask_h2.py). The body stays with the box while the request waits, and the
request line carries asked= in both log formats. Origins on 127.0.0.2; every wait bounded."""

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import unittest

from control_support import connect_control_socket, proxy_with_control_fd
from harness import ProxyTestCase, binary, read_http_response, recv_all
from inspect_support import InspectRig, connect_tls
from test_schemas import errors


def quiet(tls, wait):
    """True when the TLS peer sends nothing (not even its close) within `wait` seconds."""
    tls.settimeout(wait)
    try:
        return tls.recv(1) == b"x"  # anything that comes (or an end) is a failure
    except (socket.timeout, TimeoutError):
        return True
    finally:
        tls.settimeout(10)


def rules_endpoint(port, **extra):
    """origin.test:PORT with GET and POST under /asked/ held for the supervisor, GET /free/ not."""
    return {"host": f"origin.test:{port}",
            "rules": [{"method": "GET", "path": "/asked/**", "ask": True, "name": "asked"},
                      {"method": "POST", "path": "/asked/**", "ask": True},
                      {"method": "GET", "path": "/free/**"}],
            **extra}


class AskRig(InspectRig):
    """serve inspecting origin.test with rules_endpoint, trusting the origin's certificate."""

    def write_config(self, endpoint):
        path = os.path.join(self.dir, "c.json")
        with open(path, "w") as f:
            json.dump({"inspect": [endpoint]}, f)
        return path

    def serve_args(self, endpoint=None, timeout=10, log="json"):
        config = self.write_config(endpoint or rules_endpoint(self.origin.port))
        return ["--log", log, "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca, "--upstream-ca", self.cert,
                "--config", config, "--ask-timeout", str(timeout), "--log-paths"]

    def start(self, endpoint=None, timeout=10, log="json"):
        """(proxy, ControlClient on --control-fd)."""
        return proxy_with_control_fd(self, *self.serve_args(endpoint, timeout, log))

    def box(self, p):
        """A TLS connection from the box to origin.test through the proxy."""
        tls = connect_tls(p, f"origin.test:{self.origin.port}", self.ca)
        tls.settimeout(10)
        self.addCleanup(tls.close)
        return tls

    def send(self, tls, method, path, body=None, extra=""):
        head = f"{method} {path} HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n{extra}"
        if body is not None:
            head += f"Content-Length: {len(body)}\r\n"
        tls.sendall((head + "\r\n").encode() + (body or b""))

    def origin_paths(self):
        return [r["path"] for r in self.origin.requests]

    def lines(self, p, count, **want):
        return [line.obj for line in p.wait_log(kind="request", count=count, **want)]


class RequestAskTest(AskRig, ProxyTestCase):

    def test_once_lets_this_request_go_and_the_next_is_asked_again(self):
        p, c = self.start()
        tls = self.box(p)
        self.send(tls, "GET", "/asked/a?x=1")
        e = c.event("ask")
        self.assertEqual(e, {"event": "ask", "ask": e["ask"], "kind": "request", "host": "origin.test",
                             "port": self.origin.port, "method": "GET", "path": "/asked/a", "rule": "asked",
                             "id": e["id"], "query": True})
        # Held: nothing answered, nothing sent to the origin.
        self.assertTrue(quiet(tls, 0.3))
        self.assertEqual(self.origin_paths(), [])
        self.assertEqual(errors("control-event", e), [])
        self.assertEqual(c.request("answer", ask=e["ask"], verdict="once"), {"id": 1, "ok": True})
        self.assertEqual(read_http_response(tls).status, 200)
        (line,) = self.lines(p, 1)
        self.assertEqual((line["class"], line["rule"], line["asked"], line["id"]), ("ok", "asked", "once", e["id"]))
        self.assertEqual(errors("request-line", line), [])
        # Once is once: the same request is asked about again, with a new number.
        self.send(tls, "GET", "/asked/a")
        e2 = c.event("ask")
        self.assertGreater(e2["ask"], e["ask"])
        self.assertNotIn("query", e2)
        self.assertTrue(c.request("answer", ask=e2["ask"], verdict="once")["ok"])
        self.assertEqual(read_http_response(tls).status, 200)
        # A rule without "ask" is never held.
        self.send(tls, "GET", "/free/x")
        self.assertEqual(read_http_response(tls).status, 200)
        free = self.lines(p, 3)[2]
        self.assertEqual(free["path"], "/free/x")
        self.assertNotIn("asked", free)

    def test_always_covers_the_same_method_and_path_only(self):
        p, c = self.start()
        tls = self.box(p)
        self.send(tls, "GET", "/asked/a")
        e = c.event("ask")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="always")["ok"])
        self.assertEqual(read_http_response(tls).status, 200)
        # The same method and path, on another connection too, query or not: not asked again.
        other = self.box(p)
        for conn, path in ((tls, "/asked/a"), (other, "/asked/a?y=2")):
            self.send(conn, "GET", path)
            self.assertEqual(read_http_response(conn).status, 200)
        lines = self.lines(p, 3)
        self.assertEqual([l["asked"] for l in lines], ["always"] * 3)
        # Another path, another method, another case: each asked.
        for method, path in (("GET", "/asked/b"), ("POST", "/asked/a"), ("GET", "/asked/A")):
            self.send(tls, method, path, body=b"" if method == "POST" else None)
            e = c.event("ask", method=method, path=path)
            self.assertTrue(c.request("answer", ask=e["ask"], verdict="deny")["ok"])
            self.assertEqual(read_http_response(tls).status, 403)
        self.assertEqual(c.events, [])

    def test_deny_refuses_and_the_connection_goes_on(self):
        p, c = self.start()
        tls = self.box(p)
        self.send(tls, "POST", "/asked/upload", body=b"hello")
        e = c.event("ask")
        self.assertEqual((e["method"], e["path"], e["rule"]), ("POST", "/asked/upload", "rules[1]"))
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="deny")["ok"])
        answer = read_http_response(tls)
        self.assertEqual(answer.status, 403)
        self.assertEqual(answer.header("x-egress-refused"), "request denied")
        (line,) = self.lines(p, 1)
        self.assertEqual((line["class"], line["status"], line["asked"], line["up"]), ("request denied", 403, "deny", 0))
        self.assertEqual(errors("request-line", line), [])
        # Its body was dropped, never sent; the next request on the connection is served.
        self.send(tls, "GET", "/free/after")
        self.assertEqual(read_http_response(tls).status, 200)
        self.assertEqual(self.origin_paths(), ["/free/after"])

    def test_no_answer_in_time_is_a_refusal(self):
        p, c = self.start(timeout=1)
        tls = self.box(p)
        self.send(tls, "GET", "/asked/slow")
        e = c.event("ask")
        self.assertEqual(read_http_response(tls, timeout=5).status, 403)
        (line,) = self.lines(p, 1)
        self.assertEqual((line["class"], line["asked"]), ("request denied", "timeout"))
        self.assertGreaterEqual(line["ms"], 900)  # its time counts the wait
        # Too late: the ask is over.
        self.assertFalse(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        self.assertEqual(self.origin_paths(), [])

    def test_no_control_client_refuses_at_once(self):
        control = os.path.join(self.dir, "control.sock")
        p = self.proxy(*self.serve_args(), "--control-socket", control)
        tls = self.box(p)
        self.send(tls, "GET", "/asked/a")
        self.assertEqual(read_http_response(tls, timeout=3).status, 403)
        (line,) = self.lines(p, 1)
        self.assertEqual((line["class"], line["asked"]), ("request denied", "none"))
        # A client connected later is asked.
        c = connect_control_socket(control)
        self.addCleanup(c.close)
        self.assertTrue(c.request("hello")["ok"])
        self.send(tls, "GET", "/asked/a")
        e = c.event("ask")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        self.assertEqual(read_http_response(tls).status, 200)

    def test_identical_asks_pending_at_once_share_one(self):
        p, c = self.start()
        first, second = self.box(p), self.box(p)
        self.send(first, "GET", "/asked/shared?a=1")
        e = c.event("ask")
        self.send(second, "GET", "/asked/shared?b=2")
        # No second ask: the second request joins the first's (1.5 s for it to reach serve, as no
        # event says that it has; a second ask within it fails the test).
        with self.assertRaises(AssertionError):
            c.event("ask", timeout=1.5)
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        for conn in (first, second):
            self.assertEqual(read_http_response(conn).status, 200)
        self.assertEqual([l["asked"] for l in self.lines(p, 2)], ["once", "once"])

    def test_the_body_stays_with_the_box_and_100_continue_waits(self):
        p, c = self.start()
        tls = self.box(p)
        # What came with the head is held; the rest of the body, and any 100 Continue, wait.
        tls.sendall(f"POST /asked/up HTTP/1.1\r\nHost: origin.test:{self.origin.port}\r\n"
                    "Content-Length: 10\r\nExpect: 100-continue\r\n\r\nhello".encode())
        e = c.event("ask")
        self.assertTrue(quiet(tls, 0.3))  # no 100 Continue while it waits
        self.assertEqual(self.origin_paths(), [])
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        self.assertEqual(read_http_response(tls, head_only=True).status, 100)  # the origin's, after the yes
        tls.sendall(b"world")
        answer = read_http_response(tls)
        self.assertEqual((answer.status, answer.body), (200, b"helloworld"))

    def test_text_log_carries_asked(self):
        p, c = self.start(log="text")
        tls = self.box(p)
        self.send(tls, "GET", "/asked/t")
        e = c.event("ask")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        self.assertEqual(read_http_response(tls).status, 200)
        line = p.wait_raw(r"^egress request .* asked=once ")
        # The trace's order (SPEC §20): after inject, before scrub.
        self.assertRegex(line, r" rule=asked class=ok .* path=\"/asked/t\" asked=once id=")


class ExampleSupervisorTest(AskRig, ProxyTestCase):
    """examples/request-policy.py answers the asks from its own policy file."""

    EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "request-policy.py")

    def supervisor(self, control, policy):
        path = os.path.join(self.dir, "policy.json")
        with open(path, "w") as f:
            json.dump(policy, f)
        proc = subprocess.Popen([sys.executable, self.EXAMPLE, "--control-socket", control, "--policy", path],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.kill)
        proc.lines = queue.Queue()
        threading.Thread(target=lambda: [proc.lines.put(line.rstrip("\n")) for line in proc.stdout],
                         daemon=True).start()
        return proc

    def read_line(self, proc, timeout=10):
        try:
            return proc.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the example printed nothing within {timeout}s") from None

    def test_the_example_answers_from_its_policy(self):
        control = os.path.join(self.dir, "control.sock")
        p = self.proxy(*self.serve_args(), "--control-socket", control)
        proc = self.supervisor(control, {"rules": [{"method": "GET", "path": "/asked/ok*", "verdict": "always"},
                                                   {"method": "*", "path": "/asked/once", "verdict": "once"}],
                                         "default": "deny"})
        self.assertEqual(self.read_line(proc), "connected")
        tls = self.box(p)
        expected = [("GET", "/asked/ok?x=1", 200, "always"), ("GET", "/asked/ok", 200, "always"),
                    ("GET", "/asked/once", 200, "once"), ("POST", "/asked/once", 200, "once"),
                    ("GET", "/asked/other", 403, "deny")]
        for method, path, status, _ in expected:
            self.send(tls, method, path, body=b"x" if method == "POST" else None)
            self.assertEqual(read_http_response(tls).status, status, path)
        self.assertEqual([l["asked"] for l in self.lines(p, len(expected))], [e[3] for e in expected])
        # Asked four times: the second GET /asked/ok was let through by the first's always.
        printed = [self.read_line(proc) for _ in range(4)]
        self.assertEqual([line.split(" -> ")[1] for line in printed], ["always", "once", "once", "deny"])
        self.assertRegex(printed[0], r"^ask \d+: GET origin\.test/asked/ok -> always$")
        self.assertEqual(self.origin_paths(), ["/asked/ok?x=1", "/asked/ok", "/asked/once", "/asked/once"])


class RequestAskPlainTest(AskRig, ProxyTestCase):

    def test_plain_http_to_an_asking_endpoint_is_refused_unasked(self):
        p, c = self.start()
        s = p.connect()
        s.sendall(f"GET http://origin.test:{self.origin.port}/asked/plain HTTP/1.1\r\n"
                  f"Host: origin.test:{self.origin.port}\r\n\r\n".encode())
        self.assertTrue(recv_all(s).startswith(b"HTTP/1.1 403 "))
        (line,) = self.lines(p, 1)
        self.assertEqual((line["class"], line["asked"]), ("request denied", "none"))
        self.assertEqual(c.events, [])


class RequestAskUsageTest(AskRig, ProxyTestCase):

    def run_serve(self, endpoint, *extra):
        config = self.write_config(endpoint)
        return subprocess.run([binary(), "serve", "--socket", os.path.join(self.dir, "s"), "--config", config,
                               *extra], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)

    def test_ask_needs_a_control_channel(self):
        for endpoint in (rules_endpoint(443), {"host": "origin.test", "ask": True}):
            done = self.run_serve(endpoint)
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn('"ask": true, which needs --control-fd or --control-socket', done.stderr)

    def test_check_says_which_requests_would_be_asked(self):
        config = self.write_config(rules_endpoint(443) | {"host": "api.example"})
        targets = ["GET https://api.example/asked/x?q=1", "GET https://api.example/free/x", "DELETE https://api.example/x"]
        done = subprocess.run([binary(), "check", "--config", config, "--resolve", "api.example=93.184.215.14",
                               *targets], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
        self.assertEqual([tuple(line.split("\t")[2:]) for line in done.stdout.splitlines()],
                         [("asked", "ok (ask)"), ("rules[2]", "ok"), ("-", "request denied")], done.stderr)
        self.assertEqual(done.returncode, 1)

    def test_ask_on_a_deny_entry_or_not_a_boolean_is_refused(self):
        for endpoint, words in (({"host": "origin.test", "deny": [{"method": "*", "path": "/x", "ask": True}]},
                                 '.deny[0].ask: is for "rules"'),
                                ({"host": "origin.test", "ask": "yes"}, '.ask: "\\"yes\\"" is not true or false')):
            done = self.run_serve(endpoint, "--control-socket", os.path.join(self.dir, "c"))
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn(words, done.stderr)


if __name__ == "__main__":
    unittest.main()
