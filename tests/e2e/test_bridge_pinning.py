# SPDX-License-Identifier: Apache-2.0
"""The bridge holds the socket it was given (issue 21 item 1, SPEC §14): as the attacker inside a
box would, the tests rename the proxy's socket and put a symbolic link, or a socket of their own,
at its name; the bridge's clients and its DNS questions must still reach the proxy it started
with, and the test's socket must never hear from the bridge. A proxy restarted at the same path is
reached only after a SIGHUP to the bridge. Inside a real `run` box, COMMAND can neither rename nor
replace the socket, nor write the proxy's log and audit, nor reach its control socket.

The box tests skip, saying why, where this system does not let boxproxy make a box."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, Bridge, listening_unix_socket
from harness import EchoServer, Proxy, binary, connect_request, recv_exact, wait_until
from test_dns import parse_reply, query

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"
ATTACKER_REPLY = b"HTTP/1.1 200 attacker\r\n\r\n"


class RecordingSocket:
    """A Unix socket of the test's own (the attacker's: an ssh agent, another proxy, a control
    socket) that counts the connections it gets and answers each as if it had let it through."""

    def __init__(self, path):
        self.path = path
        self.server = listening_unix_socket(path)
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        self.server.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            try:
                conn.sendall(ATTACKER_REPLY)
            except OSError:
                pass
            conn.close()

    def close(self):
        self._stop = True
        self._thread.join(timeout=2)
        self.server.close()


class BridgePinningTest(unittest.TestCase):
    """A plain `boxproxy bridge --socket P` (no box): P is swapped under it."""

    @classmethod
    def setUpClass(cls):
        cls.echo = EchoServer()

    @classmethod
    def tearDownClass(cls):
        cls.echo.close()

    def setUp(self):
        self.proxy = Proxy("--allow", f"origin.test:{self.echo.port},api.test", "--resolve", "origin.test=127.0.0.2",
                           "--resolve", "api.test=127.0.0.2")
        self.addCleanup(self.proxy.cleanup)
        self.proxy.start()
        self.path = self.proxy.socket_path
        attacker_dir = tempfile.TemporaryDirectory(prefix="boxproxy-attacker-")
        self.addCleanup(attacker_dir.cleanup)
        self.attacker = RecordingSocket(os.path.join(attacker_dir.name, "agent.sock"))
        self.addCleanup(self.attacker.close)

    def bridge(self, *extra):
        b = Bridge(self.path, extra=extra)
        self.addCleanup(b.kill)
        return b

    def tunnel_reply(self, b):
        """CONNECT through the bridge: the first bytes of the answer (b"" for a reset)."""
        try:
            with b.connect() as s:
                s.sendall(connect_request(f"origin.test:{self.echo.port}"))
                return recv_exact(s, len(ESTABLISHED))
        except (ConnectionResetError, BrokenPipeError, AssertionError, OSError):
            return b""

    def rename_and_link(self):
        """The attack: the socket renamed away, a symbolic link to the test's socket at its name."""
        os.rename(self.path, self.path + ".moved")
        os.symlink(self.attacker.path, self.path)

    def replace_with_own_socket(self):
        """The other attack: the name removed (the proxy keeps listening), a socket of the test's own bound there."""
        os.unlink(self.path)
        self.attacker.close()
        self.attacker = RecordingSocket(self.path)

    def test_a_renamed_socket_with_a_link_at_its_name_is_not_followed(self):
        b = self.bridge()
        self.assertEqual(self.tunnel_reply(b), ESTABLISHED)
        self.rename_and_link()
        for _ in range(3):
            self.assertEqual(self.tunnel_reply(b), ESTABLISHED)
        self.assertEqual(self.attacker.connections, 0, "the bridge followed the name to the test's socket")

    def test_a_socket_of_anothers_own_at_the_name_is_not_followed(self):
        b = self.bridge()
        self.replace_with_own_socket()
        for _ in range(3):
            self.assertEqual(self.tunnel_reply(b), ESTABLISHED)
        self.assertEqual(self.attacker.connections, 0, "the bridge followed the name to the test's socket")

    def dns_answer(self, b, name):
        host, _, port = b.listening["dns"][0].rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(15)
        try:
            s.sendto(query(name), (host, int(port)))
            return parse_reply(s.recvfrom(4096)[0])
        finally:
            s.close()

    def check_dns_after(self, attack):
        b = self.bridge("--dns", "127.0.0.1:0")
        attack()
        _, _, rcode, answers = self.dns_answer(b, "api.test")
        self.assertEqual((rcode, len(answers)), (0, 1), "the proxy's yes: one address of the bridge's own")
        self.assertEqual(self.dns_answer(b, "off-list.test")[2], 3)  # the proxy's no: NXDOMAIN
        self.assertEqual(self.attacker.connections, 0, "a DNS question went to the test's socket")

    def test_dns_questions_do_not_follow_a_link_at_the_name(self):
        self.check_dns_after(self.rename_and_link)

    def test_dns_questions_do_not_go_to_a_socket_of_anothers_own_at_the_name(self):
        self.check_dns_after(self.replace_with_own_socket)

    def test_a_restarted_proxy_is_reached_after_sighup_only(self):
        b = self.bridge()
        self.proxy.stop()
        self.assertFalse(os.path.exists(self.path))
        second = Proxy("--allow", f"origin.test:{self.echo.port}", "--resolve", "origin.test=127.0.0.2")
        self.addCleanup(second.cleanup)
        second.socket_path = self.path  # the same name, a new socket
        second.argv[second.argv.index("--socket") + 1] = self.path
        second.start()
        # Not followed by name: the socket the bridge holds is gone.
        self.assertEqual(self.tunnel_reply(b), b"")
        os.kill(b.pid, signal.SIGHUP)
        self.assertTrue(wait_until(lambda: "is held" in b.stderr_text(), 5), b.stderr_text())
        self.assertEqual(self.tunnel_reply(b), ESTABLISHED)
        self.assertIsNone(b.proc.poll())
        # A SIGHUP while the name leads nowhere keeps the socket held.
        second_path = self.path + ".second"
        os.rename(self.path, second_path)
        os.kill(b.pid, signal.SIGHUP)
        self.assertTrue(wait_until(lambda: "held before stays" in b.stderr_text(), 5), b.stderr_text())
        self.assertEqual(self.tunnel_reply(b), ESTABLISHED)
        os.rename(second_path, self.path)
        # Confined (SPEC §17), the re-pin's open is one the filter allows.
        self.assertNotIn("confinement refused", b.stderr_text())

    def test_a_missing_socket_is_an_error_at_start(self):
        r = subprocess.run([binary(), "bridge", "--socket", self.path + ".none", "--listen", "127.0.0.1:0"],
                           capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 1, r)
        self.assertIn(b"No such file or directory", r.stderr)
        self.assertEqual(r.stdout, b"")


# ------------------------------------------------------------------------------------------------
# Inside a `run` box

PROBE = textwrap.dedent("""
    import errno, json, os, socket, sys
    paths = json.loads(sys.argv[1])
    out = {}

    def attempt(name, action):
        try:
            action()
            out[name] = "ok"
        except OSError as e:
            out[name] = errno.errorcode.get(e.errno, str(e.errno))

    # A rename that got through is undone at once: a failing box leaves nothing of the test's moved.
    def attempt_rename(name, old, new):
        attempt(name, lambda: os.rename(old, new))
        if out[name] == "ok":
            os.rename(new, old)

    sock = os.environ["BOXPROXY_SOCKET"]
    directory = os.path.dirname(os.path.abspath(sock))
    attempt_rename("rename", sock, sock + ".moved")
    attempt("unlink", lambda: os.unlink(sock))
    attempt("link_in_dir", lambda: os.symlink("/nowhere", os.path.join(directory, "planted")))
    attempt("write_in_dir", lambda: open(os.path.join(directory, "planted.txt"), "w").close())
    attempt_rename("rename_dir", directory, directory + ".moved")
    # A directory above it, renamed and made again, would move the name too.
    parent = os.path.dirname(directory)
    attempt_rename("rename_parent", parent, parent + ".moved")
    # Through the working directory, entered before the box's mounts were made.
    attempt_rename("rename_relative", os.path.basename(sock), "moved.sock")
    for name, path in paths.items():
        attempt(name, lambda: os.close(os.open(path, os.O_WRONLY | os.O_APPEND)))
    if "control" in paths:
        def control():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(paths["control"])
            s.close()
        attempt("control_connect", control)
    print(json.dumps(out))
""")

REFUSED = ("EROFS", "EACCES", "EPERM", "EBUSY")


class RunPinningTest(BoxTestCase):
    """COMMAND in a real box tries to move the socket and write the proxy's files."""

    def probe(self, argv, cwd=None):
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT,
                           env=self.box.env(), cwd=cwd)
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        return json.loads(r.stdout.decode().strip().splitlines()[-1])

    def assert_refused(self, results, names):
        for name in names:
            with self.subTest(check=name):
                self.assertIn(results[name], REFUSED, results)

    def test_its_own_proxy_socket_and_files_are_out_of_reach(self):
        files = os.path.join(self.box.dir, "proxy-files")
        os.mkdir(files)
        log = os.path.join(files, "decisions.log")
        audit = os.path.join(files, "audit.jsonl")
        control = os.path.join(files, "control.sock")
        paths = {"log": log, "audit": audit, "control": control}
        results = self.probe(self.box.argv(["--log-file", log, "--audit", audit, "--control-socket", control,
                                            "--allow-unix-sockets"],
                                           [sys.executable, "-c", PROBE, json.dumps(paths)]), cwd=files)
        self.assert_refused(results, ["rename", "unlink", "link_in_dir", "write_in_dir", "rename_dir", "rename_parent",
                                      "log", "audit"])
        # The supervisor's channel is covered: no "allow" from the box.
        self.assertIn(results["control_connect"], ("ECONNREFUSED", "EACCES", "ENOENT"), results)
        self.assertEqual(self.box.leftovers(), [])

    def test_a_running_proxys_socket_cannot_be_moved(self):
        # The socket two directories below the test's own (so that the parent the probe tries to
        # rename is the test's, never /tmp).
        directory = os.path.join(self.box.dir, "shared", "proxy")
        os.makedirs(directory)
        path = os.path.join(directory, "egress.sock")
        proxy = Proxy(dns=self.box.dns)
        proxy.argv[proxy.argv.index("--socket") + 1] = path
        self.addCleanup(proxy.cleanup)
        proxy.start()
        before = os.stat(path).st_ino
        # Started in the socket's directory: the relative rename goes through the working directory.
        for given in (path, "egress.sock"):
            with self.subTest(socket=given):
                argv = [binary(), "run", "--socket", given, "--", sys.executable, "-c", PROBE, json.dumps({})]
                results = self.probe(argv, cwd=directory)
                self.assert_refused(results, ["rename", "unlink", "link_in_dir", "write_in_dir", "rename_dir",
                                              "rename_parent", "rename_relative"])
                self.assertEqual(os.stat(path).st_ino, before)
                self.assertEqual(sorted(os.listdir(directory)), ["egress.sock"])


if __name__ == "__main__":
    unittest.main()
