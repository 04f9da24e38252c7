# SPDX-License-Identifier: Apache-2.0
"""Why an inspected connection's TLS failed, said on its line (tls=): a box client that does not
trust the session CA (Python's ssl with its default trust store, as a client pinned to certifi
is) ends its connection with tls=unknown-ca on the done line; an origin whose certificate names
another host, has expired, or is trusted by nobody is `upstream tls` with tls=name-mismatch,
expired, self-signed. Origins are the test's own on 127.0.0.2, their certificates made here."""

import datetime
import os
import socket
import ssl
import unittest

from box_support import TlsOrigin, make_certificate
from harness import ProxyTestCase, recv_exact
from inspect_support import CURL, INSPECTOR, InspectRig, curl

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
except ImportError:  # the expired certificate's test is skipped
    x509 = None

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


def write_expired_chain(directory):
    """A CA valid now and a leaf for origin.test it signed that expired yesterday: (leaf, key, ca)
    paths, PEM."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Expired Test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=30))
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "origin.test")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=10)).not_valid_after(now - datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("origin.test")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = [os.path.join(directory, n) for n in ("expired.pem", "expired.key", "expired-ca.pem")]
    with open(paths[0], "wb") as f:
        f.write(leaf.public_bytes(serialization.Encoding.PEM))
    with open(paths[1], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(paths[2], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    return paths


@unittest.skipIf(CURL is None, "curl is not installed")
@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class InspectTlsFailureTest(InspectRig, ProxyTestCase):

    def serve(self, origin, upstream_ca):
        argv = ["--log", "json", "--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca,
                "--inspect", f"origin.test:{origin.port}"]
        if upstream_ca is not None:
            argv += ["--upstream-ca", upstream_ca]
        return self.proxy(*argv)

    def upstream_tls_line(self, origin, upstream_ca):
        """A request through serve to `origin`, trusting `upstream_ca` upstream: the upstream tls
        line's object, once the box got its 502."""
        p = self.serve(origin, upstream_ca)
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.ca,
                              "-o", "/dev/null", "-w", "%{http_code}", f"https://origin.test:{origin.port}/x")
        self.assertEqual(out, "502", err)
        self.assertEqual(origin.requests, [])
        (line,) = p.wait_log(kind="socks", cls="upstream tls")
        return line.obj

    def test_a_box_client_without_the_session_ca_is_logged_unknown_ca(self):
        p = self.serve(self.origin, self.cert)
        s = p.connect()
        try:
            s.sendall(f"CONNECT origin.test:{self.origin.port} HTTP/1.1\r\n\r\n".encode())
            self.assertEqual(recv_exact(s, len(ESTABLISHED)), ESTABLISHED)
            # Python's default context trusts the system's CAs only, as a client pinned to certifi
            # (httpx's default) trusts certifi's: the session CA is in neither.
            context = ssl.create_default_context()
            with self.assertRaises(ssl.SSLCertVerificationError):
                context.wrap_socket(s, server_hostname="origin.test")
        finally:
            s.close()
        (done,) = p.wait_log(kind="connect", cls="done")
        self.assertEqual((done.obj["end"], done.obj.get("tls")), ("error", "unknown-ca"))

    def test_curl_without_the_session_ca_is_logged_unknown_ca(self):
        p = self.serve(self.origin, self.cert)
        code, _, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.cert,
                            f"https://origin.test:{self.origin.port}/x")
        self.assertEqual(code, 60, err)  # curl's "peer certificate cannot be authenticated"
        (done,) = p.wait_log(kind="socks", cls="done")
        self.assertEqual(done.obj.get("tls"), "unknown-ca")

    def test_an_origin_certificate_for_another_host_is_name_mismatch(self):
        cert, key = make_certificate(self.dir, name="other.test")
        origin = TlsOrigin(cert, key)
        self.addCleanup(origin.close)
        line = self.upstream_tls_line(origin, cert)
        self.assertEqual(line.get("tls"), "name-mismatch")

    @unittest.skipIf(x509 is None, "Python's cryptography is not installed")
    def test_an_expired_origin_certificate_is_expired(self):
        leaf, key, ca = write_expired_chain(self.dir)
        origin = TlsOrigin(leaf, key)
        self.addCleanup(origin.close)
        self.assertEqual(self.upstream_tls_line(origin, ca).get("tls"), "expired")

    def test_an_origin_nobody_trusts_is_self_signed(self):
        other = os.path.join(self.dir, "other")
        os.mkdir(other)
        unrelated, _ = make_certificate(other, name="origin.test")
        self.assertEqual(self.upstream_tls_line(self.origin, unrelated).get("tls"), "self-signed")

    def test_the_text_log_carries_tls_too(self):
        p = self.proxy("--resolve", "origin.test=127.0.0.2", "--ca-out", self.ca, "--upstream-ca", self.cert,
                       "--inspect", f"origin.test:{self.origin.port}")
        curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", self.cert,
             f"https://origin.test:{self.origin.port}/x")
        p.wait_raw(r"^egress socks .* class=done .* end=error tls=unknown-ca id=\d+$")


if __name__ == "__main__":
    unittest.main()
