# SPDX-License-Identifier: Apache-2.0
"""The manual's supervisor in Go (EXAMPLES, "A supervisor in Go") is a program, not a sketch: it is
cut out of man/boxproxy.1 and built with Debian's golang-go (go vet, then go build), offline.
Skips, saying why, where `go` is not installed."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

MANUAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "man", "boxproxy.1")


def go_program():
    """The Go source between .EX and .EE of the manual's "A supervisor in Go", unescaped."""
    with open(MANUAL, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index(".SS A supervisor in Go\n"):]
    section = section[:section.index("\n.SS ", 1)]
    code = re.search(r"^\.EX\n(.*?)^\.EE$", section, re.S | re.M).group(1)
    return code.replace("\\-", "-").replace("\\e", "\\")


class ManualGoTest(unittest.TestCase):

    def test_the_go_supervisor_builds(self):
        go = shutil.which("go")
        if not go:
            self.skipTest("go is not installed (Debian's golang-go)")
        with tempfile.TemporaryDirectory(prefix="boxproxy-go-") as d:
            with open(os.path.join(d, "main.go"), "w") as f:
                f.write(go_program())
            with open(os.path.join(d, "go.mod"), "w") as f:
                f.write("module example.com/supervisor\n\ngo 1.19\n")
            env = dict(os.environ, GOCACHE=os.path.join(d, "cache"), GOPATH=os.path.join(d, "gopath"),
                       GOPROXY="off", GOFLAGS="-mod=mod", CGO_ENABLED="0")
            for step in (["vet", "./..."], ["build", "-o", "supervisor", "."]):
                r = subprocess.run([go, *step], cwd=d, env=env, capture_output=True, text=True, timeout=300)
                self.assertEqual(r.returncode, 0, f"go {' '.join(step)}: {r.stdout}{r.stderr}")
            self.assertTrue(os.path.exists(os.path.join(d, "supervisor")))

    def test_the_program_is_the_one_the_manual_shows(self):
        # The cut is not empty and is the whole program: a package, a main, the channel's ops.
        code = go_program()
        self.assertTrue(code.startswith("package main\n"))
        for needed in ('"--control-fd"', '"subscribe"', '"answer"', '"verdict": "once"', "func main()"):
            self.assertIn(needed, code)


if __name__ == "__main__":
    unittest.main()
