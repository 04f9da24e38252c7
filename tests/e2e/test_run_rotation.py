# SPDX-License-Identifier: Apache-2.0
"""Rotating a key under `boxproxy run` (issue 37 item 3): run passes SIGHUP to COMMAND, so the
manual's way is `run --control-socket PATH` and the `secret` op sent there (the recipe, with socat,
as CREDENTIALS writes it), or the pid in `hello`'s reply there, to send serve SIGHUP after the file
is rewritten. A TLS origin of the test's own on 127.0.0.2 records the credential each request
carried. Skips, saying why, where this system cannot make a box."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, TlsOrigin, make_certificate
from harness import binary, wait_until

INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")
FIRST, SECOND, THIRD = "sk-first-0123456789ab", "sk-second-0123456789ab", "sk-third-0123456789ab"

# In the box: a request each time the test says go (a file named goN), at most three.
BOX_SCRIPT = """
for n in 1 2 3; do
  i=0; while [ ! -e "$2/go$n" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
  curl -sS --max-time 20 -o /dev/null -w '%{http_code}\\n' "$1/$n"
  touch "$2/done$n"
done
"""

# The manual's recipe (CREDENTIALS), as written there.
RECIPE = """printf '{"op":"secret","id":1,"name":"api","value":"%s"}\\n' "$NEW_KEY" | socat - UNIX-CONNECT:"$CTL" """


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
@unittest.skipUnless(shutil.which("socat"), "socat is not installed (scripts/install-deps)")
class RotationUnderRunTest(BoxTestCase):

    def wait_for(self, path, proc):
        wait_until(lambda: os.path.exists(path) or proc.poll() is not None, RUN_TIMEOUT, interval=0.05)
        if not os.path.exists(path):
            proc.kill()
            raise AssertionError(f"never {os.path.basename(path)}: {proc.communicate()[1][-3000:]!r}")

    def hello(self, control):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(control)
            s.sendall(b'{"op":"hello","id":"h"}\n')
            return json.loads(s.makefile().readline())

    def test_the_secret_op_on_run_control_socket_and_sighup_to_hellos_pid(self):
        d = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-run-rotation-"))
        cert, key = make_certificate(d)
        origin = TlsOrigin(cert, key)
        self.addCleanup(origin.close)
        key_file = os.path.join(d, "api.key")
        with open(key_file, "w") as f:
            f.write(FIRST + "\n")
        config = os.path.join(d, "api.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": f"origin.test:{origin.port}",
                                    "inject": {"authorization": "Bearer {api}"}}]}, f)
        script = os.path.join(d, "box.sh")
        with open(script, "w") as f:
            f.write(BOX_SCRIPT)
        control = os.path.join(d, "api.ctl")
        log = os.path.join(d, "proxy.log")
        proc = subprocess.Popen(self.box.argv(["--resolve", "origin.test=127.0.0.2", "--upstream-ca", cert,
                                               "--config", config, "--secret", f"api={key_file}",
                                               "--control-socket", control, "--log-file", log],
                                              ["sh", script, f"https://origin.test:{origin.port}", d]),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.box.env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        open(os.path.join(d, "go1"), "w").close()
        self.wait_for(os.path.join(d, "done1"), proc)
        # The recipe: the secret op over run's --control-socket.
        r = subprocess.run(["sh", "-c", RECIPE], env=dict(os.environ, NEW_KEY=SECOND, CTL=control),
                           capture_output=True, timeout=20)
        self.assertEqual(json.loads(r.stdout), {"id": 1, "ok": True}, r)
        open(os.path.join(d, "go2"), "w").close()
        self.wait_for(os.path.join(d, "done2"), proc)
        # The other way: the file rewritten in place, and SIGHUP to the pid hello gives (serve's).
        hello = self.hello(control)
        with open(f"/proc/{hello['pid']}/cmdline", "rb") as f:
            self.assertEqual(f.read().split(b"\0")[1], b"serve")
        with open(key_file, "r+") as f:
            f.truncate(0)
            f.write(THIRD + "\n")
        os.kill(hello["pid"], signal.SIGHUP)
        self.assertTrue(wait_until(lambda: "sighup: --secret api re-read" in self.read(log), 10, interval=0.05),
                        self.read(log)[-3000:])
        # No wait for the inspector: serve writes that line once it has put the new value in the
        # channel to it, which keeps order, so the third request's connection, handed over the
        # same channel later, finds it set (as the second one does after the op's answer).
        open(os.path.join(d, "go3"), "w").close()
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, err[-3000:])
        self.assertEqual(out.split(), [b"200"] * 3, err[-3000:])
        got = [[v for k, v in q["headers"] if k.lower() == "authorization"] for q in origin.requests]
        self.assertEqual(got, [[f"Bearer {FIRST}"], [f"Bearer {SECOND}"], [f"Bearer {THIRD}"]])
        for value in (FIRST, SECOND, THIRD):
            self.assertNotIn(value.encode(), out + err)
            self.assertNotIn(value, self.read(log))

    @staticmethod
    def read(path):
        with open(path, errors="replace") as f:
            return f.read()


if __name__ == "__main__":
    unittest.main()
