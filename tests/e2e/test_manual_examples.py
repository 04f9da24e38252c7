# SPDX-License-Identifier: Apache-2.0
"""The example sessions of the manual and README.md that run offline, run for real: each `$ `
command of a listed block goes through bash with this build's boxproxy (as `boxproxy` on PATH and as
`build/socketd/boxproxy` under the working directory), standard error on a pseudo-terminal as in a
shell, and what it prints is compared with the lines the example shows below it, ids and timings
masked. The proxy's lines (egress, JSON) and everything else are compared apart, each in order:
which of a command's two streams a terminal shows first is up to the scheduler.

The manual's example session (a proxy, the box's commands, the proxy's log after a SIGUSR1: three
blocks) runs as a whole, with the proxy on a socket of the test's own.

So that the examples cannot go stale: a listed block that is no longer found fails the test too. A
block's command that needs the Internet is not run, and the lines it shows are not compared. The
origin is on the host's 127.0.0.2 as in the examples, on port 8080, or another free port written in
its place. Skips, saying why, where this system cannot make a box."""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase
from harness import binary
from test_run_output import run_on_a_terminal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
MANUAL = os.path.join(ROOT, "man", "boxproxy.1")
EXAMPLE_PORT = "8080"
ORIGIN_TEXT = "hello from the origin\n"
# The blocks run here, each found by a command it holds: (file, command substring, the block's
# commands that are not run: they need the Internet, or a proxy the example started elsewhere).
BLOCKS = {
    "readme_30_seconds": (README, "boxproxy check 0x7f.1", r"scripts/demo|\$S|^S="),
    "readme_run_offline": (README, "mkdir /tmp/o && echo 'hello from the origin'", None),
    "manual_check": (MANUAL, "boxproxy check 0x7f.1", None),
    "manual_check_requests": (MANUAL, "boxproxy check --config s1.json", None),
    "manual_boxproxy_run": (MANUAL, "boxproxy run --permit 127.0.0.2/32 --resolve origin.test=127.0.0.2",
                            r"pypi\.org|--socket /run/"),
}


def manual_raw_blocks(path):
    """Every .EX block of the manual, as the reader sees it."""
    with open(path) as f:
        return [groff_text(b) for b in re.findall(r"^\.EX\n(.*?)^\.EE", f.read(), re.S | re.M)]


def unwrapped(lines):
    """Lines the manual wraps (going on after one space on the next) joined into one: a text line
    keeps the space, a JSON line (wrapped after a comma) has none."""
    out = []
    for line in lines:
        if out and re.match(r" \S", line):
            out[-1] += line[1:] if out[-1].endswith(",") else line
        else:
            out.append(line)
    return out


def groff_text(line):
    """An .EX line of the manual as the reader sees it."""
    for escape, text in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\&", ""), ("\\e", "\\")):
        line = line.replace(escape, text)
    return line


def example_blocks(path):
    """The blocks of `path` that show `$ ` commands: each a list of (command, [lines it shows]),
    a command continued over lines with a trailing backslash joined into one, and an output line
    continued on the next after one space (as the manual wraps the long ones)."""
    with open(path) as f:
        text = f.read()
    if path.endswith(".md"):
        raw_blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)
    else:
        raw_blocks = [groff_text(b) for b in re.findall(r"^\.EX\n(.*?)^\.EE", text, re.S | re.M)]
    blocks = []
    for raw in raw_blocks:
        block = example_blocks_of(raw)
        if block:
            blocks.append(block)
    return blocks


def example_blocks_of(raw):
    """One block's `$ ` commands, as example_blocks gives them; [] when it shows none. A command
    continued over lines with a trailing backslash, or a pipe, is joined into one."""
    lines = raw.splitlines()
    if not lines or not lines[0].startswith("$ "):
        return []
    block, i = [], 0
    while i < len(lines):
        command = lines[i][2:]
        while (command.endswith("\\") or command.endswith("|")) and i + 1 < len(lines):
            i += 1
            command = (command[:-1] if command.endswith("\\") else command + " ") + lines[i].strip()
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        block.append((command, unwrapped(shown)))
    return block


def masked(line):
    """A line with what differs between runs (ids, timings, pids) masked."""
    line = re.sub(r"\bid=\d+", "id=N", line)
    line = re.sub(r'"pid":\d+', '"pid":N', line)
    # Once a whole response is through, which side closes first is a race (curl, having the
    # body Content-Length promised, or the HTTP/1.0 origin): either is the example's line.
    line = re.sub(r"\bend=(client|upstream)-closed\b", "end=closed", line)
    line = re.sub(r"\bms=\d+", "ms=N", line)
    return re.sub(r"after \d+ ms", "after N ms", line)


def is_proxy_line(line):
    return line.startswith("egress ") or line.startswith('{"event"')


def free_port(first=EXAMPLE_PORT, end=9000):
    """`first` on 127.0.0.2 when it is free (as the examples say), else another as long: the Host
    header carries it, so the bytes counted up stay the example's."""
    for port in range(int(first), end):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.2", port))
            except OSError:
                continue
            return str(port)
    raise AssertionError("no free port of four digits on 127.0.0.2")


def wait_listening(port, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.2", int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.2:{port}")


class ManualExamplesTest(BoxTestCase):
    maxDiff = None

    def setUp(self):  # no self.box: the examples' commands start run themselves
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-examples-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        # boxproxy on PATH, and build/socketd/boxproxy under the working directory, are this build's.
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(os.path.join(self.dir, "build", "socketd"))
        os.makedirs(bin_dir)
        os.symlink(os.path.abspath(binary()), os.path.join(bin_dir, "boxproxy"))
        os.symlink(os.path.abspath(binary()), os.path.join(self.dir, "build", "socketd", "boxproxy"))
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], TMPDIR=self.dir)
        for name in ("XDG_RUNTIME_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy",
                     "https_proxy", "all_proxy", "no_proxy"):
            self.env.pop(name, None)
        self.port = free_port()
        self.background = []
        self.addCleanup(self.stop_background)
        self.last_status = 0

    def stop_background(self):
        for proc in self.background:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)

    def start_origin(self):
        """The examples' origin, for a block that does not start it itself."""
        root = os.path.join(self.dir, "origin")
        os.makedirs(root)
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write(ORIGIN_TEXT)
        self.background.append(subprocess.Popen(
            ["python3", "-m", "http.server", self.port, "--bind", "127.0.0.2", "--directory", root],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        wait_listening(self.port)

    def localised(self, text):
        return text.replace("/tmp/o", os.path.join(self.dir, "o")).replace(EXAMPLE_PORT, self.port)

    def run_command(self, command, localise=True):
        """Runs one example command; returns (proxy lines, other lines) it printed."""
        if localise:
            command = self.localised(command)
        if command.endswith("&"):
            self.background.append(subprocess.Popen(["bash", "-c", command[:-1]], cwd=self.dir, env=self.env,
                                                    stdin=subprocess.DEVNULL, start_new_session=True))
            wait_listening(self.port)
            return [], []
        # Each command has a shell of its own: `$?` is the previous command's status, given on.
        status, stdout, shown = run_on_a_terminal(["bash", "-c", f"(exit {self.last_status}); {command}"], self.env,
                                                  timeout=RUN_TIMEOUT, cwd=self.dir)
        self.last_status = status
        # A comment after the command may say what it shows; the status is the example's to show.
        err = shown.decode().splitlines()
        return ([line for line in err if is_proxy_line(line)],
                stdout.decode().splitlines() + [line for line in err if not is_proxy_line(line)])

    def check_block(self, name):
        path, marker, not_run = BLOCKS[name]
        found = [block for block in example_blocks(path) if any(marker in command for command, _ in block)]
        self.assertEqual(len(found), 1, f"{os.path.basename(path)}: no single example block holds {marker!r}")
        block = found[0]
        if "boxproxy run" in marker and not any("http.server" in command for command, _ in block):
            self.start_origin()
        for command, shown in block:
            if not_run and re.search(not_run, command):
                continue
            proxy, other = self.run_command(command)
            expected = [self.localised(line) for line in shown]
            with self.subTest(command=command):
                self.assertEqual([masked(line) for line in proxy],
                                 [masked(line) for line in expected if is_proxy_line(line)])
                self.assertEqual([masked(line) for line in other],
                                 [masked(line) for line in expected if not is_proxy_line(line)])

    def test_readme_30_seconds(self):
        self.check_block("readme_30_seconds")

    def test_readme_run_offline(self):
        self.check_block("readme_run_offline")

    def test_manual_check(self):
        self.check_block("manual_check")

    def test_manual_check_requests(self):
        self.check_block("manual_check_requests")

    def test_manual_boxproxy_run(self):
        self.check_block("manual_boxproxy_run")

    def test_manual_example_session(self):
        """EXAMPLES, An example session: three blocks (the proxy, the box's commands, the proxy's
        log after a SIGUSR1), run and compared as a whole."""
        blocks = manual_raw_blocks(MANUAL)
        serve_at = [i for i, b in enumerate(blocks) if "--resolve mirror.internal=127.0.0.2" in b]
        self.assertEqual(len(serve_at), 1, "the manual's example session is not found")
        serve_raw, inside_raw, log_raw = blocks[serve_at[0]:serve_at[0] + 3]
        (serve_command, serve_shown), = example_blocks_of(serve_raw)
        inside = example_blocks_of(inside_raw)
        log_shown = unwrapped(log_raw.splitlines())
        self.assertTrue(log_shown[0].startswith("egress "), log_shown)
        # The mirror: the examples' origin, on a free port of five digits (the example's 18080 if
        # free), so that the bytes counted stay the example's.
        self.port = free_port("18080", 19000)
        self.start_origin()
        socket_path = os.path.join(self.dir, "s1.sock")

        def local(text):
            return text.replace("/run/egress/s1.sock", socket_path).replace("18080", self.port)
        proxy = subprocess.Popen(["bash", "-c", "exec " + local(serve_command)], cwd=self.dir, env=self.env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        self.background.append(proxy)
        listening = proxy.stdout.readline().decode().rstrip("\n")
        self.assertEqual(masked(listening), masked(local(serve_shown[0])))
        for command, shown in inside:
            assignment = re.fullmatch(r"(\w+)=(\S+)", command)
            if assignment:  # the box's shell keeps it for the commands that follow
                self.env[assignment[1]] = local(assignment[2])
                continue
            _, other = self.run_command(local(command), localise=False)
            with self.subTest(command=command):
                self.assertEqual([masked(line) for line in other], [masked(local(line)) for line in shown])
        proxy.send_signal(signal.SIGUSR1)
        log = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (log and log[-1].startswith('{"event":"stats"')):
            line = proxy.stderr.readline()
            if not line:
                break
            log.append(line.decode().rstrip("\n"))
        self.assertEqual([masked(line) for line in log], [masked(local(line)) for line in log_shown])


if __name__ == "__main__":
    unittest.main()
