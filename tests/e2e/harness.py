# SPDX-License-Identifier: Apache-2.0
"""Shared support for boxproxy's end-to-end tests (SPEC §5-§12).

Everything here dials loopback only: origins listen on 127.0.0.2 (and 127.0.0.3, 127.0.0.4 where a
test needs a second address), the DNS server on 127.0.0.53, and every proxy is started with
--permit 127.0.0.2/32 and a --nameserver pointing at a DNS server of the test's own, so no test
ever asks the machine's resolver or reaches past this host. Every wait is bounded in time and
count; every socket has a timeout.
"""

import base64
import http.server
import json
import os
import re
import select
import signal
import socket
import socketserver
import struct
import subprocess
import tempfile
import threading
import time
import unittest

ORIGIN_HOST = "127.0.0.2"
DNS_HOST = "127.0.0.53"
SOCKET_TIMEOUT = 5.0
START_TIMEOUT = 10.0
STOP_TIMEOUT = 3.0


def binary():
    """The boxproxy binary under test (env BOXPROXY). A missing binary fails the test."""
    path = os.environ.get("BOXPROXY")
    if not path:
        raise AssertionError("set BOXPROXY to the boxproxy binary")
    if not os.access(path, os.X_OK):
        raise AssertionError(f"BOXPROXY={path} is not an executable file")
    return path


def wait_until(predicate, timeout=5.0, interval=0.02):
    """Polls predicate until it returns something true or `timeout` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)  # a sleep: the harness's one poll, between looks; every wait goes through it
        value = predicate()
    return value


def holds_for(predicate, period, interval=0.02):
    """True when `predicate` stays true for `period` seconds; False as soon as it does not. What
    it proves is that something does not happen within a period, which no event can say, so it
    polls (wait_until's poll) for the whole period, its last look at the period's end."""
    return not wait_until(lambda: not predicate(), period, interval)


def trickle(sock, data, step=1, pause=0.002):
    """Sends `data` `step` bytes at a time with a pause after each piece, so that the proxy gets
    it in many reads. A sleep on purpose: what matters is the gap between sends, not an event."""
    for i in range(0, len(data), step):
        sock.sendall(data[i:i + step])
        time.sleep(pause)  # a sleep: the gap between sends is the point


# --------------------------------------------------------------------------------------------
# Decision log lines (SPEC §12)

# `id=` is on every line; a done line says up=, down=, ms= and end=; `label=` (--label) is last and
# runs to the end of the line.
TEXT_LINE = re.compile(
    r'^egress (?P<kind>\S+) host=(?P<host>"(?:[^"\\]|\\.)*"|-) port=(?P<port>\S+) ip=(?P<ip>\S+) '
    r"class=(?P<cls>.*?)(?: asked=(?P<asked>\S+))?"
    r"(?: up=(?P<up>\d+) down=(?P<down>\d+) ms=(?P<ms>\d+) end=(?P<end>\S+))? id=(?P<id>\d+)"
    r"(?: label=(?P<label>.*))?$"
)


class LogLine:
    """One decision or done line, from either format. `raw` is the line as written."""

    def __init__(self, raw, kind, host, port, ip, cls, up=None, down=None, ms=None, fmt="text", obj=None,
                 id=None, end=None, label=None):
        self.raw = raw
        self.id = id  # the client connection's number (an int)
        self.end = end  # a done line's end= (client-closed, upstream-closed, ...), else None
        self.label = label  # --label, or None
        self.kind = kind
        self.host = host  # the host as a str, or None for "-"
        self.port = port  # an int, or the text when it is not a number
        self.ip = ip
        self.cls = cls
        self.up = up
        self.down = down
        self.ms = ms
        self.fmt = fmt
        self.obj = obj

    @property
    def done(self):
        return self.cls == "done"

    def __repr__(self):
        return f"LogLine({self.raw!r})"


def parse_log_line(raw):
    """A LogLine for a decision/done line (text or JSON), or None for anything else."""
    raw = raw.rstrip("\r\n")
    if raw.startswith("{"):
        try:
            obj = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(obj, dict) or "kind" not in obj or "class" not in obj:
            return None
        return LogLine(raw, obj.get("kind"), obj.get("host"), obj.get("port"), obj.get("ip"), obj.get("class"),
                       obj.get("up"), obj.get("down"), obj.get("ms"), fmt="json", obj=obj, id=obj.get("id"),
                       end=obj.get("end"), label=obj.get("label"))
    m = TEXT_LINE.match(raw)
    if not m:
        return None
    host = None if m["host"] == "-" else json.loads(m["host"])
    port = int(m["port"]) if m["port"].isdigit() else m["port"]
    up = int(m["up"]) if m["up"] is not None else None
    down = int(m["down"]) if m["down"] is not None else None
    ms = int(m["ms"]) if m["ms"] is not None else None
    return LogLine(raw, m["kind"], host, port, m["ip"], m["cls"], up, down, ms, id=int(m["id"]), end=m["end"],
                   label=m["label"])


# --------------------------------------------------------------------------------------------
# The proxy


class Proxy:
    """One `boxproxy serve` in a fresh temp dir. Use start(); stop() checks for a clean exit 0.

    Always passes --permit 127.0.0.2/32 and, unless the test gives its own, --nameserver for a
    DNS server that answers nothing but NXDOMAIN, so the machine's resolver is never asked.
    """

    def __init__(self, *args, permit=True, dns=None, log_file=False, env=None, preexec_fn=None, pass_fds=()):
        self.tmp = tempfile.TemporaryDirectory(prefix="boxproxy-e2e-")
        self.dir = self.tmp.name
        self.socket_path = os.path.join(self.dir, "egress.sock")
        self.own_dns = None
        if dns is None and not any(str(a).startswith("--nameserver") for a in args):
            self.own_dns = DnsServer({})
            dns = self.own_dns
        self.dns = dns
        argv = [binary(), "serve", "--socket", self.socket_path]
        if permit:
            argv += ["--permit", "127.0.0.2/32"]
        if dns is not None:
            argv += ["--nameserver", dns.address]
        self.log_path = None
        if log_file:
            self.log_path = os.path.join(self.dir, "decisions.log")
            argv += ["--log-file", self.log_path]
        argv += [str(a) for a in args]
        self.argv = argv
        self.env = env
        self.preexec_fn = preexec_fn
        self.pass_fds = tuple(pass_fds)  # descriptors the proxy inherits (--control-fd, --ready-fd)
        self.proc = None
        self.stderr_lines = []
        self._lock = threading.Lock()
        self._reader = None
        self.listening = None
        self.placeholders = {}  # serve --placeholder's stand-ins, by secret name
        self.returncode = None
        self._stdout_extra = b""
        self.stdout_rest = None  # what came on stdout after the listening line, once stopped

    # -- start and stop

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=self.env, preexec_fn=self.preexec_fn,
                                     pass_fds=self.pass_fds)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        line = self._read_stdout_line(START_TIMEOUT)
        # serve --placeholder's lines come first (SPEC §19): kept by name, then the listening line.
        while line is not None and line.startswith('{"event":"placeholder"') and len(self.placeholders) < 64:
            event = json.loads(line)
            self.placeholders[event["name"]] = event["value"]
            line = self._read_stdout_line(START_TIMEOUT)
        if line is None:
            self.kill()
            raise AssertionError(f"no listening line within {START_TIMEOUT}s from {self.argv}; "
                                 f"exit={self.proc.returncode} stderr={self.stderr_text()[-2000:]!r}")
        try:
            self.listening = json.loads(line)
        except ValueError:
            self.kill()
            raise AssertionError(f"listening line is not JSON: {line!r}")
        if self.listening.get("event") != "listening":
            self.kill()
            raise AssertionError(f"first stdout line is not the listening event: {line!r}")
        return self

    def _read_stdout_line(self, timeout):
        fd = self.proc.stdout.fileno()
        data, self._stdout_extra = self._stdout_extra, b""  # a line read with the one before
        deadline = time.monotonic() + timeout
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            data += chunk
            if len(data) > 65536:
                return None
        line, _, self._stdout_extra = data.partition(b"\n")
        return line.decode("utf-8", "replace")

    def _read_stderr(self):
        for raw in self.proc.stderr:
            with self._lock:
                self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, expect_code=0):
        """SIGTERM; the proxy must exit with `expect_code` within STOP_TIMEOUT seconds."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"proxy did not exit within {STOP_TIMEOUT}s of SIGTERM")
        finally:
            self._finish()
        self.returncode = self.proc.returncode
        if expect_code is not None and self.returncode != expect_code:
            raise AssertionError(f"proxy exited {self.returncode}, expected {expect_code}; "
                                 f"stderr tail: {self.stderr_text()[-2000:]!r}")

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        self._finish()

    def _finish(self):
        if self._reader is not None:
            self._reader.join(timeout=2)
        if self.proc.poll() is not None and self.stdout_rest is None:
            try:
                self.stdout_rest = self._stdout_extra + self.proc.stdout.read()
            except (OSError, ValueError):
                self.stdout_rest = b""
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass
        if self.own_dns is not None:
            self.own_dns.close()
            self.own_dns = None

    def cleanup(self):
        """For addCleanup: stop if still running (without asserting), remove the temp dir."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.kill()
            elif self.proc is not None:
                self._finish()
        finally:
            self.tmp.cleanup()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    # -- logs

    def stderr_text(self):
        with self._lock:
            return "\n".join(self.stderr_lines)

    def raw_log_lines(self):
        """Every line of the decision log so far (the --log-file, or standard error)."""
        if self.log_path is not None:
            try:
                with open(self.log_path, encoding="utf-8", errors="replace") as f:
                    return f.read().splitlines()
            except FileNotFoundError:
                return []
        with self._lock:
            return list(self.stderr_lines)

    def log_lines(self):
        return [line for line in map(parse_log_line, self.raw_log_lines()) if line is not None]

    def find_logs(self, **want):
        """Log lines whose attributes equal every keyword (kind=, host=, cls=, port=, ip=, done=)."""
        out = []
        for line in self.log_lines():
            if all(getattr(line, k) == v for k, v in want.items()):
                out.append(line)
        return out

    def wait_log(self, timeout=5.0, count=1, **want):
        """Waits (bounded) for at least `count` lines matching `want`; returns them or fails."""
        found = wait_until(lambda: len(self.find_logs(**want)) >= count and self.find_logs(**want), timeout)
        if not found:
            raise AssertionError(f"no log line with {want} (x{count}) within {timeout}s; log:\n"
                                 + "\n".join(self.raw_log_lines()[-40:]))
        return found

    def wait_raw(self, pattern, timeout=5.0):
        """Waits for a raw log line matching the regex `pattern`; returns the first match's line."""
        rx = re.compile(pattern)

        def look():
            for line in self.raw_log_lines():
                if rx.search(line):
                    return line
            return None

        line = wait_until(look, timeout)
        if not line:
            raise AssertionError(f"no log line matching {pattern!r} within {timeout}s; log:\n"
                                 + "\n".join(self.raw_log_lines()[-40:]))
        return line

    # -- clients

    def connect(self, timeout=SOCKET_TIMEOUT):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.socket_path)
        return s

    def fd_count(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))


def start_proxy(test, *args, **kwargs):
    """Starts a proxy for a unittest.TestCase; it is stopped (exit 0 asserted) by the test's
    cleanup only if the test did not stop it itself."""
    proxy = Proxy(*args, **kwargs)
    test.addCleanup(proxy.cleanup)
    proxy.start()
    return proxy


class ProxyTestCase(unittest.TestCase):
    """A TestCase whose proxies are stopped after each test with exit 0 asserted."""

    def setUp(self):
        self._proxies = []

    def proxy(self, *args, **kwargs):
        p = start_proxy(self, *args, **kwargs)
        self._proxies.append(p)
        return p

    def tearDown(self):
        errors = []
        for p in self._proxies:
            if p.proc is not None and p.proc.poll() is None:
                try:
                    p.stop()
                except AssertionError as e:
                    errors.append(str(e))
        if errors:
            raise AssertionError("; ".join(errors))


# --------------------------------------------------------------------------------------------
# Raw client helpers


def recv_exact(sock, n, timeout=SOCKET_TIMEOUT):
    """Exactly n bytes, or an AssertionError saying what came before EOF or the timeout."""
    sock.settimeout(timeout)
    data = bytearray()
    deadline = time.monotonic() + timeout
    while len(data) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {n} bytes; got {bytes(data[:2000])!r}")
        try:
            chunk = sock.recv(min(n - len(data), 1 << 20))
        except socket.timeout:
            raise AssertionError(f"timed out waiting for {n} bytes; got {bytes(data[:2000])!r}")
        except ConnectionResetError:
            raise AssertionError(f"connection reset after {len(data)} of {n} bytes: {bytes(data[:2000])!r}")
        if not chunk:
            raise AssertionError(f"connection closed after {len(data)} of {n} bytes: {bytes(data[:2000])!r}")
        data += chunk
    return bytes(data)


def recv_until(sock, marker, timeout=SOCKET_TIMEOUT, limit=1 << 20):
    """Bytes up to and including `marker` (reading one byte at a time past nothing extra is not
    possible with recv, so the rest is returned too: (head, rest))."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while marker not in data:
        if time.monotonic() > deadline or len(data) > limit:
            raise AssertionError(f"no {marker!r} within {timeout}s; got {data[:2000]!r}")
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"no {marker!r} within {timeout}s; got {data[:2000]!r}")
        if not chunk:
            raise AssertionError(f"closed before {marker!r}; got {data[:2000]!r}")
        data += chunk
    i = data.index(marker) + len(marker)
    return data[:i], data[i:]


def recv_all(sock, timeout=SOCKET_TIMEOUT, limit=1 << 22):
    """Everything until the peer closes. Fails if it does not close within `timeout`."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline or len(data) > limit:
            raise AssertionError(f"peer did not close within {timeout}s; got {data[:2000]!r}")
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"peer did not close within {timeout}s; got {data[:2000]!r}")
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def closed_within(sock, timeout):
    """True when the peer closes (EOF or reset) within `timeout`, discarding any bytes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        if not chunk:
            return True
    return False


def still_open(sock, wait=0.3):
    """True when nothing (not even EOF) arrives within `wait` seconds."""
    sock.settimeout(wait)
    try:
        chunk = sock.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        return True
    except OSError:
        return False
    return False if not chunk else True


class HttpResponse:
    def __init__(self, raw_head, status_line, status, headers, body, rest=b""):
        self.raw_head = raw_head
        self.status_line = status_line
        self.status = status
        self.headers = headers  # list of (name, value) as received
        self.body = body
        self.rest = rest

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def header_all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def __repr__(self):
        return f"HttpResponse({self.raw_head!r}, body={self.body[:200]!r})"


def read_http_response(sock, timeout=SOCKET_TIMEOUT, method="GET", head_only=False):
    """Reads one response. The body: by content-length, chunked (decoded), or until close."""
    head, rest = recv_until(sock, b"\r\n\r\n", timeout)
    lines = head[:-4].split(b"\r\n")
    status_line = lines[0].decode("latin-1")
    parts = status_line.split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    headers = []
    for line in lines[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        headers.append((name, value.strip()))
    resp = HttpResponse(head, status_line, status, headers, b"", rest)
    if head_only or method == "CONNECT" and status == 200 or method == "HEAD" or status in (204, 304):
        return resp
    te = resp.header("transfer-encoding")
    cl = resp.header("content-length")
    if te and te.lower() == "chunked":
        resp.body, resp.rest = _read_chunked(sock, rest, timeout)
    elif cl is not None:
        n = int(cl)
        body = rest
        if len(body) < n:
            body += recv_exact(sock, n - len(body), timeout)
        resp.body, resp.rest = body[:n], body[n:]
    else:
        resp.body, resp.rest = rest + recv_all(sock, timeout), b""
    return resp


def _read_chunked(sock, buf, timeout):
    body = b""

    def need(n_or_marker):
        nonlocal buf
        if isinstance(n_or_marker, bytes):
            while n_or_marker not in buf:
                buf += _recv_some(sock, timeout)
        else:
            while len(buf) < n_or_marker:
                buf += _recv_some(sock, timeout)

    for _ in range(100000):
        need(b"\r\n")
        line, _, buf = buf.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            need(b"\r\n")
            while not buf.startswith(b"\r\n"):
                _, _, buf = buf.partition(b"\r\n")
                need(b"\r\n")
            return body, buf[2:]
        need(size + 2)
        body += buf[:size]
        buf = buf[size + 2:]
    raise AssertionError("too many chunks")


def _recv_some(sock, timeout):
    sock.settimeout(timeout)
    chunk = sock.recv(65536)
    if not chunk:
        raise AssertionError("closed inside a chunked body")
    return chunk


def assert_http_refusal(test, sock, status, reason, words=None, timeout=SOCKET_TIMEOUT):
    """The whole answer on `sock` is exactly the §6 refusal, and the proxy then closes."""
    data = recv_all(sock, timeout)
    test.assertEqual(data.decode("latin-1"), refusal_bytes(status, reason, words).decode("latin-1"))


def refusal_bytes(status, reason, words=None):
    """The exact HTTP refusal of SPEC §6 (no extra header)."""
    if words is None:
        words = f"egress refused: {reason}"
    body = (words + "\n").encode()
    return (f"HTTP/1.1 {status} {words}\r\n"
            f"x-egress-refused: {reason}\r\n"
            f"content-type: text/plain\r\n"
            f"content-length: {len(body)}\r\n"
            f"connection: close\r\n\r\n").encode() + body


def connect_request(target, headers=(), version="HTTP/1.1"):
    head = f"CONNECT {target} {version}\r\nHost: {target}\r\n"
    for h in headers:
        head += h + "\r\n"
    return (head + "\r\n").encode()


def http_connect(proxy, target, headers=(), extra=b"", timeout=SOCKET_TIMEOUT):
    """Sends a CONNECT head (and `extra` in the same send); returns (sock, response)."""
    s = proxy.connect(timeout)
    s.sendall(connect_request(target, headers) + extra)
    resp = read_http_response(s, timeout, method="CONNECT")
    return s, resp


def socks5_greeting(methods=(0,)):
    return bytes([5, len(methods), *methods])


def socks5_request(host, port, cmd=1, atyp=None):
    """A SOCKS5 request; atyp chosen from host (IPv4 text, IPv6 text, else a domain) unless given."""
    if atyp is None:
        try:
            addr = socket.inet_pton(socket.AF_INET, host)
            atyp = 1
        except (OSError, TypeError):
            try:
                addr = socket.inet_pton(socket.AF_INET6, host)
                atyp = 4
            except (OSError, TypeError):
                atyp = 3
    if atyp == 1:
        body = socket.inet_pton(socket.AF_INET, host)
    elif atyp == 4:
        body = socket.inet_pton(socket.AF_INET6, host)
    elif atyp == 3:
        name = host.encode() if isinstance(host, str) else host
        body = bytes([len(name)]) + name
    else:
        body = host if isinstance(host, bytes) else b"\x00\x00\x00\x00"
    return bytes([5, cmd, 0, atyp]) + body + struct.pack("!H", port)


def socks5_reply(code):
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def socks5_connect(proxy, host, port, extra=b"", atyp=None, auth=None, timeout=SOCKET_TIMEOUT):
    """Greeting + (auth) + request + extra in one send, as a pipelining client would.
    Returns (sock, method_reply, auth_reply or None, request reply (10 bytes) or b'' on close)."""
    s = proxy.connect(timeout)
    if auth is None:
        data = socks5_greeting((0,))
    else:
        user, password = auth
        data = socks5_greeting((2,)) + bytes([1, len(user)]) + user + bytes([len(password)]) + password
    data += socks5_request(host, port, atyp=atyp) + extra
    s.sendall(data)
    method = recv_exact(s, 2, timeout)
    auth_reply = recv_exact(s, 2, timeout) if auth is not None else None
    reply = _recv_upto(s, 10, timeout)
    return s, method, auth_reply, reply


def _recv_upto(sock, n, timeout):
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while len(data) < n and time.monotonic() < deadline:
        try:
            chunk = sock.recv(n - len(data))
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def socks4_request(port, ip="0.0.0.1", host=None, cmd=1, userid=b"user"):
    data = bytes([4, cmd]) + struct.pack("!H", port) + socket.inet_aton(ip) + userid + b"\x00"
    if host is not None:
        data += (host.encode() if isinstance(host, str) else host) + b"\x00"
    return data


SOCKS4_OK = b"\x00\x5a" + b"\x00" * 6
SOCKS4_REFUSED = b"\x00\x5b" + b"\x00" * 6


def socks4_connect(proxy, port, ip="0.0.0.1", host=None, cmd=1, extra=b"", timeout=SOCKET_TIMEOUT):
    s = proxy.connect(timeout)
    s.sendall(socks4_request(port, ip, host, cmd) + extra)
    return s, _recv_upto(s, 8, timeout)


def basic_auth(user, token):
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()


# --------------------------------------------------------------------------------------------
# Origins


class _TcpServer:
    """A threaded TCP server on ORIGIN_HOST; `handle(conn, record)` runs per connection."""

    def __init__(self, host=ORIGIN_HOST, port=0, family=socket.AF_INET, backlog=64):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(backlog)
        self.sock.settimeout(0.2)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.connections = []  # one dict per accepted connection: {"data": bytearray, "eof": bool, ...}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(SOCKET_TIMEOUT * 2)
            record = {"data": bytearray(), "eof": False, "peer": peer, "closed": False, "first": None}
            with self.lock:
                self.connections.append(record)
            t = threading.Thread(target=self._run, args=(conn, record), daemon=True)
            t.start()
            self._threads.append(t)

    def _run(self, conn, record):
        try:
            self.handle(conn, record)
        except OSError as e:
            record["error"] = e
        finally:
            try:
                conn.close()
            except OSError:
                pass
            record["closed"] = True

    def _read(self, conn, record):
        chunk = conn.recv(65536)
        if chunk:
            if record["first"] is None:
                record["first"] = bytes(chunk)
            record["data"] += chunk
        else:
            record["eof"] = True
        return chunk

    def count(self):
        with self.lock:
            return len(self.connections)

    def close(self):
        self._stop.set()
        try:
            self.sock.close()
        except OSError:
            pass
        self._thread.join(timeout=2)


class EchoServer(_TcpServer):
    """Echoes every byte back; on EOF from the client, half-closes its side too."""

    def handle(self, conn, record):
        while True:
            chunk = self._read(conn, record)
            if not chunk:
                conn.shutdown(socket.SHUT_WR)
                return
            conn.sendall(chunk)


class ReplyAfterEofServer(_TcpServer):
    """Reads until the client half-closes, then replies `got <n> bytes: <data>` and closes."""

    def handle(self, conn, record):
        while self._read(conn, record):
            pass
        conn.sendall(b"got %d bytes: " % len(record["data"]) + bytes(record["data"]))
        conn.shutdown(socket.SHUT_WR)


class HalfCloseServer(_TcpServer):
    """Accepts, sends `hello from origin`, half-closes (SHUT_WR), then reads until the client's EOF."""

    GREETING = b"hello from origin"

    def handle(self, conn, record):
        conn.sendall(self.GREETING)
        conn.shutdown(socket.SHUT_WR)
        while self._read(conn, record):
            pass


class SilentServer(_TcpServer):
    """Accepts and then neither sends nor closes until the client does."""

    def handle(self, conn, record):
        while self._read(conn, record):
            pass


def low_port_server(cls, host=ORIGIN_HOST, tries=60):
    """A `cls` server on a four-digit port, so that a leading zero still leaves five digits."""
    import random
    rng = random.Random()
    for _ in range(tries):
        try:
            return cls(host=host, port=rng.randrange(2000, 9999))
        except OSError:
            continue
    raise AssertionError("no free four-digit port on " + host)


def free_port(host=ORIGIN_HOST):
    """A port on `host` nobody listens on (bound and released): a dial there is refused."""
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Blackhole:
    """A listener whose accept queue is full and which never accepts, so a further SYN is dropped
    and a dial to it hangs (dial timed out). `usable` says whether the trick works here."""

    def __init__(self, host=ORIGIN_HOST):
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(0)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.fillers = []
        for _ in range(3):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect((host, self.port))
            except (BlockingIOError, OSError):
                pass
            self.fillers.append(s)
        # The queue is full once a filler's handshake has completed (it becomes writable); the
        # others' SYNs are dropped. Waited for, at most a second (a probe then says whether it worked).
        select.select([], self.fillers, [], 1.0)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect((host, self.port))
            self.usable = False
        except (socket.timeout, OSError):
            self.usable = True
        finally:
            probe.close()

    def drain(self, timeout=5.0):
        """Accepts whatever arrives for `timeout` seconds; returns the accepted sockets."""
        self.sock.settimeout(0.1)
        accepted = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                conn, peer = self.sock.accept()
                conn.settimeout(SOCKET_TIMEOUT)
                accepted.append((conn, peer))
            except socket.timeout:
                continue
        return accepted

    def close(self):
        for s in self.fillers:
            s.close()
        self.sock.close()


class _MalformedBody(Exception):
    pass


class _OriginHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "origin"
    sys_version = ""

    def log_message(self, *args):
        pass

    def _record(self, body=b""):
        self.server.requests.append({
            "requestline": self.requestline,
            "method": self.command,
            "path": self.path,
            "headers": list(self.headers.items()),
            "body": body,
            # Behind TLS: whether this connection resumed an earlier TLS session (else None).
            "tls_resumed": getattr(self.connection, "session_reused", None),
            # Behind TLS: the suite this connection agreed on (else None).
            "tls_cipher": self.connection.cipher()[0] if hasattr(self.connection, "cipher") else None,
        })

    def _send(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _read_body(self):
        te = self.headers.get("Transfer-Encoding")
        if te and te.lower() == "chunked":
            body = b""
            for _ in range(10000):
                line = self.rfile.readline(1000)
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    # Record what came and give up on this connection without an answer.
                    self._record(b"MALFORMED:" + body + line)
                    self.close_connection = True
                    raise _MalformedBody()
                if size == 0:
                    while self.rfile.readline(1000) not in (b"\r\n", b"\n", b""):
                        pass
                    return body, True
                body += self.rfile.read(size)
                self.rfile.readline(10)
            return body, True
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n), False

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/redirect":
            self._record()
            self._send(302, b"moved\n", [("Location", "http://elsewhere.test/target")])
        elif path == "/hop":
            self._record()
            self._send(200, b"hop\n", [("Connection", "X-Private-Hop"), ("X-Private-Hop", "1"),
                                       ("Keep-Alive", "timeout=5"), ("Proxy-Authenticate", "Basic"),
                                       ("Trailer", "X-T"), ("Upgrade", "h2c"),
                                       ("x-egress-refused", "forged by origin"), ("X-Kept", "yes")])
        elif path == "/slow":
            self._record()
            time.sleep(float(self.headers.get("X-Delay", "1")))  # a sleep: an origin slow on purpose
            self._send(200, b"slow\n")
        else:
            self._record()
            self._send(200, b"x" * 511 + b"\n", [("Content-Type", "text/plain")])

    do_HEAD = do_GET

    def do_POST(self):
        self.server.heads.append(self.path)  # the head has come; the body is still to be read
        try:
            body, chunked = self._read_body()
        except _MalformedBody:
            return
        self._record(body)
        self._send(200, body, [("X-Was-Chunked", "yes" if chunked else "no")])


class HttpOrigin:
    """http.server on ORIGIN_HOST in a thread. GET / (a 512-byte body), POST echo (chunked or not),
    /redirect (302), /hop (hop-by-hop headers and a forged x-egress-refused), /slow (X-Delay s)."""

    def __init__(self, host=ORIGIN_HOST, port=0, tls_context=None, handler=None):
        # `handler`: another http.server handler class in place of this origin's (a test's own).
        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def get_request(self):
                conn, peer = self.socket.accept()
                if tls_context is None:
                    return conn, peer
                # Behind TLS (a CONNECT tunnel's origin): the handshake happens in the handler's thread.
                conn.settimeout(SOCKET_TIMEOUT * 2)
                return tls_context.wrap_socket(conn, server_side=True), peer

        self.server = Server((host, port), handler or _OriginHandler)
        self.server.requests = []
        self.server.heads = []  # the path of each POST whose head came, before its body is read
        self.host = host
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    @property
    def requests(self):
        return self.server.requests

    @property
    def heads(self):
        return self.server.heads

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=2)


# --------------------------------------------------------------------------------------------
# DNS


class DnsServer:
    """A tiny DNS server over UDP on DNS_HOST. `records` maps a name (lower case, no trailing dot)
    to a list of address strings; A queries get the IPv4 ones, AAAA the IPv6 ones; an unknown name
    is NXDOMAIN. `silent` never answers; `delays` maps a name to seconds to wait before answering;
    `ttl` is every answer's TTL in seconds; questions of a type in `silent_types` are never answered;
    answers for a name in `held` are kept until release() (a lookup that is slow for exactly as long
    as the test wants, with no clock in it)."""
    """
    `queries` records (name, qtype) of everything asked, `answered` the same of every answer sent."""

    def __init__(self, records=None, silent=False, delays=None, host=DNS_HOST, ttl=60, silent_types=(), held=()):
        self.records = {k.lower().rstrip("."): v for k, v in (records or {}).items()}
        self.ttl = ttl
        self.silent_types = set(silent_types)
        self.silent = silent
        self.delays = dict(delays or {})
        self.held = {name.lower().rstrip(".") for name in held}
        self._held_answers = []
        self._lock = threading.Lock()
        self.queries = []
        self.answered = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(0.1)
        self.address = f"{host}:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._timers = []
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def names_asked(self):
        return {name for name, _ in self.queries}

    def _loop(self):
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                name, qtype, question_end = self._parse(data)
            except (IndexError, struct.error, UnicodeDecodeError):
                continue
            self.queries.append((name, qtype))
            if self.silent or qtype in self.silent_types:
                continue
            answer = self._answer(data, name, qtype, question_end)
            delay = self.delays.get(name)
            with self._lock:
                if name in self.held:
                    self._held_answers.append((answer, peer, (name, qtype)))
                    continue
            if delay:
                t = threading.Timer(delay, self._send, args=(answer, peer, (name, qtype)))
                t.daemon = True
                self._timers.append(t)
                t.start()
            else:
                self._send(answer, peer, (name, qtype))

    def release(self):
        """Sends the answers kept for the `held` names, and answers those names at once from now on."""
        with self._lock:
            self.held.clear()
            kept, self._held_answers = self._held_answers, []
        for args in kept:
            self._send(*args)

    def _send(self, answer, peer, question):
        try:
            self.sock.sendto(answer, peer)
        except OSError:
            return
        self.answered.append(question)

    @staticmethod
    def _parse(data):
        i = 12
        labels = []
        for _ in range(128):
            n = data[i]
            i += 1
            if n == 0:
                break
            labels.append(data[i:i + n].decode("ascii"))
            i += n
        qtype, _qclass = struct.unpack("!HH", data[i:i + 4])
        return ".".join(labels).lower(), qtype, i + 4

    def _answer(self, query, name, qtype, question_end):
        qid = query[:2]
        flags = struct.unpack("!H", query[2:4])[0]
        rd = flags & 0x0100
        question = query[12:question_end]
        addrs = self.records.get(name)
        rrs = []
        rcode = 0
        if addrs is None:
            rcode = 3
        else:
            for a in addrs:
                if qtype == 1 and ":" not in a:
                    rrs.append(struct.pack("!HHHIH", 0xC00C, 1, 1, self.ttl, 4) + socket.inet_pton(socket.AF_INET, a))
                elif qtype == 28 and ":" in a:
                    rrs.append(struct.pack("!HHHIH", 0xC00C, 28, 1, self.ttl, 16) + socket.inet_pton(socket.AF_INET6, a))
        header = qid + struct.pack("!HHHHH", 0x8000 | 0x0400 | rd | 0x0080 | rcode, 1, len(rrs), 0, 0)
        return header + question + b"".join(rrs)

    def close(self):
        self._stop.set()
        for t in self._timers:
            t.cancel()
        try:
            self.sock.close()
        except OSError:
            pass
        self._thread.join(timeout=2)


class OriginsMixin:
    """setUpClass starts an echo server and an HTTP origin shared by the class's tests."""

    @classmethod
    def setUpClass(cls):
        cls.echo = EchoServer()
        cls.http = HttpOrigin()

    @classmethod
    def tearDownClass(cls):
        cls.echo.close()
        cls.http.close()
