# SPDX-License-Identifier: Apache-2.0
"""serve and bridge confine themselves once set up (SPEC §17, issue 15).

What the kernel says of a running process (/proc/PID/status: NoNewPrivs, Seccomp, and one more
filter than this test's own process has), that --no-confine turns it off, that SIGHUP still
re-reads --config confined (the file rewritten in place, and replaced by rename), and, in builds
with BOXPROXY_TEST_HOOKS (scripts/test-all's), that execve, an open of a file outside the allowed
set and socket(AF_PACKET) fail after confinement, each refusal logged once.

And the rare paths that confinement once broke (issue 21 item 7), each with no "confinement refused"
line: a dial to an IPv6 zone, whose interface index is looked up; the listening line written to a
standard output that is /dev/null or a terminal; a --config that is a symbolic link into another
directory, re-read on SIGHUP."""

import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

from box_support import Bridge
from harness import (SOCKET_TIMEOUT, START_TIMEOUT, STOP_TIMEOUT, EchoServer, OriginsMixin, Proxy, ProxyTestCase, binary,
                     free_port, http_connect, read_http_response, recv_exact, wait_until)

REFUSED = re.compile(r"confinement refused system call (\d+)")


def status_of(pid):
    """The confinement fields of /proc/PID/status: {'NoNewPrivs': '1', 'Seccomp': '2', ...}."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("NoNewPrivs", "Seccomp", "Seccomp_filters"):
                fields[name] = value.strip()
    return fields


OWN = status_of(os.getpid())


def has_test_hooks():
    """True when the binary was built with BOXPROXY_TEST_HOOKS: the hook's variable is in it."""
    with open(binary(), "rb") as f:
        return b"BOXPROXY_TEST_AFTER_CONFINE" in f.read()


def landlock_abi():
    """The kernel's Landlock ABI version, 0 without Landlock (landlock_create_ruleset's probe)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    number = {"x86_64": 444, "aarch64": 444}.get(os.uname().machine)
    if number is None:
        return 0
    version = libc.syscall(number, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(version, 0)


def without_landlock():
    """A preexec_fn that puts a seccomp filter under the process answering Landlock's system calls
    with ENOSYS, as a kernel without Landlock does; every other call is allowed. The program is
    built here, before the fork: the child only makes two prctl calls."""
    import ctypes
    import struct as st
    audit_arch_x86_64, landlock_create_ruleset = 0xC000003E, 444
    ld_abs, jeq, ret = 0x20, 0x15, 0x06
    program = [
        (ld_abs, 0, 0, 4),                        # the architecture
        (jeq, 0, 3, audit_arch_x86_64),           # not x86-64: allow
        (ld_abs, 0, 0, 0),                        # the system call's number
        (jeq, 0, 1, landlock_create_ruleset),
        (ret, 0, 0, 0x00050000 | 38),             # SECCOMP_RET_ERRNO | ENOSYS
        (ret, 0, 0, 0x7FFF0000),                  # SECCOMP_RET_ALLOW
    ]
    filters = ctypes.create_string_buffer(b"".join(st.pack("=HBBI", *insn) for insn in program))
    fprog = ctypes.create_string_buffer(st.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters)))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2

    ulong = ctypes.c_ulong
    no_new_privs = (ctypes.c_int(pr_set_no_new_privs), ulong(1), ulong(0), ulong(0), ulong(0))
    set_filter = (ctypes.c_int(pr_set_seccomp), ulong(seccomp_mode_filter), ctypes.c_void_p(ctypes.addressof(fprog)),
                  ulong(0), ulong(0))

    def install(program=(filters, fprog)):  # the default keeps the program alive until the exec
        if libc.prctl(*no_new_privs) != 0 or libc.prctl(*set_filter) != 0:
            os._exit(97)
    return install


NO_LANDLOCK = "confinement: this kernel has no Landlock (Function not implemented)"


class ConfinedStatus:
    def assert_confined(self, pid):
        status = status_of(pid)
        self.assertEqual(status.get("NoNewPrivs"), "1", status)
        self.assertEqual(status.get("Seccomp"), "2", status)
        # One filter more than this test's own process (which may run under a container's own).
        self.assertEqual(int(status.get("Seccomp_filters", "0")), int(OWN.get("Seccomp_filters", "0")) + 1, status)

    def assert_not_confined(self, pid):
        # Exactly what it inherited from this process: nothing of its own.
        self.assertEqual(status_of(pid), OWN)


class ServeConfineTest(ConfinedStatus, OriginsMixin, ProxyTestCase):

    def test_serve_is_confined_and_still_proxies(self):
        p = self.proxy()
        self.assert_confined(p.pid)
        s, resp = http_connect(p, f"127.0.0.2:{self.echo.port}")
        self.assertEqual(resp.status, 200)
        s.sendall(b"confined")
        self.assertEqual(recv_exact(s, 8), b"confined")
        s.close()
        # The plain-HTTP path, and a refusal, confined too.
        s = p.connect()
        origin = f"127.0.0.2:{self.http.port}"
        s.sendall(f"GET http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n".encode())
        self.assertEqual(read_http_response(s).status, 200)
        s.close()
        s, resp = http_connect(p, "10.0.0.1:443")
        self.assertEqual(resp.status, 403)
        s.close()
        p.stop()
        self.assertFalse(os.path.exists(p.socket_path), "the confined proxy must still remove its socket")
        self.assertIsNone(REFUSED.search("\n".join(p.raw_log_lines())), p.raw_log_lines())

    @unittest.skipUnless(os.uname().machine == "x86_64", "the test's filter is written for x86-64")
    def test_without_landlock_it_says_so_and_the_filter_still_holds(self):
        # A kernel without Landlock, made by a filter of the test's under serve: the manual's
        # message, the seccomp filter loaded all the same (its own, on top of the test's), and
        # the proxy works.
        p = self.proxy(preexec_fn=without_landlock())
        self.assertTrue(wait_until(lambda: any(NO_LANDLOCK in line for line in p.raw_log_lines()), 5),
                        p.raw_log_lines())
        status = status_of(p.pid)
        self.assertEqual((status.get("NoNewPrivs"), status.get("Seccomp")), ("1", "2"), status)
        self.assertEqual(int(status.get("Seccomp_filters", "0")), int(OWN.get("Seccomp_filters", "0")) + 2, status)
        s, resp = http_connect(p, f"127.0.0.2:{self.echo.port}")
        self.assertEqual(resp.status, 200)
        s.sendall(b"filtered")
        self.assertEqual(recv_exact(s, 8), b"filtered")
        s.close()
        p.stop()
        self.assertIsNone(REFUSED.search("\n".join(p.raw_log_lines())), p.raw_log_lines())

    def test_no_confine_turns_it_off(self):
        p = self.proxy("--no-confine")
        self.assert_not_confined(p.pid)
        s, resp = http_connect(p, f"127.0.0.2:{self.echo.port}")
        self.assertEqual(resp.status, 200)
        s.close()

    def test_no_confine_is_not_a_config_key(self):
        # A config file never turns confinement off unseen: only the command line does.
        d = self.proxy_dir()
        config = os.path.join(d, "c.json")
        with open(config, "w") as f:
            json.dump({"no-confine": True}, f)
        done = subprocess.run([binary(), "serve", "--socket", os.path.join(d, "s.sock"), "--config", config],
                              capture_output=True, timeout=10)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(b"no-confine", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "s.sock")))

    def proxy_dir(self):
        d = tempfile.TemporaryDirectory(prefix="boxproxy-confine-")
        self.addCleanup(d.cleanup)
        return d.name

    def test_sighup_rereads_the_config_confined(self):
        d = self.proxy_dir()
        config = os.path.join(d, "config.json")
        resolve = ["old.example.com=127.0.0.2", "new.example.com=127.0.0.2"]
        with open(config, "w") as f:
            json.dump({"allow": [f"old.example.com:{self.echo.port}"], "resolve": resolve}, f)
        p = self.proxy("--config", config)
        self.assert_confined(p.pid)

        def status_for(host):
            s, resp = http_connect(p, f"{host}:{self.echo.port}")
            s.close()
            return resp.status

        self.assertEqual(status_for("old.example.com"), 200)
        self.assertEqual(status_for("new.example.com"), 403)
        # Rewritten in place.
        with open(config, "w") as f:
            json.dump({"allow": [f"new.example.com:{self.echo.port}"], "resolve": resolve}, f)
        p.proc.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: status_for("new.example.com") == 200, 5, interval=0.05), p.raw_log_lines())
        self.assertEqual(status_for("old.example.com"), 403)
        # Replaced by rename, as a supervisor or an editor does: a new file in the same directory.
        replacement = os.path.join(d, "config.json.new")
        with open(replacement, "w") as f:
            json.dump({"allow": [f"old.example.com:{self.echo.port}"], "resolve": resolve}, f)
        os.rename(replacement, config)
        p.proc.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: status_for("old.example.com") == 200, 5, interval=0.05), p.raw_log_lines())
        self.assertEqual(status_for("new.example.com"), 403)
        self.assertIsNone(REFUSED.search("\n".join(p.raw_log_lines())), p.raw_log_lines())


@unittest.skipUnless(os.environ.get("BOXPROXY") and has_test_hooks(),
                     "the binary was built without BOXPROXY_TEST_HOOKS (scripts/test-all builds with them)")
class AfterConfineTest(ConfinedStatus, ProxyTestCase):
    """The test hook tries, after confinement, what confinement must refuse."""

    def hooked(self, what, *args, **kwargs):
        env = dict(os.environ, BOXPROXY_TEST_AFTER_CONFINE=what)
        return self.proxy(*args, env=env, **kwargs)

    def config_to_reread(self):
        """A --config file in a directory of its own: what SIGHUP re-reads, so opens are allowed."""
        d = tempfile.TemporaryDirectory(prefix="boxproxy-confine-")
        self.addCleanup(d.cleanup)
        config = os.path.join(d.name, "config.json")
        with open(config, "w") as f:
            json.dump({"max-tunnels": 8}, f)
        return config

    def refusals(self, p):
        return [m.group(1) for m in map(REFUSED.search, p.raw_log_lines()) if m]

    def test_execve_fails_and_is_logged_once(self):
        p = self.hooked("execve")
        line = p.wait_raw(r"test hook: execve: ")
        self.assertIn("test hook: execve: failed: Operation not permitted", line)
        self.assertTrue(p.alive())
        self.assert_confined(p.pid)
        # The hook tried it twice: one line, with the call's number.
        self.assertEqual(len(self.refusals(p)), 1, p.raw_log_lines())

    def test_refusal_line_in_json_is_a_message(self):
        p = self.hooked("execve", "--log", "json")
        p.wait_raw(r"test hook: execve: failed")
        lines = [json.loads(line) for line in p.raw_log_lines() if REFUSED.search(line)]
        self.assertEqual(len(lines), 1, p.raw_log_lines())
        self.assertEqual(lines[0]["event"], "message")
        self.assertRegex(lines[0]["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

    def test_packet_socket_fails(self):
        # Made as root it would otherwise succeed (CAP_NET_RAW): the filter refuses the family.
        p = self.hooked("packet")
        line = p.wait_raw(r"test hook: packet: ")
        self.assertIn("failed: Operation not permitted", line)
        self.assertEqual(len(self.refusals(p)), 1, p.raw_log_lines())

    def test_open_outside_the_allowed_set_fails(self):
        # No file to re-read: no open at all (the filter).
        p = self.hooked("open")
        self.assertIn("test hook: open: failed:", p.wait_raw(r"test hook: open: "))

    @unittest.skipUnless(landlock_abi() > 0, "this kernel has no Landlock")
    def test_open_outside_the_config_directory_fails_with_landlock(self):
        # A config to re-read: opens are allowed, and Landlock refuses every file but its directory's.
        config = self.config_to_reread()
        p = self.hooked("open", "--config", config)
        self.assertIn("test hook: open: failed: Permission denied", p.wait_raw(r"test hook: open: "))
        self.assertEqual(self.refusals(p), [], p.raw_log_lines())

    @unittest.skipUnless(os.uname().machine == "x86_64", "the test's filter is written for x86-64")
    def test_without_landlock_a_file_to_reread_lets_any_file_open_read_only(self):
        # What the manual warns of: with a file to re-read and no Landlock, the filter allows a
        # read-only open, and nothing restricts it by path.
        config = self.config_to_reread()
        p = self.hooked("open", "--config", config, preexec_fn=without_landlock())
        self.assertIn("test hook: open: succeeded", p.wait_raw(r"test hook: open: "))
        self.assertTrue(any(NO_LANDLOCK in line for line in p.raw_log_lines()), p.raw_log_lines())


class BridgeConfineTest(ConfinedStatus, OriginsMixin, ProxyTestCase):

    def setUp(self):
        super().setUp()
        self.p = self.proxy()

    def bridge(self, *extra):
        b = Bridge(self.p.socket_path, extra=extra)
        self.addCleanup(b.kill)
        return b

    def test_bridge_is_confined_and_still_relays(self):
        b = self.bridge()
        self.assert_confined(b.pid)
        s = socket.create_connection((b.host, b.port), timeout=5)
        s.sendall(f"CONNECT 127.0.0.2:{self.echo.port} HTTP/1.1\r\n\r\n".encode())
        self.assertEqual(read_http_response(s, method="CONNECT").status, 200)
        s.sendall(b"through the bridge")
        self.assertEqual(recv_exact(s, 18), b"through the bridge")
        s.close()
        self.assertEqual(b.stop(), 0)
        self.assertIsNone(REFUSED.search(b.stderr_text()), b.stderr_text())

    def test_bridge_no_confine_turns_it_off(self):
        b = self.bridge("--no-confine")
        self.assert_not_confined(b.pid)
        self.assertEqual(b.stop(), 0)


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def namespace_skip_reason():
    """Why a network namespace of the test's own cannot be made here, or None."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return "needs root and iproute2's ip for a network namespace"
    probe = f"boxproxy-zone-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, timeout=10)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.decode(errors='replace').strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


# An echo origin for a namespace of the test's own, on the link-local address given, bound to lo's
# index: prints its port once listening, echoes one connection, exits.
ZONE_ORIGIN = """
import socket, sys
s = socket.socket(socket.AF_INET6)
s.bind((sys.argv[1], 0, 0, socket.if_nametoindex("lo")))
s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(20)
c, _ = s.accept()
while True:
    data = c.recv(4096)
    if not data:
        break
    c.sendall(data)
"""


class ZoneDialTest(ConfinedStatus, ProxyTestCase):
    """A target with an IPv6 zone ("[fe80::2%lo]"): the zone's interface index is looked up at
    dial time, confined, without a refused call (glibc's if_nametoindex is an ioctl the filter
    refuses: the dial went out without the index, and a link-local one failed with 502)."""

    def assert_echoed_through(self, p, target):
        s, resp = http_connect(p, target)
        self.assertEqual(resp.status, 200, p.raw_log_lines())
        s.sendall(b"zoned")
        self.assertEqual(recv_exact(s, 5), b"zoned")
        s.close()

    @unittest.skipUnless(ipv6_loopback(), "no IPv6 loopback here")
    def test_a_zone_on_loopback_is_looked_up_confined(self):
        # ::1 needs no zone, but one may be written (SPEC §5) and is looked up all the same.
        echo = EchoServer(host="::1", family=socket.AF_INET6)
        self.addCleanup(echo.close)
        p = self.proxy("--permit", "::1/128")
        self.assert_confined(p.pid)
        self.assert_echoed_through(p, f"[::1%lo]:{echo.port}")
        self.assert_echoed_through(p, f"[::1%25lo]:{echo.port}")
        p.stop()
        self.assertIsNone(REFUSED.search("\n".join(p.raw_log_lines())), p.raw_log_lines())

    def test_a_link_local_zone_is_dialled_confined(self):
        # What an operator with --permit fe80::/10 does: a link-local address needs its zone. The
        # machine's own lo has no fe80 address, so the proxy and the origin run in a network
        # namespace of the test's own whose lo holds fe80::2.
        reason = namespace_skip_reason()
        if reason:
            self.skipTest(reason)
        ns = f"boxproxy-zone-{os.getpid()}"
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True, timeout=10)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", ns], capture_output=True, timeout=10)
        in_ns = ["ip", "netns", "exec", ns]
        subprocess.run(in_ns + ["ip", "link", "set", "lo", "up"], check=True, capture_output=True, timeout=10)
        subprocess.run(in_ns + ["ip", "-6", "addr", "add", "fe80::2/64", "dev", "lo", "nodad"], check=True,
                       capture_output=True, timeout=10)
        origin = subprocess.Popen(in_ns + ["python3", "-c", ZONE_ORIGIN, "fe80::2"], stdout=subprocess.PIPE)
        self.addCleanup(origin.wait, timeout=STOP_TIMEOUT)
        self.addCleanup(origin.kill)
        ready, _, _ = select.select([origin.stdout], [], [], START_TIMEOUT)
        self.assertTrue(ready, "the origin in the namespace did not start")
        port = int(origin.stdout.readline())
        p = Proxy("--permit", "fe80::/10")
        p.argv = in_ns + p.argv  # `ip netns exec` execs: the pid is the proxy's
        self.addCleanup(p.cleanup)
        p.start()
        self._proxies.append(p)
        self.assert_echoed_through(p, f"[fe80::2%lo]:{port}")
        p.stop()
        self.assertIsNone(REFUSED.search("\n".join(p.raw_log_lines())), p.raw_log_lines())


class StandardOutputKindsTest(ConfinedStatus, OriginsMixin, ProxyTestCase):
    """serve and bridge write their listening line after confining themselves. Through stdio, the
    first write to a character device asks ioctl(TCGETS) whether it is a terminal (glibc asks
    /dev/null; it knows a pseudo-terminal by its device number): the bridge's line to /dev/null,
    as the manual's own unshare recipe sends it, was a refused call."""

    def stdout_of(self, kind):
        """(descriptor for the child's standard output, reader of its first line or None)."""
        if kind == "null":
            f = open(os.devnull, "wb")
            self.addCleanup(f.close)
            return f.fileno(), None
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        self.addCleanup(os.close, slave)

        def first_line():
            data = b""
            while b"\n" not in data:
                ready, _, _ = select.select([master], [], [], START_TIMEOUT)
                if not ready:
                    return None
                data += os.read(master, 4096)
            return json.loads(data.partition(b"\n")[0].strip())
        return slave, first_line

    def finish(self, proc):
        """SIGTERM, exit 0, and its standard error (the log) with no refused call."""
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=STOP_TIMEOUT + 5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        self.assertEqual(proc.returncode, 0, err)
        self.assertIsNone(REFUSED.search(err.decode(errors="replace")), err)

    def test_listening_line_to_devnull_and_a_terminal(self):
        # The bridge's line went through stdio (refused on /dev/null); serve's never did, and is
        # held to it here too.
        p = self.proxy()
        for command in ("bridge", "serve"):
            for kind in ("null", "tty"):
                with self.subTest(command=command, stdout=kind):
                    self.check_listening_line(command, kind, p.socket_path)

    def check_listening_line(self, command, kind, proxy_socket):
        out, first_line = self.stdout_of(kind)
        d = tempfile.TemporaryDirectory(prefix="boxproxy-confine-")
        self.addCleanup(d.cleanup)
        port = free_port("127.0.0.1")
        own_socket = os.path.join(d.name, "s.sock")
        if command == "bridge":
            argv = [binary(), "bridge", "--socket", proxy_socket, "--listen", f"127.0.0.1:{port}"]
        else:
            argv = [binary(), "serve", "--socket", own_socket, "--permit", "127.0.0.2/32"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE)
        try:
            if first_line is not None:
                self.assertEqual(first_line()["event"], "listening")
            if command == "bridge":
                client = self.bridge_client(port)
            else:
                self.assertTrue(wait_until(lambda: os.path.exists(own_socket), START_TIMEOUT))
                client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                client.settimeout(SOCKET_TIMEOUT)
                client.connect(own_socket)
            # Answered only from the event loop, which runs after the listening line: the line
            # was written by the time this echoes.
            client.sendall(f"CONNECT 127.0.0.2:{self.echo.port} HTTP/1.1\r\n\r\n".encode())
            self.assertEqual(read_http_response(client, method="CONNECT").status, 200)
            client.sendall(b"line")
            self.assertEqual(recv_exact(client, 4), b"line")
            client.close()
            self.assert_confined(proc.pid)
        finally:
            self.finish(proc)

    def bridge_client(self, port):
        def connected():
            try:
                return socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)
            except OSError:
                return None
        s = wait_until(connected, START_TIMEOUT, interval=0.05)
        if s is None:
            raise AssertionError(f"nothing listens on 127.0.0.1:{port}")
        return s


class LinkedConfigTest(ConfinedStatus, OriginsMixin, ProxyTestCase):
    """A --config or --allow-file that is a symbolic link into another directory (a store, a dotfiles checkout):
    Landlock judges the file an open ends at, so the link's directory alone refused every re-read
    and the old list stayed in force. The target's directory is readable too."""

    RESOLVE = ["old.example.com=127.0.0.2", "new.example.com=127.0.0.2"]

    def test_sighup_rereads_a_config_linked_from_another_directory(self):
        def write(path, host):
            with open(path, "w") as f:
                json.dump({"allow": [f"{host}:{self.echo.port}"], "resolve": self.RESOLVE}, f)
        self.check_linked("--config", write)

    def test_sighup_rereads_an_allow_file_linked_from_another_directory(self):
        def write(path, host):
            with open(path, "w") as f:
                f.write(f"{host}:{self.echo.port}\n")
        self.check_linked("--allow-file", write, *[arg for r in self.RESOLVE for arg in ("--resolve", r)])

    def check_linked(self, option, write, *args):
        here = tempfile.TemporaryDirectory(prefix="boxproxy-confine-link-")
        store = tempfile.TemporaryDirectory(prefix="boxproxy-confine-store-")
        self.addCleanup(here.cleanup)
        self.addCleanup(store.cleanup)
        target = os.path.join(store.name, "list-1")
        write(target, "old.example.com")
        link = os.path.join(here.name, "list")
        os.symlink(target, link)
        p = self.proxy(option, link, *args)
        self.assert_confined(p.pid)

        def status_for(host):
            s, resp = http_connect(p, f"{host}:{self.echo.port}")
            s.close()
            return resp.status

        def hup_until_open(host):
            p.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: status_for(host) == 200, 5, interval=0.05), p.raw_log_lines()[-5:])

        self.assertEqual(status_for("new.example.com"), 403)
        # The target rewritten in place.
        write(target, "new.example.com")
        hup_until_open("new.example.com")
        self.assertEqual(status_for("old.example.com"), 403)
        # The target replaced by rename, as an editor does: a new file in the target's directory.
        write(target + ".new", "old.example.com")
        os.rename(target + ".new", target)
        hup_until_open("old.example.com")
        # The link pointed at a new file beside the old one, as a store does.
        second = os.path.join(store.name, "list-2")
        write(second, "new.example.com")
        os.symlink(second, link + ".new")
        os.rename(link + ".new", link)
        hup_until_open("new.example.com")
        self.assertEqual(status_for("old.example.com"), 403)
        self.assertFalse(any("kept the old host list" in line for line in p.raw_log_lines()), p.raw_log_lines())
        self.assertIsNone(REFUSED.search("\n".join(p.raw_log_lines())), p.raw_log_lines())


if __name__ == "__main__":
    unittest.main()
