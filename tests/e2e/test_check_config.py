# SPDX-License-Identifier: Apache-2.0
"""`serve --check-config`: everything serve would read is read and checked, what is in force is
printed, and nothing is bound (SPEC §1; issue 11 item 1). What it prints is a --config file that
reads back to the same line, valid under schemas/config.v1.json and check-config.v1.json, so a
supervisor can store it as the session's config (issue 23 item 3); the manual's lists of config
keys name every key, and a command-line-only key in a config is refused with its reason."""

import json
import os
import re
import socket
import subprocess
import tempfile
import unittest

from harness import binary
from test_schemas import SOURCE, load_schema, validator

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

    def serve(self, *args, pass_fds=()):
        return subprocess.run([binary(), "serve", *args], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL, cwd=self.dir, pass_fds=pass_fds)

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
        # --allow's entries alone, canonical; the file's stay in the file (SIGHUP re-reads it).
        self.assertEqual(in_force["allow"], ["example.com"])
        self.assertEqual(in_force["allow-file"], allow_file)
        self.assertEqual(in_force["resolve"], ["x.test=192.0.2.7"])
        self.assertEqual(in_force["max-tunnels"], 7, "the command line wins over the config")
        self.assertEqual(in_force["log"], "json")
        self.assertEqual(in_force["permit"], ["127.0.0.2/32"])
        self.assertEqual(in_force["auth-token-file"], token)
        self.assertEqual(in_force["socket"], socket_path)
        self.assertEqual(in_force["max-connections"], 65536)
        self.assertEqual(in_force["max-lookups"], 65536)
        self.assertNotIn("config", in_force)
        for unset in ("audit", "log-file", "label", "allow-hint", "deny", "nameserver", "ready-fd", "control-fd"):
            self.assertNotIn(unset, in_force, "an option with no value is left out")
        self.assertEqual(sorted(os.listdir(self.dir)), ["allow.txt", "c.json", "token"], "nothing is created")

    def round_trip(self, *args, pass_fds=()):
        """Prints what is in force for `args`, feeds that line back as the only --config, and
        returns both lines (the second must be the first)."""
        first = self.serve("--check-config", *args, pass_fds=pass_fds)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(len(first.stdout.splitlines()), 1, first.stdout)
        config = self.write("stored.json", first.stdout)  # stored as printed, byte for byte
        second = self.serve("--check-config", "--config", config, pass_fds=pass_fds)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(second.stdout, first.stdout)
        printed = json.loads(first.stdout)
        for schema in ("config", "check-config"):
            self.assertEqual([e.message for e in validator(schema).iter_errors(printed)], [], schema)
        return printed

    def test_what_it_prints_is_a_config_that_prints_the_same_again(self):
        printed = self.round_trip()
        self.assertEqual(set(printed), set(load_schema("check-config")["required"]), "the defaults, nothing unset")
        self.round_trip("--allow", "a.example", "--resolve", "n.test=192.0.2.1", "--deny", "192.0.2.0/24",
                        "--idle-timeout", "2.5")
        self.assertEqual(self.round_trip("--allow", "")["allow"], [], "an empty list is a list, not none")

    def test_every_config_key_round_trips(self):
        allow_file = self.write("allow.txt", "file.example\n")
        token = self.write("token", TOKEN + "\n")
        ready_read, ready_write = os.pipe()
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(theirs.close)
        self.addCleanup(os.close, ready_read)
        self.addCleanup(os.close, ready_write)
        printed = self.round_trip(
            "--socket", os.path.join(self.dir, "egress.sock"), "--allow", "B.Example., *.c.example:8443, b.example",
            "--allow-file", allow_file, "--allow-hint", "ask ops", "--permit", "127.0.0.2/32",
            "--deny", "2001:DB8::/32", "--resolve", "N.Test.=192.0.2.1,192.0.2.1", "--nameserver", "127.0.0.1:5353",
            "--inspect", "API.Example.", "--inspect", "*.example.org:8443",
            "--max-tunnels", "7", "--max-connections", "100", "--max-lookups", "9", "--head-timeout", "0.5",
            "--dns-timeout", "2", "--connect-timeout", "3.25", "--idle-timeout", "60", "--max-head-bytes", "4096",
            "--log", "json", "--label", "s1", "--log-file", os.path.join(self.dir, "log"),
            "--audit", os.path.join(self.dir, "audit.jsonl"), "--auth-token-file", token,
            "--ready-fd", str(ready_write), "--die-with-parent", "--no-sni-check", "--log-paths",
            "--upstream-ca", os.path.join(self.dir, "roots.pem"), "--ca-out", os.path.join(self.dir, "ca.pem"),
            "--ca-cert", os.path.join(self.dir, "op-ca.pem"), "--ca-key", os.path.join(self.dir, "op-ca.key"),
            "--control-fd", str(theirs.fileno()), "--control-socket", os.path.join(self.dir, "control.sock"),
            "--ask", "--ask-timeout", "9", pass_fds=(ready_write, theirs.fileno()))
        self.assertEqual(set(printed), set(load_schema("config")["properties"]), "every config key, once")
        self.assertEqual(list(printed)[:3], ["socket", "allow", "allow-file"], "in --help's order")
        self.assertEqual(printed["allow"], ["b.example", "*.c.example:8443"])
        self.assertEqual(printed["deny"], ["2001:db8::/32"])
        self.assertEqual(printed["resolve"], ["n.test=192.0.2.1"])
        self.assertEqual(printed["inspect"], [{"host": "api.example:443", "mode": "enforce"},
                                              {"host": "*.example.org:8443", "mode": "enforce"}])
        self.assertEqual(printed["connect-timeout"], 3.25)
        self.assertNotIn(TOKEN, json.dumps(printed))
        self.assertEqual(sorted(os.listdir(self.dir)), ["allow.txt", "stored.json", "token"], "nothing is created")

    def test_a_command_line_only_key_in_a_config_is_refused_with_its_reason(self):
        for key, value, reason in (
                ("no-confine", True, "a configuration file cannot turn confinement off (give --no-confine on "
                                     "the command line)"),
                ("config", "other.json", "a configuration file cannot name another"),
                ("check-config", True, "it is a question for the command line, not a setting"),
                ("secret", ["api=/etc/api.key"], "give each --secret NAME=FILE on the command line"),
                ("placeholder", ["api"], "a placeholder is made for the session that starts, on its command line")):
            with self.subTest(key=key):
                config = self.write(f"{key}.json", json.dumps({key: value}))
                result = self.serve("--check-config", "--config", config)
                self.assertEqual(result.returncode, 2, result)
                self.assertEqual(result.stdout, "")
                self.assertEqual(result.stderr, f'boxproxy serve: --config "{config}": key "{key}" is command line '
                                                f"only: {reason}\n")
        config = self.write("typo.json", json.dumps({"no-confined": True}))
        self.assertIn('unknown key "no-confined"', self.serve("--check-config", "--config", config).stderr)

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


def manual_config_key_lists():
    """The CONFIGURATION FILE section's lists: {"strings": [key, ...], "whole numbers": [...], ...}."""
    with open(os.path.join(SOURCE, "man", "boxproxy.1")) as f:
        manual = f.read()
    section = manual.split("\n.SH CONFIGURATION FILE\n", 1)[1].split("\n.SH ", 1)[0]
    lists = {}
    for item in section.split("\n.TP\n")[1:]:
        heading, _, body = item.partition("\n")
        body = body.split("\n.PP", 1)[0]
        keys = []
        # Each key is a bold word of its own line; the list ends at the one followed by ":" or ".".
        for word, rest in re.findall(r"^\.BR? ([a-z][a-z\\-]*)(.*)$", body, re.MULTILINE):
            keys.append(word.replace("\\-", "-"))
            if rest.strip().endswith((":", ".")):
                break
        lists[heading] = keys
    return lists


class ManualConfigKeysTest(unittest.TestCase):
    """The manual names every config key under its JSON type, and the keys a config may not hold."""

    TYPES = {"strings": "string", "whole numbers": "integer", "seconds": "number", "lists": "array",
             "flags": "boolean"}

    def test_the_lists_name_every_key_by_its_type(self):
        lists = manual_config_key_lists()
        self.assertEqual(set(lists), set(self.TYPES) | {"command line only"})
        properties = load_schema("config")["properties"]
        listed = [key for heading in self.TYPES for key in lists[heading]]
        self.assertEqual(sorted(listed), sorted(properties), "each config key in exactly one list")
        for heading, json_type in self.TYPES.items():
            for key in lists[heading]:
                with self.subTest(key=key):
                    schema_type = properties[key].get("type", "string" if "enum" in properties[key] else None)
                    self.assertEqual(schema_type, json_type)

    def test_the_command_line_only_keys_are_the_options_a_config_refuses(self):
        help_text = subprocess.run([binary(), "serve", "--help"], capture_output=True, text=True, timeout=10).stdout
        options = set(re.findall(r"^\s+--([a-z-]+)", help_text, re.MULTILINE)) - {"help"}
        self.assertEqual(set(manual_config_key_lists()["command line only"]),
                         options - set(load_schema("config")["properties"]))


if __name__ == "__main__":
    unittest.main()
