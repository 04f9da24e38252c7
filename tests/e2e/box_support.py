# SPDX-License-Identifier: Apache-2.0
"""Support for the in-box tests (test_box.py): the bridge as a process, `boxproxy run` as a
command, a TLS origin with a certificate made here by openssl, and a git repository served over
dumb HTTP. Loopback only (origins on ORIGIN_HOST), every wait bounded."""

import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

from harness import (ORIGIN_HOST, SOCKET_TIMEOUT, START_TIMEOUT, STOP_TIMEOUT, DnsServer, HttpOrigin, binary,
                     wait_until)

RUN_TIMEOUT = 60.0  # one `boxproxy run` of a short client command, start to teardown


class Bridge:
    """One `boxproxy bridge --socket PATH --listen 127.0.0.1:0` (or the listens given)."""

    def __init__(self, socket_path, *listen, extra=(), preexec_fn=None):
        argv = [binary(), "bridge", "--socket", socket_path]
        for address in listen or ("127.0.0.1:0",):
            argv += ["--listen", address]
        argv += list(extra)
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=preexec_fn)
        self.stderr_lines = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        self.listening = self._read_listening()
        host, _, port = self.listening["listen"][0].rpartition(":")
        self.host = host.strip("[]")
        self.port = int(port)

    def _read_listening(self):
        line = [None]

        def read():
            line[0] = self.proc.stdout.readline()

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(START_TIMEOUT)
        if not line[0]:
            self.kill()
            raise AssertionError(f"no listening line from {self.argv}: exit={self.proc.returncode} "
                                 f"stderr={self.stderr_text()!r}")
        obj = json.loads(line[0])
        if obj.get("event") != "listening":
            raise AssertionError(f"not a listening line: {line[0]!r}")
        return obj

    def _read_stderr(self):
        for raw in self.proc.stderr:
            self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def stderr_text(self):
        return "\n".join(self.stderr_lines)

    @property
    def pid(self):
        return self.proc.pid

    def fd_count(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def connect(self, timeout=SOCKET_TIMEOUT):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        return s

    def stop(self):
        """SIGTERM; returns the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            self._reader.join(timeout=2)
            self.proc.stdout.close()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
        self._reader.join(timeout=2)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


def listening_unix_socket(path):
    """A bound, listening Unix socket at `path` (a stand-in proxy that never answers)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(8)
    return s


_namespaces = None


def namespaces_usable():
    """None when `boxproxy run` can make its box here, else the reason it cannot (for skipTest)."""
    global _namespaces
    if _namespaces is None:
        with tempfile.TemporaryDirectory(prefix="boxproxy-probe-") as d:
            path = os.path.join(d, "probe.sock")
            s = listening_unix_socket(path)
            try:
                r = subprocess.run([binary(), "run", "--socket", path, "--", "true"], stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=RUN_TIMEOUT)
                _namespaces = "" if r.returncode == 0 else (
                    f"boxproxy run cannot make a box here (exit {r.returncode}): "
                    + r.stderr.decode("utf-8", "replace").strip())
            finally:
                s.close()
    return _namespaces or None


class BoxRun:
    """`boxproxy run [serve args] -- argv` with a private TMPDIR (so what run leaves behind is
    visible) and a DNS server of the test's own (NXDOMAIN for everything)."""

    def __init__(self, test):
        self.tmp = tempfile.TemporaryDirectory(prefix="boxproxy-box-")
        test.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name
        self.dns = DnsServer({})
        test.addCleanup(self.dns.close)

    def env(self, extra=None):
        env = dict(os.environ)
        env.pop("XDG_RUNTIME_DIR", None)
        env["TMPDIR"] = self.dir
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                     "no_proxy"):
            env.pop(name, None)
        env.update(extra or {})
        return env

    def argv(self, serve_args, command):
        return ([binary(), "run", "--permit", "127.0.0.2/32", "--nameserver", self.dns.address]
                + [str(a) for a in serve_args] + ["--"] + [str(a) for a in command])

    def run(self, serve_args, command, timeout=RUN_TIMEOUT, env=None, **kwargs):
        return subprocess.run(self.argv(serve_args, command), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, env=self.env(env), **kwargs)

    def leftovers(self):
        """Entries run left in its TMPDIR (a proxy's private directory that was not removed)."""
        return [n for n in os.listdir(self.dir) if n.startswith("boxproxy-run.")]


def processes_mentioning(text):
    """Pids whose command line contains `text` (to check that nothing outlives a run)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


# --------------------------------------------------------------------------------------------
# A TLS origin


def make_certificate(directory, name="origin.test"):
    """A self-signed certificate for `name` (and its key), made by openssl; returns (cert, key)."""
    cert = os.path.join(directory, "origin.pem")
    key = os.path.join(directory, "origin.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


class TlsOrigin(HttpOrigin):
    """The harness's HTTP origin (GET / is 512 bytes) behind TLS, on ORIGIN_HOST."""

    def __init__(self, cert, key, host=ORIGIN_HOST):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        super().__init__(host=host, tls_context=context)


class ThreadedOrigin(HttpOrigin):
    """`handler` (an http.server handler class) served on ORIGIN_HOST, each connection in a thread
    of its own (harness.HttpOrigin's server); behind TLS when `cert` and `key` are given."""

    def __init__(self, handler, cert=None, key=None, host=ORIGIN_HOST):
        context = None
        if cert is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
        super().__init__(host=host, tls_context=context, handler=handler)


def build_go(source, directory, timeout=300):
    """A Go program (`source`: package main, the standard library only) built by Debian's golang-go
    into `directory`/client, offline (GOPATH mode, no module proxy, its cache in `directory`): the
    binary's path. unittest.SkipTest where go is not installed; AssertionError with go's words when
    the build fails."""
    go = shutil.which("go")
    if go is None:
        raise unittest.SkipTest("golang-go is not installed")
    main = os.path.join(directory, "main.go")
    with open(main, "w") as f:
        f.write(source)
    client = os.path.join(directory, "client")
    env = dict(os.environ, GOCACHE=os.path.join(directory, "go-cache"), GOPATH=os.path.join(directory, "gopath"),
               GOFLAGS="-mod=mod", GOPROXY="off", GO111MODULE="off", CGO_ENABLED="0")
    built = subprocess.run([go, "build", "-o", client, main], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout, env=env, cwd=directory)
    if built.returncode != 0:
        raise AssertionError(f"go build: {built.stderr.decode(errors='replace')}")
    return client


# --------------------------------------------------------------------------------------------
# A git repository over dumb HTTP


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class GitOrigin(ThreadedOrigin):
    """A bare repository `repo.git` holding one commit (README: `hello from the origin repo`),
    made ready for dumb HTTP (`git update-server-info`) and served by a static http.server on
    ORIGIN_HOST. `hits` counts requests."""

    CONTENT = "hello from the origin repo\n"

    def __init__(self, directory):
        git = shutil.which("git")
        if git is None:
            raise AssertionError("git is not installed (scripts/install-deps)")
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=directory, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
        work = os.path.join(directory, "work")
        self.root = os.path.join(directory, "served")
        os.makedirs(work)
        os.makedirs(self.root)
        with open(os.path.join(work, "README"), "w") as f:
            f.write(self.CONTENT)

        def git_run(*args, cwd=work):
            subprocess.run([git, *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=30)

        git_run("init", "-q", "-b", "main")
        git_run("add", "README")
        git_run("commit", "-q", "-m", "one")
        bare = os.path.join(self.root, "repo.git")
        git_run("clone", "-q", "--bare", work, bare)
        git_run("update-server-info", cwd=bare)
        root = self.root
        hits = self.hits = []

        class Handler(_QuietFiles):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=root, **kwargs)

            def do_GET(self):
                hits.append(self.path)
                super().do_GET()

        super().__init__(Handler)


def wait_gone(pids, timeout=5.0):
    """True once none of `pids` is alive (zombies of other parents count as gone)."""

    def gone():
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(")")[-1].split()[0] != "Z":
                        return False
            except OSError:
                continue
        return True

    return wait_until(gone, timeout)


def time_bounded(seconds):
    """A deadline helper: returns a function giving the seconds left (at least 0.01)."""
    deadline = time.monotonic() + seconds
    return lambda: max(0.01, deadline - time.monotonic())


class BoxTestCase(unittest.TestCase):
    """A test that runs `boxproxy run` boxes (self.box): skipped, saying why, where this system does
    not let boxproxy make one."""

    @classmethod
    def setUpClass(cls):
        why = namespaces_usable()
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        self.box = BoxRun(self)
