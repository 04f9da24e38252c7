# SPDX-License-Identifier: Apache-2.0
"""A gRPC call through an inspected endpoint (SPEC §19, HTTP/2 in any pairing; issue 25 item 4,
stage 2): grpc-go's health service (Debian's golang-google-grpc-dev, built here in GOPATH mode, no
download) behind TLS on 127.0.0.2, and a grpc-go client in a `boxproxy run --inspect` box, which
reaches it through HTTPS_PROXY and trusts the session's CA through SSL_CERT_FILE. The box speaks h2
to the proxy and the proxy h2 to the origin; the response's status travels in HTTP/2 trailers, so
the call returns SERVING only if they come back. A method the rules deny never reaches the origin
and the client sees the refusal (HTTP 403: PermissionDenied). Skipped, saying why, without go or
the gRPC sources, or where this system cannot make a box."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, make_certificate
from harness import binary

INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")
GO = shutil.which("go")
GOPATH = "/usr/share/gocode"
GRPC = os.path.join(GOPATH, "src/google.golang.org/grpc/health/grpc_health_v1")
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_TIMEOUT = 300  # two small programs over grpc-go, on a busy machine


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
@unittest.skipUnless(GO, "no go toolchain (golang-go)")
@unittest.skipUnless(os.path.isdir(GRPC), f"no grpc-go sources in {GOPATH} (golang-google-grpc-dev)")
class InspectGrpcTest(BoxTestCase):

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-grpc-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.cert, self.key = make_certificate(self.dir)
        env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOFLAGS="", CGO_ENABLED="0",
                   GOCACHE=os.environ.get("GOCACHE", os.path.join(tempfile.gettempdir(), "boxproxy-e2e-gocache")))
        for name in ("server", "client"):
            subprocess.run([GO, "build", "-o", os.path.join(self.dir, name), os.path.join(HERE, "grpc", f"{name}.go")],
                           env=env, check=True, capture_output=True, timeout=BUILD_TIMEOUT)
        self.server = subprocess.Popen([os.path.join(self.dir, "server"), self.cert, self.key], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.addCleanup(self.stop_server)
        self.port = int(self.server.stdout.readline().decode().strip() or 0)
        self.assertNotEqual(self.port, 0, "the gRPC server did not start")
        self.target = f"origin.test:{self.port}"

    def stop_server(self):
        self.server.kill()
        self.server.wait(10)
        self.server.stdout.close()
        self.server.stderr.close()

    def test_health_check_returns_serving_and_a_denied_method_is_refused(self):
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": self.target, "rules": [
                {"method": "POST", "path": "/grpc.health.v1.Health/Check"}]}]}, f)
        r = self.box.run(["--resolve", "origin.test=127.0.0.2", "--upstream-ca", self.cert, "--config", config],
                         [os.path.join(self.dir, "client"), self.target], timeout=RUN_TIMEOUT, cwd=self.dir)
        out, err = r.stdout.decode(), r.stderr.decode()
        self.assertEqual(r.returncode, 0, f"stdout={out[-2000:]!r} stderr={err[-3000:]!r}")
        lines = out.splitlines()
        self.assertEqual(lines[0], "check SERVING", err[-3000:])
        self.assertTrue(lines[1].startswith("denied PermissionDenied"), lines[1])
        self.assertIn("403", lines[1])
        # Both went through the inspector: one request line each, the second refused.
        self.assertEqual(err.count('egress request host="origin.test"'), 2, err[-3000:])
        self.assertIn("class=request denied status=403", err)


if __name__ == "__main__":
    unittest.main()
