"""`serve --check-config`: everything serve would read is read and checked, what is in force is
printed, and nothing is bound (SPEC §1; issue 11 item 1)."""

import json
import os
import subprocess
import tempfile
import unittest

from harness import binary

TOKEN = "s3cret-token-never-printed"


class CheckConfigTest(unittest.TestCase):

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="boxproxy-check-config-")
        self.addCleanup(self._tmp.cleanup)
        self.dir = self._tmp.name

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def serve(self, *args):
        return subprocess.run([binary(), "serve", *args], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL, cwd=self.dir)

    def test_prints_what_is_in_force_and_binds_nothing(self):
        allow_file = self.write("allow.txt", "# the session's list\nA.Example.com.\n*.b.example:8443\n")
        config = self.write("c.json", json.dumps({"max-tunnels": 64, "resolve": ["x.test=192.0.2.7,192.0.2.7"],
                                                  "log": "json"}))
        token = self.write("token", TOKEN + "\n")
        socket_path = os.path.join(self.dir, "run", "egress.sock")  # its directory does not exist
        result = self.serve("--check-config", "--socket", socket_path, "--allow", "Example.COM.,example.com",
                            "--allow-file", allow_file, "--config", config, "--auth-token-file", token,
                            "--permit", "127.0.0.2/32", "--max-tunnels", "7")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        self.assertNotIn(TOKEN, result.stdout)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1)
        in_force = json.loads(lines[0])
        self.assertEqual(in_force["allow"], ["example.com", "a.example.com", "*.b.example:8443"])
        self.assertEqual(in_force["resolve"], ["x.test=192.0.2.7"])
        self.assertEqual(in_force["max-tunnels"], 7, "the command line wins over the config")
        self.assertEqual(in_force["log"], "json")
        self.assertEqual(in_force["permit"], ["127.0.0.2/32"])
        self.assertEqual(in_force["auth-token-file"], token)
        self.assertEqual(in_force["socket"], socket_path)
        self.assertEqual(in_force["max-connections"], 65536)
        self.assertEqual(in_force["max-lookups"], 65536)
        self.assertEqual(sorted(os.listdir(self.dir)), ["allow.txt", "c.json", "token"], "nothing is created")

    def test_what_it_prints_reads_back_as_a_config(self):
        first = self.serve("--check-config", "--allow", "a.example", "--resolve", "n.test=192.0.2.1",
                           "--deny", "192.0.2.0/24", "--idle-timeout", "2.5")
        self.assertEqual(first.returncode, 0, first.stderr)
        in_force = json.loads(first.stdout)
        as_config = {k: v for k, v in in_force.items() if v is not None and k not in ("socket", "config")}
        config = self.write("again.json", json.dumps(as_config))
        second = self.serve("--check-config", "--config", config)
        self.assertEqual(second.returncode, 0, second.stderr)
        again = json.loads(second.stdout)
        again["config"] = None
        self.assertEqual(again, in_force)

    def test_a_bad_value_is_a_usage_error_and_prints_nothing(self):
        missing = os.path.join(self.dir, "missing.allow")
        for args in (["--max-tunnels", "0"], ["--allow-file", missing], ["--allow", "10.0.0.1"],
                     ["--config", self.write("bad.json", '{"max-tunnels": 1, "max-tunnels": 2}')],
                     ["--auth-token-file", self.write("empty-token", "")]):
            with self.subTest(args=args):
                result = self.serve("--check-config", *args)
                self.assertEqual(result.returncode, 2, result)
                self.assertEqual(result.stdout, "")
                self.assertTrue(result.stderr.startswith("boxproxy serve: "), result.stderr)

    def test_socket_still_required_without_it(self):
        result = self.serve("--allow", "a.example")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--socket PATH is required", result.stderr)


if __name__ == "__main__":
    unittest.main()
