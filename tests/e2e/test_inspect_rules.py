# SPDX-License-Identifier: Apache-2.0
"""Request inspection's endpoints and rules (SPEC §18; issue 24 item 1) through the real binary.

`check` judges `METHOD https://host/path` targets by the endpoints of --inspect and --config's
"inspect" array and prints which endpoint and rule decide them; a bad entry, glob or key is a usage
error naming it; serve without its inspector (and so run) refuses to start with any endpoint (fail
closed), while check and --check-config read them. check never dials, and never asks
the system's resolver here: every name has a --resolve answer.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import binary
from test_schemas import validator

TIMEOUT = 20
GITHUB = "api.github.com=140.82.112.6"
EXAMPLE = "example.com=93.184.215.14"

RULES = {
    "inspect": [
        {"host": "api.github.com", "name": "github",
         "rules": [{"method": "GET", "path": "/repos/acme/**"},
                   {"method": "post", "path": "/repos/acme/*/issues", "name": "file-issue"},
                   {"method": "*", "path": "/v1/*.json"}],
         "deny": [{"method": "DELETE", "path": "/**"},
                  {"method": "*", "path": "/repos/*/*/hooks/**", "name": "no-hooks"}]},
        {"host": "*.example.com", "access": "read-only", "mode": "report"},
        {"host": "ro.example.com:8443", "access": "read-only"},
    ]
}


class InspectTestCase(unittest.TestCase):

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-inspect-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def write_config(self, config, name="c.json"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(config if isinstance(config, str) else json.dumps(config))
        return path

    def boxproxy(self, *args):
        return subprocess.run([binary(), *args], capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL, cwd=self.dir)

    def check(self, *args):
        """`boxproxy check ARGS...`: (exit code, lines as tuples, stderr)."""
        done = self.boxproxy("check", *args)
        return done.returncode, [tuple(line.split("\t")) for line in done.stdout.splitlines()], done.stderr

    def assert_usage(self, result, *words):
        self.assertEqual(result.returncode, 2, (result.stdout, result.stderr))
        self.assertEqual(result.stdout, "")
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        for word in words:
            self.assertIn(word, result.stderr)


class CheckRequestsTest(InspectTestCase):
    """check's request targets: `<target>\\t<endpoint>\\t<rule>\\t<ok or class>`, exit 0 or 1."""

    def judge(self, *targets, extra=()):
        config = self.write_config(RULES)
        return self.check("--config", config, "--resolve", GITHUB, "--resolve", "www.example.com=93.184.215.14",
                          "--resolve", "ro.example.com=93.184.215.14", *extra, *targets)

    def assert_line(self, target, endpoint, rule, verdict, code):
        got_code, lines, err = self.judge(target)
        self.assertEqual(lines, [(target, endpoint, rule, verdict)], err)
        self.assertEqual(got_code, code, lines)

    def test_allowed_by_a_rule_labelled_by_index_or_name(self):
        self.assert_line("GET https://api.github.com/repos/acme/widget", "github", "rules[0]", "ok", 0)
        self.assert_line("GET https://API.GitHub.com./repos/acme/widget/pulls?state=open#top", "github", "rules[0]",
                         "ok", 0)
        self.assert_line("POST https://api.github.com/repos/acme/widget/issues", "github", "file-issue", "ok", 0)
        self.assert_line("post https://api.github.com:443/repos/acme/widget/issues/", "github", "file-issue", "ok", 0)
        self.assert_line("PUT https://api.github.com/v1/data.json", "github", "rules[2]", "ok", 0)
        self.assert_line("GET https://api.github.com/repos/acme/%73ecrets", "github", "rules[0]", "ok", 0)

    def test_denied_by_deny_before_rules_or_by_no_rule(self):
        self.assert_line("DELETE https://api.github.com/repos/acme/widget", "github", "deny[0]", "request denied", 1)
        self.assert_line("delete https://api.github.com/repos/acme/widget", "github", "deny[0]", "request denied", 1)
        self.assert_line("GET https://api.github.com/repos/acme/widget/hooks/1", "github", "no-hooks",
                         "request denied", 1)
        self.assert_line("GET https://api.github.com/repos/acme/widget/%68ooks/1", "github", "no-hooks",
                         "request denied", 1)
        # "**" matches one or more segments: never the prefix itself.
        self.assert_line("GET https://api.github.com/repos/acme", "github", "-", "request denied", 1)
        self.assert_line("GET https://api.github.com/repos/other/widget", "github", "-", "request denied", 1)
        self.assert_line("GET https://api.github.com/v1/a/data.json", "github", "-", "request denied", 1)

    def test_bad_paths_in_either_case(self):
        for path in ("/repos/acme/%2e%2E/other", "/repos/acme/../other", "/repos/acme/./x", "/repos//acme",
                     "/repos/acme%2Fwidget", "/repos/acme%2fwidget", "/repos/acme%5Cwidget", "/repos/acme%5cwidget",
                     "/repos/acme%00", "/repos/acme\\widget", "/repos/acme/%zz", "/repos/acme/a b"):
            with self.subTest(path=path):
                self.assert_line("GET https://api.github.com" + path, "github", "-", "bad path", 1)
        # The query is neither matched nor checked.
        self.assert_line("GET https://api.github.com/repos/acme/x?p=/../%2F%00//", "github", "rules[0]", "ok", 0)

    def test_access_and_report_mode(self):
        # *.example.com is read-only in report mode: a denial goes on, and counts as allowed.
        self.assert_line("GET https://www.example.com/anything", "*.example.com:443", "access", "ok", 0)
        self.assert_line("POST https://www.example.com/anything", "*.example.com:443", "access",
                         "request denied (report mode)", 0)
        # A bad path is refused in report mode too.
        self.assert_line("GET https://www.example.com/a/../b", "*.example.com:443", "-", "bad path", 1)
        # An exact entry on its own port, enforced.
        self.assert_line("PATCH https://ro.example.com:8443/x", "ro.example.com:8443", "access", "request denied", 1)
        self.assert_line("HEAD https://ro.example.com:8443/x", "ro.example.com:8443", "access", "ok", 0)

    def test_a_host_no_endpoint_names_passes_unjudged(self):
        # example.com is not below *.example.com; ro.example.com:444 is on no endpoint's port.
        _, lines, err = self.judge("DELETE https://example.com/anything", "DELETE https://ro.example.com:444/x",
                                   extra=("--resolve", EXAMPLE))
        self.assertEqual(lines, [("DELETE https://example.com/anything", "-", "-", "ok"),
                                 ("DELETE https://ro.example.com:444/x", "-", "-", "ok")], err)

    def test_a_refused_host_is_refused_whatever_the_rules(self):
        code, lines, err = self.check("--inspect", "api.github.com", "--resolve", "api.github.com=10.0.0.1",
                                      "--allow", "api.github.com", "GET https://api.github.com/x",
                                      "GET https://other.test/x")
        self.assertEqual(lines, [("GET https://api.github.com/x", "api.github.com:443", "-", "private"),
                                 ("GET https://other.test/x", "-", "-", "not-listed")], err)
        self.assertEqual(code, 1)
        code, lines, _ = self.check("GET https://user@api.github.com/x", "GET https://api.github.com:0/x",
                                    "GET https://[::1/x")
        self.assertEqual([line[1:] for line in lines], [("-", "-", "invalid host"), ("-", "-", "invalid target"),
                                                        ("-", "-", "invalid host")])
        self.assertEqual(code, 1)

    def test_an_inspect_entry_alone_allows_every_sound_request(self):
        code, lines, err = self.check("--inspect", "api.github.com", "--resolve", GITHUB,
                                      "DELETE https://api.github.com/anything/at/all", "GET https://api.github.com")
        self.assertEqual(lines, [("DELETE https://api.github.com/anything/at/all", "api.github.com:443", "-", "ok"),
                                 ("GET https://api.github.com", "api.github.com:443", "-", "ok")], err)
        self.assertEqual(code, 0)
        # Port 443 when the entry names none, and only it.
        _, lines, _ = self.check("--inspect", "api.github.com", "--resolve", GITHUB,
                                 "GET https://api.github.com:8443/x//y")
        self.assertEqual(lines, [("GET https://api.github.com:8443/x//y", "-", "-", "ok")])

    def test_plain_targets_and_requests_mix_in_order(self):
        code, lines, _ = self.judge("1.1.1.1", "GET https://api.github.com/repos/acme/x", "10.0.0.1")
        self.assertEqual(lines, [("1.1.1.1", "1.1.1.1", "ok"),
                                 ("GET https://api.github.com/repos/acme/x", "github", "rules[0]", "ok"),
                                 ("10.0.0.1", "10.0.0.1", "private")])
        self.assertEqual(code, 1)

    def test_a_request_that_is_not_one_argument_or_not_https_is_a_usage_error(self):
        for args, words in ((["GET", "https://api.github.com/x"], ["https://api.github.com/x", "one argument"]),
                            (["https://api.github.com/x"], ["one argument"]),
                            (["GET http://api.github.com/x"], ["not https://"]),
                            (["GE(T https://api.github.com/x"], ["HTTP method"]),
                            (["* https://api.github.com/x"], ["HTTP method"])):
            with self.subTest(args=args):
                result = self.boxproxy("check", "--resolve", GITHUB, *args)
                self.assert_usage(result, "boxproxy check: ", *words)

    def test_target_bytes_are_printed_safely(self):
        _, lines, _ = self.check("--inspect", "api.github.com", "--resolve", GITHUB,
                                 "GET https://api.github.com/a\x1b[31m")
        self.assertEqual(lines, [("GET https://api.github.com/a\\x1b[31m", "api.github.com:443", "-", "bad path")])


class BadEntriesTest(InspectTestCase):
    """A bad entry, glob or key is a usage error naming it, for check, serve and run alike."""

    def test_bad_inspect_entries(self):
        for entry, says in (("10.0.0.1", "IP address"), ("https://api.github.com", "URL"),
                            ("api.github.com/repos", "path"), ("*", "bare '*'"), ("localhost", "single label"),
                            ("api.github.com:0", "port"), ("", "empty")):
            for command in (["check", "--inspect", entry, "GET https://x.test/"],
                            ["serve", "--check-config", "--inspect", entry],
                            ["serve", "--socket", "s.sock", "--inspect", entry]):
                with self.subTest(entry=entry, command=command[0]):
                    result = self.boxproxy(*command)
                    self.assert_usage(result, f"boxproxy {command[0]}: --inspect: \"{entry}\"", says)
        self.assertEqual(os.listdir(self.dir), [], "a usage error creates no socket")

    def bad_config(self, endpoint_or_config, *words):
        config = endpoint_or_config if "inspect" in endpoint_or_config else {"inspect": [endpoint_or_config]}
        path = self.write_config(config)
        for command in (["serve", "--check-config", "--config", path],
                        ["check", "--config", path, "GET https://x.test/"]):
            with self.subTest(config=config, command=command[0]):
                result = self.boxproxy(*command)
                self.assert_usage(result, f"boxproxy {command[0]}: --config \"{path}\": key \"inspect\"", *words)

    def test_bad_globs_name_the_glob(self):
        for glob, says in (("repos/*", "starts with '/'"), ("/repos/acme**", "'**' stands only as a whole segment"),
                           ("/a/***", "'**' stands only"), ("/a?x=1", "'?'"), ("/a//b", "empty segment"),
                           ("/a/../b", "\"..\""), ("/a%2Fb", "%2F"), ("/a%5cb", "%5C"), ("/a%00", "%00"),
                           ("/a\\b", "'\\'"), ("/a%g0", "'%'"), ("/a b", "character"), ("", "starts with '/'")):
            with self.subTest(glob=glob):
                self.bad_config({"host": "api.github.com", "rules": [{"method": "GET", "path": glob}]},
                                f'[0].rules[0].path: "{glob}": ', says)
        self.bad_config({"host": "api.github.com", "deny": [{"method": "GET", "path": "/x"},
                                                            {"method": "GET", "path": "/y**"}]},
                        '[0].deny[1].path: "/y**": ')

    def test_bad_keys_and_values_name_them(self):
        cases = [
            ({"inspect": ["api.github.com"]}, '[0]: "\\"api.github.com\\"" is not a JSON object'),
            ({"inspect": {"host": "api.github.com"}}, "is not a JSON array of objects"),
            ({"rules": []}, '[0]: has no "host"'),
            ({"host": "10.0.0.1"}, '[0].host: "10.0.0.1" is an IP address'),
            ({"host": 443}, '[0].host: "443" is not a JSON string'),
            ({"host": "a.test", "acces": "read-only"}, 'unknown key "acces"'),
            ({"host": "a.test", "access": "none"}, '[0].access: "none" is not "read-only" or "read-write"'),
            ({"host": "a.test", "access": "read-only", "rules": []}, 'has both "access" and "rules"'),
            ({"host": "a.test", "mode": "log"}, '[0].mode: "log" is not "enforce" or "report"'),
            ({"host": "a.test", "rules": [{"path": "/"}]}, '[0].rules[0]: has no "method"'),
            ({"host": "a.test", "rules": [{"method": "GET"}]}, '[0].rules[0]: has no "path"'),
            ({"host": "a.test", "rules": [{"method": "GE T", "path": "/"}]},
             '[0].rules[0].method: "GE T" is not an HTTP method'),
            ({"host": "a.test", "rules": [{"method": "GET", "path": "/", "verb": "x"}]}, 'unknown key "verb"'),
            ({"host": "a.test", "rules": [{"method": "GET", "path": "/", "name": "access"}]},
             '[0].rules[0].name: "access"'),
            ({"host": "a.test", "name": "a b"}, '[0].name: "a b" is not a name'),
            ({"host": "a.test", "rules": "GET /"}, "[0].rules: "),
            ({"host": "a.test", "inject": {"Authorization": "Bearer {GitHub}"}}, "[0].inject.Authorization: "),
            ({"host": "a.test", "inject": {"Authorization": "Bearer x\r\nEvil: 1"}}, "printable ASCII"),
            ({"host": "a.test", "inject": {"Bad Header": "x"}}, '[0].inject: "Bad Header" is not a header name'),
            ({"host": "a.test", "inject": {"x-key": "{a}", "X-Key": "{b}"}}, "names the header"),
            ({"host": "a.test", "secrets": ["GitHub"]}, "[0].secrets[0]: \"GitHub\" is not a secret's name"),
            ({"host": "a.test", "secrets": ["a", "a"]}, "[0].secrets[1]: \"a\" is named twice"),
            ({"inspect": [{"host": "a.test"}, {"host": "A.test.:443"}]},
             '[1].host: "a.test:443" names the endpoint a.test:443 again, as --config'),
            # SPEC §19a: no credential on a wildcard; method lists; "case"; "get-bodies".
            ({"host": "*.a.test", "inject": {"Authorization": "Bearer {k}"}},
             '[0]: "*.a.test:443" is a wildcard endpoint and cannot carry "inject"'),
            ({"inspect": [{"host": "a.test", "secrets": ["k"]}, {"host": "*.a.test:8443", "secrets": ["k"]}]},
             '[1]: "*.a.test:8443" is a wildcard endpoint and cannot carry "secrets"'),
            ({"host": "a.test", "rules": [{"method": [], "path": "/"}]}, "[0].rules[0].method: \"[]\" is an empty list"),
            ({"host": "a.test", "deny": [{"method": ["GET", "get"], "path": "/"}]}, 'names "get" twice'),
            ({"host": "a.test", "rules": [{"method": ["*", "GET"], "path": "/"}]}, '"*" stands alone'),
            ({"host": "a.test", "rules": [{"method": ["GET", 7], "path": "/"}]},
             '[0].rules[0].method[1]: "7" is not a JSON string'),
            ({"host": "a.test", "case": "ignore"}, '[0].case: "ignore" is not "sensitive" or "insensitive"'),
            ({"host": "a.test", "get-bodies": 1}, '[0].get-bodies: "1" is not true or false'),
            ({"host": "a.test", "rules": [{"method": "GET", "path": "/a/..;/b"}]}, '"/a/..;/b": holds a "." or ".."'),
        ]
        for config, says in cases:
            self.bad_config(config, says)

    def test_a_wildcard_endpoint_with_a_credential_does_not_start(self):
        # SPEC §19a: a name a tenant of the domain registers would get the credential. serve (and
        # run) stop at the usage error, before the inspector or the socket.
        path = self.write_config({"inspect": [{"host": "*.azurewebsites.net",
                                               "inject": {"x-functions-key": "{key}"}}]})
        for command in (["serve", "--socket", "s.sock", "--config", path],
                        ["run", "--config", path, "--", "true"]):
            with self.subTest(command=command[0]):
                result = self.boxproxy(*command)
                self.assert_usage(result, f'--config "{path}": key "inspect"[0]: "*.azurewebsites.net:443" is a '
                                          'wildcard endpoint and cannot carry "inject"', "name each host instead")
        self.assertEqual(os.listdir(self.dir), ["c.json"], "a usage error creates no socket")

    def test_the_same_host_across_both_sources_names_both(self):
        path = self.write_config({"inspect": [{"host": "api.github.com", "access": "read-only"}]})
        result = self.boxproxy("serve", "--check-config", "--config", path, "--inspect", "API.github.com:443")
        self.assert_usage(result, 'boxproxy serve: --inspect: "API.github.com:443" names the endpoint '
                                  f'api.github.com:443 again, as --config "{path}": key "inspect"[0].host did')
        result = self.boxproxy("check", "--inspect", "a.test", "--inspect", "a.test.", "GET https://a.test/")
        self.assert_usage(result, 'boxproxy check: --inspect: "a.test." names the endpoint a.test:443 again, '
                                  "as --inspect did")

    def test_a_wildcard_and_a_name_below_it_are_two_endpoints(self):
        result = self.boxproxy("serve", "--check-config", "--inspect", "*.github.com", "--inspect", "api.github.com",
                               "--inspect", "api.github.com:8443")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([e["host"] for e in json.loads(result.stdout)["inspect"]],
                         ["*.github.com:443", "api.github.com:443", "api.github.com:8443"])


class FailClosedTest(InspectTestCase):
    """An inspected endpoint is never let through as an opaque tunnel: serve without its inspector
    does not start, and neither does run's COMMAND."""

    def test_serve_without_its_inspector_does_not_start(self):
        # This build's boxproxy alone in a directory: no boxproxy-inspect beside it.
        lonely = os.path.join(self.dir, "bin")
        os.makedirs(lonely)
        shutil.copy(binary(), os.path.join(lonely, "boxproxy"))
        result = subprocess.run([os.path.join(lonely, "boxproxy"), "serve", "--socket", "s.sock", "--inspect",
                                 "api.github.com"], cwd=self.dir, capture_output=True, text=True, timeout=30)
        if os.path.exists("/usr/local/libexec/boxproxy/boxproxy-inspect"):
            self.skipTest("an installed boxproxy-inspect would be found")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("boxproxy-inspect", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "s.sock")), "nothing is bound")
        # Without an endpoint it starts as before: --check-config shows no "inspect".
        result = self.boxproxy("serve", "--check-config", "--socket", "s.sock")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("inspect", json.loads(result.stdout))

    def test_run_without_the_inspector_never_runs_the_command(self):
        # run takes endpoints (its box trusts the session's CA: test_run_inspect.py), but a proxy
        # that cannot inspect does not start, and then neither does COMMAND.
        lonely = os.path.join(self.dir, "bin")
        os.makedirs(lonely)
        shutil.copy(binary(), os.path.join(lonely, "boxproxy"))
        if os.path.exists("/usr/local/libexec/boxproxy/boxproxy-inspect"):
            self.skipTest("an installed boxproxy-inspect would be found")
        marker = os.path.join(self.dir, "ran")
        for args in (("--inspect", "api.github.com"),
                     ("--config", self.write_config({"inspect": [{"host": "api.github.com"}]}))):
            result = subprocess.run([os.path.join(lonely, "boxproxy"), "run", *args, "--", "touch", marker],
                                    cwd=self.dir, capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 125, result.stderr)
            self.assertIn("boxproxy-inspect", result.stderr)
            self.assertIn("boxproxy run: the proxy did not start", result.stderr)
            self.assertFalse(os.path.exists(marker), "COMMAND never ran")


class CheckRoundTwoTest(InspectTestCase):
    """SPEC §19a's rules through check, which runs serve's judge: a segment whose part before ';' is
    "." or ".." is bad path; a deny matches the path as sent or without ';'-parameters, a grant must
    match both; "case": "insensitive"; method lists. Names resolve to 127.0.0.2, permitted: check
    never dials."""

    CONFIG = {"inspect": [
        {"host": "api.example.test",
         "rules": [{"method": ["GET", "HEAD"], "path": "/allowed/**"}],
         "deny": [{"method": "*", "path": "/allowed/secret/**", "name": "no-secret"}]},
        {"host": "files.example.test", "case": "insensitive",
         "rules": [{"method": "GET", "path": "/Public/**"}],
         "deny": [{"method": ["PUT", "DELETE"], "path": "/public/**", "name": "no-writes"},
                  {"method": "*", "path": "/public/admin/**", "name": "no-admin"}]},
    ]}

    def judge(self, *targets):
        config = self.write_config(self.CONFIG)
        return self.check("--config", config, "--permit", "127.0.0.2/32", "--resolve", "api.example.test=127.0.0.2",
                          "--resolve", "files.example.test=127.0.0.2", *targets)

    def assert_lines(self, rows):
        code, lines, err = self.judge(*[target for target, _, _ in rows])
        self.assertEqual([line[2:] for line in lines], [(rule, verdict) for _, rule, verdict in rows], err)
        self.assertEqual([line[0] for line in lines], [target for target, _, _ in rows])
        self.assertEqual(code, 0 if all(verdict == "ok" for _, _, verdict in rows) else 1)

    def test_a_dot_segment_behind_a_parameter_is_a_bad_path(self):
        api = "https://api.example.test"
        self.assert_lines([(f"GET {api}/allowed/..;/other", "-", "bad path"),
                           (f"GET {api}/allowed/.;x/other", "-", "bad path"),
                           (f"GET {api}/allowed/%2e%2E;/other", "-", "bad path"),
                           (f"GET {api}/allowed/x/..;y=1", "-", "bad path"),
                           (f"GET {api}/allowed/;x/other", "-", "bad path"),  # only parameters
                           (f"GET {api}/allowed/x;..", "rules[0]", "ok")])  # dots inside a parameter

    def test_a_deny_matches_either_reading_a_grant_both(self):
        api = "https://api.example.test"
        self.assert_lines([(f"GET {api}/allowed/secret;x/k", "no-secret", "request denied"),
                           (f"GET {api}/allowed/secret;/k", "no-secret", "request denied"),
                           (f"HEAD {api}/allowed/secret;a=1;b/k;c", "no-secret", "request denied"),
                           (f"GET {api}/allowed/secret%3Bx/k", "rules[0]", "ok"),  # an encoded ';' is data
                           (f"GET {api}/allowed/other;x/k", "rules[0]", "ok"),
                           (f"GET {api}/allowed;x/k", "-", "request denied")])  # as sent, not under /allowed/

    def test_a_method_list_allows_each_of_its_methods(self):
        api = "https://api.example.test"
        self.assert_lines([(f"GET {api}/allowed/x", "rules[0]", "ok"),
                           (f"HEAD {api}/allowed/x", "rules[0]", "ok"),
                           (f"head {api}/allowed/x", "rules[0]", "ok"),
                           (f"POST {api}/allowed/x", "-", "request denied"),
                           (f"OPTIONS {api}/allowed/x", "-", "request denied")])

    def test_case_insensitive_folds_rules_and_paths(self):
        files = "https://files.example.test"
        self.assert_lines([(f"GET {files}/public/readme", "rules[0]", "ok"),
                           (f"GET {files}/PUBLIC/readme", "rules[0]", "ok"),
                           (f"GET {files}/Public/ADMIN/keys", "no-admin", "request denied"),
                           (f"GET {files}/PUBLIC/Admin;x/keys", "no-admin", "request denied"),
                           (f"DELETE {files}/PuBlIc/x", "no-writes", "request denied"),
                           (f"GET {files}/private/x", "-", "request denied")])
        # The same rules, case-sensitive: /PUBLIC is another path, and /Public/ADMIN no admin path.
        self.CONFIG = json.loads(json.dumps(self.CONFIG))
        del self.CONFIG["inspect"][1]["case"]
        self.assert_lines([(f"GET {files}/PUBLIC/readme", "-", "request denied"),
                           (f"GET {files}/Public/ADMIN/keys", "rules[0]", "ok")])


class GithubExampleTest(InspectTestCase):
    """The manual's GitHub example (Request inspection), which is examples/github.json, lets git
    clone and fetch (smart HTTP: GET info/refs, then POST git-upload-pack) and never push, and a
    HEAD has its rule (issue 37 item 7): check answers as the manual says."""

    def test_examples_github_json_is_the_manuals_and_answers_as_it_says(self):
        from test_manual_examples import manual_block  # the manual's blocks, as a reader sees them
        example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                               "examples", "github.json")
        with open(example) as f:
            self.assertEqual(json.load(f), json.loads(manual_block('"name": "file-issue"')))
        rows = [
            ("GET https://api.github.com/repos/acme/widget", "github", "rules[0]", "ok"),
            ("HEAD https://api.github.com/repos/acme/widget", "github", "rules[0]", "ok"),  # HEAD has its rule
            ("GET https://github.com/acme/widget/info/refs?service=git-upload-pack", "git", "rules[0]", "ok"),
            ("POST https://github.com/acme/widget/git-upload-pack", "git", "fetch", "ok"),
            ("GET https://github.com/acme/widget.git/info/refs?service=git-upload-pack", "git", "rules[0]", "ok"),
            ("POST https://github.com/acme/widget.git/git-upload-pack", "git", "fetch", "ok"),
            ("HEAD https://github.com/acme/widget.git/info/refs", "git", "rules[0]", "ok"),
            # A push asks the same way (the query is not matched), and is refused when it sends.
            ("GET https://github.com/acme/widget.git/info/refs?service=git-receive-pack", "git", "rules[0]", "ok"),
            ("POST https://github.com/acme/widget.git/git-receive-pack", "git", "-", "request denied"),
            ("POST https://github.com/other/widget.git/git-upload-pack", "git", "-", "request denied"),
            ("GET https://github.com/acme/widget/settings", "git", "-", "request denied"),
        ]
        code, lines, err = self.check("--config", example, "--resolve", GITHUB, "--resolve", "github.com=140.82.112.3",
                                      *[row[0] for row in rows])
        self.assertEqual(lines, rows, err)
        self.assertEqual(code, 1)


class CheckConfigInspectTest(InspectTestCase):
    """--check-config lists the endpoints and rules in force, as a config that reads back the same."""

    def round_trip(self, *args):
        first = self.boxproxy("serve", "--check-config", *args)
        self.assertEqual(first.returncode, 0, first.stderr)
        stored = self.write_config(first.stdout, "stored.json")
        second = self.boxproxy("serve", "--check-config", "--config", stored)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(second.stdout, first.stdout)
        printed = json.loads(first.stdout)
        for schema in ("config", "check-config"):
            self.assertEqual([e.message for e in validator(schema).iter_errors(printed)], [], schema)
        return printed

    def test_every_endpoint_key_round_trips_canonical(self):
        config = self.write_config({"inspect": [
            {"host": "API.GitHub.com.", "name": "github", "rules": [
                {"method": "get", "path": "/repos/acme/**"},
                {"method": "POST", "path": "/repos/%61cme/*/issues/", "name": "file-issue"}],
             "deny": [{"method": "*", "path": "/repos/*/*/hooks/**"}], "mode": "report",
             "inject": {"Authorization": "Bearer {github}"}, "secrets": ["github", "npm_2"]},
            {"host": "*.example.com:8443", "access": "read-write", "deny": [], "inject": {}, "secrets": []},
            {"host": "empty.example", "rules": []}]})
        printed = self.round_trip("--config", config, "--inspect", "cli.example")
        self.assertEqual(printed["inspect"], [
            {"host": "api.github.com:443", "name": "github",
             "rules": [{"method": "GET", "path": "/repos/acme/**"},
                       {"method": "POST", "path": "/repos/%61cme/*/issues/", "name": "file-issue"}],
             "deny": [{"method": "*", "path": "/repos/*/*/hooks/**"}], "mode": "report",
             "inject": {"Authorization": "Bearer {github}"}, "secrets": ["github", "npm_2"]},
            {"host": "*.example.com:8443", "access": "read-write", "mode": "enforce"},
            {"host": "empty.example:443", "rules": [], "mode": "enforce"},
            {"host": "cli.example:443", "mode": "enforce"}])

    def test_method_lists_case_and_get_bodies_round_trip(self):
        config = self.write_config({"inspect": [
            {"host": "search.example", "case": "insensitive", "get-bodies": True, "hint": True,
             "rules": [{"method": ["get", "HEAD"], "path": "/**"}, {"method": ["POST"], "path": "/_search"}],
             "deny": [{"method": ["PUT", "delete"], "path": "/_all/**"}]},
            {"host": "plain.example", "case": "sensitive", "get-bodies": False, "hint": False}]})
        printed = self.round_trip("--config", config)
        self.assertEqual(printed["inspect"], [
            {"host": "search.example:443",
             "rules": [{"method": ["GET", "HEAD"], "path": "/**"}, {"method": "POST", "path": "/_search"}],
             "deny": [{"method": ["PUT", "DELETE"], "path": "/_all/**"}], "mode": "enforce",
             "case": "insensitive", "get-bodies": True, "hint": True},
            {"host": "plain.example:443", "mode": "enforce"}])
        self.assertEqual(list(printed)[:2], ["inspect", "max-tunnels"], "in --help's order")

    def test_schema_and_serve_agree_on_inspect_configs(self):
        valid = [
            {"inspect": []},
            {"inspect": [{"host": "a.test"}]},
            {"inspect": [{"host": "*.a.test:8443", "name": "a", "access": "read-only", "mode": "enforce",
                          "deny": [{"method": "*", "path": "/**", "name": "all"}]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": "PROPFIND", "path": "/v1/*.json"}],
                          "inject": {"x-api-key": "{key}"}, "secrets": ["key"]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": ["GET", "HEAD"], "path": "/"}],
                          "deny": [{"method": ["*"], "path": "/x"}], "case": "insensitive", "get-bodies": True}]},
            {"inspect": [{"host": "*.a.test", "access": "read-only", "inject": {}, "secrets": []}]},
        ]
        invalid = [
            {"inspect": ["a.test"]},
            {"inspect": {"host": "a.test"}},
            {"inspect": [{}]},
            {"inspect": [{"host": "a.test", "access": "none"}]},
            {"inspect": [{"host": "a.test", "access": "read-only", "rules": []}]},
            {"inspect": [{"host": "a.test", "mode": "REPORT"}]},
            {"inspect": [{"host": "a.test", "other": 1}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": "GET"}]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": "GE T", "path": "/"}]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": "GET", "path": "x"}]}]},
            {"inspect": [{"host": "a.test", "name": "access"}]},
            {"inspect": [{"host": "a.test", "secrets": ["A"]}]},
            {"inspect": [{"host": "a.test", "inject": {"k": "{A}"}}]},
            {"inspect": [{"host": "*.a.test", "inject": {"k": "{a}"}}]},
            {"inspect": [{"host": "*.a.test:8443", "secrets": ["a"]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": [], "path": "/"}]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": ["GET", "GET"], "path": "/"}]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": ["*", "GET"], "path": "/"}]}]},
            {"inspect": [{"host": "a.test", "rules": [{"method": ["G T"], "path": "/"}]}]},
            {"inspect": [{"host": "a.test", "case": "Insensitive"}]},
            {"inspect": [{"host": "a.test", "get-bodies": "true"}]},
        ]
        schema = validator("config")
        for config in valid + invalid:
            with self.subTest(config=config):
                by_schema = schema.is_valid(config)
                self.assertEqual(by_schema, config in valid, list(schema.iter_errors(config)))
                result = self.boxproxy("serve", "--check-config", "--config", self.write_config(config))
                self.assertEqual(result.returncode == 0, by_schema, result.stderr)
        # Where serve is stricter than the schema: a glob's syntax, a host entry's.
        for config in ({"inspect": [{"host": "a.test", "rules": [{"method": "GET", "path": "/a**"}]}]},
                       {"inspect": [{"host": "10.0.0.1"}]}):
            with self.subTest(config=config):
                self.assertTrue(schema.is_valid(config))
                result = self.boxproxy("serve", "--check-config", "--config", self.write_config(config))
                self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    unittest.main()
