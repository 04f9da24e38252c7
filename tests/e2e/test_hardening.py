# SPDX-License-Identifier: Apache-2.0
"""The binary carries the hardening a distribution expects (issue 11 item 5).

Read from the ELF with binutils' readelf and objdump (they come with g++):
- position-independent (ET_DYN with the PIE flag), so the binary itself is placed at random;
- full RELRO and BIND_NOW: a GNU_RELRO segment and the NOW flag, so the GOT is read-only once started;
- a stack that is not executable;
- the stack protector (__stack_chk_fail is called);
- _FORTIFY_SOURCE (bounds-checked __*_chk calls), except in the sanitizer build, where ASan does
  that job and fortify is left out;
- CET's indirect branch tracking in our own code (endbr64 at main). The shadow-stack property of the
  whole file also needs every linked library marked, which Debian 12's libc and libevent are not.
And (the manual's CONFINEMENT): no libseccomp in the binary, linked or needed, since every filter
is compiled when boxproxy is built.
"""

import re
import subprocess
import unittest

from harness import binary


def tool(*args):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=True).stdout


class HardeningTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.path = binary()
        cls.header = tool("readelf", "-hW", cls.path)
        cls.segments = tool("readelf", "-lW", cls.path)
        cls.dynamic = tool("readelf", "-dW", cls.path)
        cls.symbols = tool("readelf", "-sW", cls.path)
        cls.sanitized = "__asan_init" in cls.symbols

    def symbol_names(self):
        return {line.split()[-1].split("@")[0] for line in self.symbols.splitlines() if len(line.split()) >= 8}

    def test_position_independent(self):
        self.assertRegex(self.header, r"Type:\s+DYN \(Position-Independent Executable file\)")
        self.assertRegex(self.dynamic, r"FLAGS_1\)\s+Flags:.*\bPIE\b")

    def test_full_relro_and_bind_now(self):
        self.assertRegex(self.segments, r"\bGNU_RELRO\b")
        self.assertRegex(self.dynamic, r"\(FLAGS\)\s+.*\bBIND_NOW\b|FLAGS_1\)\s+Flags:.*\bNOW\b")

    def test_stack_not_executable(self):
        (stack,) = [line for line in self.segments.splitlines() if "GNU_STACK" in line]
        self.assertNotRegex(stack, r"\bRWE\b")

    def test_stack_protector(self):
        self.assertIn("__stack_chk_fail", self.symbol_names())

    def test_fortify_source(self):
        if self.sanitized:
            self.skipTest("the sanitizer build leaves _FORTIFY_SOURCE out (ASan checks bounds itself)")
        # __recv_chk: a recv of ours into a stack buffer of known size (the plain-HTTP exchange's
        # client read), bounds-checked. (libevent's archive brings some __*_chk of its own, so those
        # prove nothing about our code.)
        checked = {name for name in self.symbol_names() if re.fullmatch(r"__\w+_chk", name)}
        self.assertIn("__recv_chk", checked, sorted(checked))

    def test_indirect_branch_tracking_in_our_code(self):
        listing = tool("objdump", "-d", "--disassemble=main", self.path)
        body = listing.split("<main>:", 1)[1]
        first = [line for line in body.splitlines() if line.strip()][0]
        self.assertIn("endbr64", first)

    def test_no_libseccomp(self):
        self.assertNotRegex(self.dynamic, r"NEEDED.*libseccomp")
        if not self.symbols.strip() or "Symbol table '.symtab'" not in self.symbols:
            self.skipTest("the binary is stripped: no symbol table to read")
        names = self.symbol_names()
        self.assertFalse({"seccomp_init", "seccomp_rule_add", "seccomp_load"} & names)
        # Its own loader is there (a test that could not fail would prove nothing).
        self.assertTrue(any("load_confine_program" in name for name in names))


if __name__ == "__main__":
    unittest.main()
