# SPDX-License-Identifier: Apache-2.0
"""The caller's environment and `boxproxy run` (issue 37 item 2): the box gets the caller's whole
environment, as the manual says; run refuses to start (exit 2, naming the variable, never the value)
when a variable it would hand the box holds a --secret's value; --clearenv and --setenv NAME=VALUE
make a clean box. The tests skip, saying why, where this system cannot make a box."""

import os
import tempfile
import unittest

from box_support import BoxTestCase
from harness import binary

INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")
VALUE = "sk-caller-env-0123456789abcdef"
RUNS_OWN = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "JAVA_TOOL_OPTIONS", "NODE_USE_ENV_PROXY",
            "BOXPROXY_SOCKET")


class CallerEnvironmentTest(BoxTestCase):

    def environment(self, run_args, env=None):
        r = self.box.run(run_args, ["/usr/bin/env"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        return dict(line.split("=", 1) for line in r.stdout.decode().splitlines() if "=" in line)

    def test_the_box_gets_the_callers_whole_environment(self):
        seen = self.environment([], env={"CALLER_THING": "from-the-caller"})
        self.assertEqual(seen.get("CALLER_THING"), "from-the-caller")
        self.assertEqual(seen.get("PATH"), os.environ["PATH"])

    def test_clearenv_leaves_only_setenv_and_runs_own(self):
        seen = self.environment(["--clearenv", "--setenv", "LANG=C.UTF-8", "--setenv", "EMPTY=",
                                 "--setenv", "JAVA_TOOL_OPTIONS=-Xmx64m", "--setenv", "HTTP_PROXY=http://elsewhere:1"],
                                env={"CALLER_THING": "from-the-caller"})
        self.assertEqual(sorted(set(seen) - {n.lower() for n in RUNS_OWN} - set(RUNS_OWN)), ["EMPTY", "LANG"], seen)
        self.assertEqual((seen["LANG"], seen["EMPTY"]), ("C.UTF-8", ""))
        self.assertEqual(seen["HTTP_PROXY"], "http://127.0.0.1:3128")  # run's own is set over it
        self.assertTrue(seen["JAVA_TOOL_OPTIONS"].startswith("-Xmx64m -Dhttp.proxyHost=127.0.0.1"), seen)

    def test_setenv_without_clearenv_adds_and_replaces(self):
        seen = self.environment(["--setenv", "CALLER_THING=replaced", "--setenv", "NEW=1"],
                                env={"CALLER_THING": "from-the-caller"})
        self.assertEqual((seen.get("CALLER_THING"), seen.get("NEW")), ("replaced", "1"))
        self.assertIn("PATH", seen)

    def test_bad_setenv_is_a_usage_error(self):
        for args, words in ((["--setenv", "NOEQUALS"], b'--setenv: "NOEQUALS" is not NAME=VALUE'),
                            (["--setenv", "1X=y"], b'--setenv: "1X=y" is not NAME=VALUE'),
                            (["--setenv", "A=1", "--setenv", "A=2"], b'--setenv: "A=2" names a variable given already')):
            with self.subTest(args=args):
                r = self.box.run(args, ["true"])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(words, r.stderr)


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class SecretInEnvironmentTest(BoxTestCase):
    """A --secret's value in a variable the box would get: refused before anything starts."""

    def setUp(self):
        super().setUp()
        d = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-caller-env-"))
        self.secret = os.path.join(d, "api.key")
        with open(self.secret, "w") as f:
            f.write(VALUE + "\n")
        self.serve = ["--inspect", "origin.test:443", "--secret", f"api={self.secret}"]

    def test_a_variable_holding_the_value_is_refused_by_name(self):
        for held in (VALUE, f"Bearer {VALUE} and more"):
            with self.subTest(held=held):
                r = self.box.run(self.serve, ["true"], env={"LLM_API_KEY": held})
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(b"the variable LLM_API_KEY holds the value of --secret api", r.stderr)
                self.assertNotIn(VALUE.encode(), r.stdout + r.stderr)

    def test_clearenv_keeps_it_out_so_the_box_starts(self):
        r = self.box.run(["--clearenv", *self.serve], ["/usr/bin/env"], env={"LLM_API_KEY": VALUE})
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertNotIn(VALUE.encode(), r.stdout + r.stderr)

    def test_setenv_holding_the_value_is_refused(self):
        r = self.box.run(["--clearenv", "--setenv", f"KEY={VALUE}", *self.serve], ["true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--setenv KEY: holds the value of --secret api", r.stderr)
        self.assertNotIn(VALUE.encode(), r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
