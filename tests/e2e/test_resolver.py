# SPDX-License-Identifier: Apache-2.0
"""The resolver (SPEC §5 step 3): every name is absolute, and shutdown frees pending lookups.

The search-list tests run the proxy without --nameserver, so it reads /etc/resolv.conf: inside a private
mount namespace (`unshare --mount`) a resolv.conf of the test's own is bind-mounted over the real one. It
names `search corp.test`, `options ndots:5` and the test's DNS server on loopback (evdns reads ADDR:PORT on
a nameserver line), which answers the suffixed name with 127.0.0.3 and the absolute name with 127.0.0.2.
Nothing but loopback is ever asked or dialled. They need root (tests run as root) and unshare(1).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from harness import (DnsServer, EchoServer, Proxy, ProxyTestCase, connect_request, recv_exact, wait_until)

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
LISTED = "api.example.com"
SUFFIXED = "api.example.com.corp.test"
ABSOLUTE_ADDR = "127.0.0.2"
SUFFIXED_ADDR = "127.0.0.3"


def can_unshare():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "--uts", "true"], capture_output=True, timeout=10)
    return probe.returncode == 0


@unittest.skipUnless(can_unshare(), "needs root and unshare(1) for a private /etc/resolv.conf")
class SearchListTest(ProxyTestCase):
    """A resolv.conf search list, ndots or the host name's domain never widen the host list."""

    def setUp(self):
        super().setUp()
        self.absolute = EchoServer(host=ABSOLUTE_ADDR)
        self.addCleanup(self.absolute.close)
        # The same port on the other address: what an off-list suffixed answer would be dialled on.
        self.suffixed = EchoServer(host=SUFFIXED_ADDR, port=self.absolute.port)
        self.addCleanup(self.suffixed.close)
        self.dns = DnsServer({LISTED: [ABSOLUTE_ADDR], SUFFIXED: [SUFFIXED_ADDR]})
        self.addCleanup(self.dns.close)
        self.tmp = tempfile.TemporaryDirectory(prefix="boxproxy-resolv-")
        self.addCleanup(self.tmp.cleanup)

    def system_resolver_proxy(self, resolv_conf, hostname=None):
        """A proxy that reads `resolv_conf` as its /etc/resolv.conf (and, given one, runs under
        `hostname` in its own UTS namespace); no --nameserver. Both addresses are permitted, so
        the address rule alone would not stop a dial to the suffixed name's answer."""
        path = os.path.join(self.tmp.name, "resolv.conf")
        with open(path, "w") as f:
            f.write(resolv_conf)
        p = Proxy("--allow", f"{LISTED}:{self.absolute.port}", "--permit", f"{SUFFIXED_ADDR}/32", dns=self.dns)
        argv = list(p.argv)
        i = argv.index("--nameserver")
        del argv[i:i + 2]  # the system's resolver path: resolv.conf, not --nameserver
        script = 'mount --bind "$0" /etc/resolv.conf || exit 97; '
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if hostname:
            unshare.append("--uts")
            script += f'hostname {hostname} || exit 98; '
        p.argv = unshare + ["sh", "-c", script + 'exec "$@"', path] + argv
        self.addCleanup(p.cleanup)
        self._proxies.append(p)
        p.start()
        return p

    def tunnel_to_listed_name(self, p):
        s = p.connect()
        s.sendall(connect_request(f"{LISTED}:{self.absolute.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        s.sendall(b"ping")
        self.assertEqual(recv_exact(s, 4), b"ping")
        s.close()

    def assert_only_the_absolute_name(self, p):
        p.wait_log(kind="connect", host=LISTED, cls="ok")
        self.assertEqual(self.dns.names_asked(), {LISTED}, f"queries: {self.dns.queries}")
        self.assertEqual(p.find_logs(kind="connect", host=LISTED, cls="ok")[0].ip, ABSOLUTE_ADDR)
        self.assertGreaterEqual(self.absolute.count(), 1)
        self.assertEqual(self.suffixed.count(), 0, "the suffixed (off-list) name's address was dialled")

    def test_search_and_ndots_are_never_applied(self):
        p = self.system_resolver_proxy(f"search corp.test\noptions ndots:5\nnameserver {self.dns.address}\n")
        self.tunnel_to_listed_name(p)
        self.assert_only_the_absolute_name(p)

    def test_domain_line_is_never_applied(self):
        p = self.system_resolver_proxy(f"domain corp.test\noptions ndots:5\nnameserver {self.dns.address}\n")
        self.tunnel_to_listed_name(p)
        self.assert_only_the_absolute_name(p)

    def test_host_name_domain_is_never_applied(self):
        # No search line: evdns would otherwise search the host name's own domain.
        p = self.system_resolver_proxy(f"options ndots:5\nnameserver {self.dns.address}\n",
                                       hostname="box.corp.test")
        self.tunnel_to_listed_name(p)
        self.assert_only_the_absolute_name(p)

    def test_a_name_that_fails_is_not_retried_with_a_suffix(self):
        # NXDOMAIN for the absolute name: evdns would then try the search list.
        self.dns.records.pop(LISTED)
        p = self.system_resolver_proxy(f"search corp.test\nnameserver {self.dns.address}\n")
        s = p.connect()
        s.sendall(connect_request(f"{LISTED}:{self.absolute.port}"))
        head = recv_exact(s, 12)
        self.assertTrue(head.startswith(b"HTTP/1.1 502"), head)
        s.close()
        p.wait_log(kind="connect", host=LISTED, cls="name not resolved")
        self.assertEqual(self.dns.names_asked(), {LISTED}, f"queries: {self.dns.queries}")
        self.assertEqual(self.suffixed.count(), 0)


class ShutdownWithLookupTest(ProxyTestCase):
    """SIGTERM while lookups wait on a server that never answers: exit 0, nothing leaked (the
    sanitizer build fails with exit 1 on a leak)."""

    def test_sigterm_with_lookups_pending_exits_clean(self):
        dns = DnsServer(silent=True)
        self.addCleanup(dns.close)
        p = self.proxy("--dns-timeout", "30", dns=dns)
        clients = []
        for i in range(3):
            s = p.connect()
            s.sendall(connect_request(f"slow{i}.example:443"))
            clients.append(s)
        self.assertTrue(wait_until(lambda: len(dns.names_asked()) >= 3, 5), f"asked: {dns.queries}")
        p.stop()  # SIGTERM; asserts exit 0 within the harness's bound
        for s in clients:
            s.close()


if __name__ == "__main__":
    unittest.main()
