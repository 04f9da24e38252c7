# SPDX-License-Identifier: Apache-2.0
"""The relay's fallback from splice(2) to buffers (proxy/relay.cc), run under test: in a binary built
with BOXPROXY_TEST_HOOKS, BOXPROXY_TEST_NO_SPLICE=1 makes every splice into a pipe fail as on a
kernel or socket that cannot splice (EINVAL). A tunnel must still carry every byte both ways,
half-close included, and count them in its done line."""

import os
import socket
import threading
import unittest

from harness import OriginsMixin, ProxyTestCase, binary, connect_request, recv_all, recv_exact

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
PAYLOAD_BYTES = 6 << 20  # 6 MiB: far past the read that switches a direction to bulk (and a pipe)


def has_splice_hook():
    """True when the binary was built with BOXPROXY_TEST_HOOKS: the hook's variable is in it."""
    with open(binary(), "rb") as f:
        return b"BOXPROXY_TEST_NO_SPLICE" in f.read()


class SpliceFallbackTest(OriginsMixin, ProxyTestCase):

    def test_megabytes_both_ways_when_splice_fails(self):
        if not has_splice_hook():
            self.skipTest("the binary was built without BOXPROXY_TEST_HOOKS (scripts/test-all builds with them)")
        env = dict(os.environ, BOXPROXY_TEST_NO_SPLICE="1")
        p = self.proxy("--resolve", "origin.test=127.0.0.2", env=env)
        s = p.connect()
        s.sendall(connect_request(f"origin.test:{self.echo.port}"))
        self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
        payload = os.urandom(PAYLOAD_BYTES)
        errors = []

        def send():
            try:
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)  # the echo origin half-closes in turn
            except OSError as e:
                errors.append(e)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        got = recv_all(s, timeout=60, limit=PAYLOAD_BYTES)
        t.join(timeout=10)
        self.assertFalse(errors)
        self.assertEqual(len(got), len(payload))
        self.assertTrue(got == payload, "echoed bytes differ")
        s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.up, done.down), (len(payload), len(payload)))


if __name__ == "__main__":
    unittest.main()
