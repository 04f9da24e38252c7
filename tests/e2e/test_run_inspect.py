# SPDX-License-Identifier: Apache-2.0
"""`boxproxy run --inspect` (SPEC §18): the box trusts the session's CA. A TLS origin of the test's
own on 127.0.0.2 (a certificate made here, given to the proxy with --upstream-ca) is inspected; in
the box curl (no --cacert), Python's urllib (the default SSL context), git and Java reach it through
the proxy variables run sets and nothing else: an allowed path gets the origin's answer, a denied one
the proxy's 403 with x-egress-refused. The box's /etc/ssl/certs/ca-certificates.crt is the system's
bundle followed by the session's CA, read-only; the host's is unchanged. The tests skip, saying
why, where this system cannot make a box or lacks the client."""

import hashlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, GitOrigin, TlsOrigin, make_certificate
from harness import Proxy, binary

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
INSPECTOR = os.path.join(os.path.dirname(binary()), "boxproxy-inspect")
BODY = "x" * 511 + "\n"  # what the harness's HTTP origin answers GET with
TRUST_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO",
                   "PIP_CERT")

# In the box: GET each URL with urllib (HTTPS_PROXY, the default SSL context) and print
# "<status> <x-egress-refused or -> <body length>" per URL.
PYTHON_CLIENT = textwrap.dedent("""
    import sys, urllib.error, urllib.request
    for url in sys.argv[1:]:
        try:
            with urllib.request.urlopen(url, timeout=20) as r:
                print(r.status, r.headers.get("x-egress-refused", "-"), len(r.read()))
        except urllib.error.HTTPError as e:
            print(e.code, e.headers.get("x-egress-refused", "-"), len(e.read()))
""")

# In the box: curl (no --cacert) of each URL: "<status> <x-egress-refused or -> <body length>".
CURL_CLIENT = textwrap.dedent("""
    for url in "$@"; do
      status=$(curl -sS --max-time 20 -D head -o body -w '%{http_code}' "$url") || exit 9
      refused=$(grep -i '^x-egress-refused:' head | cut -d: -f2 | tr -d ' \\r')
      echo "$status ${refused:--} $(wc -c < body)"
    done
""")

JAVA_CLIENT = textwrap.dedent("""
    import java.net.URL;
    import javax.net.ssl.HttpsURLConnection;

    public class Get {
        public static void main(String[] args) throws Exception {
            HttpsURLConnection c = (HttpsURLConnection) new URL(args[0]).openConnection();
            c.setConnectTimeout(20000);
            c.setReadTimeout(20000);
            System.out.println("java " + c.getResponseCode() + " " + c.getInputStream().readAllBytes().length
                               + " proxy=" + c.usingProxy());
        }
    }
""")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
@unittest.skipUnless(os.path.exists(SYSTEM_BUNDLE), f"no {SYSTEM_BUNDLE} here (Debian's ca-certificates)")
class RunInspectTest(BoxTestCase):

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-run-inspect-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.cert, self.key = make_certificate(self.dir)
        self.origin = TlsOrigin(self.cert, self.key)
        self.addCleanup(self.origin.close)
        self.url = f"https://origin.test:{self.origin.port}"
        self.host_bundle = digest(SYSTEM_BUNDLE)

    def tearDown(self):
        # Whatever the box saw, the host's bundle is the host's.
        self.assertEqual(digest(SYSTEM_BUNDLE), self.host_bundle, f"run changed the host's {SYSTEM_BUNDLE}")
        super().tearDown()

    def config(self, endpoints):
        path = os.path.join(self.dir, "config.json")
        with open(path, "w") as f:
            json.dump({"inspect": endpoints}, f)
        return path

    def run_box(self, serve_args, command, timeout=RUN_TIMEOUT, env=None):
        r = self.box.run(["--resolve", "origin.test=127.0.0.2", "--upstream-ca", self.cert, *serve_args], command,
                         timeout=timeout, env=env, cwd=self.dir)
        self.assertEqual(self.box.leftovers(), [], "run left its private directory behind")
        return r

    def rules(self):
        return ["--config", self.config([{"host": f"origin.test:{self.origin.port}",
                                          "rules": [{"method": "GET", "path": "/allowed/**"}]}])]

    def lines(self, r):
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        return r.stdout.decode().splitlines()

    def test_curl_trusts_the_session_ca_and_meets_the_rules(self):
        script = os.path.join(self.dir, "get.sh")
        with open(script, "w") as f:
            f.write(CURL_CLIENT)
        r = self.run_box(self.rules(), ["sh", script, f"{self.url}/allowed/x", f"{self.url}/denied/x"])
        lines = self.lines(r)
        self.assertEqual(lines[0], f"200 - {len(BODY)}", r.stderr[-3000:])
        status, refused, _ = lines[1].split(" ")
        self.assertEqual((status, refused.lower()), ("403", "requestdenied"), r.stderr[-3000:])
        self.assertEqual([q["path"] for q in self.origin.requests], ["/allowed/x"])
        # Each went through the proxy, inspected: one request line each.
        stderr = r.stderr.decode()
        self.assertEqual(stderr.count("egress request host=\"origin.test\""), 2, stderr[-3000:])

    def test_python_urllib_trusts_the_session_ca_and_meets_the_rules(self):
        script = os.path.join(self.dir, "get.py")
        with open(script, "w") as f:
            f.write(PYTHON_CLIENT)
        r = self.run_box(self.rules(), [sys.executable, script, f"{self.url}/allowed/y", f"{self.url}/denied/y"])
        lines = self.lines(r)
        self.assertEqual(lines[0], f"200 - {len(BODY)}", r.stderr[-3000:])
        status, refused, _ = lines[1].split(" ", 2)
        self.assertEqual(status, "403", r.stderr[-3000:])
        self.assertIn("request denied", lines[1])
        self.assertEqual([q["path"] for q in self.origin.requests], ["/allowed/y"])

    def test_the_box_sees_the_bundle_and_the_variables_name_it(self):
        ca_copy = os.path.join(self.dir, "seen-ca.pem")
        # In the box: the variables, the bundle's tail and whether it can be written.
        script = os.path.join(self.dir, "look.sh")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""
                for v in {' '.join(TRUST_VARIABLES)}; do eval "echo $v=\\$$v"; done
                cat {SYSTEM_BUNDLE} > bundle-seen.pem
                if echo junk >> {SYSTEM_BUNDLE} 2>/dev/null; then echo writable; else echo read-only; fi
                # Nor through its own path in run's private directory (the same file).
                source="$(dirname "$BOXPROXY_SOCKET")/ca-bundle.pem"
                test -f "$source" || echo "no $source"
                if echo junk >> "$source" 2>/dev/null; then echo writable; else echo read-only; fi
            """))
        r = self.run_box(["--inspect", f"origin.test:{self.origin.port}", "--ca-out", ca_copy], ["sh", script])
        lines = self.lines(r)
        self.assertEqual(lines[:len(TRUST_VARIABLES)], [f"{v}={SYSTEM_BUNDLE}" for v in TRUST_VARIABLES])
        self.assertEqual(lines[len(TRUST_VARIABLES):], ["read-only", "read-only"])
        with open(SYSTEM_BUNDLE, "rb") as f:
            system = f.read()
        with open(ca_copy, "rb") as f:
            ca = f.read()
        with open(os.path.join(self.dir, "bundle-seen.pem"), "rb") as f:
            seen = f.read()
        self.assertTrue(seen.startswith(system), "the box's bundle does not start with the system's CAs")
        self.assertEqual(seen[len(system):].strip(), ca.strip(), "the box's bundle does not end with the session CA")

    def test_git_ls_remote_over_https_through_the_inspector(self):
        if shutil.which("git") is None:
            self.skipTest("git is not installed")
        git = GitOrigin(os.path.join(self.dir, "git"))
        self.addCleanup(git.close)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        git.server.socket = context.wrap_socket(git.server.socket, server_side=True)
        env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": self.dir, "GIT_TERMINAL_PROMPT": "0"}
        r = self.run_box(["--inspect", f"origin.test:{git.port}"],
                         ["git", "ls-remote", f"https://origin.test:{git.port}/repo.git"], env=env)
        lines = self.lines(r)
        self.assertTrue(any(line.endswith("\trefs/heads/main") for line in lines), (lines, r.stderr[-3000:]))
        self.assertTrue(any(hit.startswith("/repo.git/info/refs") for hit in git.hits), git.hits)

    def test_java_trusts_the_session_ca(self):
        java = shutil.which("java")
        if java is None or shutil.which("keytool") is None:
            self.skipTest("no JDK here (Debian's default-jdk-headless: scripts/install-deps)")
        source = os.path.join(self.dir, "Get.java")
        with open(source, "w") as f:
            f.write(JAVA_CLIENT)
        r = self.run_box(self.rules(), [java, "-XX:-UsePerfData", source, f"{self.url}/allowed/j"],
                         timeout=RUN_TIMEOUT * 2, env={"JAVA_TOOL_OPTIONS": "-Dfile.encoding=UTF-8"})
        self.assertEqual(self.lines(r), [f"java 200 {len(BODY)} proxy=true"], r.stderr[-3000:])
        # After the caller's options and run's proxy properties: the trust store's.
        self.assertRegex(r.stderr.decode(), r"Picked up JAVA_TOOL_OPTIONS: -Dfile.encoding=UTF-8 -Dhttp.proxyHost=\S+ "
                         r".* -Djavax.net.ssl.trustStore=\S+java-trust.jks -Djavax.net.ssl.trustStoreType=JKS "
                         r"-Djavax.net.ssl.trustStorePassword=\S+")

    def test_with_a_jdk_an_inspected_run_starts_no_jvm(self):
        # Issue 37 item 10: keytool made the store (two JVMs, 2.4 s) for every run, even for `true`;
        # run writes it itself now. What the cost meant is a JVM started per run: a `java` and a
        # `keytool` first on PATH that leave a mark when run show that run starts neither, while
        # the box still gets the trust store (the time itself is bench's to measure, not a test's).
        tools = os.path.join(self.dir, "fake-jdk")
        os.makedirs(tools, exist_ok=True)
        mark = os.path.join(self.dir, "jvm-started")
        for name in ("java", "keytool"):
            path = os.path.join(tools, name)
            with open(path, "w") as f:
                f.write(f"#!/bin/sh\necho {name} >> {mark}\nexit 1\n")
            os.chmod(path, 0o755)
        env = {"PATH": f"{tools}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        r = self.run_box(["--inspect", f"origin.test:{self.origin.port}"], ["sh", "-c", "echo $JAVA_TOOL_OPTIONS"],
                         env=env)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("-Djavax.net.ssl.trustStore=", r.stdout.decode())
        self.assertFalse(os.path.exists(mark), "run started a JVM to make the trust store")

    def test_a_trust_store_that_cannot_be_made_means_no_command(self):
        # A CA whose PEM block is not base64 (given to run --socket --ca, which checks only that it
        # looks like PEM), with a JDK on PATH: run fails closed (exit 125, a message saying what it
        # could not make), COMMAND never runs, and nothing is left in run's private directory.
        jdk = os.path.join(self.dir, "jdk", "bin")
        os.makedirs(jdk)
        with open(os.path.join(jdk, "java"), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(os.path.join(jdk, "java"), 0o755)
        broken = os.path.join(self.dir, "broken-ca.pem")
        with open(broken, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot*base64!\n-----END CERTIFICATE-----\n")
        proxy = Proxy(dns=self.box.dns)
        self.addCleanup(proxy.cleanup)
        proxy.start()
        marker = os.path.join(self.dir, "ran")
        r = subprocess.run([binary(), "run", "--socket", proxy.socket_path, "--ca", broken, "--", "touch", marker],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT,
                           env=self.box.env({"PATH": jdk + ":" + os.environ.get("PATH", "/usr/bin:/bin")}))
        self.assertEqual(r.returncode, 125, r.stderr[-3000:])
        self.assertFalse(os.path.exists(marker), "COMMAND ran")
        self.assertIn(b"boxproxy run: cannot make Java's trust store", r.stderr)
        self.assertIn(b"holds a certificate that is not base64 PEM", r.stderr)
        self.assertEqual(self.box.leftovers(), [], "run left its private directory behind")

if __name__ == "__main__":
    unittest.main()
