# SPDX-License-Identifier: Apache-2.0
"""The boxproxy executable holds no OpenSSL (issue 24) and no nghttp2 (issue 25): not linked, not
needed, not one symbol.

Why: request inspection (SPEC §18) needs OpenSSL, and the boxproxy binary is static-pie, which
relocates every table it holds at start, making those pages private to each process. Linked in,
OpenSSL 3 cost every session about 390 KiB of private dirty memory, whether it inspected anything
or not, against a budget of 100 KiB PSS a session (bench/README.md, bench/density). So all of it
lives in proxy/inspect/ (the library boxproxy_inspect), linked by the unit tests and by the
executable that only a session that inspects starts; a link from boxproxy to it fails this test.

Read from the file with binutils (they come with g++): its NEEDED entries, its symbols (when it is
not stripped), and its bytes for OpenSSL's own strings, which stay in a stripped binary too. The
same reading of libboxproxy_inspect.a (env BOXPROXY_INSPECT_LIB) must find OpenSSL there, so the
test is known to see it where it is.

nghttp2 (the box-facing HTTP/2 side of request inspection, SPEC §19) is held to the same rule for
the same reason: it lives in the same library and the inspector only.
"""

import os
import re
import subprocess
import unittest

from harness import binary

# Symbols OpenSSL defines (libcrypto's and libssl's public and internal prefixes).
OPENSSL_SYMBOL = re.compile(r"^(OPENSSL_|OSSL_|CRYPTO_|EVP_|X509|SSL_|PEM_|BIO_|ERR_|ASN1_|BN_|EC_|RAND_)")
# Strings every OpenSSL build carries: its OPENSSL_* names (OPENSSL_CONF, OPENSSL_init_crypto...),
# libssl's SSL_CTX_* names, and its version text ("OpenSSL 3.0.19 ...").
OPENSSL_STRINGS = (b"OPENSSL_", b"SSL_CTX_", b"OpenSSL 3.")
# nghttp2's symbols all start so; its own strings (frame names in its error texts) too.
NGHTTP2_SYMBOL = re.compile(r"^nghttp2_")
NGHTTP2_STRINGS = (b"nghttp2_",)


def library():
    """libboxproxy_inspect.a (env BOXPROXY_INSPECT_LIB). A missing library fails the test."""
    path = os.environ.get("BOXPROXY_INSPECT_LIB")
    if not path or not os.path.isfile(path):
        raise AssertionError(f"set BOXPROXY_INSPECT_LIB to libboxproxy_inspect.a (it is {path!r})")
    return path


def openssl_symbols(path, pattern=OPENSSL_SYMBOL):
    """Every OpenSSL symbol (or `pattern`'s) nm lists in the file (defined or wanted), from both symbol tables."""
    found = set()
    for args in (["nm"], ["nm", "-D"]):
        listing = subprocess.run(args + [path], capture_output=True, text=True, timeout=60).stdout
        for line in listing.splitlines():
            fields = line.split()
            if fields and pattern.match(fields[-1].split("@")[0]):
                found.add(fields[-1])
    return found


def openssl_strings(path):
    with open(path, "rb") as file:
        data = file.read()
    return [marker for marker in OPENSSL_STRINGS if marker in data]


class NoOpensslTest(unittest.TestCase):

    def test_the_reading_finds_openssl_where_it_is(self):
        path = library()
        self.assertTrue(openssl_symbols(path), f"nm finds no OpenSSL symbol in {path}")
        self.assertTrue(openssl_strings(path), f"no OpenSSL string in {path}")

    def test_boxproxy_needs_no_openssl_library(self):
        dynamic = subprocess.run(["readelf", "-dW", binary()], capture_output=True, text=True, timeout=60,
                                 check=True).stdout
        self.assertNotRegex(dynamic, r"NEEDED.*lib(ssl|crypto)\.so")

    def test_boxproxy_has_no_openssl_symbol(self):
        self.assertEqual(set(), openssl_symbols(binary()))

    def test_boxproxy_has_no_openssl_string(self):
        self.assertEqual([], openssl_strings(binary()))

    def test_the_reading_finds_nghttp2_where_it_is(self):
        self.assertTrue(openssl_symbols(library(), NGHTTP2_SYMBOL), "nm finds no nghttp2 symbol in the library")

    def test_boxproxy_has_no_nghttp2(self):
        dynamic = subprocess.run(["readelf", "-dW", binary()], capture_output=True, text=True, timeout=60,
                                 check=True).stdout
        self.assertNotRegex(dynamic, r"NEEDED.*libnghttp2\.so")
        self.assertEqual(set(), openssl_symbols(binary(), NGHTTP2_SYMBOL))
        with open(binary(), "rb") as file:
            data = file.read()
        self.assertEqual([], [marker for marker in NGHTTP2_STRINGS if marker in data])


if __name__ == "__main__":
    unittest.main()
