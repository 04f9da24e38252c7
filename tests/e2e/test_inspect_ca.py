# SPDX-License-Identifier: Apache-2.0
"""The session's CA and the inspector's life, as the manual promises them (SPEC §18; issue 24):
the control channel's hello carries the CA --ca-out wrote; --ca-cert and --ca-key make the leaves
the box sees the operator's CA's, and a key that is not the certificate's stops serve from
starting (exit 1, naming the option); once the inspector is gone, a connection to an inspected
endpoint is refused as upstream tls and serve goes on with every other tunnel."""

import os
import signal
import ssl
import subprocess
import tempfile
import time
import unittest

from control_support import proxy_with_control_fd
from harness import START_TIMEOUT, EchoServer, ProxyTestCase, binary, http_connect, recv_exact, wait_until
from inspect_support import CURL, INSPECTOR, InspectRig, inspector_of
from test_confine import REFUSED


def make_ca(directory, name):
    """A CA of the operator's (ECDSA P-256, CA:TRUE, keyCertSign) made by openssl: (cert, key)."""
    cert = os.path.join(directory, f"{name}.pem")
    key = os.path.join(directory, f"{name}.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def make_short_ca(directory, seconds):
    """A CA of the operator's whose notAfter is `seconds` from now (openssl ca takes an exact end
    date, which req -x509 does not): (cert, key)."""
    key = os.path.join(directory, "short.key")
    csr = os.path.join(directory, "short.csr")
    cert = os.path.join(directory, "short.pem")
    config = os.path.join(directory, "short.cnf")
    open(os.path.join(directory, "index.txt"), "w").close()
    with open(config, "w") as f:
        f.write(f"[ca]\ndefault_ca = short\n[short]\ndatabase = {directory}/index.txt\n"
                f"new_certs_dir = {directory}\nrand_serial = yes\ndefault_md = sha256\npolicy = any\n"
                "x509_extensions = v3ca\n[any]\ncommonName = supplied\n"
                "[v3ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", csr, "-subj", "/CN=Short Test CA"], check=True, capture_output=True,
                   timeout=60)
    stamp = lambda t: time.strftime("%Y%m%d%H%M%SZ", time.gmtime(t))
    now = time.time()
    subprocess.run(["openssl", "ca", "-batch", "-config", config, "-selfsign", "-keyfile", key, "-in", csr,
                    "-startdate", stamp(now - 3600), "-enddate", stamp(now + seconds), "-out", cert],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def pem_der(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


@unittest.skipIf(CURL is None, "curl is not installed")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class SessionCaTest(InspectRig, ProxyTestCase):

    def test_hello_carries_the_ca_that_ca_out_wrote(self):
        p, client = proxy_with_control_fd(self, start=self.start_inspecting)
        reply = client.request("hello")
        self.assertTrue(reply["ok"], reply)
        with open(self.ca) as f:
            written = f.read()
        self.assertTrue(written.startswith("-----BEGIN CERTIFICATE-----"), written)
        self.assertEqual(reply.get("ca"), written)
        # And that is the CA the box's client must trust: a leaf it signed is accepted.
        code, status, _, err = self.get(p, "/x")
        self.assertEqual((code, status), (0, 200), err)

    def test_hello_has_no_ca_when_nothing_is_inspected(self):
        p, client = proxy_with_control_fd(self)
        reply = client.request("hello")
        self.assertTrue(reply["ok"], reply)
        self.assertNotIn("ca", reply)

    def test_the_operators_ca_signs_the_leaf_the_client_sees(self):
        operator_cert, operator_key = make_ca(self.dir, "Operator Test CA")
        other_cert, _ = make_ca(self.dir, "Another CA")
        p = self.start_inspecting("--ca-cert", operator_cert, "--ca-key", operator_key)
        # The client trusting the operator's CA only: the leaf chains to it.
        code, status, _, err = self.get(p, "/x", cacert=operator_cert)
        self.assertEqual((code, status), (0, 200), err)
        # Trusting another CA only, the same client refuses the leaf: it is not signed by any CA.
        code, status, _, err = self.get(p, "/y", cacert=other_cert)
        self.assertNotEqual(code, 0)
        self.assertIsNone(status, err)
        # The leaf itself: for origin.test, issued by the operator's CA; --ca-out wrote that CA.
        s, resp = http_connect(p, f"origin.test:{self.origin.port}")
        self.assertEqual(resp.status, 200)
        context = ssl.create_default_context(cafile=operator_cert)
        with context.wrap_socket(s, server_hostname="origin.test") as tls:
            leaf = tls.getpeercert()
        self.assertEqual(dict(x[0] for x in leaf["issuer"]), {"commonName": "Operator Test CA"})
        self.assertEqual(leaf["subjectAltName"], (("DNS", "origin.test"),))
        self.assertEqual(pem_der(self.ca), pem_der(operator_cert))
        # The leaves were made after the inspector confined itself: nothing it needed was refused.
        p.stop()
        self.assertIsNone(REFUSED.search(p.stderr_text()), p.stderr_text())

    def test_a_ca_that_expires_while_serving_refuses_and_says_why_once(self):
        # A session that outlives its CA (its own lasts 30 days; here the operator's, 4 seconds)
        # can make no leaf: each inspected connection is refused, and the inspector says why on
        # standard error once, not once per connection.
        cert, key = make_short_ca(self.dir, 4)
        made = time.time()
        p = self.start_inspecting("--ca-cert", cert, "--ca-key", key)
        code, status, _, err = self.get(p, "/before", cacert=cert)
        self.assertEqual((code, status), (0, 200), err)
        wait_until(lambda: time.time() > made + 5, timeout=10)
        for path in ("/after", "/again"):
            # The cached leaf ends with its CA, so each connection needs a new one.
            code, _, _, _ = self.get(p, path, cacert=cert)
            self.assertNotEqual(code, 0)
        wait_until(lambda: "has expired" in p.stderr_text(), timeout=5)
        said = [l for l in p.stderr_text().splitlines() if "no leaf certificate can be made" in l]
        self.assertEqual(said, ["boxproxy-inspect: no leaf certificate can be made: the session's CA has expired"])
        self.assertEqual([r["path"] for r in self.origin.requests], ["/before"])

    def test_a_leaf_is_made_once_per_host_and_reused(self):
        # The leaf cache: every connection to one host is shown the same leaf (one made, the rest
        # hits), whichever way the box comes; another name on the same endpoint would get its own.
        p = self.start_inspecting()
        seen = []
        for _ in range(4):
            s, resp = http_connect(p, f"origin.test:{self.origin.port}")
            self.assertEqual(resp.status, 200)
            context = ssl.create_default_context(cafile=self.ca)
            with context.wrap_socket(s, server_hostname="origin.test") as tls:
                seen.append(tls.getpeercert(binary_form=True))
        self.assertEqual(len(set(seen)), 1)

    def serve_with_ca(self, cert, key):
        """serve inspecting, with --ca-cert and --ca-key: (exit code, stderr, whether the socket
        was made). Bounded: START_TIMEOUT."""
        d = tempfile.mkdtemp(dir=self.dir)
        sock = os.path.join(d, "s.sock")
        result = subprocess.run([binary(), "serve", "--socket", sock, "--permit", "127.0.0.2/32",
                                 "--inspect", f"origin.test:{self.origin.port}", "--upstream-ca", self.cert,
                                 "--ca-cert", cert, "--ca-key", key], stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=START_TIMEOUT + 10)
        return result.returncode, result.stderr, os.path.exists(sock)

    def test_a_key_that_is_not_the_certificates_stops_serve_from_starting(self):
        cert, _ = make_ca(self.dir, "Operator Test CA")
        _, other_key = make_ca(self.dir, "Another CA")
        code, stderr, made = self.serve_with_ca(cert, other_key)
        self.assertEqual(code, 1, stderr)
        # Named by the options that gave them (the inspector reads them as serve's descriptors).
        self.assertIn("--ca-key: is not the private key of the certificate in --ca-cert", stderr)
        self.assertFalse(made)

    def test_a_key_file_that_holds_no_key_stops_serve_from_starting(self):
        cert, _ = make_ca(self.dir, "Operator Test CA")
        garbage = os.path.join(self.dir, "garbage.key")
        with open(garbage, "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        code, stderr, made = self.serve_with_ca(cert, garbage)
        self.assertEqual(code, 1, stderr)
        self.assertIn("--ca-key: holds no PEM private key", stderr)
        self.assertFalse(made)


@unittest.skipIf(CURL is None, "curl is not installed")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectorDeathTest(InspectRig, ProxyTestCase):

    def test_after_the_inspector_dies_inspected_connections_are_refused_and_tunnels_go_on(self):
        echo = EchoServer()
        self.addCleanup(echo.close)
        p = self.start_inspecting()
        code, status, _, err = self.get(p, "/before")
        self.assertEqual((code, status), (0, 200), err)
        pid = inspector_of(p.pid)
        self.assertIsNotNone(pid, "no boxproxy-inspect child of serve")
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(wait_until(lambda: "the request inspector stopped" in p.stderr_text(), 5), p.stderr_text())
        # Never let through uninspected: refused as upstream tls (502 to a CONNECT).
        s, resp = http_connect(p, f"origin.test:{self.origin.port}")
        s.close()
        self.assertEqual((resp.status, resp.header("x-egress-refused")), (502, "upstream tls"))
        code, status, _, _ = self.get(p, "/after")
        self.assertNotEqual(code, 0)
        self.assertEqual([r["path"] for r in self.origin.requests], ["/before"])
        self.assertGreaterEqual(len(p.find_logs(kind="connect", cls="upstream tls")), 1, p.raw_log_lines())
        # serve stays up, and an opaque tunnel still relays.
        self.assertTrue(p.alive())
        s, resp = http_connect(p, f"127.0.0.2:{echo.port}")
        try:
            self.assertEqual(resp.status, 200)
            s.sendall(b"still here")
            self.assertEqual(recv_exact(s, 10), b"still here")
        finally:
            s.close()
        p.stop()


if __name__ == "__main__":
    unittest.main()
