# SPDX-License-Identifier: Apache-2.0
"""One version for the binary, the manual and the package (issue 11 item 5).

The version is CMakeLists.txt's project VERSION: the binary prints it (--version), the manual's
.TH line names it (in the source tree too, so that `man -l man/boxproxy.1` shows it; configuring
fails while they differ), and debian/changelog must name the same one, or the .deb would carry
another. (scripts/build-deb builds the .deb and tests/package/check_deb.py inspects it; CI runs it.)
"""

import os
import re
import shutil
import subprocess
import unittest

from harness import binary
from test_manual_systemd import systemd_unit

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        return re.search(r"project\(boxproxy VERSION (\S+)", f.read()).group(1)


def systemd_example_blocks():
    """The .EX blocks of the manual's EXAMPLES > systemd, as a reader sees them."""
    with open(os.path.join(SOURCE, "man", "boxproxy.1"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index(".SS systemd\n"):]
    section = section[:re.search(r"\n\.S[SH] ", section).start()]
    return [block[:block.index(".EE\n")].replace("\\-", "-").replace("\\e", "\\")
            for block in section.split(".EX\n")[1:]]


class VersionTest(unittest.TestCase):

    def test_binary_prints_the_project_version(self):
        out = subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
        self.assertEqual(out, f"boxproxy {project_version()}\n")

    def test_both_manuals_carry_the_project_version(self):
        # The binary is BUILD/socketd/boxproxy; the manual the build made is BUILD/man/boxproxy.1.
        build = os.path.dirname(os.path.dirname(os.path.abspath(binary())))
        for page in (os.path.join(build, "man", "boxproxy.1"), os.path.join(SOURCE, "man", "boxproxy.1")):
            with open(page) as f:
                th = [line for line in f if line.startswith(".TH ")]
            self.assertEqual(len(th), 1, page)
            self.assertIn(f'"boxproxy {project_version()}"', th[0], page)

    def test_the_source_page_shows_the_version_as_man_renders_it(self):
        # What a reader of the source tree sees: `man -l man/boxproxy.1`, its footer.
        if shutil.which("man") is None:
            self.skipTest("no man(1) here (man-db is not installed)")
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
        page = subprocess.run(["man", "-l", os.path.join(SOURCE, "man", "boxproxy.1")], capture_output=True,
                              text=True, env=env, timeout=60, check=True)
        footer = [line for line in page.stdout.splitlines() if line.strip()][-1]
        self.assertTrue(footer.startswith(f"boxproxy {project_version()} "), footer)

    def test_debian_changelog_names_the_project_version(self):
        with open(os.path.join(SOURCE, "debian", "changelog")) as f:
            first = f.readline()
        self.assertRegex(first, r"^boxproxy \(([^)]+)\) ")
        self.assertEqual(re.match(r"^boxproxy \(([^)]+)\)", first).group(1), project_version(),
                         "debian/changelog and CMakeLists.txt must name the same version")


class ShippedUnitTest(unittest.TestCase):

    def test_the_manual_shows_the_shipped_unit(self):
        # EXAMPLES > systemd shows debian/boxproxy@.service as installed, setting for setting, so
        # that a reader who follows it writes a drop-in, not a copy that would shadow the unit.
        shipped = {}
        with open(os.path.join(SOURCE, "debian", "boxproxy@.service")) as f:
            for line in f:
                if "=" in line and not line.startswith(("#", "[")):
                    key, _, value = line.partition("=")
                    shipped.setdefault(key.strip(), []).append(" ".join(value.split()))
        shown = {key: [" ".join(value.split()) for value in values] for key, values in systemd_unit().items()}
        self.assertEqual(shown, shipped)

    def test_the_manual_changes_the_user_by_a_drop_in(self):
        # Another User= comes from a drop-in (`systemctl edit`), never from a copy of the unit in
        # /etc/systemd/system, which would shadow the packaged unit and keep none of its fixes.
        blocks = systemd_example_blocks()
        self.assertTrue(blocks[0].startswith("# /lib/systemd/system/boxproxy@.service\n"), blocks[0])
        (drop_in,) = [block for block in blocks if "override.conf" in block]
        self.assertIn("# /etc/systemd/system/boxproxy@.service.d/override.conf\n", drop_in)
        lines = [line for line in drop_in.splitlines() if line and not line.startswith("#")]
        self.assertEqual(lines[0], "[Service]")
        self.assertEqual([line.split("=")[0] for line in lines[1:]], ["User", "Group"])
        for block in blocks:
            self.assertNotRegex(block, r"/etc/systemd/system/boxproxy@\.service(?!\.d/)", "a unit that shadows it")


if __name__ == "__main__":
    unittest.main()
