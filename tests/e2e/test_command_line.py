# SPDX-License-Identifier: Apache-2.0
"""One command-line toolkit for every command (issue 11 item 4), through the real binary.

`check` takes serve's options that shape a decision (--config, --allow, --allow-file, --permit,
--deny, --resolve, --nameserver, --dns-timeout) and reads them with serve's own code, so its policy
is serve's; `run` knows from serve's option table which serve options take a value; a --config
file with a repeated key is a usage error; a config that is not JSON is said in our words.

Nothing here dials or asks a resolver: every name judged has a --resolve answer or is refused
before any lookup.
"""

import json
import os
import subprocess
import tempfile
import unittest

from harness import binary
from box_support import BoxTestCase

TIMEOUT = 10


def boxproxy(*args):
    done = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


def check(*args):
    """`boxproxy check ARGS...`: (exit code, stdout lines as tuples, stderr)."""
    code, out, err = boxproxy("check", *args)
    return code, [tuple(line.split("\t")) for line in out.splitlines()], err


class TempFiles(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="boxproxy-cli-")
        self.addCleanup(self._tmp.cleanup)
        self.dir = self._tmp.name

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w" if isinstance(text, str) else "wb") as f:
            f.write(text)
        return path

    def assert_usage(self, result, *words, prefix):
        code, out, err = result
        self.assertEqual(code, 2, err)
        self.assertFalse(out, "nothing on standard output on a usage error")
        self.assertTrue(err.startswith(prefix), err)
        for word in words:
            self.assertIn(word, err)
        return err


class CheckTakesServesDecisionOptions(TempFiles):

    def test_config_shapes_the_decision_and_serve_only_keys_are_read_but_change_nothing(self):
        config = self.write("serve.json", json.dumps({
            "socket": os.path.join(self.dir, "no-such-dir", "egress.sock"),
            "max-tunnels": 8,
            "ready-fd": 987654,  # not open here: serve's to write, check never looks at it
            "auth-token-file": os.path.join(self.dir, "no-such-token"),  # serve's to read, not check's
            "log": "json",
            "permit": ["10.0.0.0/8"],
            "deny": ["1.1.1.0/24"],
            "resolve": ["a.test=10.1.2.3", "b.test=1.1.1.1"],
        }))
        code, lines, err = check("--config", config, "a.test", "b.test", "8.8.8.8")
        self.assertEqual(lines, [("a.test", "10.1.2.3", "ok"), ("b.test", "1.1.1.1", "denied"),
                                 ("8.8.8.8", "8.8.8.8", "ok")], err)
        self.assertEqual(code, 1)

    def test_a_list_on_the_command_line_replaces_the_configs_as_in_serve(self):
        config = self.write("serve.json", json.dumps({"permit": ["10.0.0.0/8"], "deny": ["1.1.1.0/24"]}))
        code, lines, err = check("--config", config, "--permit", "192.168.0.0/16", "10.1.1.1", "192.168.1.1",
                                 "1.1.1.1")
        self.assertEqual(lines, [("10.1.1.1", "10.1.1.1", "private"), ("192.168.1.1", "192.168.1.1", "ok"),
                                 ("1.1.1.1", "1.1.1.1", "denied")], err)
        self.assertEqual(code, 1)

    def test_config_values_are_checked_as_serve_checks_them(self):
        cases = [
            ({"max-tunnels": 0}, ['"max-tunnels"', '"0" is not a number from 1 to 1000000']),
            ({"max-lookups": 0}, ['"max-lookups"', '"0" is not a number from 1 to ']),
            ({"max-lookups": "9"}, ['"max-lookups"', "is not a JSON whole number"]),
            ({"dns-timeout": 0}, ['"dns-timeout"']),
            ({"max-tunnel": 5}, ['unknown key "max-tunnel"']),
            ({"permit": ["10.0.0.1/8"]}, ['"permit"', "10.0.0.1/8"]),
            ({"nameserver": ["dns.example"]}, ['"nameserver"', '"dns.example"']),
        ]
        for doc, words in cases:
            with self.subTest(doc=doc):
                config = self.write("bad.json", json.dumps(doc))
                self.assert_usage(check("--config", config, "1.1.1.1"), "--config", *words, prefix="boxproxy check: ")

    def test_allow_file(self):
        allow = self.write("allow", "# the box's list\na.test\n*.b.test:8443\n")
        base = ["--allow-file", allow, "--resolve", "a.test=1.1.1.1", "--resolve", "x.b.test=1.1.1.1"]
        code, lines, err = check(*base, "a.test", "x.b.test:8443", "x.b.test", "c.test")
        self.assertEqual(lines, [("a.test", "1.1.1.1", "ok"), ("x.b.test:8443", "1.1.1.1", "ok"),
                                 ("x.b.test", "-", "not-listed"), ("c.test", "-", "not-listed")], err)
        self.assertEqual(code, 1)
        # --allow and --allow-file together make one list, as in serve.
        code, lines, err = check(*base, "--allow", "c.test", "--resolve", "c.test=1.1.1.1", "c.test", "a.test")
        self.assertEqual(lines, [("c.test", "1.1.1.1", "ok"), ("a.test", "1.1.1.1", "ok")], err)
        self.assertEqual(code, 0)

    def test_a_bad_allow_file_names_the_file_and_line(self):
        allow = self.write("allow", "a.test\n10.0.0.1\n")
        err = self.assert_usage(check("--allow-file", allow, "a.test"), "--allow-file", allow, "line 2",
                                '"10.0.0.1"', prefix="boxproxy check: ")
        self.assertNotIn("boxproxy serve", err)
        self.assert_usage(check("--allow-file", os.path.join(self.dir, "missing"), "a.test"), "cannot be read",
                          prefix="boxproxy check: ")

    def test_nameserver_and_dns_timeout_are_read_as_serve_reads_them(self):
        # Good values are taken (the targets need no lookup); bad ones are serve's usage errors.
        code, lines, err = check("--nameserver", "127.0.0.1:53", "--nameserver=[::1]:5353", "--dns-timeout", "0.5",
                                 "--resolve", "a.test=1.1.1.1", "a.test")
        self.assertEqual((code, lines), (0, [("a.test", "1.1.1.1", "ok")]), err)
        self.assert_usage(check("--nameserver", "dns.example", "1.1.1.1"), "--nameserver", '"dns.example"',
                          prefix="boxproxy check: ")
        self.assert_usage(check("--dns-timeout", "0", "1.1.1.1"), "--dns-timeout", '"0"',
                          "greater than 0 and at most 86400", prefix="boxproxy check: ")
        self.assert_usage(check("--dns-timeout", "1", "--dns-timeout=2", "1.1.1.1"), "--dns-timeout",
                          "may be given once", prefix="boxproxy check: ")

    def test_resolve_is_read_as_serve_reads_it(self):
        # serve gives a name its answers once each, lower-cased and without a trailing dot (SPEC §13).
        code, lines, err = check("--resolve", "a.test=1.1.1.1,1.1.1.1", "--resolve", "A.Test.=1.1.1.1,1.0.0.1",
                                 "a.test")
        self.assertEqual(lines, [("a.test", "1.1.1.1", "ok"), ("a.test", "1.0.0.1", "ok")], err)
        self.assertEqual(code, 0)

    def test_options_that_shape_no_decision_are_refused_on_the_command_line(self):
        for option in (["--max-tunnels", "5"], ["--socket", "/tmp/x.sock"], ["--die-with-parent"],
                       ["--log=json"]):
            with self.subTest(option=option):
                self.assert_usage(check(*option, "1.1.1.1"), "unknown option", option[0].split("=")[0],
                                  prefix="boxproxy check: ")

    def test_dashes_end_the_options(self):
        code, lines, _ = check("--permit", "10.0.0.0/8", "--", "--deny", "10.1.1.1")
        self.assertEqual([line[0] for line in lines], ["--deny", "10.1.1.1"])
        self.assertEqual(lines[1], ("10.1.1.1", "10.1.1.1", "ok"))
        self.assertEqual(code, 1)

    def test_help_lists_the_decision_options_with_their_defaults(self):
        code, out, _ = boxproxy("check", "--help")
        self.assertEqual(code, 0)
        for option in ("--config", "--allow", "--allow-file", "--permit", "--deny", "--resolve", "--nameserver",
                       "--dns-timeout"):
            self.assertIn(f"  {option} ", out)
        self.assertIn("(default: 5)", out)
        self.assertNotIn("--max-tunnels", out)


class RunKnowsServesOptions(BoxTestCase):

    def test_serve_flags_and_values_that_read_like_options(self):
        # --die-with-parent takes no value; --allow-hint's value "--" and --log-file's value
        # "--socket" stay serve's (serve's table says they take one), so the first bare "--"
        # after them is the one that starts COMMAND.
        log_file = os.path.join(self.box.dir, "--socket")
        r = self.box.run(["--die-with-parent", "--allow-hint", "--", "--log-file", "--socket", "--log=json"],
                         ["sh", "-c", "exit 7"], cwd=self.box.dir)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertTrue(os.path.exists(log_file), "serve took \"--socket\" as --log-file's value")
        self.assertEqual(self.box.leftovers(), [])

    def test_an_unknown_option_is_named_not_taken_with_a_value(self):
        r = self.box.run(["--no-such-option"], ["true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn(b'boxproxy run: unknown option "--no-such-option"', r.stderr)

    def test_a_serve_option_given_twice(self):
        r = self.box.run(["--max-tunnels", "4", "--max-tunnels=5"], ["true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn(b'--max-tunnels: "5" given, but --max-tunnels was already given as "4"', r.stderr)

    def test_max_lookups_is_a_serve_option_run_passes_on(self):
        # run reads serve's options as serve will: a bad budget is named before anything starts,
        # a good one reaches the proxy it starts.
        r = self.box.run(["--max-lookups", "0"], ["true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b'--max-lookups: "0"', r.stderr)
        r = self.box.run(["--max-lookups", "5"], ["sh", "-c", "exit 3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(self.box.leftovers(), [])

    def test_help_lists_runs_own_options_and_points_to_serves(self):
        code, out, _ = boxproxy("run", "--help")
        self.assertEqual(code, 0)
        for option in ("--socket", "--auth-token-file", "--allow-unix-sockets", "--allow-nested-namespaces"):
            self.assertRegex(out, rf"(?m)^  {option}( |$)")  # a long name has its help on the next line
        self.assertIn("boxproxy serve --help", out)
        self.assertNotIn("--max-tunnels", out)


class ConfigFileWords(TempFiles):
    """A --config key given twice is a usage error, as an option given twice is; a config that is
    not JSON is said in our words with its line and column, never with the JSON library's."""

    def serve(self, *args):
        socket_path = os.path.join(self.dir, "egress.sock")
        result = boxproxy("serve", "--socket", socket_path, *args)
        self.assertFalse(os.path.lexists(socket_path), "a usage error creates no socket")
        return result

    def test_a_key_given_twice(self):
        # Written by hand: json.dumps cannot repeat a key.
        config = self.write("twice.json", '{\n  "max-tunnels": 64,\n  "permit": ["10.0.0.0/8"],\n'
                                          '  "max-tunnels": 8\n}\n')
        err = self.assert_usage(self.serve("--config", config), f'--config "{config}": key "max-tunnels" given twice',
                                prefix="boxproxy serve: ")
        self.assertEqual(err.count("\n"), 1, err)
        # check reads the config with serve's code: the same error, under check's name.
        self.assert_usage(check("--config", config, "1.1.1.1"), 'key "max-tunnels" given twice',
                          prefix="boxproxy check: ")
        # A list key given twice too: the second list would silently have replaced the first.
        config = self.write("lists.json", '{"allow": ["a.example.com"], "allow": ["b.example.com"]}')
        self.assert_usage(self.serve("--config", config), 'key "allow" given twice', prefix="boxproxy serve: ")

    def test_not_json_in_our_words(self):
        cases = [
            ("{not json", "is not JSON: line 1, column "),
            ('{\n  "socket": "/s",\n  "max-tunnels": 8,,\n}', "is not JSON: line 3, column "),
            ('{"max-tunnels": 64', "is not JSON: line 1, column 19: the text ends before the JSON does"),
            ("", "is not JSON: the file is empty"),
            ('{"max-tunnels": 64} {}', "is not JSON: line 1, column 21: more text after the JSON value"),
            ('{"head-timeout": 1e999}', "is not JSON: line 1, column 18: a number too large for a double"),
            (b'{"allow-hint": "a\x1b[2Jb"}', "is not JSON: line 1, column 18: a control character inside a string"),
        ]
        for text, words in cases:
            with self.subTest(text=text):
                config = self.write("bad.json", text)
                err = self.assert_usage(self.serve("--config", config), f'--config: "{config}" {words}',
                                        prefix="boxproxy serve: ")
                for internal in ("json.exception", "parse_error", "parse error", "last read", "syntax error"):
                    self.assertNotIn(internal, err)


class BridgeUsesTheToolkit(unittest.TestCase):

    def test_socket_given_twice_and_help(self):
        code, out, err = boxproxy("bridge", "--socket", "/a.sock", "--socket=/b.sock")
        self.assertEqual(code, 2)
        self.assertIn('boxproxy bridge: --socket: "/b.sock" given, but --socket was already given as "/a.sock"', err)
        code, out, _ = boxproxy("bridge", "--help")
        self.assertEqual(code, 0)
        self.assertIn("(default: 127.0.0.1:3128, and [::1]:3128 when the box has IPv6 loopback)", out)


if __name__ == "__main__":
    unittest.main()
