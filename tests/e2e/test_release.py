# SPDX-License-Identifier: Apache-2.0
"""scripts/release's refusals (issue 26 item 4): a release is made only from a clean tree, at a tag
that names the version, with debian/changelog agreeing with CMakeLists.txt; each refusal names
what is wrong. Run in a clone of this tree, with the working tree's scripts/release (and
.gitignore) committed in it, so that nothing here touches the tree itself and no refusal needs a
build (each one comes before any). What a release makes, and that two builds of the .deb are byte-identical, is
`scripts/release --check`, a stage of scripts/test-all of its own (it builds the .deb twice)."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 60
GIT = ["git", "-c", "user.name=release test", "-c", "user.email=release-test@example.invalid"]


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(boxproxy VERSION ([^\s)]+)", f.read()).group(1)


def kill_session(sid):
    """SIGKILL to every process of session `sid`, by its session id, not its process group: ninja
    runs each compiler in a process group of its own."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, IndexError, ValueError):
            pass  # gone meanwhile


class ReleaseRefusalsTest(unittest.TestCase):

    def setUp(self):
        if shutil.which("git") is None or subprocess.run(["git", "-C", ROOT, "rev-parse"], capture_output=True,
                                                         timeout=TIMEOUT).returncode != 0:
            self.skipTest("the source is not a git work tree")
        self.work = tempfile.mkdtemp(prefix="boxproxy-release-test-")
        self.addCleanup(shutil.rmtree, self.work)
        self.tree = os.path.join(self.work, "tree")
        self.git("clone", "--quiet", "--no-hardlinks", ROOT, self.tree, cwd=self.work)
        for path in ("scripts/release", ".gitignore"):
            shutil.copy(os.path.join(ROOT, path), os.path.join(self.tree, path))
        self.commit("scripts/release and .gitignore as in the tree under test")
        self.version = project_version()

    def git(self, *args, cwd=None):
        subprocess.run([*GIT, *args], cwd=cwd or self.tree, check=True, capture_output=True, timeout=TIMEOUT)

    def commit(self, message):
        self.git("add", "-A")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)

    def release(self, *args):
        """(exit status, stderr) of scripts/release ARGS. A release that went past its refusals would
        start building: it is stopped at TIMEOUT, with everything it started (its own session)."""
        proc = subprocess.Popen([os.path.join(self.tree, "scripts", "release"), *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env=dict(os.environ, TMPDIR=self.work))  # its work directory too
        try:
            err = proc.communicate(timeout=TIMEOUT)[1]
        except subprocess.TimeoutExpired:
            kill_session(proc.pid)
            proc.communicate()
            self.fail(f"scripts/release {' '.join(args)} was still running after {TIMEOUT} s: it refused nothing")
        return proc.returncode, err

    def write(self, path, text):
        with open(os.path.join(self.tree, path), "w") as f:
            f.write(text)

    def test_an_untagged_head_is_refused(self):
        status, err = self.release()
        self.assertEqual(status, 1, err)
        self.assertIn("has no tag", err)
        self.assertIn(f"git tag -a v{self.version}", err)
        self.assertFalse(os.path.exists(os.path.join(self.tree, "dist")), "nothing is made")

    def test_a_tag_of_another_version_is_refused(self):
        self.git("tag", "v99.0.0")
        status, err = self.release()
        self.assertEqual(status, 1, err)
        self.assertIn("v99.0.0", err)
        self.assertIn(f"do not name version {self.version}", err)
        # A tag that only starts like the version is another version too.
        self.git("tag", f"v{self.version}1")
        self.assertEqual(self.release()[0], 1)

    def test_a_dirty_tree_is_refused_naming_what_is_dirty(self):
        with open(os.path.join(self.tree, "README.md"), "a") as f:
            f.write("\nnot committed\n")
        self.write("stray-file", "not committed either\n")
        for args in ((), ("--check",)):
            status, err = self.release(*args)
            self.assertEqual(status, 1, err)
            self.assertIn("the tree is not clean", err)
            self.assertIn(" M README.md", err)
            self.assertIn("?? stray-file", err)

    def test_ignored_files_do_not_make_a_tree_dirty(self):
        # Build directories and dist/ are .gitignore'd: the refusal that follows is the tag's.
        os.makedirs(os.path.join(self.tree, "build-m"))
        os.makedirs(os.path.join(self.tree, "dist"))
        self.write("build-m/CMakeCache.txt", "")
        self.write("dist/old.tar.gz", "")
        status, err = self.release()
        self.assertEqual(status, 1, err)
        self.assertNotIn("not clean", err)
        self.assertIn("has no tag", err)

    def test_a_changelog_of_another_version_is_refused_naming_both(self):
        with open(os.path.join(self.tree, "debian", "changelog")) as f:
            text = f.read()
        self.write("debian/changelog", text.replace(f"boxproxy ({self.version})", "boxproxy (99.0.0)", 1))
        self.commit("a changelog ahead of CMakeLists.txt")
        self.git("tag", f"v{self.version}")
        for args in ((), ("--check",)):
            status, err = self.release(*args)
            self.assertEqual(status, 1, err)
            self.assertIn("debian/changelog's newest entry says 99.0.0", err)
            self.assertIn(f"CMakeLists.txt says {self.version}", err)

    def test_an_unknown_option_is_a_usage_error(self):
        status, err = self.release("--sign")
        self.assertEqual(status, 2, err)
        self.assertIn("usage: scripts/release", err)


if __name__ == "__main__":
    unittest.main()
