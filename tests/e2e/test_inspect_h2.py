# SPDX-License-Identifier: Apache-2.0
"""HTTP/2 on an inspected endpoint's box-facing side (SPEC §19, HTTP/2; issue 25 item 4, stage 1),
through the real binary and its inspector: the proxy offers "h2" by ALPN, every stream is judged,
answered and logged as one HTTP/1.1 request would be, and sent to the origin (the test's own, TLS
on 127.0.0.2) over HTTP/1.1. curl --http2 is one client; a small h2 client over ssl (Debian's
python3-h2) drives several streams on one connection, a malformed one, and the floods the manual's
bounds are for. Loopback only; every wait bounded."""

import json
import os
import socket
import ssl
import sys
import threading
import time
import unittest

try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.settings
    import hpack
except ImportError:  # an interpreter of its own (pyenv): Debian's packages are where install-deps put them
    sys.path.append("/usr/lib/python3/dist-packages")
    import h2.config
    import h2.connection
    import h2.events
    import h2.settings
    import hpack

from control_support import rss_kib
from fault_support import memory_compared
from harness import ProxyTestCase, holds_for, read_http_response, recv_exact, wait_until
from inspect_support import CURL, INSPECTOR, CutOrigin, InspectRig, ManyOrigin, connect_tls, curl, inspector_of

RULES = {"rules": [{"method": "GET", "path": "/allowed/**"}, {"method": "POST", "path": "/allowed/**"}]}


def h2_tls(p, target, cafile):
    """A CONNECT tunnel to `target` through serve's socket, then TLS offering only h2."""
    s = p.connect()
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    established = b"HTTP/1.1 200 Connection Established\r\n\r\n"
    if recv_exact(s, len(established)) != established:
        s.close()
        raise AssertionError("CONNECT refused")
    context = ssl.create_default_context(cafile=cafile)
    context.set_alpn_protocols(["h2"])
    tls = context.wrap_socket(s, server_hostname="origin.test")
    tls.settimeout(10)
    return tls


class H2Client:
    """h2's state machine over one TLS socket. Outbound headers are not checked or normalised, so
    that a test can send what a hostile box would."""

    def __init__(self, tls, authority):
        self.tls = tls
        self.authority = authority
        config = h2.config.H2Configuration(client_side=True, header_encoding=None, validate_outbound_headers=False,
                                           normalize_outbound_headers=False, validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        self.flush()
        self.streams = {}

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.tls.sendall(data)

    def request(self, path, method="GET", authority=None, extra=(), body=None):
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "https"), (":authority", authority or self.authority),
                   (":path", path), *extra]
        self.conn.send_headers(sid, headers, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.flush()
        self.streams[sid] = {"status": None, "headers": {}, "body": b"", "reset": None, "ended": False}
        return sid

    def begin_upload(self, path, length, first):
        """A POST of `length` bytes of which only `first` is sent (the stream left open): its id."""
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", self.authority),
                                     (":path", path), ("content-length", str(length))])
        self.conn.send_data(sid, first)
        self.flush()
        self.streams[sid] = {"status": None, "headers": {}, "body": b"", "reset": None, "ended": False}
        return sid

    def wait_head(self, sid, timeout=10):
        """Reads until stream `sid`'s answer head has come."""
        deadline = time.monotonic() + timeout
        while self.streams[sid]["status"] is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer head in {timeout}s: {self.streams}")
            for event in self.conn.receive_data(self.tls.recv(65536)):
                self._take(event)
            self.flush()

    def collect(self, ids, timeout=10):
        """Reads until every stream of `ids` has ended or been reset: {id: its record}."""
        deadline = time.monotonic() + timeout
        while not all(self.streams[i]["ended"] or self.streams[i]["reset"] is not None for i in ids):
            if time.monotonic() > deadline:
                raise AssertionError(f"streams not done in {timeout}s: {self.streams}")
            data = self.tls.recv(65536)
            if not data:
                raise AssertionError(f"the connection closed: {self.streams}")
            for event in self.conn.receive_data(data):
                self._take(event)
            self.flush()
        return {i: self.streams[i] for i in ids}

    def _take(self, event):
        record = self.streams.get(getattr(event, "stream_id", None))
        if isinstance(event, h2.events.ResponseReceived):
            headers = {k.decode(): v.decode() for k, v in event.headers}
            record["status"] = int(headers.pop(":status"))
            record["headers"] = headers
        elif isinstance(event, h2.events.DataReceived):
            record["body"] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            record["ended"] = True
        elif isinstance(event, h2.events.StreamReset) and record is not None:
            record["reset"] = event.error_code


def headers_frame(stream_id, block, flags=0x4):
    """A raw HEADERS frame (END_HEADERS; END_STREAM too when flags has 0x1)."""
    return len(block).to_bytes(3, "big") + bytes([0x1, flags]) + stream_id.to_bytes(4, "big") + block


def read_frames(tls, seconds):
    """Every frame the server sends within `seconds` (or until it closes): [(type, flags, stream, payload)]."""
    frames, buffer = [], b""
    deadline = time.monotonic() + seconds
    tls.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            data = tls.recv(65536)
        except (socket.timeout, ssl.SSLError, OSError):
            if buffer == b"" and frames and frames[-1][0] == 0x7:
                break
            continue
        if not data:
            break
        buffer += data
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[:3], "big")
            if len(buffer) < 9 + length:
                break
            frames.append((buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF, buffer[9:9 + length]))
            buffer = buffer[9 + length:]
    return frames


class EarlyAnswerOrigin:
    """A TLS origin on 127.0.0.2 that answers a request's head at once ("200", Content-Length: 3)
    and its body's bytes only once the whole body (Content-Length) has come: an answer that begins
    before its request ends, as a gRPC stream's does. Keep-alive; a thread a connection, bounded."""

    def __init__(self, cert, key):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.2", 0))
        self.port = self.listener.getsockname()[1]
        self.paths = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        for _ in range(16):
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
            tls.settimeout(10)
            buffer = b""
            for _ in range(16):  # requests on the connection
                while b"\r\n\r\n" not in buffer:
                    data = tls.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode().split("\r\n")
                self.paths.append(lines[0].split()[1])
                length = next((int(line.split(":", 1)[1]) for line in lines[1:]
                               if line.lower().startswith("content-length:")), 0)
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n")
                while len(buffer) < length:
                    data = tls.recv(65536)
                    if not data:
                        return
                    buffer += data
                buffer = buffer[length:]
                tls.sendall(b"ok\n")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.listener.close()


def start_inspecting_endpoint(test, endpoint, *args):
    """serve for an InspectRig test, with a config inspecting `endpoint` (its "host" set), trusting
    the origin's certificate and writing its CA to test.ca."""
    config = os.path.join(test.dir, "config.json")
    with open(config, "w") as f:
        json.dump({"inspect": [endpoint]}, f)
    return test.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", test.ca,
                      "--upstream-ca", test.cert, "--config", config, *args)


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectH2Test(InspectRig, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.target = f"origin.test:{self.origin.port}"

    def start(self, endpoint=None, *args):
        return start_inspecting_endpoint(self, dict(endpoint or RULES, host=self.target), *args)

    def curl_h2(self, p, path):
        return curl("--http2", "--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.ca, "-D", "-",
                    "-w", "\nversion=%{http_version}", f"https://{self.target}{path}")

    @unittest.skipUnless(CURL, "no curl")
    def test_curl_http2_gets_an_allowed_path(self):
        p = self.start()
        code, out, err = self.curl_h2(p, "/allowed/one?q=1")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("HTTP/2 200"), out[:200])
        self.assertTrue(out.endswith("version=2"), out[-50:])
        self.assertIn("x" * 511 + "\n", out)
        (request,) = self.origin.requests
        self.assertEqual((request["method"], request["path"]), ("GET", "/allowed/one?q=1"))
        self.assertIn(("Host", self.target), request["headers"])
        (line,) = p.wait_log(kind="request")
        self.assertEqual((line.obj["class"], line.obj["status"], line.obj["method"], line.obj["rule"]),
                         ("ok", 200, "GET", "rules[0]"))

    @unittest.skipUnless(CURL, "no curl")
    def test_curl_http2_denied_gets_403_and_the_origin_never_sees_it(self):
        p = self.start()
        code, out, err = self.curl_h2(p, "/secret")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("HTTP/2 403"), out[:200])
        self.assertIn("x-egress-refused: request denied", out)
        self.assertEqual(self.origin.requests, [])
        (line,) = p.wait_log(kind="request")
        self.assertEqual((line.obj["class"], line.obj["status"]), ("request denied", 403))

    def one_stream(self, path, **kwargs):
        """One stream on a fresh HTTP/2 connection, then GET /allowed/after on the same connection,
        which must be served (a refused stream leaves its connection going on). Returns (proxy,
        the first stream's result, the request lines logged: one for each of the two streams that
        reached the translation)."""
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        client = H2Client(tls, self.target)
        sid = client.request(path, **kwargs)
        got = client.collect([sid])[sid]
        after = client.request("/allowed/after")
        self.assertEqual(client.collect([after])[after]["status"], 200, "the connection did not go on")
        return p, got

    def origin_paths(self):
        return sorted(r["path"] for r in self.origin.requests)

    def assert_refused_on_its_stream(self, got, p, status, reason):
        """Refused with `status` and its reason, logged, and never sent to the origin."""
        self.assertEqual((got["status"], got["headers"].get("x-egress-refused")), (status, reason), got)
        self.assertEqual(self.origin_paths(), ["/allowed/after"])
        lines = p.wait_log(kind="request", count=2)
        self.assertEqual(sorted(l.obj["class"] for l in lines), sorted(["ok", reason]), [l.obj for l in lines])

    def test_h2_is_what_alpn_chooses(self):
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        self.assertEqual(tls.selected_alpn_protocol(), "h2")

    def test_an_allowed_stream_reaches_the_origin(self):
        p, got = self.one_stream("/allowed/1")
        self.assertEqual(got["status"], 200, got)
        self.assertEqual(self.origin_paths(), ["/allowed/1", "/allowed/after"])
        self.assertEqual([l.obj["class"] for l in p.wait_log(kind="request", count=2)], ["ok", "ok"])

    def test_a_post_body_reaches_the_origin(self):
        _, got = self.one_stream("/allowed/post", method="POST", body=b"hello h2")
        self.assertEqual((got["status"], got["body"]), (200, b"hello h2"), got)
        self.assertEqual(self.origin_paths(), ["/allowed/after", "/allowed/post"])

    def test_a_denied_stream_gets_403_on_its_stream(self):
        p, got = self.one_stream("/denied")
        self.assert_refused_on_its_stream(got, p, 403, "request denied")

    def test_an_authority_other_than_the_endpoint_gets_400(self):
        p, got = self.one_stream("/allowed/3", authority="elsewhere.test")
        self.assert_refused_on_its_stream(got, p, 400, "host mismatch")

    def test_cr_lf_in_a_value_gets_400_never_a_header_of_its_own(self):
        p, got = self.one_stream("/allowed/4", extra=[("x-smuggle", "1\r\nx-egress-injected: 1")])
        self.assert_refused_on_its_stream(got, p, 400, "bad request")
        for r in self.origin.requests:
            self.assertNotIn("x-egress-injected", [k.lower() for k, _ in r["headers"]])

    def assert_refused_never_sent(self, got):
        # nghttp2 resets such a stream itself, or the translation answers 400: either way it is
        # never sent.
        self.assertTrue(got["reset"] is not None or got["status"] == 400, got)
        self.assertEqual(self.origin_paths(), ["/allowed/after"])

    def test_transfer_encoding_is_refused_never_sent(self):
        self.assert_refused_never_sent(self.one_stream("/allowed/5", extra=[("transfer-encoding", "chunked")])[1])

    def test_a_pseudo_header_after_a_regular_field_is_refused_never_sent(self):
        got = self.one_stream("/allowed/6", extra=[("accept", "*/*"), (":method", "DELETE")])[1]
        self.assert_refused_never_sent(got)

    def test_streams_on_one_connection_are_each_judged_on_their_own(self):
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        client = H2Client(tls, self.target)
        ids = [client.request("/allowed/1"), client.request("/denied"), client.request("/allowed/2")]
        got = client.collect(ids)
        self.assertEqual([got[i]["status"] for i in ids], [200, 403, 200], got)
        self.assertEqual(self.origin_paths(), ["/allowed/1", "/allowed/2"])

    def test_a_stream_reset_in_its_body_is_abandoned_and_the_connection_goes_on(self):
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        client = H2Client(tls, self.target)
        sid = client.begin_upload("/allowed/upload", 100, b"0123456789")
        # The reset is meant to come while the request is under way at the origin: once its head
        # has come there (the client sent the first bytes with it; the assertions hold either way).
        wait_until(lambda: "/allowed/upload" in self.origin.heads, 10)
        client.conn.reset_stream(sid, error_code=8)  # CANCEL
        client.flush()
        after = client.request("/allowed/after")
        self.assertEqual(client.collect([after])[after]["status"], 200)
        # The cut request never reached the origin whole (its connection was closed under it, so no
        # later byte could complete it); the later one came on another.
        bodies = {r["path"]: r["body"] for r in self.origin.requests}
        self.assertIn("/allowed/after", bodies)
        self.assertLess(len(bodies.get("/allowed/upload", b"")), 100)

    def test_a_response_the_origin_may_have_cut_never_ends_its_stream_cleanly(self):
        # Over HTTP/1.1 such a response reaches the box with its connection ended without
        # close_notify (the box can tell it may be cut). Over HTTP/2 the same must hold: the stream
        # is never ended with END_STREAM, or the box would take a cut body for a whole one.
        origin = CutOrigin(self.cert, self.key)
        self.addCleanup(origin.close)
        target = f"origin.test:{origin.port}"
        config = os.path.join(self.dir, "cut.json")
        import json
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": target}]}, f)
        p = self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                       "--upstream-ca", self.cert, "--config", config)
        client = H2Client(h2_tls(p, target, self.ca), target)
        sid = client.request("/anything")
        try:
            record = client.collect([sid], timeout=10)[sid]
        except AssertionError as closed:  # the connection ended with the stream still open: right
            record = client.streams[sid]
            self.assertIn("the connection closed", str(closed))
        except (ssl.SSLError, OSError):  # ended under the client's own acknowledgement: as right
            record = client.streams[sid]
        self.assertFalse(record["ended"], record)
        self.assertEqual(record["status"], 200, record)  # its head and what came of it did arrive

    def test_a_stream_flood_is_refused_past_the_bound_and_others_go_on(self):
        p = self.start()
        inspector = inspector_of(p.pid)
        self.assertIsNotNone(inspector)
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        encoder = hpack.Encoder()
        flood = bytearray(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        # 1,000 streams at once, each waiting for a body that never comes: only kH2MaxStreams (32)
        # are taken; the rest are refused, and nothing grows for them.
        for n in range(1000):
            block = encoder.encode([(":method", "POST"), (":scheme", "https"), (":authority", self.target),
                                    (":path", f"/allowed/{n}"), ("content-length", "10")])
            flood += headers_frame(2 * n + 1, block)
        before = rss_kib(inspector)
        tls.sendall(bytes(flood))
        frames = read_frames(tls, 3)
        refused = {stream for kind, _, stream, payload in frames if kind == 0x3 and payload == b"\x00\x00\x00\x07"}
        self.assertGreaterEqual(len(refused), 1000 - 32, f"{len(refused)} refused")
        if memory_compared("a stream flood"):  # under ASan the figure holds its quarantine
            self.assertLess(rss_kib(inspector) - before, 4096, "the inspector grew by more than 4 MiB")
        # Another connection is served meanwhile.
        other = h2_tls(p, self.target, self.ca)
        self.addCleanup(other.close)
        client = H2Client(other, self.target)
        sid = client.request("/allowed/other")
        self.assertEqual(client.collect([sid])[sid]["status"], 200)

    def test_a_window_that_never_opens_stalls_only_its_own_connection(self):
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        shut = H2Client(tls, self.target)
        shut.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        shut.flush()
        sid = shut.request("/allowed/post", method="POST", body=os.urandom(12 * 1024))
        deadline = time.monotonic() + 5
        while shut.streams[sid]["status"] is None and time.monotonic() < deadline:
            for event in shut.conn.receive_data(tls.recv(65536)):
                shut._take(event)
        self.assertEqual(shut.streams[sid]["status"], 200)  # its head came; its body waits for the window
        self.assertEqual(shut.streams[sid]["body"], b"")
        other = h2_tls(p, self.target, self.ca)
        self.addCleanup(other.close)
        client = H2Client(other, self.target)
        ids = [client.request(f"/allowed/{n}") for n in range(3)]
        self.assertEqual([r["status"] for r in client.collect(ids).values()], [200, 200, 200])

    def test_an_idle_connection_is_told_goaway_before_it_closes(self):
        p = self.start(None, "--head-timeout", "1")
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        client = H2Client(tls, self.target)
        sid = client.request("/allowed/1")
        self.assertEqual(client.collect([sid])[sid]["status"], 200)
        frames = read_frames(tls, 4)
        goaway = [payload for kind, _, _, payload in frames if kind == 0x7]
        self.assertTrue(goaway, f"no GOAWAY: {frames}")
        # NO_ERROR, naming the one stream served as the last one acted on.
        self.assertEqual((int.from_bytes(goaway[0][:4], "big"), int.from_bytes(goaway[0][4:8], "big")), (sid, 0))

    def test_a_box_that_closes_while_its_stream_waits_on_the_origin_ends_its_connection(self):
        # HTTP/2 has no half-close: the box that closes has left, and its connection (and the
        # tunnel's slot) must not wait on the origin's answer for no one.
        origin = ManyOrigin(self.cert, self.key)
        self.addCleanup(origin.close)
        self.addCleanup(origin.release)
        self.target = f"origin.test:{origin.port}"
        p = self.start({"rules": [{"method": "GET", "path": "/hold"}]})
        tls = h2_tls(p, self.target, self.ca)
        client = H2Client(tls, self.target)
        client.request("/hold")
        self.assertTrue(wait_until(lambda: origin.holding == 1, timeout=5), "the request never reached the origin")
        tls.close()
        (done,) = p.wait_log(kind="connect", cls="done", timeout=5)
        self.assertEqual(done.end, "client-closed")
        self.assertEqual(origin.holding, 1)  # ended before the origin answered

    def test_over_http1_a_box_that_half_closes_after_its_request_still_gets_the_answer(self):
        # The manual's contrast with the test above: HTTP/1.1 has half-close, so a box's end after a
        # whole request is not taken as leaving: the answer, when it comes, is still passed.
        origin = ManyOrigin(self.cert, self.key)
        self.addCleanup(origin.close)
        self.addCleanup(origin.release)
        self.target = f"origin.test:{origin.port}"
        p = self.start({"rules": [{"method": "GET", "path": "/hold"}]})
        tls = connect_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        tls.sendall(f"GET /hold HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
        self.assertTrue(wait_until(lambda: origin.holding == 1, timeout=5), "the request never reached the origin")
        socket.socket.shutdown(tls, socket.SHUT_WR)  # a FIN under TLS: the box sends no more
        self.assertTrue(holds_for(lambda: p.find_logs(kind="connect", cls="done") == [], 0.3),
                        "the FIN ended the connection before its answer")
        origin.release()
        response = read_http_response(tls)
        self.assertEqual((response.status, response.body), (200, b"ok\n"))

    def test_an_answer_that_begins_before_its_request_ends_keeps_the_connection(self):
        # A POST whose answer's head comes back while its body is still being sent (a gRPC stream's
        # way): once the body has ended and then the answer, the next stream is served on the same
        # connection, not refused by a connection closing behind the first.
        origin = EarlyAnswerOrigin(self.cert, self.key)
        self.addCleanup(origin.close)
        self.target = f"origin.test:{origin.port}"
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        client = H2Client(tls, self.target)
        sid = client.begin_upload("/allowed/upload", 10, b"first")
        client.wait_head(sid)  # the answer's head, before the body has ended
        client.conn.send_data(sid, b"_last", end_stream=True)
        client.flush()
        self.assertEqual(client.collect([sid])[sid]["body"], b"ok\n")
        after = client.request("/allowed/after")
        self.assertEqual(client.collect([after])[after]["status"], 200)
        self.assertEqual(origin.paths, ["/allowed/upload", "/allowed/after"])

    def test_heads_held_past_their_bound_are_refused_never_served_cut_short(self):
        # --max-head-bytes 1024: at most 4 KiB of heads held for streams waiting their turn. The
        # first stream waits for a body that does not come; each later one's list counts about
        # 870 bytes while it is read (32 a field besides names and values: under the 1024 a list
        # may have) and its head about 700 once translated; the one that would pass the bound is
        # reset (REFUSED_STREAM) and never reaches the origin, not even with its list cut where
        # the bound fell.
        p = self.start(None, "--max-head-bytes", "1024")
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        client = H2Client(tls, self.target)
        first = client.conn.get_next_available_stream_id()
        client.conn.send_headers(first, [(":method", "POST"), (":scheme", "https"), (":authority", self.target),
                                         (":path", "/allowed/wait"), ("content-length", "5")])
        client.streams[first] = {"status": None, "headers": {}, "body": b"", "reset": None, "ended": False}
        client.flush()
        pad = "p" * 600
        ids = [client.request(f"/allowed/{n}", extra=[("x-pad", pad), ("x-last", "1")]) for n in range(7)]
        # The later heads are to be read and held while the first stream waits: the last one's
        # refusal (REFUSED_STREAM, the bound passed) says that every one of them has been read.
        client.collect([ids[-1]])
        client.conn.send_data(first, b"12345", end_stream=True)
        client.flush()
        got = client.collect([first, *ids])
        reset = [i for i in ids if got[i]["reset"] is not None]
        self.assertTrue(reset, "no stream was refused")
        self.assertEqual({got[i]["reset"] for i in reset}, {7})
        self.assertTrue(all(got[i]["status"] == 200 for i in [first, *ids] if i not in reset), got)
        seen = {r["path"]: dict((k.lower(), v) for k, v in r["headers"]) for r in self.origin.requests}
        for n, i in enumerate(ids):
            if i in reset:
                self.assertNotIn(f"/allowed/{n}", seen)
            else:
                self.assertEqual(seen[f"/allowed/{n}"].get("x-last"), "1")

    def test_a_settings_flood_ends_the_session_and_others_go_on(self):
        p = self.start()
        tls = h2_tls(p, self.target, self.ca)
        self.addCleanup(tls.close)
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00" + b"\x00\x03\x00\x00\x00\x64"
        try:
            tls.sendall(preface + settings * 5000)
        except OSError:
            pass  # it may close while we still write
        frames = read_frames(tls, 5)
        goaway = [payload for kind, _, _, payload in frames if kind == 0x7]
        self.assertTrue(goaway, "no GOAWAY")
        self.assertEqual(int.from_bytes(goaway[-1][4:8], "big"), 0xB)  # ENHANCE_YOUR_CALM
        other = h2_tls(p, self.target, self.ca)
        self.addCleanup(other.close)
        client = H2Client(other, self.target)
        sid = client.request("/allowed/other")
        self.assertEqual(client.collect([sid])[sid]["status"], 200)


if __name__ == "__main__":
    unittest.main()
