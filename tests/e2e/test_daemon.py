# SPDX-License-Identifier: Apache-2.0
"""The daemon through the real binary: options (SPEC §2), the socket's lifecycle (§3), signals,
readiness and exit codes (§4).

Self-contained (standard library only). Every proxy listens on a Unix socket in a temporary
directory of the test's own; the only targets ever asked for are refused before any dial
(10.0.0.1 is `private`, names off the host list are `not-listed`), so nothing leaves loopback.
Every wait is bounded in time.
"""

import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import binary, recv_all, wait_until

START_TIMEOUT = 10.0
EXIT_TIMEOUT = 5.0
IO_TIMEOUT = 5.0
# SPEC §4: SIGTERM and SIGINT end the process within one second. A little slack for a loaded
# test machine is allowed in the measurement, not in the promise.
SHUTDOWN_LIMIT = 1.0
SHUTDOWN_SLACK = 0.5


def unix_connect(path, timeout=IO_TIMEOUT):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def http_refusal(path, target, timeout=IO_TIMEOUT):
    """Sends `CONNECT target` on the proxy at `path`; returns (status, x-egress-refused, raw)."""
    with unix_connect(path, timeout) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        raw = recv_all(s, timeout)
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    lines = head.split("\r\n")
    status = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/1.") else None
    refused = None
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "x-egress-refused":
            refused = value.strip()
    return status, refused, raw


class Proxy:
    """One `boxproxy serve` process; stdout and stderr are drained by threads so neither pipe
    can ever fill and block it."""

    def __init__(self, socket_path, *args, env=None, pass_fds=(), umask=None, socket_arg=True):
        self.socket_path = socket_path
        # socket_arg=False: the path comes from --config, not the command line.
        self.args = [binary(), "serve", *(["--socket", socket_path] if socket_arg else []), *args]
        preexec = (lambda: os.umask(umask)) if umask is not None else None
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, env=env, pass_fds=pass_fds,
                                        preexec_fn=preexec)
        self._lock = threading.Lock()
        self._stdout = b""
        self._stderr = b""
        self._threads = [threading.Thread(target=self._drain, args=(self.process.stdout, "_stdout"), daemon=True),
                         threading.Thread(target=self._drain, args=(self.process.stderr, "_stderr"), daemon=True)]
        for t in self._threads:
            t.start()

    def _drain(self, pipe, attr):
        while True:
            chunk = pipe.read1(65536)
            if not chunk:
                return
            with self._lock:
                setattr(self, attr, getattr(self, attr) + chunk)

    @property
    def stdout(self):
        with self._lock:
            return self._stdout

    @property
    def stderr(self):
        with self._lock:
            return self._stderr.decode("utf-8", "replace")

    @property
    def pid(self):
        return self.process.pid

    def wait_listening(self, timeout=START_TIMEOUT):
        """The listening line (SPEC §4), parsed; fails the test when the proxy exits first."""
        def ready():
            return b"\n" in self.stdout or self.process.poll() is not None
        wait_until(ready, timeout)
        if b"\n" not in self.stdout:
            raise AssertionError(f"no listening line; exit={self.process.poll()} stderr={self.stderr!r}")
        line = self.stdout.split(b"\n", 1)[0]
        return line, json.loads(line)

    def wait_exit(self, timeout=EXIT_TIMEOUT):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def finish_output(self):
        """Waits for both pipes to reach EOF (after the process has exited)."""
        for t in self._threads:
            t.join(EXIT_TIMEOUT)

    def wait_stderr(self, predicate, timeout=IO_TIMEOUT):
        return wait_until(lambda: predicate(self.stderr), timeout)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(EXIT_TIMEOUT)
        self.finish_output()
        for pipe in (self.process.stdout, self.process.stderr):
            pipe.close()


def run_once(args, timeout=START_TIMEOUT, env=None):
    """Runs `boxproxy serve ARGS` expecting it to exit by itself; returns the CompletedProcess."""
    return subprocess.run([binary(), "serve", *args], capture_output=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


class DaemonTestCase(unittest.TestCase):

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="boxproxy-daemon-")
        self.addCleanup(self._tmp.cleanup)
        self.dir = self._tmp.name
        self.path = os.path.join(self.dir, "egress.sock")
        self.proxies = []

    def tearDown(self):
        for p in self.proxies:
            p.kill()

    def start(self, *args, path=None, wait=True, **kwargs):
        p = Proxy(path or self.path, *args, **kwargs)
        self.proxies.append(p)
        if wait:
            p.wait_listening()
        return p

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def dir_entries(self, directory=None):
        return sorted(os.listdir(directory or self.dir))

    def assert_stops(self, p, sig):
        """Sends `sig`; the proxy exits 0 within the limit, having removed its socket."""
        started = time.monotonic()
        p.process.send_signal(sig)
        code = p.wait_exit(SHUTDOWN_LIMIT + SHUTDOWN_SLACK)
        elapsed = time.monotonic() - started
        self.assertEqual(code, 0, f"exit after {sig!r}; stderr={p.stderr!r}")
        self.assertLess(elapsed, SHUTDOWN_LIMIT + SHUTDOWN_SLACK)
        self.assertFalse(os.path.lexists(p.socket_path), "the socket must be removed on shutdown")
        p.finish_output()


class SocketLifecycleTest(DaemonTestCase):
    """SPEC §3 and §4: the socket, the listening line, exit codes."""

    def test_listening_line_mode_0600_under_umask_000_and_one_stdout_line(self):
        p = self.start(umask=0)
        line, obj = p.wait_listening()
        self.assertEqual(line, json.dumps({"event": "listening", "socket": self.path, "pid": p.pid},
                                          separators=(",", ":")).encode())
        st = os.lstat(self.path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(self.dir_entries(), ["egress.sock"], "the temporary name must be gone")
        # It answers: a private address is refused before any dial.
        status, refused, _ = http_refusal(self.path, "10.0.0.1:80")
        self.assertEqual((status, refused), (403, "private"))
        p.process.send_signal(signal.SIGUSR1)
        p.wait_stderr(lambda text: '"stats"' in text)
        self.assert_stops(p, signal.SIGTERM)
        self.assertEqual(p.stdout, line + b"\n", "exactly one line ever goes to standard output")

    def test_regular_file_at_path_exit_3_left_intact(self):
        self.write("egress.sock", "precious\n")
        r = run_once(["--socket", self.path])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(b"not a socket", r.stderr)
        self.assertEqual(r.stdout, b"")
        with open(self.path) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertEqual(self.dir_entries(), ["egress.sock"])

    def test_live_proxy_at_path_exit_3_and_first_still_answers(self):
        first = self.start()
        r = run_once(["--socket", self.path])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(b"in use", r.stderr)
        self.assertEqual(r.stdout, b"")
        self.assertEqual(self.dir_entries(), ["egress.sock"])
        status, refused, raw = http_refusal(self.path, "10.0.0.1:80")
        self.assertEqual(status, 403, raw)
        self.assertEqual(refused, "private")
        self.assertIsNone(first.process.poll())

    def test_stale_socket_removed_and_start_succeeds(self):
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(self.path)
        stale.close()  # the file stays; nobody listens: connect() is refused
        self.assertTrue(stat.S_ISSOCK(os.lstat(self.path).st_mode))
        self.start()
        status, _, _ = http_refusal(self.path, "10.0.0.1:80")
        self.assertEqual(status, 403)

    def test_replaced_by_another_socket_then_sigterm_newcomer_survives(self):
        p = self.start()
        os.unlink(self.path)
        newcomer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(newcomer.close)
        newcomer.bind(self.path)
        newcomer.listen(4)
        self.assert_stops_leaving_path(p)
        self.assertTrue(stat.S_ISSOCK(os.lstat(self.path).st_mode))
        with unix_connect(self.path):
            pass

    def assert_stops_leaving_path(self, p):
        p.process.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait_exit(SHUTDOWN_LIMIT + SHUTDOWN_SLACK), 0, p.stderr)

    def test_missing_directory_exit_1(self):
        path = os.path.join(self.dir, "no-such-dir", "egress.sock")
        r = run_once(["--socket", path])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(b"no-such-dir", r.stderr)
        self.assertEqual(r.stdout, b"")
        self.assertEqual(self.dir_entries(), [])

    def test_sigterm_with_clients_connected(self):
        self._stop_with_clients(signal.SIGTERM)

    def test_sigint_with_clients_connected(self):
        self._stop_with_clients(signal.SIGINT)

    def _stop_with_clients(self, sig):
        p = self.start()
        fds = len(os.listdir(f"/proc/{p.pid}/fd"))
        clients = [unix_connect(self.path) for _ in range(3)]
        clients[1].sendall(b"CONNECT 10.0.0.1:80 HTTP/1.1\r\n")  # a head not yet finished
        clients[2].sendall(b"\x05")                               # a SOCKS5 greeting begun
        self.assertTrue(wait_until(lambda: len(os.listdir(f"/proc/{p.pid}/fd")) >= fds + 3, 5),
                        "the proxy never accepted the three clients")
        self.assert_stops(p, sig)
        for c in clients:
            # Every connection was ended: the client reads EOF (or a reset), never hangs.
            c.settimeout(IO_TIMEOUT)
            try:
                self.assertEqual(c.recv(4096), b"")
            except ConnectionResetError:
                pass
            c.close()
        self.assertEqual(p.stdout.count(b"\n"), 1)


class SignalTest(DaemonTestCase):
    """SIGHUP (re-read the host list) and SIGUSR1 (stats)."""

    def test_stop_signals_while_exiting_leave_exit_0(self):
        # A supervisor may send SIGTERM again (or a terminal SIGINT) while the proxy is already on
        # its way out: after a drain, or after the first signal. Each must be ignored then, not
        # end the process by the signal: the exit status owed is 0. A stream of signals from the
        # first until the exit covers the moment libevent's handlers are taken down.
        for sig in (signal.SIGTERM, signal.SIGINT) * 10:
            p = self.start()
            clients = [unix_connect(self.path) for _ in range(20)]  # more to end: a longer exit
            sent, deadline = 0, time.monotonic() + EXIT_TIMEOUT
            # poll() reaps, so until it reports an exit the pid cannot have been reused.
            while p.process.poll() is None and time.monotonic() < deadline:
                os.kill(p.process.pid, sig)
                sent += 1
                time.sleep(0.0002)  # a sleep: a stream of signals paced, not a wait on anything
            code = p.wait_exit(EXIT_TIMEOUT)
            self.assertEqual(code, 0, f"{sig!r} sent {sent} times; stderr={p.stderr[-1000:]!r}")
            p.finish_output()
            for c in clients:
                c.close()

    def test_sighup_broken_file_keeps_list_then_good_file_replaces_it(self):
        allow = self.write("allow", "old.example.com\n")
        p = self.start("--allow-file", allow,
                       "--resolve", "old.example.com=10.0.0.1",
                       "--resolve", "new.example.com=10.0.0.1")
        # Listed, then refused by the address rule: `private`, no dial.
        self.assertEqual(http_refusal(self.path, "old.example.com:443")[:2], (403, "private"))
        self.assertEqual(http_refusal(self.path, "new.example.com:443")[:2], (403, "not-listed"))

        # A broken file: the reason is logged, and the old list stays in force.
        self.write("allow", "new.example.com\nhttp://broken.example.com/\n")
        before = len(p.stderr)
        p.process.send_signal(signal.SIGHUP)
        self.assertTrue(p.wait_stderr(lambda text: "broken.example.com" in text[before:]),
                        f"the reason must be logged; stderr={p.stderr!r}")
        self.assertIsNone(p.process.poll())
        self.assertEqual(http_refusal(self.path, "old.example.com:443")[:2], (403, "private"))
        self.assertEqual(http_refusal(self.path, "new.example.com:443")[:2], (403, "not-listed"))

        # A good file: the new list is in force (new listed, old off it).
        self.write("allow", "new.example.com\n")
        p.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: http_refusal(self.path, "new.example.com:443")[:2] == (403, "private"),
                                   IO_TIMEOUT, interval=0.05))
        self.assertEqual(http_refusal(self.path, "old.example.com:443")[:2], (403, "not-listed"))

    def test_sighup_unreadable_file_keeps_list(self):
        allow = self.write("allow", "old.example.com\n")
        p = self.start("--allow-file", allow, "--resolve", "old.example.com=10.0.0.1")
        os.unlink(allow)
        before = len(p.stderr)
        p.process.send_signal(signal.SIGHUP)
        self.assertTrue(p.wait_stderr(lambda text: allow in text[before:]), p.stderr)
        self.assertEqual(http_refusal(self.path, "old.example.com:443")[:2], (403, "private"))

    def test_sighup_rereads_the_configs_host_list(self):
        resolve = ["old.example.com=10.0.0.1", "new.example.com=10.0.0.1"]
        config = self.write("config.json", json.dumps({"allow": ["old.example.com"], "resolve": resolve}))
        p = self.start("--config", config)
        self.assertEqual(http_refusal(self.path, "new.example.com:443")[:2], (403, "not-listed"))
        # A config that no longer parses: logged, the old list kept.
        self.write("config.json", "{broken")
        before = len(p.stderr)
        p.process.send_signal(signal.SIGHUP)
        self.assertTrue(p.wait_stderr(lambda text: config in text[before:]), p.stderr)
        self.assertEqual(http_refusal(self.path, "old.example.com:443")[:2], (403, "private"))
        # The config's new list (now through an allow-file it names) takes over.
        allow = self.write("allow", "new.example.com\n")
        self.write("config.json", json.dumps({"allow-file": allow, "resolve": resolve}))
        p.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: http_refusal(self.path, "new.example.com:443")[:2] == (403, "private"),
                                   IO_TIMEOUT, interval=0.05))
        self.assertEqual(http_refusal(self.path, "old.example.com:443")[:2], (403, "not-listed"))

    def test_sigusr1_writes_a_stats_line(self):
        p = self.start()
        http_refusal(self.path, "10.0.0.1:80")
        p.process.send_signal(signal.SIGUSR1)

        def stats():
            for line in p.stderr.splitlines():
                if line.startswith("{") and '"stats"' in line:
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        continue
                    if obj.get("event") == "stats":
                        return obj
            return None
        obj = wait_until(stats, IO_TIMEOUT)
        self.assertIsNotNone(obj, p.stderr)
        for key in ("open", "used", "lookups", "clients", "refused", "up", "down"):
            self.assertIn(key, obj)
        self.assertEqual(obj["refused"].get("private"), 1)
        self.assertIsNone(p.process.poll())
        self.assertEqual(p.stdout.count(b"\n"), 1, "stats go to the log, never to standard output")


class ReadinessTest(DaemonTestCase):
    """--ready-fd, NOTIFY_SOCKET, --die-with-parent (SPEC §4)."""

    def test_ready_fd(self):
        r, w = os.pipe()
        try:
            p = self.start("--ready-fd", str(w), pass_fds=(w,), wait=False)
            os.close(w)
            w = None
            data = b""
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                ready, _, _ = select.select([r], [], [], deadline - time.monotonic())
                if not ready:
                    break
                chunk = os.read(r, 64)
                if not chunk:
                    break  # EOF: the proxy closed its end after writing
                data += chunk
            self.assertEqual(data, b"READY=1\n")
            p.wait_listening()
            self.assertTrue(stat.S_ISSOCK(os.lstat(self.path).st_mode))
        finally:
            os.close(r)
            if w is not None:
                os.close(w)

    def test_notify_socket(self):
        notify_path = os.path.join(self.dir, "notify")
        receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(receiver.close)
        receiver.bind(notify_path)
        receiver.settimeout(START_TIMEOUT)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        p = self.start(env=env)
        self.assertEqual(receiver.recv(4096), b"READY=1")
        self.assertEqual(p.stdout.count(b"\n"), 1)

    def test_die_with_parent(self):
        # A parent that starts the proxy (stdout inherited: the listening line comes to us) and
        # then sleeps until it is killed.
        parent_code = (
            "import subprocess, sys, time\n"
            "subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "time.sleep(60)\n")  # a sleep: a parent that lives (a minute at most) until the test kills it
        parent = subprocess.Popen([sys.executable, "-c", parent_code, binary(), "serve", "--socket", self.path,
                                   "--die-with-parent"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        pid = None
        try:
            ready, _, _ = select.select([parent.stdout], [], [], START_TIMEOUT)
            self.assertTrue(ready, "no listening line")
            pid = json.loads(parent.stdout.readline())["pid"]
            self.assertTrue(stat.S_ISSOCK(os.lstat(self.path).st_mode))
            parent.kill()
            parent.wait(EXIT_TIMEOUT)

            def gone():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                    return state == "Z"  # exited, waiting for its new parent to reap it
                except FileNotFoundError:
                    return True
            self.assertTrue(wait_until(gone, EXIT_TIMEOUT), "the proxy must exit when its parent dies")
            self.assertFalse(os.path.lexists(self.path), "it exits as on SIGTERM: the socket is removed")
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait(EXIT_TIMEOUT)
            parent.stdout.close()
            if pid is not None and os.path.lexists(self.path):
                try:
                    os.kill(pid, signal.SIGKILL)  # a proxy that did not die with its parent
                except ProcessLookupError:
                    pass


class UsageTest(DaemonTestCase):
    """SPEC §2: a bad value is a usage error naming the option and the value, exit 2, and no
    socket is created."""

    def assert_usage_error(self, args, *expected, code=2):
        r = run_once(args)
        stderr = r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, code, f"{args}: {stderr}")
        for text in expected:
            self.assertIn(text, stderr, args)
        self.assertEqual(r.stdout, b"", "nothing on standard output when it does not start")
        self.assertFalse(os.path.lexists(self.path), "no socket when it does not start")
        self.assertEqual([e for e in self.dir_entries() if e.endswith(".sock") or e.endswith(".tmp")], [])
        return stderr

    def test_each_bad_value(self):
        missing = os.path.join(self.dir, "missing")
        cases = [
            (["--max-tunnels", "0"], "--max-tunnels", '"0"'),
            (["--max-tunnels", "1000001"], "--max-tunnels", '"1000001"'),
            (["--max-tunnels", "ten"], "--max-tunnels", '"ten"'),
            (["--max-connections", "0"], "--max-connections", '"0"'),
            (["--max-connections", "9223372036854775809"], "--max-connections", '"9223372036854775809"'),
            (["--max-lookups", "0"], "--max-lookups", '"0"'),
            (["--max-lookups", "9223372036854775809"], "--max-lookups", '"9223372036854775809"'),
            (["--head-timeout", "0"], "--head-timeout", '"0"'),
            (["--dns-timeout", "-1"], "--dns-timeout", '"-1"'),
            (["--connect-timeout", "86401"], "--connect-timeout", '"86401"'),
            (["--idle-timeout", "x"], "--idle-timeout", '"x"'),
            (["--max-head-bytes", "100"], "--max-head-bytes", '"100"'),
            (["--max-head-bytes", "1048577"], "--max-head-bytes", '"1048577"'),
            (["--log", "xml"], "--log", '"xml"'),
            (["--ready-fd", "999"], "--ready-fd", '"999"'),
            (["--ready-fd", "-2"], "--ready-fd", '"-2"'),
            (["--allow-hint", "bad\x01hint"], "--allow-hint", '"bad\\x01hint"'),
            (["--allow-hint", "caf\u00e9"], "--allow-hint", "caf"),
            (["--allow", "10.0.0.1"], "--allow", '"10.0.0.1"'),
            (["--allow", "http://example.com/"], "--allow", "http://example.com/"),
            (["--allow", "localhost"], "--allow", '"localhost"'),
            (["--permit", "10.0.0.0/33"], "--permit", '"10.0.0.0/33"'),
            (["--deny", "not-a-cidr"], "--deny", '"not-a-cidr"'),
            (["--resolve", "x.example.com"], "--resolve", '"x.example.com"'),
            (["--resolve", "x.example.com=nope"], "--resolve", '"x.example.com=nope"'),
            (["--nameserver", "dns.example.com"], "--nameserver", '"dns.example.com"'),
            (["--nameserver", "127.0.0.1:99999"], "--nameserver", '"127.0.0.1:99999"'),
            (["--allow-file", missing], "--allow-file", missing),
            (["--auth-token-file", missing], "--auth-token-file", missing),
            (["--config", missing], "--config", missing),
            (["--die-with-parent=yes"], "--die-with-parent", '"yes"'),
            (["--no-such-option"], "--no-such-option"),
            (["--max-tunnels"], "--max-tunnels"),
        ]
        for args, *expected in cases:
            with self.subTest(args=args):
                self.assert_usage_error(["--socket", self.path, *args], *expected)

    def test_socket_required(self):
        self.assert_usage_error(["--max-tunnels", "5"], "--socket")

    def test_help(self):
        r = run_once(["--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"--socket", r.stdout)
        self.assertIn(b"--max-tunnels", r.stdout)


class ConfigTest(DaemonTestCase):

    def test_config_good_keys_and_command_line_wins(self):
        config = self.write("config.json", json.dumps({
            "socket": os.path.join(self.dir, "from-config.sock"),
            "allow": ["cfg.example.com"],
            "resolve": ["cfg.example.com=10.0.0.1", "cli.example.com=10.0.0.1"],
            "max-tunnels": 8,
            "head-timeout": 2.5,
            "log": "json",
            "die-with-parent": False,
        }))
        # --socket on the command line wins over the config's.
        self.start("--config", config)
        self.assertFalse(os.path.lexists(os.path.join(self.dir, "from-config.sock")))
        self.assertEqual(http_refusal(self.path, "cfg.example.com:443")[:2], (403, "private"))
        self.assertEqual(http_refusal(self.path, "other.example.com:443")[:2], (403, "not-listed"))

        # A command-line --allow replaces the config's list.
        other = os.path.join(self.dir, "other.sock")
        self.start("--config", config, "--allow", "cli.example.com", path=other)
        self.assertEqual(http_refusal(other, "cli.example.com:443")[:2], (403, "private"))
        self.assertEqual(http_refusal(other, "cfg.example.com:443")[:2], (403, "not-listed"))

    def test_config_socket_from_config(self):
        sock = os.path.join(self.dir, "from-config.sock")
        config = self.write("config.json", json.dumps({"socket": sock}))
        p = self.start("--config", config, path=sock, socket_arg=False)
        _, obj = p.wait_listening()
        self.assertEqual(obj["socket"], sock)
        self.assertEqual(http_refusal(sock, "10.0.0.1:80")[:2], (403, "private"))

    def test_config_unknown_key_and_wrong_type(self):
        for name, doc, expected in [
            ("unknown.json", {"socket": self.path, "max-tunnel": 5}, "max-tunnel"),
            ("type.json", {"socket": self.path, "max-tunnels": "64"}, "max-tunnels"),
            ("range.json", {"socket": self.path, "max-tunnels": 0}, "max-tunnels"),
            ("list.json", {"socket": self.path, "allow": "a.example.com"}, "allow"),
            ("flag.json", {"socket": self.path, "die-with-parent": "yes"}, "die-with-parent"),
        ]:
            with self.subTest(name=name):
                config = self.write(name, json.dumps(doc))
                r = run_once(["--config", config])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(expected.encode(), r.stderr)
                self.assertFalse(os.path.lexists(self.path))
        config = self.write("broken.json", "{not json")
        r = run_once(["--socket", self.path, "--config", config])
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--config", r.stderr)
        self.assertFalse(os.path.lexists(self.path))


class FailClosedTest(DaemonTestCase):
    """SPEC §4: if anything it was asked to enforce cannot be set up, it does not start."""

    def assert_not_started(self, args, code):
        r = run_once(["--socket", self.path, *args])
        self.assertEqual(r.returncode, code, r.stderr)
        self.assertEqual(r.stdout, b"")
        self.assertFalse(os.path.lexists(self.path), "no socket when it does not start")
        return r.stderr.decode("utf-8", "replace")

    def test_unreadable_auth_token_file(self):
        missing = os.path.join(self.dir, "no-token")
        self.assertIn(missing, self.assert_not_started(["--auth-token-file", missing], 2))
        a_directory = os.path.join(self.dir, "token-dir")
        os.mkdir(a_directory)
        self.assertIn(a_directory, self.assert_not_started(["--auth-token-file", a_directory], 2))
        empty = self.write("empty-token", "\n")
        self.assertIn(empty, self.assert_not_started(["--auth-token-file", empty], 2))

    def test_unreadable_allow_file(self):
        missing = os.path.join(self.dir, "no-allow")
        self.assertIn(missing, self.assert_not_started(["--allow-file", missing], 2))
        bad = self.write("bad-allow", "ok.example.com\n10.0.0.1\n")
        self.assertIn(bad, self.assert_not_started(["--allow-file", bad], 2))

    def test_audit_in_missing_directory(self):
        audit = os.path.join(self.dir, "no-such-dir", "audit.jsonl")
        stderr = self.assert_not_started(["--audit", audit], 1)
        self.assertIn("no-such-dir", stderr)


if __name__ == "__main__":
    unittest.main()
