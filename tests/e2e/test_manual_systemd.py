# SPDX-License-Identifier: Apache-2.0
"""The manual's systemd example (man/boxproxy.1, EXAMPLES > systemd; issue 10 item 16), followed
as written for two sessions: each session's proxy gets a runtime directory of its own, so that
bind-mounting "the session's directory" into a box, as THE SOCKET advises, hands the box its own
session's socket and no other."""

import os
import re
import subprocess
import tempfile
import unittest

from harness import DNS_HOST, START_TIMEOUT, STOP_TIMEOUT, binary, wait_until

MANUAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "man", "boxproxy.1")


def systemd_unit():
    """The template unit of the systemd example, as a reader copies it: groff escapes undone and
    continued lines joined. Returns {key: [values]}."""
    with open(MANUAL, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index(".SS systemd\n"):]
    example = section[section.index(".EX\n") + 4:section.index(".EE\n")]
    example = example.replace("\\e", "\\").replace("\\-", "-")
    example = re.sub(r"\\\n\s*", " ", example)
    unit = {}
    for line in example.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            unit.setdefault(key.strip(), []).append(value.strip())
    return unit


class SystemdExampleTest(unittest.TestCase):

    def test_every_session_has_a_runtime_directory_of_its_own(self):
        unit = systemd_unit()
        (runtime_directory,) = unit["RuntimeDirectory"]
        exec_start = unit["ExecStart"][0].split()
        socket_template = exec_start[exec_start.index("--socket") + 1]

        with tempfile.TemporaryDirectory(prefix="boxproxy-systemd-") as runtime:  # %t
            sockets = {}
            procs = []
            try:
                for session in ("s1", "s2"):
                    # What systemd does for the instance: RuntimeDirectory= made, 0700.
                    directory = os.path.join(runtime, runtime_directory.replace("%i", session))
                    os.makedirs(directory, mode=0o700, exist_ok=True)  # a shared one exists already
                    path = socket_template.replace("%t", runtime).replace("%i", session)
                    sockets[session] = path
                    procs.append(subprocess.Popen([binary(), "serve", "--socket", path, "--nameserver", DNS_HOST],
                                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))
                for path in sockets.values():
                    self.assertTrue(wait_until(lambda p=path: os.path.exists(p), START_TIMEOUT), path)
                # The session directory of each is the socket's directory, the runtime directory
                # systemd made for that instance, and holds nothing of the other session.
                for session, path in sockets.items():
                    session_directory = os.path.dirname(path)
                    self.assertEqual(session_directory,
                                     os.path.join(runtime, runtime_directory.replace("%i", session)))
                    self.assertEqual(os.listdir(session_directory), [os.path.basename(path)])
            finally:
                for proc in procs:
                    proc.terminate()
                    proc.wait(timeout=STOP_TIMEOUT)
        self.assertEqual(unit.get("RuntimeDirectoryMode"), ["0700"])


if __name__ == "__main__":
    unittest.main()
