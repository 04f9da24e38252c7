# SPDX-License-Identifier: Apache-2.0
"""Shared by the request-inspection tests that need serve's inspector process itself
(test_inspect_confine, test_inspect_ca, test_inspect_origins, test_inspect_websocket,
test_inspect_memory): a TLS origin of the test's own on 127.0.0.2 (its certificate made here and
given with --upstream-ca), a serve inspecting it, curl as the box's client, and the inspector
found as serve's child in /proc. Also: a test CA and certificates it signs (for origins whose
certificate names another host), a WebSocket echo origin, an origin that holds a thousand
keep-alive connections (asyncio, one thread), and PSS readings."""

import asyncio
import base64
import hashlib
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import threading

from box_support import TlsOrigin, make_certificate
from harness import ORIGIN_HOST, _TcpServer, binary, recv_exact, wait_until

CURL = shutil.which("curl")
INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")


def curl(*args, timeout=20):
    """curl -sS with a bounded time and no proxy of the environment's: (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    proc = subprocess.run([CURL, "-sS", "--max-time", "10", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def children_of(pid):
    """The pids whose parent is `pid` (from /proc/*/stat: the field after the name's closing paren)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def inspector_of(serve_pid, timeout=5.0):
    """The pid of serve's boxproxy-inspect child (its argv[0]), or None within `timeout` seconds."""
    found = []

    def look():
        for child in children_of(serve_pid):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    argv0 = f.read().split(b"\0")[0]
            except OSError:
                continue
            if argv0 == b"boxproxy-inspect":
                found.append(child)
                return True
        return False

    wait_until(look, timeout)
    return found[0] if found else None


class InspectRig:
    """A mixin for ProxyTestCase: self.dir (a temp dir), self.cert and self.key (the origin's),
    self.origin (a TlsOrigin on 127.0.0.2), self.ca (where --ca-out writes)."""

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspect-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.cert, self.key = make_certificate(self.dir)
        self.origin = TlsOrigin(self.cert, self.key)
        self.addCleanup(self.origin.close)
        self.ca = os.path.join(self.dir, "session-ca.pem")

    def start_inspecting(self, *args, **kwargs):
        """serve inspecting origin.test at the origin's port (no rules), trusting the origin's
        certificate, writing its CA to self.ca."""
        return self.proxy("--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                          "--upstream-ca", self.cert, "--inspect", f"origin.test:{self.origin.port}", *args, **kwargs)

    def get(self, p, path, cacert=None):
        """curl https://origin.test:PORT/PATH through the proxy's socket (SOCKS5), trusting `cacert`
        (default self.ca): (exit code, status or None, body, stderr)."""
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", cacert or self.ca,
                              "-D", "-", f"https://origin.test:{self.origin.port}{path}")
        head, _, body = out.partition("\r\n\r\n")
        first = head.split("\r\n")[0]
        status = int(first.split()[1]) if first.startswith("HTTP/") else None
        return code, status, body, err


def connect_tls(p, target, cafile, server_hostname="origin.test", suppress_ragged_eofs=True):
    """A CONNECT tunnel to `target` ("host:port") through serve's socket, then TLS over it with
    `server_hostname` as SNI, verified against `cafile` (the name checked): the TLS socket. With
    suppress_ragged_eofs=False, an end without close_notify raises ssl.SSLEOFError."""
    s = p.connect()
    try:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        established = b"HTTP/1.1 200 Connection Established\r\n\r\n"
        got = recv_exact(s, len(established))
        if got != established:
            raise AssertionError(f"CONNECT {target}: {got!r}")
        return ssl.create_default_context(cafile=cafile).wrap_socket(s, server_hostname=server_hostname,
                                                                     suppress_ragged_eofs=suppress_ragged_eofs)
    except BaseException:
        s.close()
        raise


def anonymous_kib(pid):
    """The anonymous memory of `pid` in KiB (/proc/PID/smaps_rollup Anonymous: its heap, stacks and
    written data). Unlike its PSS, it does not move as other processes that share its binary's pages
    start and stop (a parallel test run), so growth per connection reads true."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    raise AssertionError(f"no Anonymous for {pid}")


# --------------------------------------------------------------------------------------------
# A CA of the test's own, and certificates it signs


def _openssl(*args, stdin=None):
    subprocess.run(["openssl", *args], input=stdin, check=True, capture_output=True, timeout=60)


def make_test_ca(directory, name="Test Origin CA"):
    """A CA (ECDSA P-256, valid 2 days) made by openssl in `directory`: (cert, key)."""
    cert = os.path.join(directory, "test-ca.pem")
    key = os.path.join(directory, "test-ca.key")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
             "-out", cert, "-days", "2", "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def make_signed_certificate(directory, ca, names, stem):
    """A server certificate (ECDSA P-256, not a CA) for DNS `names`, signed by `ca` ((cert, key)
    of make_test_ca): (cert, key), named after `stem` in `directory`."""
    cert = os.path.join(directory, f"{stem}.pem")
    key = os.path.join(directory, f"{stem}.key")
    csr = os.path.join(directory, f"{stem}.csr")
    extensions = os.path.join(directory, f"{stem}.ext")
    with open(extensions, "w") as f:
        f.write("subjectAltName=" + ",".join(f"DNS:{n}" for n in names) + "\n"
                "basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n")
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
             "-out", csr, "-subj", f"/CN={names[0]}")
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-days", "2", "-extfile", extensions,
             "-out", cert)
    return cert, key


def issuer_cn(tls):
    """The commonName of the issuer of the certificate the TLS peer presented (verified)."""
    return dict(field[0] for field in tls.getpeercert()["issuer"])["commonName"]


def der_of(pem_path):
    """The DER bytes of the first certificate in a PEM file."""
    with open(pem_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


# --------------------------------------------------------------------------------------------
# WebSocket (RFC 6455): frames, and an origin that echoes them

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_TEXT, OP_BINARY, OP_CLOSE = 0x1, 0x2, 0x8


def websocket_accept(key):
    """The Sec-WebSocket-Accept an origin answers `key` with."""
    return base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()


def _xor_mask(payload, mask):
    repeated = (mask * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


def websocket_frame(opcode, payload, mask=None):
    """One final frame: masked with the 4-byte `mask` (a client's), or not (a server's)."""
    masked = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, masked | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, masked | 126]) + struct.pack("!H", n)
    else:
        head = bytes([0x80 | opcode, masked | 127]) + struct.pack("!Q", n)
    if mask:
        return head + mask + _xor_mask(payload, mask)
    return head + payload


def read_websocket_frame(read_exact):
    """One frame through `read_exact(n)`: (opcode, masked, payload unmasked)."""
    first, second = read_exact(2)
    n = second & 0x7F
    if n == 126:
        n = struct.unpack("!H", read_exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", read_exact(8))[0]
    if n > 1 << 24:
        raise ValueError(f"a frame of {n} bytes")
    mask = read_exact(4) if second & 0x80 else None
    payload = read_exact(n) if n else b""
    return first & 0x0F, mask is not None, _xor_mask(payload, mask) if mask else payload


class _Reader:
    """Buffered reads of a socket: whole heads and exact byte counts (EOFError at the end)."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError()
        self.buffer += chunk

    def until(self, marker, limit=65536):
        while marker not in self.buffer:
            if len(self.buffer) > limit:
                raise ValueError("a head too long")
            self._more()
        i = self.buffer.index(marker) + len(marker)
        out, self.buffer = self.buffer[:i], self.buffer[i:]
        return out

    def exact(self, n):
        while len(self.buffer) < n:
            self._more()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out


class WebSocketOrigin(_TcpServer):
    """A TLS origin on ORIGIN_HOST, a thread per connection. Every request head it gets is
    recorded in `requests` ({"method", "path", "headers": {lower-case name: value}}); a WebSocket
    upgrade (Upgrade: websocket, Sec-WebSocket-Key) is answered 101 with its Sec-WebSocket-Accept,
    and then every frame is echoed back unmasked, as a server sends it (`frames` records
    (opcode, masked, length) of each received), until a close frame, echoed too, after which it
    closes the connection. With `greeting`, that frame's payload is sent first, in the same write
    as the 101. Anything else is answered 200 "plain\\n", keep-alive."""

    def __init__(self, cert, key, greeting=None):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.greeting = greeting
        self.requests = []
        self.frames = []
        super().__init__()

    def handle(self, conn, record):
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                reader = _Reader(tls)
                for _ in range(100):  # requests on one connection
                    lines = reader.until(b"\r\n\r\n").decode("latin-1").split("\r\n")
                    method, path, _ = lines[0].split(" ", 2)
                    headers = {}
                    for line in lines[1:]:
                        if line:
                            name, _, value = line.partition(":")
                            headers[name.strip().lower()] = value.strip()
                    self.requests.append({"method": method, "path": path, "headers": headers})
                    if headers.get("upgrade", "").lower() == "websocket" and "sec-websocket-key" in headers:
                        tls.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                     f"Sec-WebSocket-Accept: {websocket_accept(headers['sec-websocket-key'])}\r\n"
                                     "\r\n").encode()
                                    + (websocket_frame(OP_TEXT, self.greeting) if self.greeting else b""))
                        self._echo(tls, reader)
                        return
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nplain\n")
        except (EOFError, ValueError):
            pass  # the peer left, or sent what this origin does not speak; OSError: _TcpServer's

    def _echo(self, tls, reader):
        for _ in range(1000):  # frames on one connection
            opcode, masked, payload = read_websocket_frame(reader.exact)
            self.frames.append((opcode, masked, len(payload)))
            tls.sendall(websocket_frame(opcode, payload))
            if opcode == OP_CLOSE:
                return


# --------------------------------------------------------------------------------------------
# An origin for a thousand connections at once


class ManyOrigin:
    """A TLS origin on ORIGIN_HOST that holds many keep-alive connections at once: one asyncio
    loop in one thread (the harness's origins take a thread each). Each request head (no body) is
    answered 200 with a 3-byte body at once, except GET /hold, answered only after release(), and
    GET /flood, answered with a body of FLOOD_BYTES written as fast as the peer takes it (its
    socket's send buffer fixed at 64 KiB, so the kernel holds little of it on this side).
    Counters: `connections` accepted, `served` responses written, `holding` /hold requests
    waiting, `flooded` bytes of /flood bodies written."""

    FLOOD_BYTES = 64 << 20

    def __init__(self, cert, key, host=ORIGIN_HOST):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.host = host
        self.port = None
        self.connections = self.served = self.holding = self.flooded = 0
        self._loop = None
        self._writers = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise AssertionError("the origin did not start within 10 s")

    async def _main(self):
        self._loop = asyncio.get_running_loop()
        self._release = asyncio.Event()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._serve, self.host, 0, ssl=self.context, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()

    async def _serve(self, reader, writer):
        self.connections += 1
        self._writers.add(writer)
        try:
            for _ in range(10000):  # requests on one connection
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                if path == b"/flood":
                    await self._flood(writer)
                    continue
                if path == b"/hold":
                    self.holding += 1
                    await self._release.wait()
                    self.holding -= 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                await writer.drain()
                self.served += 1
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError, IndexError):
            pass
        finally:
            self._writers.discard(writer)
            writer.transport.abort()

    async def _flood(self, writer):
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)  # no autotuning to megabytes
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {self.FLOOD_BYTES}\r\n\r\n".encode())
        chunk = b"f" * 16384
        for _ in range(self.FLOOD_BYTES // len(chunk)):
            writer.write(chunk)
            await writer.drain()  # waits while the peer takes nothing: asyncio's buffer stays small
            self.flooded += len(chunk)
        self.served += 1

    def release(self):
        """Every /hold request waiting, and every one to come, is answered."""
        self._loop.call_soon_threadsafe(self._release.set)

    def close(self):
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)


class CutOrigin:
    """A TLS origin on 127.0.0.2 that answers every request with a body framed by its close
    ("HTTP/1.1 200" with neither Content-Length nor chunking) and then closes without close_notify:
    a response anyone on the path could have cut short. One connection at a time, bounded."""

    def __init__(self, cert, key):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.2", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                raw, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            tls = None
            try:
                raw.settimeout(5)
                tls = self.context.wrap_socket(raw, server_side=True)
                head = b""
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    chunk = tls.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                tls.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart of a body")
                tls.shutdown(socket.SHUT_RDWR)  # the TCP connection only: no close_notify is sent
            except (OSError, ssl.SSLError):
                pass
            finally:
                (tls or raw).close()

    def close(self):
        self.stopped.set()
        self.thread.join(timeout=5)
        self.listener.close()


# --------------------------------------------------------------------------------------------
# An HTTP/2 origin (SPEC §19, HTTP/2 toward the origin): Debian's python3-h2, server side



def linger_until_peer_reads(sock, most_seconds=2.0):
    """Half-closes `sock` and reads until the peer closes (at most `most_seconds`), so that closing
    never resets a connection with unread bytes in it: Linux answers a close with unread data by
    RST, and a peer that had not yet read what was sent before it loses it (an h2 origin's answer
    then GOAWAY was lost that way under load, before the proxy read it)."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(most_seconds)
        deadline = time.monotonic() + most_seconds
        for _ in range(1000):
            if time.monotonic() > deadline or not sock.recv(65536):
                break
    except (OSError, ssl.SSLError):
        pass


class H2Origin:
    """A TLS origin on ORIGIN_HOST that offers only "h2" by ALPN and answers with python3-h2, one
    thread per connection. It records every request it receives ({"method", "path", "headers"
    [(name, value)], "body", "connection"}) in `requests` and, one JSON line each, in `record_file`
    (where the box cannot read it). `connections` counts the TLS connections it accepted.

    What it answers, by path:
      /trailers...  200, DATA, then trailing HEADERS: grpc-status 0, x-trailer yes, and two a
                    proxy must not pass (set-cookie, x-egress-refused);
      /goaway...    200 with its body, then GOAWAY naming this stream, and the connection closed;
      /refused...   the first time a path comes: the stream reset with REFUSED_STREAM, unprocessed
                    (RFC 9113 §8.7: the client may send it again); after: as anything else;
      /push...      a PUSH_PROMISE before any answer (forbidden by the client's ENABLE_PUSH 0);
      /bighead...   a header list of 80 KiB (past the proxy's 64 KiB bound);
      anything else 200, content-length, body "h2 origin: <path>" (HEAD: no body)."""

    def __init__(self, cert, key, record_file, host=ORIGIN_HOST):
        import h2.config  # noqa: F401 (checked here, so that a test without it skips early)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.context.set_alpn_protocols(["h2"])
        self.record_file = record_file
        self.requests = []
        self.connections = 0
        self.lock = threading.Lock()
        self.refused_once = set()  # /refused paths reset once already
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopping = False
        self.threads = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.listener.close()
        for t in list(self.threads):
            t.join(5)

    def _accept(self):
        while not self.stopping:
            try:
                raw, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            with self.lock:
                self.connections += 1
                number = self.connections
            t = threading.Thread(target=self._serve, args=(raw, number), daemon=True)
            self.threads.append(t)
            t.start()

    def _record(self, request):
        import json
        with self.lock:
            self.requests.append(request)
            with open(self.record_file, "a") as f:
                f.write(json.dumps({**request, "body": request["body"].decode("latin-1")}) + "\n")

    def _serve(self, raw, number):
        import h2.config
        import h2.connection
        import h2.events
        raw.settimeout(10)
        try:
            tls = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config=config)
        conn.initiate_connection()
        streams = {}
        try:
            tls.sendall(conn.data_to_send())
            while not self.stopping:
                try:
                    data = tls.recv(65536)
                except socket.timeout:
                    break
                if not data:
                    break
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        streams[event.stream_id] = {"headers": list(event.headers), "body": b""}
                    elif isinstance(event, h2.events.DataReceived):
                        streams[event.stream_id]["body"] += event.data
                        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):
                        if self._answer(tls, conn, event.stream_id, streams.pop(event.stream_id), number):
                            return
                tls.sendall(conn.data_to_send())
        except Exception:  # a peer gone, or a protocol error the proxy caused: the test reads the effects
            pass
        finally:
            tls.close()

    def _answer(self, tls, conn, sid, stream, number):
        """Answers one request; True when the connection is to end."""
        headers = dict(stream["headers"])
        path, method = headers.get(":path", ""), headers.get(":method", "")
        self._record({"method": method, "path": path, "headers": [[k, v] for k, v in stream["headers"]],
                      "body": stream["body"], "connection": number})
        body = f"h2 origin: {path}".encode()
        if path.startswith("/refused") and path not in self.refused_once:
            self.refused_once.add(path)
            conn.reset_stream(sid, error_code=7)  # REFUSED_STREAM
            return False
        if path.startswith("/push"):
            import hpack
            block = hpack.Encoder().encode([(":method", "GET"), (":scheme", "https"), (":path", "/pushed"),
                                            (":authority", headers.get(":authority", "x"))])
            payload = (2).to_bytes(4, "big") + block
            tls.sendall(conn.data_to_send() + len(payload).to_bytes(3, "big") + bytes([0x5, 0x4]) +
                        sid.to_bytes(4, "big") + payload)
            return False
        if path.startswith("/bighead"):
            big = [(f"x-big-{i}", "b" * 8192) for i in range(10)]
            conn.send_headers(sid, [(":status", "200"), *big], end_stream=True)
            return False
        if path.startswith("/trailers"):
            conn.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
            conn.send_data(sid, body)
            conn.send_headers(sid, [("grpc-status", "0"), ("x-trailer", "yes"), ("set-cookie", "evil=1"),
                                    ("x-egress-refused", "forged")], end_stream=True)
            return False
        conn.send_headers(sid, [(":status", "200"), ("content-type", "text/plain"),
                                ("content-length", str(len(body)))], end_stream=method == "HEAD")
        if method != "HEAD":
            conn.send_data(sid, body, end_stream=True)
        if path.startswith("/goaway"):
            conn.close_connection(last_stream_id=sid)
            tls.sendall(conn.data_to_send())
            linger_until_peer_reads(tls)
            return True
        return False
