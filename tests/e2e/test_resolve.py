# SPDX-License-Identifier: Apache-2.0
"""Resolve-only requests (SPEC §16): Tor's SOCKS5 RESOLVE (0xF0) runs the §5 decision for a name
(host list, lookup, address rule) and answers with a checked address in BND.ADDR, or the SOCKS5
refusal of its class, without dialling. The in-box bridge's DNS responder asks this way."""

import socket
import unittest

from harness import DnsServer, ProxyTestCase, recv_exact, socks5_greeting

RESOLVE = 0xF0


def resolve_request(name, port=0):
    name = name.encode() if isinstance(name, str) else name
    return bytes([5, RESOLVE, 0, 3, len(name)]) + name + port.to_bytes(2, "big")


class ResolveTest(ProxyTestCase):

    def resolve(self, proxy, name, port=0):
        """Returns (reply code, address text or None)."""
        s = proxy.connect()
        try:
            s.sendall(socks5_greeting((0,)) + resolve_request(name, port))
            self.assertEqual(recv_exact(s, 2), b"\x05\x00")
            head = recv_exact(s, 4)
            self.assertEqual(head[0], 5)
            if head[3] == 1:
                address = socket.inet_ntop(socket.AF_INET, recv_exact(s, 4))
            elif head[3] == 4:
                address = socket.inet_ntop(socket.AF_INET6, recv_exact(s, 16))
            else:
                self.fail(f"address type {head[3]}")
            self.assertEqual(recv_exact(s, 2), b"\x00\x00")
            # Then the proxy closes: a resolve is one answer.
            s.settimeout(5)
            self.assertEqual(s.recv(1), b"")
            return head[1], (address if head[1] == 0 else None)
        finally:
            s.close()

    def test_a_listed_name_is_answered_with_its_checked_address_and_not_dialled(self):
        p = self.proxy("--allow", "api.test", "--resolve", "api.test=127.0.0.2")
        self.assertEqual(self.resolve(p, "api.test"), (0, "127.0.0.2"))
        (line,) = p.wait_log(kind="resolve", cls="ok")
        # The line names the port the RESOLVE asked with (0: none), not the 443 it was judged at.
        self.assertEqual((line.host, line.port, line.ip), ("api.test", 0, "127.0.0.2"))
        self.assertEqual(p.find_logs(cls="done"), [])

    def test_the_line_names_the_port_asked_with(self):
        p = self.proxy("--allow", "api.test", "--resolve", "api.test=127.0.0.2")
        self.assertEqual(self.resolve(p, "api.test", 8080), (0, "127.0.0.2"))
        (line,) = p.wait_log(kind="resolve", cls="ok")
        self.assertEqual(line.port, 8080)
        self.assertEqual(self.resolve(p, "other.test", 9090), (2, None))
        p.wait_log(kind="resolve", cls="not-listed", host="other.test", port=9090)
        self.assertEqual(self.resolve(p, "bad$name.test", 7070), (4, None))
        p.wait_log(kind="resolve", cls="invalid host", port=7070)

    def test_a_name_off_the_list_is_refused_and_never_looked_up(self):
        dns = DnsServer({"other.test": ["127.0.0.2"]})
        try:
            p = self.proxy("--allow", "api.test", dns=dns)
            self.assertEqual(self.resolve(p, "other.test"), (2, None))
            p.wait_log(kind="resolve", cls="not-listed", host="other.test")
            self.assertNotIn("other.test", dns.names_asked())
        finally:
            dns.close()

    def test_a_listed_name_is_looked_up_in_dns(self):
        dns = DnsServer({"api.test": ["127.0.0.2", "::ffff:127.0.0.2"]})
        try:
            p = self.proxy("--allow", "api.test", dns=dns)
            self.assertEqual(self.resolve(p, "API.test."), (0, "127.0.0.2"))
            self.assertIn("api.test", dns.names_asked())
        finally:
            dns.close()

    def test_the_address_rule_still_applies(self):
        p = self.proxy("--resolve", "inside.test=10.0.0.1", "--resolve", "doc.test=192.0.2.1",
                       "--resolve", "mixed.test=127.0.0.2,169.254.169.254")
        self.assertEqual(self.resolve(p, "inside.test"), (2, None))
        p.wait_log(kind="resolve", cls="private", ip="10.0.0.1")
        self.assertEqual(self.resolve(p, "doc.test"), (2, None))
        p.wait_log(kind="resolve", cls="reserved")
        # One refused answer refuses the name: the box never learns any of its addresses.
        self.assertEqual(self.resolve(p, "mixed.test"), (2, None))
        p.wait_log(kind="resolve", cls="link-local")

    def test_unresolvable_and_invalid_names(self):
        p = self.proxy()
        self.assertEqual(self.resolve(p, "nowhere.test"), (4, None))
        p.wait_log(kind="resolve", cls="name not resolved")
        self.assertEqual(self.resolve(p, "bad$name.test"), (4, None))
        p.wait_log(kind="resolve", cls="invalid host")

    def test_an_ipv6_only_name_is_answered_with_ipv6(self):
        p = self.proxy("--permit", "2001:db8::/32", "--resolve", "six.test=2001:db8::5")
        self.assertEqual(self.resolve(p, "six.test"), (0, "2001:db8::5"))

    def test_a_name_listed_on_another_port_is_resolved(self):
        p = self.proxy("--allow", "api.test:8443", "--resolve", "api.test=127.0.0.2")
        self.assertEqual(self.resolve(p, "api.test"), (0, "127.0.0.2"))
        (line,) = p.wait_log(kind="resolve", cls="ok")
        self.assertEqual(line.port, 0)  # judged at 8443, the port the list opens; logged as asked

    def test_resolve_lines_follow_the_published_schema(self):
        from test_schemas import errors
        p = self.proxy("--log", "json", "--allow", "api.test", "--resolve", "api.test=127.0.0.2")
        self.resolve(p, "api.test")
        self.resolve(p, "other.test")
        lines = p.wait_log(kind="resolve", count=2)
        for line in lines:
            self.assertEqual(errors("decision-line", line.obj), [], line.raw)

    def test_a_resolve_takes_no_tunnel_slot(self):
        p = self.proxy("--max-connections", "1", "--resolve", "api.test=127.0.0.2")
        for _ in range(3):
            self.assertEqual(self.resolve(p, "api.test"), (0, "127.0.0.2"))


if __name__ == "__main__":
    unittest.main()
