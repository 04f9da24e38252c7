# SPDX-License-Identifier: Apache-2.0
"""git over HTTPS with a token the box never holds (SPEC §19, §19a): `boxproxy run --secret-env`
gives git a placeholder as the password of its credential; the inspected endpoint lists the secret
(`"secrets": ["git"]`: swapped in Authorization, inside Basic too). The origin is the test's own on
127.0.0.2 behind TLS, out of the box's reach: it asks for Basic (401) as GitHub does, takes only
the real value, and serves a bare repository through Debian's git http-backend (smart HTTP, CGI).
git ls-remote and git clone in the box succeed; the origin got Basic with the real value; the value
is in nothing the box holds afterwards (the clone, its output, the proxy's log)."""

import base64
import http.server
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, ThreadedOrigin, make_certificate
from inspect_support import INSPECTOR

BACKEND = "/usr/lib/git-core/git-http-backend"
VALUE = "ghs-gitvalue-5e1d9c0b7a6f4e3d"  # the token: no other byte of the session holds it
USER = "x-access-token"
CONTENT = "hello through a placeholder\n"

# In the box: git, with a credential helper that answers the placeholder as the password.
BOX_GIT = textwrap.dedent("""
    set -e
    url="$1"
    helper='!f() { echo username=x-access-token; echo "password=$GIT_TOKEN"; }; f'
    echo "token ${GIT_TOKEN%_*}"
    git -c credential.helper="$helper" ls-remote "$url" | cut -f2
    git -c credential.helper="$helper" clone -q "$url" clone
    cat clone/README
""")


def git_env(home):
    return dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=home, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


def bare_repository(directory):
    """`directory`/served/repo.git, a bare repository of one commit (README: CONTENT)."""
    work = os.path.join(directory, "work")
    served = os.path.join(directory, "served")
    os.makedirs(work)
    os.makedirs(served)
    with open(os.path.join(work, "README"), "w") as f:
        f.write(CONTENT)
    for args, cwd in ((["init", "-q", "-b", "main"], work), (["add", "README"], work),
                      (["commit", "-q", "-m", "one"], work),
                      (["clone", "-q", "--bare", work, os.path.join(served, "repo.git")], work)):
        subprocess.run(["git", *args], cwd=cwd, env=git_env(directory), check=True, capture_output=True, timeout=30)
    return served


class _GitBackend(http.server.BaseHTTPRequestHandler):
    """Basic with the real value, or 401; then git http-backend as a CGI program."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")

    def serve(self, method):
        auth = self.headers.get("Authorization")
        self.server.authorizations.append(auth)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        expected = "Basic " + base64.b64encode(f"{USER}:{VALUE}".encode()).decode()
        if auth != expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        env = {"GIT_PROJECT_ROOT": self.server.root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": method, "REMOTE_USER": USER,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "HOME": self.server.root}
        out = subprocess.run([BACKEND], input=body, env=env, capture_output=True, timeout=30).stdout
        head, _, payload = out.partition(b"\r\n\r\n")  # a CGI head, as http-backend writes it
        status = 200
        fields = []
        for line in head.decode().splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                fields.append((name, value.strip()))
        self.send_response(status)
        for name, value in fields:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class GitHttpsOrigin(ThreadedOrigin):
    def __init__(self, directory, cert, key):
        root = bare_repository(directory)
        super().__init__(_GitBackend, cert, key)
        self.server.root = root
        self.server.authorizations = []


def files_holding(root, needle):
    """Every file under `root` whose bytes hold `needle`."""
    found = []
    for parent, _, names in os.walk(root):
        for name in names:
            path = os.path.join(parent, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                if needle in f.read():
                    found.append(path)
    return found


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
@unittest.skipUnless(shutil.which("git") and os.path.exists(BACKEND), f"git or {BACKEND} is not installed")
class GitPlaceholderTest(BoxTestCase):

    def test_git_clones_with_a_placeholder_password_and_the_origin_gets_the_value(self):
        d = self.enterContext(tempfile.TemporaryDirectory(prefix="boxproxy-git-placeholder-"))
        cert, key = make_certificate(d)
        origin = GitHttpsOrigin(os.path.join(d, "origin"), cert, key)
        self.addCleanup(origin.close)
        secret_file = os.path.join(d, "git.token")
        with open(secret_file, "w") as f:
            f.write(VALUE + "\n")
        config = os.path.join(d, "config.json")
        with open(config, "w") as f:
            f.write('{"inspect": [{"host": "origin.test:%d", "secrets": ["git"]}]}' % origin.port)
        script = os.path.join(d, "git.sh")
        with open(script, "w") as f:
            f.write(BOX_GIT)
        box_dir = os.path.join(d, "box")
        os.makedirs(box_dir)
        url = f"https://origin.test:{origin.port}/repo.git"
        r = self.box.run(["--resolve", "origin.test=127.0.0.2", "--upstream-ca", cert, "--config", config,
                          "--secret", f"git={secret_file}", "--secret-env", "GIT_TOKEN=git"],
                         ["sh", script, url], timeout=RUN_TIMEOUT, cwd=box_dir,
                         env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": box_dir, "GIT_TERMINAL_PROMPT": "0"})
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        self.assertEqual(r.stdout.decode().splitlines(), ["token bxp_git", "HEAD", "refs/heads/main",
                                                          CONTENT.strip()], r.stderr[-3000:])
        # The origin asked (401), then got Basic with the real value, request after request.
        real = "Basic " + base64.b64encode(f"{USER}:{VALUE}".encode()).decode()
        self.assertIn(None, origin.server.authorizations)
        self.assertGreaterEqual(origin.server.authorizations.count(real), 2, origin.server.authorizations)
        self.assertEqual(set(origin.server.authorizations), {None, real}, origin.server.authorizations)
        # Nothing the box holds or printed has the value: the clone (.git included), git's and the
        # proxy's output.
        self.assertEqual(files_holding(box_dir, VALUE.encode()), [])
        self.assertNotIn(VALUE.encode(), r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
