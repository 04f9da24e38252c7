# SPDX-License-Identifier: Apache-2.0
"""--audit under a flood of refusals (SPEC §2, §12): every refusal is on disk before its answer, and the
syncs are batched, one fdatasync per loop iteration for every refusal answered in it (group commit), so a
box that floods refusals does not make one disk flush each.
"""

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import time
import unittest

from fault_support import connect_waiting
from harness import Proxy, ProxyTestCase, connect_request, wait_until

CLIENTS = 200
ANSWER_TIMEOUT = 10.0


def target(i):
    # A private address each: refused by the address rule, no lookup, and its host names its line.
    return f"10.77.{i // 250}.{i % 250 + 1}"


class AuditFloodTest(ProxyTestCase):

    def audited_proxy(self):
        p = Proxy()
        self.audit_path = os.path.join(p.dir, "audit.jsonl")
        p.argv += ["--audit", self.audit_path]
        self.addCleanup(p.cleanup)
        self._proxies.append(p)
        p.start()
        return p

    def audited_hosts(self):
        with open(self.audit_path) as f:
            return {json.loads(line)["host"] for line in f.read().splitlines() if line.endswith("}")}

    def flood(self, p):
        """CLIENTS clients send their requests while the proxy is stopped, so it reads them in few
        loop iterations; each answer is checked against the audit file the moment it arrives."""
        clients = {}
        for i in range(CLIENTS):
            clients[self.connect_when_room(p)] = target(i)
        # Every client accepted (the proxy holds them all in the handshake) before it is stopped.
        self.assertTrue(wait_until(lambda: p.fd_count() >= CLIENTS, 10), "clients not accepted")
        for s in clients:
            s.setblocking(False)
        os.kill(p.pid, signal.SIGSTOP)
        try:
            for s, host in clients.items():
                s.send(connect_request(f"{host}:443"))
        finally:
            os.kill(p.pid, signal.SIGCONT)
        answered = {}
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while len(answered) < CLIENTS and time.monotonic() < deadline:
            waiting = [s for s in clients if s not in answered]
            ready, _, _ = select.select(waiting, [], [], 0.5)
            for s in ready:
                data = s.recv(4096)
                if not data:
                    answered[s] = b""
                    continue
                # Read the audit at once: the refusal must already be there.
                on_disk = self.audited_hosts()
                self.assertIn(clients[s], on_disk, f"answer for {clients[s]} came before its audit line")
                answered[s] = data
        for s in clients:
            s.close()
        self.assertEqual(len(answered), CLIENTS, f"{CLIENTS - len(answered)} refusals never answered")
        for data in answered.values():
            self.assertTrue(data.startswith(b"HTTP/1.1 403"), data[:60])

    @staticmethod
    def connect_when_room(p):
        # A full accept backlog makes a Unix connect fail with EAGAIN at once: wait for room (a
        # connect that waits while the backlog is full, as a blocking client's does).
        return connect_waiting(p, ANSWER_TIMEOUT)

    def test_every_refusal_is_in_the_audit_before_its_answer(self):
        p = self.audited_proxy()
        self.flood(p)
        p.stop()
        self.assertEqual(len(self.audited_hosts()), CLIENTS)

    @unittest.skipUnless(shutil.which("strace"), "strace shows the order of the system calls")
    def test_refusals_share_their_fdatasync_and_wait_for_it(self):
        p = self.audited_proxy()
        audit_fd = next(int(fd) for fd in os.listdir(f"/proc/{p.pid}/fd")
                        if os.readlink(f"/proc/{p.pid}/fd/{fd}") == self.audit_path)
        trace = os.path.join(p.dir, "strace.txt")
        tracer = subprocess.Popen(["strace", "-qq", "-e", "trace=recvfrom,write,fdatasync,sendto", "-e", "signal=none",
                                   "-s", "16", "-o", trace, "-p", str(p.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # strace is attached once the proxy's status names it as its tracer.
            self.assertTrue(wait_until(lambda: self.tracer_pid(p.pid) == tracer.pid, 10), "strace did not attach")
            self.flood(p)
        finally:
            tracer.send_signal(signal.SIGINT)
            try:
                tracer.wait(timeout=10)
            except subprocess.TimeoutExpired:
                tracer.kill()
                tracer.wait(timeout=5)
        p.stop()
        with open(trace) as f:
            calls = [line for line in f.read().splitlines() if "(" in line]
        # Each refusal's audit line follows the read of its client's request (recvfrom on that
        # client's descriptor); its answer (sendto there) must come after an fdatasync that follows
        # the line. Answers of earlier iterations may well go out before this iteration's sync.
        reading = None
        unsynced = set()  # clients whose audit line is written but not yet synced
        syncs = answers = 0
        for call in calls:
            fd = call[call.index("(") + 1:call.index(",")] if "(" in call and "," in call else None
            if call.startswith("recvfrom("):
                reading = fd
            elif call.startswith(f"write({audit_fd},"):
                unsynced.add(reading)
            elif call.startswith(f"fdatasync({audit_fd})"):
                syncs += 1
                unsynced.clear()
            elif call.startswith("sendto(") and '"HTTP/1.1 403' in call:
                answers += 1
                self.assertNotIn(fd, unsynced, f"answer on fd {fd} sent before its audit line was synced")
        self.assertEqual(answers, CLIENTS, "every answer seen in the trace")
        self.assertGreaterEqual(syncs, 1)
        # Batched: the flood arrives in a few loop iterations, each with one fdatasync.
        self.assertLessEqual(syncs, CLIENTS // 4, f"{syncs} fdatasync calls for {CLIENTS} refusals: not batched")

    @staticmethod
    def tracer_pid(pid):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
        return 0


if __name__ == "__main__":
    unittest.main()
