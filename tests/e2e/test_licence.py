# SPDX-License-Identifier: Apache-2.0
"""The licence (issue 26): LICENSE is the Apache License 2.0, and every source, script and test file
of the tree says so in its first lines (an SPDX-License-Identifier line, after a #! line if any),
so that a file copied out of the tree still carries its licence. Data (fuzz seeds, JSON schemas),
documents and Debian's own control files are not sources."""

import os
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TAG = "SPDX-License-Identifier: Apache-2.0"


def sources():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        raise unittest.SkipTest("not a git work tree")
    for path in listed.stdout.split():
        base = os.path.basename(path)
        if path.startswith("tests/fuzz/corpus/") or path.endswith((".json", ".md", ".dict")) or base == "LICENSE":
            continue
        if path.startswith("debian/") and base != "rules":
            continue
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            continue
        with open(full, "rb") as f:
            head = f.read(64)
        code = path.endswith((".cc", ".h", ".py", ".1", ".txt")) or base in ("Containerfile", "rules", ".gitignore")
        if code or head.startswith(b"#!"):
            yield path, full


class LicenceTest(unittest.TestCase):

    def test_the_licence_is_apache_2(self):
        with open(os.path.join(ROOT, "LICENSE")) as f:
            text = f.read()
        self.assertIn("Apache License", text)
        self.assertIn("Version 2.0, January 2004", text)

    def test_every_source_names_it_first(self):
        missing = []
        count = 0
        for path, full in sources():
            count += 1
            with open(full, encoding="utf-8", errors="replace") as f:
                first = [f.readline() for _ in range(2)]
            if TAG not in first[0] and not (first[0].startswith("#!") and TAG in first[1]):
                missing.append(path)
        self.assertGreater(count, 300, "the tree's sources were not found")
        self.assertEqual(missing, [], "sources without the SPDX line at the top")


if __name__ == "__main__":
    unittest.main()
