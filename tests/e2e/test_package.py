"""One version for the binary, the manual and the package (issue 11 item 5).

The version is CMakeLists.txt's project VERSION: the binary prints it (--version), the build fills
it into the manual's .TH line (build/man/boxproxy.1), and debian/changelog must name the same one,
or the .deb would carry another. (scripts/build-deb builds and installs the .deb itself; CI runs it.)
"""

import os
import re
import subprocess
import unittest

from harness import binary

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        return re.search(r"project\(boxproxy VERSION (\S+)", f.read()).group(1)


class VersionTest(unittest.TestCase):

    def test_binary_prints_the_project_version(self):
        out = subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
        self.assertEqual(out, f"boxproxy {project_version()}\n")

    def test_built_manual_carries_the_project_version(self):
        # The binary is BUILD/socketd/boxproxy; the manual the build made is BUILD/man/boxproxy.1.
        build = os.path.dirname(os.path.dirname(os.path.abspath(binary())))
        with open(os.path.join(build, "man", "boxproxy.1")) as f:
            th = [line for line in f if line.startswith(".TH ")]
        self.assertEqual(len(th), 1)
        self.assertIn(f'"boxproxy {project_version()}"', th[0])
        with open(os.path.join(SOURCE, "man", "boxproxy.1")) as f:
            self.assertIn('"boxproxy @PROJECT_VERSION@"', f.read(), "the source page names no version of its own")

    def test_debian_changelog_names_the_project_version(self):
        with open(os.path.join(SOURCE, "debian", "changelog")) as f:
            first = f.readline()
        self.assertRegex(first, r"^boxproxy \(([^)]+)\) ")
        self.assertEqual(re.match(r"^boxproxy \(([^)]+)\)", first).group(1), project_version(),
                         "debian/changelog and CMakeLists.txt must name the same version")


if __name__ == "__main__":
    unittest.main()
