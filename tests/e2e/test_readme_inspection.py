# SPDX-License-Identifier: Apache-2.0
"""README.md's two inspection examples (issue 37 item 9), run as test_manual_examples runs the
README's other blocks: each `$ ` command through bash with this build's boxproxy, what it prints
compared with the lines the README shows, ids and timings masked.

The offline HTTPS recipe runs as written (its origin is openssl s_server on 127.0.0.2, its port
8443 or another free one). The quick start's origin is api.github.com, which a test never dials:
an HTTPS origin of the test's own on 127.0.0.2 stands for it, named with the certificate of that
name, and each `boxproxy run` gets `--permit`, `--resolve` and `--upstream-ca` for it; the origin
answers 200 to GET /user only when the token the proxy injects is the key file's, so a token not
injected (or the box's own) shows 401 instead of the README's 200. The token is in the environment
of the command that writes the key file only, as the README has the reader unset it."""

import http.server
import os
import re
import secrets
import ssl
import threading
import unittest

import test_manual_examples as examples
from box_support import make_certificate
from inspect_support import CURL, INSPECTOR

GITHUB_ADDRESS = "140.82.112.6"  # api.github.com's address as the README shows it


class GitHubStandIn:
    """HTTPS on 127.0.0.2 for api.github.com: GET /user is 200 with the expected bearer token, 401
    without; anything else 404. `seen` records (method, path, authorization) of every request."""

    def __init__(self, cert, key, token):
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                authorization = self.headers.get("authorization")
                seen.append((self.command, self.path, authorization))
                status = 404
                if self.path == "/user":
                    status = 200 if authorization == f"Bearer {token}" else 401
                body = b'{"login":"you"}\n' if status == 200 else b"{}\n"
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_DELETE = do_POST = answer

            def log_message(self, *args):
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.server.daemon_threads = True
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = str(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@unittest.skipUnless(os.path.exists(INSPECTOR) and CURL, "needs boxproxy-inspect next to boxproxy, and curl")
class ReadmeInspectionTest(examples.ManualExamplesTest):
    """The examples' runner (ManualExamplesTest's setUp, run_command and check_block), with this
    module's localisation; load_tests below keeps its own tests out of this module's run."""

    github = None

    def localised(self, text):
        text = text.replace("/tmp/o", os.path.join(self.dir, "o")).replace("8443", self.port)
        if self.github is None:
            return text
        port = self.github.port
        stand_in = (f"boxproxy run --permit 127.0.0.2/32 --resolve api.github.com=127.0.0.2 "
                    f"--upstream-ca {self.github_cert} ")
        # A refusal's body names the endpoint with its port (a refused request is the one with up=0):
        # the stand-in's port digits count in its down=.
        text = re.sub(r"up=0 down=(\d+)", lambda m: f"up=0 down={int(m[1]) + len(str(port)) - 3}", text)
        return (text.replace('"host": "api.github.com"', f'"host": "api.github.com:{port}"')
                .replace("https://api.github.com/", f"https://api.github.com:{port}/")
                .replace("boxproxy run ", stand_in)
                .replace("port=443 ", f"port={port} ").replace(f"ip={GITHUB_ADDRESS} ", "ip=127.0.0.2 "))

    def run_command(self, command, localise=True):
        self.env.pop("GITHUB_TOKEN", None)
        if "$GITHUB_TOKEN" in command:
            self.env["GITHUB_TOKEN"] = self.token
        return super().run_command(command, localise)

    def test_readme_offline_https(self):
        self.port = examples.free_port("8443", 9000)
        self.check_block("readme_offline_https")

    def test_readme_inspection_and_credentials(self):
        self.token = "ghp_" + secrets.token_hex(18)
        self.github_cert, key = make_certificate(self.dir, "api.github.com")
        self.github = GitHubStandIn(self.github_cert, key, self.token)
        self.addCleanup(self.github.close)
        self.check_block("readme_inspection_and_credentials")
        # The GET went on with the key file's token; the DELETE never left the proxy.
        self.assertEqual(self.github.seen, [("GET", "/user", f"Bearer {self.token}")])


def load_tests(loader, standard_tests, pattern):
    """This module's own tests only: ManualExamplesTest's are test_manual_examples's to run."""
    del loader, standard_tests, pattern
    return unittest.TestSuite(ReadmeInspectionTest(name) for name in vars(ReadmeInspectionTest)
                              if name.startswith("test_"))


if __name__ == "__main__":
    unittest.main()
