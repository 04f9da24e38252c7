# SPDX-License-Identifier: Apache-2.0
"""Asking the supervisor about each request over HTTP/2 (SPEC §20, "Ask per request"; issue 36 item
1): a stream held for the supervisor holds no other stream of its connection up. The box's side
speaks h2 (test_inspect_h2.py's client over ssl); the origin is the test's own TLS origin on
127.0.0.2. Every wait bounded."""

import unittest

from harness import ProxyTestCase
from test_inspect_ask import AskRig
from test_inspect_h2 import H2Client, h2_tls


class RequestAskH2Test(AskRig, ProxyTestCase):

    def client(self, p):
        tls = h2_tls(p, f"origin.test:{self.origin.port}", self.ca)
        self.addCleanup(tls.close)
        return H2Client(tls, f"origin.test:{self.origin.port}")

    def test_other_streams_go_on_while_one_waits(self):
        p, c = self.start()
        h2 = self.client(p)
        held = h2.request("/asked/first?q=1")
        e = c.event("ask")
        self.assertEqual((e["method"], e["path"], e["query"]), ("GET", "/asked/first", True))
        # Streams after it are served while it waits: one not asked about, one refused by the rules.
        free = h2.request("/free/x")
        denied = h2.request("/nowhere")
        done = h2.collect([free, denied])
        self.assertEqual((done[free]["status"], done[denied]["status"]), (200, 403))
        self.assertIsNone(h2.streams[held]["status"])
        self.assertEqual(self.origin_paths(), ["/free/x"])
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        self.assertEqual(h2.collect([held])[held]["status"], 200)
        lines = self.lines(p, 3)
        self.assertEqual([(l["path"], l.get("asked")) for l in lines],
                         [("/free/x", None), ("/nowhere", None), ("/asked/first", "once")])

    def test_two_streams_wait_at_once_each_answered_its_own_way(self):
        p, c = self.start()
        h2 = self.client(p)
        upload = h2.request("/asked/upload", method="POST", body=b"held body")
        read = h2.request("/asked/read")
        asks = {c.event("ask", path=path)["ask"]: path for path in ("/asked/upload", "/asked/read")}
        by_path = {path: ask for ask, path in asks.items()}
        # The later one answered first: it goes at once, the earlier still waits.
        self.assertTrue(c.request("answer", ask=by_path["/asked/read"], verdict="deny")["ok"])
        self.assertEqual(h2.collect([read])[read]["status"], 403)
        self.assertIsNone(h2.streams[upload]["status"])
        self.assertTrue(c.request("answer", ask=by_path["/asked/upload"], verdict="always")["ok"])
        done = h2.collect([upload])[upload]
        self.assertEqual((done["status"], done["body"]), (200, b"held body"))  # the origin echoes it whole
        # always: the same method and path go without asking, on this connection too.
        again = h2.request("/asked/upload", method="POST", body=b"again")
        self.assertEqual(h2.collect([again])[again]["status"], 200)
        lines = self.lines(p, 3)
        self.assertEqual(sorted(l["asked"] for l in lines), ["always", "always", "deny"])

    def test_a_stream_reset_while_it_waits_is_forgotten(self):
        p, c = self.start()
        h2 = self.client(p)
        held = h2.request("/asked/gone")
        e = c.event("ask")
        h2.conn.reset_stream(held)
        h2.flush()
        after = h2.request("/free/after")
        self.assertEqual(h2.collect([after])[after]["status"], 200)
        # Its answer finds nothing to resume; the connection goes on.
        self.assertTrue(c.request("answer", ask=e["ask"], verdict="once")["ok"])
        last = h2.request("/free/last")
        self.assertEqual(h2.collect([last])[last]["status"], 200)
        self.assertEqual(self.origin_paths(), ["/free/after", "/free/last"])

    def test_at_most_eight_streams_wait_at_once(self):
        p, c = self.start()
        h2 = self.client(p)
        waiting = [h2.request(f"/asked/{i}") for i in range(8)]
        asks = [c.event("ask", path=f"/asked/{i}")["ask"] for i in range(8)]
        ninth = h2.request("/asked/ninth")
        self.assertEqual(h2.collect([ninth])[ninth]["status"], 403)  # refused at once, nobody asked
        self.assertEqual(self.lines(p, 1)[0]["asked"], "none")
        for ask in asks:
            self.assertTrue(c.request("answer", ask=ask, verdict="once")["ok"])
        done = h2.collect(waiting)
        self.assertEqual([done[sid]["status"] for sid in waiting], [200] * 8)
        self.assertEqual(c.events, [])

    def test_timeout_refuses_the_stream_and_the_connection_goes_on(self):
        p, c = self.start(timeout=1)
        h2 = self.client(p)
        held = h2.request("/asked/slow")
        c.event("ask")
        self.assertEqual(h2.collect([held], timeout=5)[held]["status"], 403)
        after = h2.request("/free/after")
        self.assertEqual(h2.collect([after])[after]["status"], 200)
        (line,) = self.lines(p, 1, cls="request denied")
        self.assertEqual(line["asked"], "timeout")
        self.assertGreaterEqual(line["ms"], 900)  # its time counts the wait


if __name__ == "__main__":
    unittest.main()
