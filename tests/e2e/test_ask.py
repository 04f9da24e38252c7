# SPDX-License-Identifier: Apache-2.0
"""Asking the supervisor about a name off the host list (SPEC §15, --ask): once, always, deny, the
timeout, a supervisor that goes away, shared asks, and what is never asked."""

import os
import select
import socket
import tempfile
import time
import unittest

from control_support import advance_clock, connect_control_socket, proxy_with_control_fd, skip_without_clock_hooks
from fault_support import connect_waiting, raise_own_nofile
from harness import (OriginsMixin, ProxyTestCase, connect_request, recv_all, recv_exact, socks5_connect,
                     socks5_greeting, socks5_reply, still_open, wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"

DEFAULT_ASK_TIMEOUT = 30  # man page, --ask-timeout


class AskTestCase(OriginsMixin, ProxyTestCase):

    def start(self, *args, timeout=10):
        """A proxy asking on --control-fd, with origin.test listed and asked.test, private.test off it."""
        port = self.echo.port
        return proxy_with_control_fd(self, "--ask", "--ask-timeout", str(timeout), "--log", "json",
                                     "--allow", f"origin.test:{port}",
                                     "--resolve", "origin.test=127.0.0.2", "--resolve", "asked.test=127.0.0.2",
                                     "--resolve", "private.test=10.0.0.1", *args)

    def ask(self, p, host="asked.test", port=None):
        """A client that sent CONNECT host:port and now waits; its socket."""
        s = p.connect()
        s.sendall(connect_request(f"{host}:{port or self.echo.port}"))
        return s

    def assert_tunnel(self, s):
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.sendall(b"ping")
        self.assertEqual(recv_exact(s, 4), b"ping")

    def assert_refused(self, s, status=403, words=None):
        head = recv_all(s)
        self.assertTrue(head.startswith(f"HTTP/1.1 {status} ".encode()), head)
        if words:
            self.assertIn(words.encode(), head)

    def decision(self, p, host, **want):
        """The decision line (JSON) for host, not the done line."""
        lines = p.wait_log(host=host, **want)
        return [l for l in lines if not l.done][-1].obj


class VerdictTest(AskTestCase):

    def test_once(self):
        p, c = self.start()
        s = self.ask(p)
        e = c.event("ask")
        self.assertEqual(set(e), {"event", "ask", "host", "port", "kind", "id"})
        self.assertEqual((e["host"], e["port"], e["kind"]), ("asked.test", self.echo.port, "connect"))
        self.assertIsInstance(e["ask"], int)
        self.assertNotIn("ok", e)
        # It waits: nothing is answered before the verdict.
        self.assertTrue(still_open(s, 0.3))
        self.assertEqual(c.request("answer", ask=e["ask"], verdict="once"), {"id": 1, "ok": True})
        self.assert_tunnel(s)
        line = self.decision(p, "asked.test", cls="ok")
        self.assertEqual(line["asked"], "once")
        self.assertEqual(line["id"], e["id"])
        # Once is once: the next client is asked again, with a new number.
        s2 = self.ask(p)
        e2 = c.event("ask")
        self.assertGreater(e2["ask"], e["ask"])
        self.assertTrue(c.request("answer", ask=e2["ask"], verdict="deny")["ok"])
        self.assert_refused(s2, 403, "asked.test is not on this box's network list")
        s.close()

    def test_always_adds_host_and_port_to_the_list(self):
        p, c = self.start()
        port = self.echo.port
        s = self.ask(p, "Asked.TEST.")
        e = c.event("ask")
        self.assertEqual(e["host"], "asked.test")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="always")["ok"])
        self.assert_tunnel(s)
        self.assertEqual(self.decision(p, "Asked.TEST")["asked"], "always")
        self.assertEqual(c.request("allow", add=[])["list"], [f"origin.test:{port}", f"asked.test:{port}"])
        # Not asked again: listed now.
        s2 = self.ask(p)
        self.assert_tunnel(s2)
        self.assertFalse([x for x in c.events if x.get("event") == "ask"])
        # Its decision line is written in the loop's next pass: waited for, not assumed there.
        self.assertNotIn("asked", p.wait_log(host="asked.test", cls="ok")[-1].obj)
        s.close()
        s2.close()

    def test_deny(self):
        p, c = self.start("--allow-hint", "ask the operator")
        s = self.ask(p)
        e = c.event("ask")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="deny")["ok"])
        self.assert_refused(s, 403, "is not on this box's network list: ask the operator")
        line = self.decision(p, "asked.test")
        self.assertEqual((line["class"], line["asked"]), ("not-listed", "deny"))
        # An ask that has ended cannot be answered again.
        r = c.request("answer", ask=e["ask"], verdict="once")
        self.assertFalse(r["ok"])
        self.assertIn("no longer pending", r["error"])

    def test_timeout(self):
        # On the proxy's clock (advanced, not slept for): still waiting just before --ask-timeout,
        # refused at once after it.
        p, c = self.start(timeout=30)
        skip_without_clock_hooks(self, c)
        s = self.ask(p)
        e = c.event("ask")  # asked: its timer runs
        advance_clock(c, 29)
        self.assertTrue(still_open(s), "refused before --ask-timeout")
        started = time.monotonic()
        advance_clock(c, 1.5)
        self.assert_refused(s, 403, "is not on this box's network list")
        # Ended by the moved clock, not by a real 30 s: well short of the timeout in real time.
        self.assertLess(time.monotonic() - started, 30 / 2)
        line = self.decision(p, "asked.test")
        self.assertEqual((line["class"], line["asked"]), ("not-listed", "timeout"))
        r = c.request("answer", ask=e["ask"], verdict="once")
        self.assertFalse(r["ok"])
        self.assertIn(f"ask {e['ask']} is no longer pending", r["error"])
        r = c.request("answer", ask=e["ask"] + 1000, verdict="once")
        self.assertFalse(r["ok"])
        self.assertIn(f"no ask {e['ask'] + 1000}", r["error"])

    def test_the_address_rule_still_applies_after_approval(self):
        p, c = self.start()
        s = self.ask(p, "private.test")
        e = c.event("ask")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="always")["ok"])
        self.assert_refused(s, 403)
        line = self.decision(p, "private.test")
        self.assertEqual((line["class"], line["ip"], line["asked"]), ("private", "10.0.0.1", "always"))

    def test_text_line_carries_asked(self):
        port = self.echo.port
        p, c = proxy_with_control_fd(self, "--ask", "--allow", f"origin.test:{port}",
                                     "--resolve", "asked.test=127.0.0.2")
        s = self.ask(p)
        e = c.event("ask")
        c.request("answer", ask=e["ask"], verdict="deny")
        self.assert_refused(s)
        line = p.wait_raw(r'host="asked.test"')
        self.assertRegex(line, r"^egress connect host=\"asked\.test\" port=\d+ ip=- class=not-listed asked=deny id=\d+$")


class SharingTest(AskTestCase):

    def test_concurrent_asks_for_one_host_and_port_share_one(self):
        p, c = self.start()
        first = self.ask(p)
        e = c.event("ask")
        others = [self.ask(p) for _ in range(3)]
        other_port = self.ask(p, port=443)
        e443 = c.event("ask", port=443)
        self.assertNotEqual(e443["ask"], e["ask"])
        # The three later clients for the same host and port waited on the first ask.
        c.request("hello")
        self.assertFalse([x for x in c.events if x.get("event") == "ask"], c.events)
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        for s in [first] + others:
            self.assert_tunnel(s)
            s.close()
        self.assertTrue(c.request("answer", ask=e443["ask"], verdict="deny")["ok"])
        self.assert_refused(other_port)
        # Each line is written as its tunnel goes through, which a client may see first: waited for.
        def asked_once():
            return len([l for l in p.find_logs(host="asked.test", cls="ok") if l.obj.get("asked") == "once"])
        wait_until(lambda: asked_once() == 4, 5)
        self.assertEqual(asked_once(), 4)

    def test_an_ask_every_client_left_is_forgotten(self):
        p, c = self.start()
        s = self.ask(p)
        e = c.event("ask")
        s.close()
        # Once the proxy has seen the client go, the ask cannot be answered.
        def gone():
            r = c.request("answer", ask=e["ask"], verdict="once")
            return not r["ok"] and "no longer pending" in r["error"]
        self.assertTrue(wait_until(gone, 3))
        self.assertTrue(p.alive())

    def test_socks5_is_asked_too(self):
        p, c = self.start()
        s = p.connect()
        s.sendall(b"\x05\x01\x00")
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        host = b"asked.test"
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host + self.echo.port.to_bytes(2, "big"))
        e = c.event("ask")
        self.assertEqual(e["kind"], "socks")
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="deny")["ok"])
        self.assertEqual(recv_exact(s, 10)[:2], b"\x05\x02")
        s.close()


class BoundTest(AskTestCase):

    CAP = 1024  # proxy/proxy_server.h kMaxHandshakingClients

    def test_waiting_clients_count_among_the_undecided(self):
        # A box that opens client after client for names off the list, and a supervisor that never
        # answers: the waiting clients are held like any other undecided client, at most 1024 of
        # them; a newer one is closed at once, and the proxy serves again once they are answered.
        n = self.CAP + 50
        if raise_own_nofile(n + 200) < n + 200:
            self.skipTest("cannot raise this process's descriptor limit")
        p, c = self.start()
        clients = []
        try:
            for i in range(n):
                s = connect_waiting(p)
                try:
                    s.sendall(connect_request(f"asked.test:{self.echo.port}"))
                except OSError:
                    pass  # closed at once: past the cap
                clients.append(s)
            e = c.event("ask")
            poller = select.poll()
            for s in clients:
                poller.register(s, select.POLLIN)
            # Those past the cap are closed at once (readable: EOF); wait until all but the cap are.
            wait_until(lambda: len(poller.poll(0)) >= n - self.CAP, 10)
            held = n - len(poller.poll(0))
            self.assertLessEqual(held, self.CAP)
            self.assertGreaterEqual(held, self.CAP - 8)
            # One ask for all of them.
            c.request("hello")
            self.assertFalse([x for x in c.events if x.get("event") == "ask"])
            self.assertTrue(c.request("answer", ask=e["ask"], verdict="deny")["ok"])
        finally:
            for s in clients:
                s.close()
        s = self.ask(p, "origin.test")
        self.assert_tunnel(s)
        s.close()


class NeverAskedTest(AskTestCase):

    def test_an_ip_literal_is_never_asked(self):
        p, c = self.start()
        s = self.ask(p, "127.0.0.2")
        self.assert_refused(s, 403, "is an address")
        c.request("hello")
        self.assertFalse([x for x in c.events if x.get("event") == "ask"])
        self.assertNotIn("asked", self.decision(p, "127.0.0.2"))

    def test_a_listed_name_is_not_asked(self):
        p, c = self.start()
        s = self.ask(p, "origin.test")
        self.assert_tunnel(s)
        s.close()
        c.request("hello")
        self.assertFalse([x for x in c.events if x.get("event") == "ask"])

    def test_no_control_client_open_is_not_listed_at_once(self):
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-ask-")
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "control.sock")
        p = self.proxy("--control-socket", path, "--ask", "--log", "json", "--allow", "origin.test",
                       "--resolve", "asked.test=127.0.0.2")
        started = time.monotonic()
        s = self.ask(p)
        self.assert_refused(s, 403)
        # At once, not at the end of the --ask-timeout (default 30 s) of an ask nobody can answer.
        self.assertLess(time.monotonic() - started, DEFAULT_ASK_TIMEOUT / 2)
        self.assertNotIn("asked", self.decision(p, "asked.test"))


def resolve_reply(p, name):
    """A SOCKS5 RESOLVE of `name`: (reply code, address type, the bound address's bytes)."""
    s = p.connect()
    try:
        s.sendall(socks5_greeting((0,)) + bytes([5, 0xF0, 0, 3, len(name)]) + name.encode() + b"\0\0")
        if recv_exact(s, 2) != b"\x05\x00":
            raise AssertionError("no method choice")
        head = recv_exact(s, 4)
        if head[1] != 0:
            return head[1], None, None
        size = {1: 4, 4: 16}.get(head[3]) or recv_exact(s, 1)[0]
        bound = recv_exact(s, size)
        if recv_exact(s, 2) != b"\0\0":
            raise AssertionError("a bound port other than 0")
        return 0, head[3], bound
    finally:
        s.close()


class ResolveTest(AskTestCase):
    """SPEC §15, §16: a RESOLVE (the box's DNS, through the bridge) has no port and opens no
    connection: a name that would be asked about is not asked about, but answered by name, so that
    the connection that follows is asked about once, with its own port (test_transparent_ask.py)."""

    def test_a_name_that_would_be_asked_about_is_answered_by_name_without_asking(self):
        p, c = self.start()
        started = time.monotonic()
        # Answered at once, with the name itself (ATYP 3): no address, real or not.
        self.assertEqual(resolve_reply(p, "Asked.test"), (0, 3, b"Asked.test"))
        # Not asked: an ask would wait up to --ask-timeout (10 s here) for a supervisor.
        self.assertLess(time.monotonic() - started, 10 / 2)
        c.request("hello")
        self.assertFalse([x for x in c.events if x.get("event") == "ask"], c.events)
        line = self.decision(p, "Asked.test")
        self.assertEqual((line["kind"], line["class"], line["port"], line["ip"], line["asked"]),
                         ("resolve", "ok", 0, "-", "deferred"))
        # The connection that follows is the one asked about, with its port.
        s = self.ask(p)
        e = c.event("ask")
        self.assertEqual((e["host"], e["port"]), ("asked.test", self.echo.port))
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        self.assert_tunnel(s)
        s.close()
        self.assertEqual(self.decision(p, "asked.test", kind="connect")["asked"], "once")
        # A listed name is answered with its checked address, as without --ask.
        self.assertEqual(resolve_reply(p, "origin.test"), (0, 1, socket.inet_aton("127.0.0.2")))
        self.assertNotIn("asked", self.decision(p, "origin.test"))

    def test_with_no_control_client_open_the_name_is_not_listed(self):
        # Nobody could be asked: the box's DNS must say NXDOMAIN, not hand out a stand-in.
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-ask-")
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "control.sock")
        p = self.proxy("--control-socket", path, "--ask", "--log", "json", "--allow", "origin.test",
                       "--resolve", "asked.test=127.0.0.2")
        self.assertEqual(resolve_reply(p, "asked.test"), (2, None, None))
        line = self.decision(p, "asked.test")
        self.assertEqual(line["class"], "not-listed")
        self.assertNotIn("asked", line)
        # With one open, the same name is answered by name.
        control = connect_control_socket(path)
        self.addCleanup(control.close)
        self.assertTrue(control.request("hello")["ok"])
        self.assertEqual(resolve_reply(p, "asked.test"), (0, 3, b"asked.test"))


class SupervisorGoneTest(AskTestCase):

    def test_control_fd_closed_while_asking_shuts_down(self):
        p, c = self.start()
        s = self.ask(p)
        c.event("ask")
        c.close()
        p.proc.wait(timeout=2)
        self.assertEqual(p.proc.returncode, 0)
        # Closed without an answer.
        self.assertEqual(recv_all(s, timeout=2), b"")
        s.close()

    def test_last_control_socket_client_gone_refuses_pending_asks(self):
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-ask-")
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "control.sock")
        p = self.proxy("--control-socket", path, "--ask", "--ask-timeout", "30", "--log", "json",
                       "--allow", "origin.test", "--resolve", "asked.test=127.0.0.2")
        one = connect_control_socket(path)
        two = connect_control_socket(path)
        self.assertTrue(one.request("hello")["ok"])
        self.assertTrue(two.request("hello")["ok"])
        s = self.ask(p)
        e1 = one.event("ask")
        e2 = two.event("ask")
        self.assertEqual(e1, e2)
        one.close()
        # One supervisor is still there: the client still waits.
        self.assertTrue(still_open(s, 0.3))
        # A client that connects now is told of the pending ask.
        three = connect_control_socket(path)
        self.assertEqual(three.event("ask"), e1)
        three.close()
        started = time.monotonic()
        two.close()
        self.assert_refused(s, 403)
        # At once when the last supervisor leaves, not at --ask-timeout (30 s here).
        self.assertLess(time.monotonic() - started, 30 / 2)
        line = self.decision(p, "asked.test")
        self.assertEqual((line["class"], line["asked"]), ("not-listed", "timeout"))


if __name__ == "__main__":
    unittest.main()
