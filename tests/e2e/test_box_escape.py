# SPDX-License-Identifier: Apache-2.0
"""The box's walls (issue 10 items 1 and 2, SPEC §14): what an attacker inside `boxproxy run`
tries, run as COMMAND (box_probe.py), against a service of the test's own in the caller's
network namespace (on 127.0.0.2) and a Unix socket of the test's own on the host.

The tests run as root, where the old `run` left COMMAND every capability in the host's user
namespace. They skip, saying why, where this system does not let boxproxy make a box."""

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest

from box_support import (RUN_TIMEOUT, BoxRun, listening_unix_socket, namespaces_usable, processes_mentioning,
                         wait_gone)
from harness import ORIGIN_HOST, HttpOrigin, Proxy, binary

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "box_probe.py")


def children_of(pid):
    """The pids whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except OSError:
                continue
    return found


class BoxWallsCase(unittest.TestCase):
    """A harness proxy (so its pid is known) that `run --socket` uses, and the probe as COMMAND."""

    @classmethod
    def setUpClass(cls):
        why = namespaces_usable()
        if why:
            raise unittest.SkipTest(why)
        cls.host_service = HttpOrigin()  # in the caller's network namespace only
        cls.host_address = [ORIGIN_HOST, cls.host_service.port]

    @classmethod
    def tearDownClass(cls):
        cls.host_service.close()

    def setUp(self):
        self.box = BoxRun(self)
        self.proxy = Proxy(dns=self.box.dns)
        self.addCleanup(self.proxy.cleanup)
        self.proxy.start()

    def run_argv(self, command, run_args=()):
        return [binary(), "run", "--socket", self.proxy.socket_path, *run_args, "--", *command]

    def probe_argv(self, checks, run_args=()):
        return self.run_argv([sys.executable, PROBE, json.dumps(checks)], run_args)

    def probe(self, checks, run_args=(), pass_fds=(), wrapper=()):
        """Runs the probe in a box; returns (its results, run's standard error)."""
        r = subprocess.run([*wrapper, *self.probe_argv(checks, run_args)], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env(), pass_fds=pass_fds)
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        return json.loads(r.stdout.decode().strip().splitlines()[-1]), r.stderr.decode("utf-8", "replace")

    def assert_no_host_requests(self, before):
        self.assertEqual(len(self.host_service.requests), before, "the box reached the host's network")


class NamespaceEscapeTest(BoxWallsCase):
    """Item 1: own user, network, mount and PID namespaces, no new privileges, no capability outside."""

    def test_nsenter_into_pid_1s_network_does_not_reach_the_host(self):
        before = len(self.host_service.requests)
        results, _ = self.probe({"connect": self.host_address, "nsenter_connect": self.host_address})
        self.assertEqual(results["connect"], "ECONNREFUSED")  # the box's own 127.0.0.2: nobody there
        self.assertNotEqual(results["nsenter_connect"], "connected", results)
        self.assert_no_host_requests(before)

    def test_setns_by_the_test_runners_namespace_path_fails(self):
        before = len(self.host_service.requests)
        path = f"/proc/{os.getpid()}/ns/net"
        results, _ = self.probe({"setns_path": [path, self.host_address]})
        self.assertIn(results["setns_path"], ("ENOENT", "EPERM", "EACCES"), results)
        self.assert_no_host_requests(before)

    def test_setns_by_a_descriptor_of_the_hosts_network_fails_eperm(self):
        # The filter refuses setns (and the caller's descriptor never reaches COMMAND: SPEC §19a,
        # test_box_files).
        before = len(self.host_service.requests)
        fd = os.open("/proc/self/ns/net", os.O_RDONLY)
        self.addCleanup(os.close, fd)
        results, _ = self.probe({"setns_fd": [fd, self.host_address]}, pass_fds=(fd,))
        self.assertEqual(results["setns_fd"], "EPERM", results)
        self.assert_no_host_requests(before)

    def test_the_proxy_and_the_caller_are_out_of_sight_and_reach(self):
        proxy_pid = self.proxy.pid
        host_pid_namespace = os.stat("/proc/self/ns/pid").st_ino
        results, _ = self.probe({"kill": proxy_pid, "ptrace": [proxy_pid, host_pid_namespace], "pids": None})
        self.assertEqual(results["kill"], "ESRCH", results)
        self.assertEqual(results["ptrace"], "ESRCH", results)
        pids = [int(p) for p in results["pids"].split()]
        self.assertNotIn(proxy_pid, pids)
        self.assertNotIn(os.getpid(), pids)
        # pid 1 of the box, the probe and its check: the box's own processes only.
        self.assertIn(1, pids)
        self.assertLessEqual(len(pids), 5, pids)
        self.assertTrue(self.proxy.alive())

    def test_system_v_ipc_of_the_host_is_out_of_sight(self):
        libc = ctypes.CDLL(None, use_errno=True)
        key = 0x5B0C0000 | (os.getpid() & 0xFFFF)
        segment = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600
        self.assertNotEqual(segment, -1, os.strerror(ctypes.get_errno()))
        self.addCleanup(libc.shmctl, segment, 0, None)  # IPC_RMID
        results, _ = self.probe({"sysv_shm": key})
        self.assertEqual(results["sysv_shm"], "ENOENT", results)

    def test_the_callers_session_keyring_is_out_of_reach(self):
        # run starts in a session keyring of its own holding a key (so the machine's keyrings are
        # untouched): COMMAND must not find it.
        description = f"boxproxy-test-{os.getpid()}"

        def keyring_with_a_key():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            libc.syscall(250, 1, None)  # SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING: a new one
            if libc.syscall(248, b"user", description.encode(), b"secret", 6, ctypes.c_long(-3)) <= 0:  # add_key
                os._exit(99)

        r = subprocess.run(self.probe_argv({"session_key": description}), stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env(),
                           preexec_fn=keyring_with_a_key)
        self.assertEqual(r.returncode, 0, r)
        # keyctl(2) is refused in the box altogether (issue 21 item 5); the empty session keyring
        # run joins stays, should that ever change.
        self.assertEqual(json.loads(r.stdout.decode().splitlines()[-1]), {"session_key": "EPERM"})

    def test_no_new_privileges_capabilities_only_inside_and_proc_stays_mounted(self):
        results, _ = self.probe({"status": None, "umount_proc": os.stat("/proc/self/ns/mnt").st_ino})
        status = dict(field.split("=") for field in results["status"].split())
        self.assertEqual(status["NoNewPrivs"], "1")
        self.assertNotEqual(int(status["CapEff"], 16), 0)  # root inside its own user namespace
        # The box's /proc is locked over the host's: unmounting it would uncover every process.
        self.assertEqual(results["umount_proc"], "EPERM", results)

    def test_what_uid_0_could_write_is_read_only_or_absent(self):
        # run is root here, so COMMAND is uid 0 to the kernel: without capabilities, yet the owner
        # of the kernel's knobs and of the host's disks.
        knob = "/proc/sys/kernel/core_pattern"  # a program the host's root runs on a crash
        sysfs = next(p for p in ("/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/enabled",
                                 "/sys/kernel/profiling", "/sys/power/state") if os.path.exists(p))
        disk = next((f"/dev/{n}" for n in sorted(os.listdir("/dev")) if n.startswith(("loop", "vd", "sd", "nvme"))),
                    "/dev/loop0")
        results = {}
        for name, path in (("knob", knob), ("sysfs", sysfs), ("disk", disk)):
            result, _ = self.probe({"open_for_writing": path})
            results[name] = result["open_for_writing"]
        listing, _ = self.probe({"listdir": "/dev"})
        self.assertEqual(results, {"knob": "EROFS", "sysfs": "EROFS", "disk": "ENOENT"}, (sysfs, disk))
        self.assertEqual(listing["listdir"],
                         "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero")

    def test_nothing_is_typed_into_the_terminal(self):
        # TIOCSTI on the terminal run shares with COMMAND would leave input for the shell that
        # started run, to read once run exits: outside the box. Refused with or without
        # --allow-unix-sockets.
        master, slave = os.openpty()
        self.addCleanup(os.close, master)
        self.addCleanup(os.close, slave)

        def controlling_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        for run_args in ([], ["--allow-unix-sockets"]):
            with self.subTest(run_args=run_args):
                r = subprocess.run(self.probe_argv({"tiocsti": None}, run_args), stdin=slave, capture_output=True,
                                   timeout=RUN_TIMEOUT, env=self.box.env(), preexec_fn=controlling_terminal)
                self.assertEqual(r.returncode, 0, r)
                self.assertEqual(json.loads(r.stdout.decode().splitlines()[-1]), {"tiocsti": "EPERM"})

    def test_the_box_keeps_the_loopback_usable(self):
        # No capability over its network namespace, yet a port below 1024 may be bound there.
        results, _ = self.probe({"bind_low_port": 80})
        self.assertEqual(results["bind_low_port"], "ok")

    def test_nothing_the_command_starts_outlives_it(self):
        # A daemon left behind by COMMAND dies with the box's PID namespace.
        marker = f"boxproxy-daemon-{os.getpid()}-{time.monotonic_ns()}"
        r = subprocess.run(self.run_argv(["sh", "-c", f"sh -c 'sleep 30; : {marker}' & echo started"]),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env())
        self.assertEqual((r.returncode, r.stdout), (0, b"started\n"), r)
        self.assertTrue(wait_gone(processes_mentioning(marker)), "a process of the box outlived run")

    def test_kill_0_reaches_no_process_of_the_caller(self):
        # kill(0, ...) signals the caller's whole process group, whatever the PID namespace. The
        # caller here (a supervisor that starts run without a group of its own) leads a session
        # of its own, so that on a run that fails this only it is signalled.
        supervisor = ("import signal, subprocess, sys, time\n"
                      "got = []\n"
                      "signal.signal(signal.SIGWINCH, lambda *a: got.append(1))\n"
                      "r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)\n"
                      "time.sleep(0.2)\n"
                      "print('signalled' if got else 'untouched', r.returncode)\n")
        r = subprocess.run([sys.executable, "-c", supervisor, *self.run_argv(["sh", "-c", "kill -WINCH 0"])],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env(),
                           start_new_session=True)
        self.assertEqual(r.stdout, b"untouched 0\n", r)

    def test_a_killed_box_takes_the_command_with_it(self):
        # The box (run's only child with --socket) dies by SIGKILL: pid 1 of its PID namespace
        # gets SIGKILL too, and with it every process of the namespace.
        marker = f"boxproxy-orphan-{os.getpid()}-{time.monotonic_ns()}"
        proc = subprocess.Popen(self.run_argv(["sh", "-c", f"echo ready; sleep 30; : {marker}"]),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=self.box.env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.addCleanup(proc.stdout.close)
        ready = [None]
        reader = threading.Thread(target=lambda: ready.__setitem__(0, proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(RUN_TIMEOUT)
        self.assertEqual(ready[0], b"ready\n")
        (box,) = children_of(proc.pid)
        self.assertTrue(processes_mentioning(marker))
        os.kill(box, signal.SIGKILL)
        self.assertTrue(wait_gone(processes_mentioning(marker)), "the command outlived its box")
        self.assertEqual(proc.wait(timeout=10), 128 + signal.SIGKILL)

    def test_without_user_namespaces_run_refuses_to_start(self):
        # A user namespace of the test's own whose limit is 0: there root may make a network
        # namespace but no user namespace, and run must not make a box without one.
        script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
        r = subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c", script, "sh",
                            *self.probe_argv({"connect": self.host_address})],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env())
        self.assertEqual(r.returncode, 125, r)
        self.assertIn(b"user namespace", r.stderr)
        self.assertIn(b"does not start a weaker box", r.stderr)
        self.assertEqual(r.stdout, b"")

    def test_where_proc_cannot_be_mounted_the_box_gets_an_empty_one(self):
        # A /proc with a path masked (as container runtimes mask /proc/kcore): the kernel refuses a
        # fresh proc in a user namespace. The host's processes must stay hidden all the same.
        script = 'mount --bind /dev/null /proc/version && exec "$@"'
        results, stderr = self.probe({"pids": None, "kill": self.proxy.pid},
                                     wrapper=["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                                              "sh"])
        self.assertIn("COMMAND gets an empty /proc", stderr)
        self.assertEqual(results["pids"], "")
        self.assertEqual(results["kill"], "ESRCH")


class UnixSocketTest(BoxWallsCase):
    """Item 2: no new Unix socket in the box unless --allow-unix-sockets; socketpair works."""

    def setUp(self):
        super().setUp()
        d = tempfile.TemporaryDirectory(prefix="boxproxy-unix-")
        self.addCleanup(d.cleanup)
        self.host_socket_path = os.path.join(d.name, "host.sock")
        self.host_socket = listening_unix_socket(self.host_socket_path)
        self.addCleanup(self.host_socket.close)

    def test_a_hosts_unix_socket_is_refused_and_socketpair_works(self):
        results, _ = self.probe({"unix_connect": self.host_socket_path, "socketpair": None})
        self.assertEqual(results, {"unix_connect": "EPERM", "socketpair": "ok"})

    def test_allow_unix_sockets_lifts_it(self):
        results, _ = self.probe({"unix_connect": self.host_socket_path}, run_args=["--allow-unix-sockets"])
        self.assertEqual(results, {"unix_connect": "connected"})

    def test_the_bridge_still_reaches_the_proxy(self):
        # The proxy refuses what it does not allow, but it answers: the box's way out works.
        r = subprocess.run(self.run_argv(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                                          "http://10.0.0.1/"]),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT, env=self.box.env())
        self.assertEqual(r.stdout, b"403", r)

    def test_no_way_round_the_filter(self):
        # Another ABI or a register with high bits set must not make what socket(AF_UNIX) may not.
        outside = json.loads(subprocess.run([sys.executable, PROBE, json.dumps({"i386_socket": socket.AF_INET})],
                                            capture_output=True, timeout=RUN_TIMEOUT).stdout)
        checks = {"socket_high_bits": None, "x32_socket": None, "io_uring": None}
        if outside["i386_socket"] == "ok":  # this kernel runs i386 programs
            checks.update({"i386_socket": socket.AF_UNIX, "i386_socketcall": socket.AF_UNIX})
        results, _ = self.probe(checks)
        for name, result in results.items():
            with self.subTest(check=name):
                self.assertNotEqual(result, "ok", results)
                self.assertFalse(result.startswith(("signal", "Type", "Value")), results)
        self.assertEqual(results["socket_high_bits"], "EPERM")
        self.assertEqual(results["io_uring"], "EPERM")
        if "i386_socket" in results:
            self.assertEqual((results["i386_socket"], results["i386_socketcall"]), ("EPERM", "EPERM"))


AF_VSOCK = 40
AF_ALG = 38
AF_TIPC = 30
AF_PACKET = 17
NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_AUDIT, NETLINK_NETFILTER, NETLINK_KOBJECT_UEVENT = 0, 4, 9, 12, 15
SOCK_FLAGS = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
# Every way the box's options lift a rule: the socket families hold in all of them.
ALL_LIFTS = ([], ["--allow-unix-sockets"], ["--allow-nested-namespaces"],
             ["--allow-unix-sockets", "--allow-nested-namespaces"])


def kernel_runs_i386():
    """Whether this kernel runs i386 system calls (the probe's own answer, outside any box)."""
    r = subprocess.run([sys.executable, PROBE, json.dumps({"i386_socket": socket.AF_INET})], capture_output=True,
                       timeout=RUN_TIMEOUT)
    return json.loads(r.stdout)["i386_socket"] == "ok"


class SocketFamilyTest(BoxWallsCase):
    """Issue 21 items 2 and 3: COMMAND makes Internet sockets, netlink route sockets, and Unix
    sockets only as stream or seqpacket pairs; everything else fails with EPERM."""

    def test_a_datagram_pair_cannot_send_to_a_hosts_datagram_socket(self):
        # A datagram pair's socket can sendto() any pathname (journald, /dev/log, a notify socket):
        # the pair itself must fail.
        d = tempfile.TemporaryDirectory(prefix="boxproxy-dgram-")
        self.addCleanup(d.cleanup)
        path = os.path.join(d.name, "host-dgram.sock")
        host = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(host.close)
        host.bind(path)
        host.setblocking(False)
        results, _ = self.probe({"dgram_pair_sendto": path})
        self.assertEqual(results, {"dgram_pair_sendto": "EPERM"})
        with self.assertRaises(BlockingIOError, msg="the box reached the host's datagram socket"):
            host.recv(100)

    def test_only_stream_and_seqpacket_pairs(self):
        kinds = [socket.SOCK_STREAM, socket.SOCK_SEQPACKET, socket.SOCK_STREAM | SOCK_FLAGS,
                 socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC, socket.SOCK_DGRAM, socket.SOCK_DGRAM | SOCK_FLAGS,
                 socket.SOCK_RAW]  # SOCK_RAW is SOCK_DGRAM to the Unix family
        results, _ = self.probe({"socketpairs": kinds})
        self.assertEqual(results["socketpairs"], "ok ok ok ok EPERM EPERM EPERM")
        # --allow-unix-sockets lifts it, as it lifts socket(AF_UNIX).
        results, _ = self.probe({"socketpairs": kinds}, run_args=["--allow-unix-sockets"])
        self.assertEqual(results["socketpairs"], "ok ok ok ok ok ok ok")

    def test_vsock_fails_with_eperm(self):
        # vsock is not per network namespace: on a VM with a vsock device it reaches the
        # hypervisor's services round the proxy.
        try:
            socket.socket(AF_VSOCK, socket.SOCK_STREAM).close()
        except OSError as e:
            if e.errno == errno.EAFNOSUPPORT:
                self.skipTest("this kernel has no vsock: its refusal (EAFNOSUPPORT) cannot be told from the filter's")
            raise
        for run_args in ALL_LIFTS:
            with self.subTest(run_args=run_args):
                results, _ = self.probe({"sockets": [[AF_VSOCK, socket.SOCK_STREAM, 0],
                                                     [AF_VSOCK, socket.SOCK_DGRAM, 0]]}, run_args=run_args)
                self.assertEqual(results["sockets"], "EPERM EPERM")

    def test_only_the_internet_families_and_netlink_route(self):
        allowed = [[socket.AF_INET, socket.SOCK_STREAM, 0], [socket.AF_INET, socket.SOCK_DGRAM | SOCK_FLAGS, 0],
                   [socket.AF_INET6, socket.SOCK_STREAM, 0], [socket.AF_INET6, socket.SOCK_DGRAM, 0],
                   [socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE],
                   [socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE]]
        refused = [[AF_PACKET, socket.SOCK_RAW, 0], [AF_PACKET, socket.SOCK_DGRAM, 0], [AF_ALG, socket.SOCK_SEQPACKET, 0],
                   [AF_TIPC, socket.SOCK_RDM, 0], [socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER],
                   [socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT],
                   [socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_KOBJECT_UEVENT],
                   [socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG], [socket.AF_UNSPEC, socket.SOCK_STREAM, 0],
                   [255, socket.SOCK_STREAM, 0]]
        for run_args in ALL_LIFTS:
            with self.subTest(run_args=run_args):
                results, _ = self.probe({"sockets": allowed + refused}, run_args=run_args)
                self.assertEqual(results["sockets"].split(), ["ok"] * len(allowed) + ["EPERM"] * len(refused))

    def test_no_way_round_the_families(self):
        # A family with the register's high bits set, x32, and i386 (socket(2), socketpair(2) and
        # socketcall, whose arguments a filter cannot read: refused whole).
        checks = {"socket_i386_x32": AF_VSOCK, "socketpair_abis": socket.SOCK_DGRAM}
        results, _ = self.probe(checks)
        # x32: EPERM from the filter, or ENOSYS from a kernel built without x32.
        self.assertRegex(results["socket_i386_x32"], r"^x32 (EPERM|ENOSYS) i386 ")
        self.assertRegex(results["socketpair_abis"], r"^x32 (EPERM|ENOSYS) i386 ")
        if not kernel_runs_i386():
            return
        self.assertEqual(results["socket_i386_x32"].split()[2:], ["i386", "EPERM"])
        self.assertEqual(results["socketpair_abis"].split()[2:], ["i386", "EPERM", "socketcall", "EPERM"])
        # A stream pair through i386's socketpair(2) works; through socketcall it fails closed.
        results, _ = self.probe({"socketpair_abis": socket.SOCK_STREAM})
        self.assertEqual(results["socketpair_abis"].split()[2:], ["i386", "ok", "socketcall", "EPERM"])


class NestedNamespaceTest(BoxWallsCase):
    """Issue 21 item 5: no namespace of COMMAND's own (the nf_tables of a network namespace it
    would own), unless run --allow-nested-namespaces."""

    CLONE_NEWUSER = 0x10000000
    CLONE_NEWNET = 0x40000000
    CLONE_NEWNS = 0x00020000

    def test_unshare_fails_in_the_box(self):
        results, _ = self.probe({"commands": [["unshare", "-U", "-n", "true"], ["unshare", "-n", "true"],
                                              ["unshare", "-Urn", "true"], ["unshare", "-m", "true"]],
                                 "unshare": self.CLONE_NEWUSER, "clone": self.CLONE_NEWNET,
                                 "clone3": self.CLONE_NEWUSER, "nested_network": None})
        self.assertEqual(results, {"commands": "exit 1 | exit 1 | exit 1 | exit 1", "unshare": "EPERM",
                                   "clone": "EPERM", "clone3": "ENOSYS", "nested_network": "unshare EPERM"})

    def test_threads_and_posix_spawn_fall_back_from_clone3(self):
        results, _ = self.probe({"clone3": 0, "threads_and_spawn": None})
        self.assertEqual(results, {"clone3": "ENOSYS", "threads_and_spawn": "thread ok spawn exit 0"})

    def test_allow_nested_namespaces_lifts_it_and_the_socket_rules_hold_inside(self):
        results, _ = self.probe({"commands": [["unshare", "-U", "-n", "true"], ["unshare", "-n", "true"]],
                                 "clone3": self.CLONE_NEWUSER, "nested_network": None},
                                run_args=["--allow-nested-namespaces"])
        # In a network namespace of its own COMMAND has CAP_NET_ADMIN: its loopback comes up, but
        # nf_tables' netlink and packet sockets stay refused.
        self.assertEqual(results, {"commands": "exit 0 | exit 0", "clone3": "ok",
                                   "nested_network": "lo ok netfilter EPERM packet EPERM"})

    def test_setns_finds_no_namespace_of_the_hosts_with_nested_namespaces(self):
        # With the filter's setns rule lifted, COMMAND still holds no descriptor of the host's
        # network namespace (only 0, 1 and 2 reach it), and no path to one (the test runner's pid is
        # out of its PID namespace).
        before = len(self.host_service.requests)
        fd = os.open("/proc/self/ns/net", os.O_RDONLY)
        self.addCleanup(os.close, fd)
        results, _ = self.probe({"setns_fd": [fd, self.host_address],
                                 "setns_path": [f"/proc/{os.getpid()}/ns/net", self.host_address]}, pass_fds=(fd,),
                                run_args=["--allow-nested-namespaces"])
        self.assertEqual(results["setns_fd"], "EBADF", results)
        self.assertIn(results["setns_path"], ("ENOENT", "EACCES"), results)
        self.assert_no_host_requests(before)


class MountTest(BoxWallsCase):
    """SPEC §19a (issue 35): COMMAND is root of the box's own mount namespace, so the kernel lets it
    mount a tmpfs, an overlay or anything the new mount API makes: the kernel surface the nested
    namespaces are refused for. Every mount call fails with EPERM unless --allow-nested-namespaces."""

    CALLS = ["tmpfs", "overlay", "fsopen", "fsconfig", "fsmount", "move_mount", "fspick", "open_tree",
             "mount_setattr", "umount2", "pivot_root"]

    def test_every_mount_call_fails_with_eperm(self):
        for run_args in ([], ["--allow-unix-sockets"]):
            with self.subTest(run_args=run_args):
                results, _ = self.probe({"mounts": None}, run_args=run_args)
                self.assertEqual(results["mounts"], " ".join(f"{name} EPERM" for name in self.CALLS))

    def test_allow_nested_namespaces_lets_the_box_mount(self):
        results, _ = self.probe({"mounts": None}, run_args=["--allow-nested-namespaces"])
        found = dict(zip(results["mounts"].split()[::2], results["mounts"].split()[1::2]))
        # The calls themselves reach the kernel: a tmpfs and the new API's mount are made, and the
        # rest answer as the kernel does (EINVAL where the arguments are no good), never EPERM.
        self.assertEqual([found["tmpfs"], found["fsopen"], found["fsmount"], found["move_mount"]], ["ok"] * 4, results)
        self.assertNotIn("EPERM", found.values(), results)


class KernelSurfaceTest(BoxWallsCase):
    """Issue 21 item 5: userfaultfd, bpf, perf_event_open and the keyrings fail with EPERM in
    every box, in forms the kernel would otherwise allow (or answer with another errno)."""

    def test_refused_whatever_the_options(self):
        names = ["userfaultfd", "bpf_map", "bpf_unknown", "perf", "perf_bad_size", "keyctl", "add_key", "request_key"]
        for run_args in ALL_LIFTS:
            with self.subTest(run_args=run_args):
                results, _ = self.probe({"kernel_surface": None}, run_args=run_args)
                self.assertEqual(results["kernel_surface"], " ".join(f"{name} EPERM" for name in names))


if __name__ == "__main__":
    unittest.main()
