# SPDX-License-Identifier: Apache-2.0
"""Node and Go in a box whose HTTPS is inspected (SPEC §18, issue 24): the box trusts the session's
CA through what `run --inspect` sets up (NODE_EXTRA_CA_CERTS for Node; SSL_CERT_FILE and the box's
system bundle for Go), and each reaches an allowed path of the test's own TLS origin on 127.0.0.2
(its certificate given to the proxy with --upstream-ca) while a denied path gets the proxy's 403
with x-egress-refused and never reaches the origin.

Node's fetch (undici) before Node 24 reads no proxy variable, so the node on PATH runs under `run
--transparent --inspect`: its connection is captured and inspected like any other; Node 24 (where
scripts/install-deps unpacked it) runs under plain `run --inspect` and goes through the variables. Go's net/http honours
HTTPS_PROXY, so it runs under plain `run --inspect`, built from source at test time (the standard
library only, no network, its cache in a temporary directory). The tests skip, saying why, where
this system cannot make a box (or capture), or lacks node or go."""

import json
import os
import shutil
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, build_go
from inspect_support import INSPECTOR, InspectRig
from test_inspect_clients import GO_CLIENT, NODE_CLIENT
from test_transparent import capture_usable

BODY_LENGTH = 512  # what the harness's HTTP origin answers GET with
NODE24 = "/opt/boxproxy-test/node24/bin/node"  # scripts/install-deps puts it there, off PATH

@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class RunInspectClientsTest(InspectRig, BoxTestCase):

    def setUp(self):
        super().setUp()
        self.url = f"https://origin.test:{self.origin.port}"
        self.log = os.path.join(self.dir, "decisions.log")
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": f"origin.test:{self.origin.port}",
                                    "rules": [{"method": "GET", "path": "/allowed/**"}]}]}, f)
        self.serve_args = ["--resolve", "origin.test=127.0.0.2", "--upstream-ca", self.cert, "--config", config,
                           "--log", "json", "--log-file", self.log]

    def check(self, r, client):
        """The box's output for [allowed, denied] and what the origin and the log saw."""
        self.assertEqual(self.box.leftovers(), [], "run left its private directory behind")
        out = r.stdout.decode(errors="replace")
        self.assertEqual(r.returncode, 0, f"{client}: stdout={out[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        records = [json.loads(line) for line in out.splitlines()]  # each response whole, a JSON line
        lines = [f"{q['status']} {dict((k.lower(), v) for k, v in q['headers'].items()).get('x-egress-refused', '-')} "
                 f"{len(q['body'])}" for q in records]
        self.assertEqual(len(lines), 2, r.stderr[-3000:])
        self.assertEqual(lines[0], f"200 - {BODY_LENGTH}", r.stderr[-3000:])
        self.assertEqual(lines[1].rsplit(" ", 1)[0], "403 request denied", r.stderr[-3000:])  # then its one-line body
        self.assertEqual([q["path"] for q in self.origin.requests], [f"/allowed/{client}"])
        with open(self.log) as f:
            lines = [json.loads(line) for line in f if line.startswith("{")]
        requests = [l for l in lines if l.get("kind") == "request"]
        self.assertEqual([(l["method"], l["class"], l["status"], l["rule"]) for l in requests],
                         [("GET", "ok", 200, "rules[0]"), ("GET", "request denied", 403, "-")])

    def test_node_fetch_under_transparent_capture(self):
        node = shutil.which("node") or shutil.which("nodejs")
        if node is None:
            self.skipTest("nodejs is not installed")
        why = capture_usable()
        if why:
            self.skipTest(why)
        urls = [f"{self.url}/allowed/node", f"{self.url}/denied/node"]
        r = self.box.run(["--transparent", *self.serve_args], [node, self.node_script(), *urls], cwd=self.dir)
        self.check(r, "node")

    def test_node24_fetch_through_the_proxy_variables(self):
        # Node 24 and later read the proxy variables (NODE_USE_ENV_PROXY, which run sets): no capture.
        if not os.access(NODE24, os.X_OK):
            self.skipTest(f"no Node 24 at {NODE24} (scripts/install-deps)")
        urls = [f"{self.url}/allowed/node", f"{self.url}/denied/node"]
        r = self.box.run(self.serve_args, [NODE24, self.node_script(), *urls], cwd=self.dir)
        self.check(r, "node")
        self.assertIn("connect", self.log_kinds())

    def test_go_net_http_through_the_proxy_variables(self):
        client = build_go(GO_CLIENT, self.dir)
        r = self.box.run(self.serve_args, [client, f"{self.url}/allowed/go", f"{self.url}/denied/go"], cwd=self.dir,
                         timeout=RUN_TIMEOUT)
        self.check(r, "go")
        self.assertIn("connect", self.log_kinds())

    def node_script(self):
        path = os.path.join(self.dir, "client.js")
        with open(path, "w") as f:
            f.write(NODE_CLIENT)
        return path

    def log_kinds(self):
        """The kinds of the log's lines: "connect" when the client came through the proxy variables
        (the bridge passes its CONNECT on as an HTTP tunnel), not captured."""
        with open(self.log) as f:
            return {json.loads(line).get("kind") for line in f if line.startswith("{")}


if __name__ == "__main__":
    unittest.main()
