# SPDX-License-Identifier: Apache-2.0
"""What `run --transparent` refuses (boxproxy(1), `run --transparent`): everything but TCP and DNS
that would leave the box's loopback is rejected at once, never sent and never waited for; and
where capture cannot work (no libnftables) run says what is missing and exits 125 before COMMAND
starts.

refusal_probe.py does the sending, inside the box: as COMMAND, and (as root) in the box's network
namespace entered with nsenter, for what COMMAND cannot send at all (ICMP, other IP protocols).
The addresses are documentation addresses (192.0.2.1, 2001:db8::1) and the probe sends nothing
unless it is in a network namespace that is not the test's own and has only a loopback.

What this kernel gives (6.18): every refused send fails with EPERM ("Operation not permitted"),
at once, on IPv4 and IPv6, for UDP, ICMP and a raw protocol alike. Over IPv6 the reject also
sends an ICMPv6 "administratively prohibited", which a connected socket reports as EACCES on its
next send or receive; over IPv4 the kernel sends no ICMP error for a packet it rejects on its way
out of the box (the next receive just times out), so nothing is asserted about an IPv4 receive."""

import json
import os
import shutil
import socket
import subprocess
import sys
import unittest

from box_support import RUN_TIMEOUT, BoxRun, namespaces_usable, processes_mentioning
from harness import wait_until
from test_transparent import CaptureTestCase

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refusal_probe.py")
AT_ONCE = 1.0  # seconds: a refusal arrives well within this (observed: under 1 ms)
PROBE_TIMEOUT = 30.0
V4 = ["192.0.2.1", 443]  # port 443: not DNS (that is redirected), and UDP, so not captured like TCP
V6 = ["2001:db8::1", 443]

# [label, family, type, protocol, address, connected], as refusal_probe.py reads them.
UDP_CASES = [
    ["udp4", socket.AF_INET, socket.SOCK_DGRAM, 0, V4, False],
    ["udp4_connected", socket.AF_INET, socket.SOCK_DGRAM, 0, V4, True],
    ["udp6", socket.AF_INET6, socket.SOCK_DGRAM, 0, V6, False],
    ["udp6_connected", socket.AF_INET6, socket.SOCK_DGRAM, 0, V6, True],
]
# What an unprivileged program may try for ICMP: a ping socket, else a raw one.
ICMP_CASES = [
    ["icmp4_ping", socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP, ["192.0.2.1", 0], True],
    ["icmp6_ping", socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6, ["2001:db8::1", 0], True],
    ["icmp4_raw", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, ["192.0.2.1", 0], True],
    ["icmp6_raw", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6, ["2001:db8::1", 0], True],
]
EXPERIMENTAL_PROTOCOL = 253  # RFC 3692: for experiments, so nothing on the way means anything by it
RAW_CASES = [
    ["icmp4_raw", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, ["192.0.2.1", 0], True],
    ["icmp6_raw", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6, ["2001:db8::1", 0], True],
    ["proto253_4", socket.AF_INET, socket.SOCK_RAW, EXPERIMENTAL_PROTOCOL, ["192.0.2.1", 0], True],
    ["proto253_6", socket.AF_INET6, socket.SOCK_RAW, EXPERIMENTAL_PROTOCOL, ["2001:db8::1", 0], True],
]
# A connected socket of these hears the ICMPv6 "administratively prohibited" as EACCES.
HEARS_ADMIN_PROHIBITED = {"udp6_connected", "icmp6_raw"}


def host_net_namespace():
    return os.stat("/proc/self/ns/net").st_ino


def probe_output(text):
    return json.loads(text.strip().splitlines()[-1])


class RefusedAtOnceTest(CaptureTestCase):

    def run_probe_as_command(self, cases):
        r = self.box.run(["--transparent"], [sys.executable, PROBE, host_net_namespace(), json.dumps(cases)])
        self.assertEqual(r.returncode, 0, (r.stdout, r.stderr.decode(errors="replace")[-3000:]))
        return probe_output(r.stdout.decode())

    def assert_refused_at_once(self, label, result):
        """Made, and every send refused within AT_ONCE: with EPERM, or (a connected socket that
        hears the ICMPv6 administratively prohibited) with the EACCES it left pending from the
        send before; such a socket hears it at least once, on a send or on the receive after."""
        with self.subTest(label):
            self.assertEqual(result["socket"], "ok", result)
            self.assertEqual(result.get("connect", "ok"), "ok", result)
            sends = result["send"]
            self.assertLess(result["send_s"], AT_ONCE, result)
            self.assertEqual(sends[0], "EPERM", result)
            if label in HEARS_ADMIN_PROHIBITED:
                # UDP reports the pending error on the next send (which then sends nothing) and a
                # raw socket on the next receive: observed EPERM, EACCES, EPERM then EACCES for UDP.
                self.assertLessEqual(set(sends), {"EPERM", "EACCES"}, result)
                self.assertIn("EACCES", sends + [result["recv"]], result)
                if result["recv"] == "EACCES":
                    self.assertLess(result["recv_s"], AT_ONCE, result)
            else:
                self.assertEqual(sends, ["EPERM"] * len(sends), result)

    def test_udp_to_another_address_is_refused_at_once(self):
        out = self.run_probe_as_command(UDP_CASES)
        for label, *_ in UDP_CASES:
            self.assert_refused_at_once(label, out[label])

    def test_an_icmp_echo_from_command_is_refused_at_once(self):
        out = self.run_probe_as_command(ICMP_CASES)
        made = [label for label, *_ in ICMP_CASES if out[label]["socket"] == "ok"]
        if not made:
            # COMMAND cannot send ICMP at all: its user namespace holds no CAP_NET_RAW over the
            # box's network namespace, and that namespace's net.ipv4.ping_group_range admits no
            # group. test_icmp_and_other_protocols_in_the_box_are_refused_at_once sends them as root.
            raise unittest.SkipTest("COMMAND cannot make an ICMP socket in the box: " + ", ".join(
                f"{label}: {out[label]['socket']}" for label, *_ in ICMP_CASES))
        for label in made:
            self.assert_refused_at_once(label, out[label])

    def test_icmp_and_other_protocols_in_the_box_are_refused_at_once(self):
        # A raw socket needs CAP_NET_RAW over the box's network namespace, which only root outside
        # the box has: the probe runs there through nsenter while COMMAND holds the box open.
        if os.geteuid() != 0:
            self.skipTest("needs root, to enter the box's network namespace with a raw socket")
        if not shutil.which("nsenter"):
            self.skipTest("nsenter (util-linux) is not installed")
        # COMMAND holds the box open until the test closes its standard input; `mark` finds it.
        mark = os.path.join(self.box.dir, "held")
        box = subprocess.Popen(self.box.argv(["--transparent"], [sys.executable, PROBE, "--hold", mark]),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=self.box.env())
        try:
            host = host_net_namespace()

            def command_in_the_box():
                # COMMAND itself, not `boxproxy run` (whose argv names the mark too, in the host's namespace).
                for pid in processes_mentioning(mark):
                    try:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            argv0 = f.read().split(b"\0")[0]
                        if argv0 == sys.executable.encode() and os.stat(f"/proc/{pid}/ns/net").st_ino != host:
                            return pid
                    except OSError:
                        continue
                return None

            pid = wait_until(command_in_the_box, timeout=20)
            self.assertIsNotNone(pid, "COMMAND did not start in a box of its own")
            r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", sys.executable, PROBE, str(host),
                                json.dumps(RAW_CASES)], stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=PROBE_TIMEOUT)
            self.assertEqual(r.returncode, 0, (r.stdout, r.stderr))
            out = probe_output(r.stdout.decode())
        finally:
            try:
                # communicate() closes the box's standard input first: that releases COMMAND.
                stdout, stderr = box.communicate(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                box.kill()
                stdout, stderr = box.communicate(timeout=RUN_TIMEOUT)
        self.assertEqual(box.returncode, 0, stderr.decode(errors="replace")[-3000:])
        self.assertEqual(probe_output(stdout.decode()), {"held": True})
        for label, *_ in RAW_CASES:
            self.assert_refused_at_once(label, out[label])


def library_files(name):
    """The files the dynamic linker's cache names for `name` (every architecture), resolved."""
    r = subprocess.run(["ldconfig", "-p"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    found = set()
    for line in r.stdout.splitlines()[1:]:
        entry, _, path = line.partition("=>")
        if entry.split()[:1] == [name] and path.strip():
            found.add(os.path.realpath(path.strip()))
    return sorted(found)


class CaptureUnavailableTest(unittest.TestCase):
    """With libnftables.so.1 covered by /dev/null in a private mount namespace, dlopen fails."""

    LIBRARY = "libnftables.so.1"

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root, to hide libnftables in a private mount namespace")
        for tool in ("unshare", "mount", "ldconfig"):
            if not shutil.which(tool):
                self.skipTest(f"{tool} (util-linux, libc-bin) is not installed")
        why = namespaces_usable()
        if why:
            self.skipTest(why)
        self.box = BoxRun(self)
        self.hidden = library_files(self.LIBRARY)

    def run_hiding(self, files, marker):
        """`boxproxy run --transparent -- sh -c 'touch MARKER'` in a mount namespace of its own
        where each of `files` reads as /dev/null."""
        hide = 'for lib in $HIDE; do mount --bind /dev/null "$lib" || exit 97; done; exec "$@"'
        env = self.box.env({"HIDE": " ".join(files)})
        env.pop("LD_LIBRARY_PATH", None)
        argv = (["unshare", "--mount", "--propagation", "private", "sh", "-c", hide, "sh"]
                + self.box.argv(["--transparent"], ["sh", "-c", f"touch {marker}"]))
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT, env=env)
        self.assertNotEqual(r.returncode, 97, f"cannot bind-mount over {files}: {r.stderr!r}")
        return r

    def test_without_libnftables_run_says_so_and_exits_125_before_command_starts(self):
        marker = os.path.join(self.box.dir, "command-started")
        r = self.run_hiding(self.hidden, marker)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(b"--transparent", r.stderr)
        self.assertIn(self.LIBRARY.encode(), r.stderr)
        self.assertIn(b"libnftables1", r.stderr)  # the package to install
        self.assertFalse(os.path.exists(marker), "COMMAND ran")
        if not self.hidden:
            return  # not installed at all: nothing was hidden, and nothing to compare with
        # The same run with nothing hidden starts COMMAND: it is the missing library that stops it.
        control = os.path.join(self.box.dir, "control-started")
        r = self.run_hiding([], control)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(control), r.stderr)


if __name__ == "__main__":
    unittest.main()
