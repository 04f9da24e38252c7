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
its place. Skips, saying why, where this system cannot make a box.

Every other example block of the manual and README.md is accounted for in EVERY_BLOCK: run here
(the configuration files through serve --check-config and check, the error messages from the
inputs that make them, the JSON samples against their schemas, the inspect op and a request line
from a real inspected exchange), run by the test it names, or not run for the reason it gives. A
block that no row names fails the test, so a new example is run, or given its reason, when it is
written."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from box_support import RUN_TIMEOUT, BoxTestCase, TlsOrigin, make_certificate
from control_support import proxy_with_control_fd
from harness import ProxyTestCase, binary, wait_until
from inspect_support import CURL, INSPECTOR, curl
from test_run_output import run_on_a_terminal
from test_schemas import errors

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
    # Run by test_readme_inspection, with its own origins.
    "readme_offline_https": (README, "openssl s_server -quiet -accept 127.0.0.2:8443", None),
    "readme_inspection_and_credentials": (README, "\"Bearer {gh}\"}}]}' >gh.json", None),
    "manual_check": (MANUAL, "boxproxy check 0x7f.1", None),
    "manual_check_requests": (MANUAL, "boxproxy check --config s1.json", None),
    "manual_boxproxy_run": (MANUAL, "boxproxy run --permit 127.0.0.2/32 --resolve origin.test=127.0.0.2",
                            r"pypi\.org|--socket /run/"),
}

# Every example block of the manual (.EX ... .EE) and README.md (``` fences), each found by a string
# that it alone holds, and what becomes of it: "run here: TEST" (this file), "run by MODULE", or
# "not run: WHY".
# REQUEST INSPECTION's worked example: its config block (the only one that starts so).
READ_ONLY_GITHUB = '{"inspect": [{"host": "api.github.com", "access": "read-only",\n'

# CREDENTIALS' worked example: its config block, and the secret op's request and reply.
LLM_CONFIG = '"inject": {"authorization": "Bearer {llm}"}'
SECRET_OP = '{"op":"secret","id":3,"name":"llm"'

EVERY_BLOCK = (
    (MANUAL, LLM_CONFIG, "run here: test_the_configuration_examples (CREDENTIALS' worked example)"),
    (MANUAL, "$ install -m 0600 /dev/null /etc/boxproxy/llm.key",
     "not run: it writes /etc/boxproxy, and api.llm.example is no host; test_secrets injects a secret from a "
     "--secret file into the requests to an origin of its own"),
    (MANUAL, SECRET_OP, "run here: test_the_secret_op"),
    (MANUAL, '--max-tunnels: "0" is not a number', "run here: test_the_error_messages"),
    (MANUAL, 'key "no-confine" is command line only', "run here: test_the_error_messages"),
    (MANUAL, "line 3, column 20: the text ends", "run here: test_the_error_messages"),
    (MANUAL, '"allow-hint": "ask #sandbox-ops to open more"', "run here: test_the_configuration_examples"),
    (MANUAL, '{"host": ENTRY, "name": NAME', "not run: a template (ENTRY, NAME, METHOD stand for values)"),
    (MANUAL, '"/repos/acme**": \'**\' stands only', "run here: test_the_error_messages"),
    (MANUAL, '"name": "file-issue"', "run here: test_the_configuration_examples"),
    (MANUAL, '{"inspect": [{"host": "api.github.com", "access": "read-only",\n',
     "run here: test_the_configuration_examples (REQUEST INSPECTION's worked example)"),
    (MANUAL, '{"event":"listening","socket":"/run/boxproxy/s1.sock"', "run here: test_the_json_samples"),
    (MANUAL, "HTTP/1.1 <status> <words>", "not run: a template"),
    (MANUAL, "is an address, not a name on this box's network list", "run here: test_the_refusal_words"),
    (MANUAL, "HTTP/1.1 403 other.com is not on this box's network list: ask ops",
     "run here: test_the_refusal_words"),
    (MANUAL, "judged DELETE /repos/acme/widget", "not run: api.github.com is no host here; test_inspect's "
     "test_a_refusal_names_what_was_judged_and_a_hint_what_is_allowed reads the same lines from its own origin"),
    (MANUAL, "report=1 would=deny", "not run: api.github.com is no host here; test_inspect's report-mode tests "
     "read the same fields from its own origin"),
    (MANUAL, 'egress request host="api.example"', "run here: test_the_request_line"),
    (MANUAL, 'egress socks host="example.com" port=443 ip=93.184.215.14 class=ok',
     "not run: example.com's lines need the Internet (the example session's lines are the same format)"),
    (MANUAL, '{"ts":"2026-12-01T12:49:22.233Z","id":8,"kind":"connect"', "run here: test_the_json_samples"),
    (MANUAL, "ip=93.184.215.14 class=done\n up=517",
     "not run: example.com's lines need the Internet (the example session's lines are the same format)"),
    (MANUAL, '{"event":"stats","open":1,"used":17', "run here: test_the_json_samples"),
    (MANUAL, '{"event":"log-dropped","n":1342}', "run here: test_the_json_samples"),
    (MANUAL, '{"op":"inspect","id":7,"set":', "run here: test_the_inspect_op"),
    (MANUAL, '{"event":"ask","ask":K,"host"', "not run: a template (K, N stand for values)"),
    (MANUAL, '{"event":"ask","ask":K,"kind":"request"', "not run: a template (K, N stand for values); "
     "test_inspect_ask reads the event itself"),
    (MANUAL, "confinement refused system call 59",
     "not run: needs a system call the filter refuses; test_confine asserts the line's form"),
    (MANUAL, "<address as it would be dialled", "not run: a template"),
    (MANUAL, "$ boxproxy check 0x7f.1", "run here: test_manual_check"),
    (MANUAL, "METHOD\\fP https://", "not run: a template"),
    (MANUAL, "<endpoint, or ->\\t<rule", "not run: a template"),
    (MANUAL, "$ boxproxy check --config s1.json", "run here: test_manual_check_requests"),
    (MANUAL, '{"event":"listening","socket":"/run/egress.sock"', "run here: test_the_json_samples"),
    (MANUAL, "ip route add default dev lo src 127.0.0.1",
     "not run: root in a network namespace of one's own with nft; run --transparent sets up the same "
     "(socketd/box_capture.cc), run by test_transparent"),
    (MANUAL, "cannot make the box's user and network namespaces",
     "not run: needs a kernel that refuses user namespaces"),
    (MANUAL, "mkdir -m 0700 /run/boxproxy-s1", "not run: it reads /etc/boxproxy/s1.allow and writes /run; test_daemon "
     "runs --ready-fd"),
    (MANUAL, "$ boxproxy run --permit 127.0.0.2/32", "run here: test_manual_boxproxy_run"),
    (MANUAL, "--resolve mirror.internal=127.0.0.2", "run here: test_manual_example_session"),
    (MANUAL, "$ S=/run/egress/s1.sock", "run here: test_manual_example_session"),
    (MANUAL, 'egress socks host="mirror.internal"', "run here: test_manual_example_session"),
    (MANUAL, "curl --proxy socks5h://localhost/run/egress.sock \\\n    https://example.com/",
     "not run: bwrap is not a dependency, and example.com needs the Internet"),
    (MANUAL, "--die-with-parent >/run/bridge &", "not run: bwrap is not a dependency, and example.com needs "
     "the Internet"),
    (MANUAL, "unshare -rn sh -c 'ip link set lo up; exec curl", "not run: example.com needs the Internet; run "
     "does the same with more walls (test_box)"),
    (MANUAL, "--die-with-parent >/dev/null &", "not run: example.com needs the Internet; test_confine starts the "
     "bridge with its line to /dev/null as this does, and run does the rest (test_box)"),
    (MANUAL, "# on the host: boxproxy serve --socket /run/egress/egress.sock", "run by test_container"),
    (MANUAL, "-v /usr/local/bin/boxproxy:/usr/local/bin/boxproxy:ro", "run by test_container"),
    (MANUAL, "scripts/build-image\n", "run by test_container"),
    (MANUAL, "podman run -d --rm --name egress --network host", "run by test_container"),
    (MANUAL, "kubectl apply -f examples/kubernetes/policy.yaml", "run by test_pod (podman kube play of pod.yaml)"),
    (MANUAL, "# /lib/systemd/system/boxproxy@.service", "run by test_manual_systemd (and test_package: it is the "
     "shipped unit)"),
    (MANUAL, "# /etc/boxproxy/s1.env", "not run: needs systemd as pid 1 and the installed package"),
    (MANUAL, "# systemctl edit boxproxy@.service", "not run: needs systemd as pid 1 and the installed package"),
    (MANUAL, "package main", "run by test_manual_go"),
    (MANUAL, "curl --proxy socks4a://localhost/run/egress.sock", "not run: example.com needs the Internet; "
     "test_curl runs curl through the socket"),
    (MANUAL, "export HTTP_PROXY=$http_proxy HTTPS_PROXY=$http_proxy ALL_PROXY=$http_proxy",
     "not run: what run sets (test_run_env)"),
    (MANUAL, "boxproxy check --allow \"$(sed", "not run: reads /etc/boxproxy/s1.allow"),
    (README, "scripts/demo        # installs", "not run: the whole build and test run (scripts/test-all is CI)"),
    (MANUAL, "$ boxproxy run --socket /run/boxproxy-s1/egress.sock --ca /run/boxproxy-s1/ca.pem",
     "run by test_supervisor_example"),
    (MANUAL, "$ boxproxy run --control-socket $XDG_RUNTIME_DIR/llm.ctl", "run by test_run_rotation"),
    (README, "podman run -d --rm --name egress --network host", "not run: the manual's recipe, the same with "
     "--allow, is run by test_container"),
    (README, "$ scripts/demo &", "run here: test_readme_30_seconds"),
    (README, 'egress socks host="169.254.169.254" port=80',
     "not run: the lines of the 30 seconds' curl commands, which need the Internet"),
    (README, "$ build/socketd/boxproxy run -- curl -sS https://example.com/",
     "not run: example.com needs the Internet (the offline block below is run)"),
    (README, "$ mkdir /tmp/o && echo 'hello from the origin'", "run here: test_readme_run_offline"),
    (README, "openssl s_server -quiet -accept 127.0.0.2:8443", "run by test_readme_inspection"),
    (README, "\"Bearer {gh}\"}}]}' >gh.json", "run by test_readme_inspection"),
)


def every_block(path):
    """Every example block of `path`, as the reader sees it."""
    with open(path) as f:
        text = f.read()
    if path.endswith(".md"):
        return re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)
    return manual_raw_blocks(path)


def manual_block(marker):
    """The one example block of the manual that holds `marker`."""
    found = [b for b in every_block(MANUAL) if marker in b]
    if len(found) != 1:
        raise AssertionError(f"the manual holds {len(found)} example blocks with {marker!r}, not one")
    return found[0]


def json_lines(block):
    """The JSON lines of a block, each line the manual wraps (going on indented) joined into one."""
    out = []
    for line in block.splitlines():
        if out and line[:1].isspace():
            out[-1] += line.strip()
        else:
            out.append(line)
    return out


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
    def listening():
        try:
            socket.create_connection(("127.0.0.2", int(port)), timeout=1).close()
            return True
        except OSError:
            return False
    if wait_until(listening, seconds, interval=0.05):
        return
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
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()

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


class EveryBlockTest(unittest.TestCase):

    def test_every_block_is_accounted_for(self):
        for path in (MANUAL, README):
            rows = [(marker, fate) for where, marker, fate in EVERY_BLOCK if where == path]
            for i, block in enumerate(every_block(path)):
                with self.subTest(file=os.path.basename(path), block=i, starts=block[:60]):
                    self.assertEqual(len([m for m, _ in rows if m in block]), 1,
                                     "a block no row of EVERY_BLOCK names (or two do): run it, or say why not")
            for marker, fate in rows:
                with self.subTest(marker=marker):
                    self.assertEqual(len([b for b in every_block(path) if marker in b]), 1, "a row whose block is gone")
                    self.assertRegex(fate, r"^(run here: test_\w+|run by test_\w+|not run: .+)")
                    if fate.startswith("run here: "):
                        name = fate.split()[2]
                        self.assertTrue(any(hasattr(c, name) for c in (ManualExamplesTest, ManualSamplesTest,
                                                                       ManualInspectionTest)), name)
                    elif fate.startswith("run by "):
                        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(__file__),
                                                                    fate.split()[2] + ".py")), fate)


class ManualSamplesTest(unittest.TestCase):
    """The manual's configuration files, error messages, refusal words and JSON samples, made by
    the real binary or validated against the schemas."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-samples-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def boxproxy(self, *args):
        return subprocess.run([binary(), *args], capture_output=True, text=True, timeout=10, cwd=self.dir,
                              stdin=subprocess.DEVNULL)

    def test_the_configuration_examples(self):
        # Each is a valid config, and serve reads it (its --allow-file made here: nothing else is
        # opened by --check-config); what it prints reads back the same.
        for marker in ('"allow-hint": "ask #sandbox-ops to open more"', '"name": "file-issue"', READ_ONLY_GITHUB,
                       LLM_CONFIG):
            with self.subTest(marker=marker):
                config = json.loads(manual_block(marker))
                self.assertEqual(errors("config", config), [])
                if "allow-file" in config:
                    config["allow-file"] = self.write("extra.allow", "example.org\n")
                first = self.boxproxy("serve", "--check-config", "--config", self.write("s1.json", json.dumps(config)))
                self.assertEqual((first.returncode, first.stderr), (0, ""))
                for schema in ("config", "check-config"):  # what it prints is a config too
                    self.assertEqual(errors(schema, json.loads(first.stdout)), [], schema)
                again = self.boxproxy("serve", "--check-config", "--config", self.write("again.json", first.stdout))
                self.assertEqual(again.stdout, first.stdout)
        # The inspection example does what the words above it say.
        self.write("github.json", manual_block('"name": "file-issue"'))
        judged = self.boxproxy(
            "check", "--config", "github.json", "--resolve", "api.github.com=140.82.112.6",
            "--resolve", "raw.githubusercontent.com=185.199.108.133",
            "GET https://api.github.com/repos/acme/widget/contents/README.md",
            "POST https://api.github.com/repos/acme/widget/issues",
            "DELETE https://api.github.com/repos/acme/widget",
            "GET https://api.github.com/repos/acme/widget/hooks/1",
            "GET https://api.github.com/repos/other/widget",
            "GET https://raw.githubusercontent.com/acme/widget/main/README.md",
            "PUT https://raw.githubusercontent.com/acme/widget/main/README.md")
        self.assertEqual([line.split("\t")[1:] for line in judged.stdout.splitlines()], [
            ["github", "rules[0]", "ok"],  # its repositories readable
            ["github", "file-issue", "ok"],  # issues open to new ones
            ["github", "-", "request denied"],
            ["github", "no-hooks", "request denied"],  # no webhook touched, its own either
            ["github", "-", "request denied"],  # another organisation's
            ["*.githubusercontent.com:443", "access", "ok"],
            ["*.githubusercontent.com:443", "access", "request denied (report mode)"]], judged.stdout)

    def test_the_worked_example_of_request_inspection(self):
        # REQUEST INSPECTION's words about its config: reading goes, DELETE is refused by access,
        # and the webhooks are out of reach even for reading.
        self.write("github.json", manual_block(READ_ONLY_GITHUB))
        judged = self.boxproxy(
            "check", "--config", "github.json", "--resolve", "api.github.com=140.82.112.6",
            "GET https://api.github.com/repos/acme/widget/pulls",
            "DELETE https://api.github.com/repos/acme/widget",
            "GET https://api.github.com/repos/acme/widget/hooks/1")
        self.assertEqual([line.split("\t")[1:] for line in judged.stdout.splitlines()], [
            ["api.github.com:443", "access", "ok"],
            ["api.github.com:443", "access", "request denied"],
            ["api.github.com:443", "no-hooks", "request denied"]], judged.stdout)

    def test_the_error_messages(self):
        # Each from an input that makes it; the manual's file is s1.json.
        cases = [
            ('--max-tunnels: "0" is not a number', ["serve", "--check-config", "--max-tunnels", "0"], None),
            ('key "no-confine" is command line only', ["serve", "--check-config", "--config", "s1.json"],
             '{"no-confine": true}\n'),
            # A closing brace forgotten.
            ("line 3, column 20: the text ends", ["serve", "--check-config", "--config", "s1.json"],
             '{\n  "socket": "/run/boxproxy/s1/egress.sock",\n  "max-tunnels": 64'),
            ('"/repos/acme**": \'**\' stands only', ["serve", "--check-config", "--config", "s1.json"],
             json.dumps({"inspect": [{"host": "api.github.com", "rules": [
                 {"method": "GET", "path": "/repos/acme/**"}, {"method": "GET", "path": "/repos/acme**"}]}]})),
        ]
        for marker, argv, config in cases:
            with self.subTest(marker=marker):
                if config is not None:
                    self.write("s1.json", config)
                result = self.boxproxy(*argv)
                self.assertEqual((result.returncode, result.stdout), (2, ""))
                self.assertEqual(result.stderr, manual_block(marker))

    def test_the_refusal_words(self):
        # The words of a CONNECT refusal (its status line's reason), with and without --allow-hint.
        words = manual_block("is an address, not a name on this box's network list").splitlines()
        hinted = manual_block("HTTP/1.1 403 other.com is not on this box's network list: ask ops").rstrip("\n")
        seen = []
        for allow, hint, target in (("other.com", None, "example.com:443"), ("example.com", None, "10.0.0.1:443"),
                                    ("example.com", None, "example.com:8080"),
                                    ("example.com", "ask ops", "other.com:443")):
            with tempfile.TemporaryDirectory(prefix="boxproxy-words-") as d:
                socket_path = os.path.join(d, "s.sock")
                argv = [binary(), "serve", "--socket", socket_path, "--allow", allow, "--nameserver", "127.0.0.1:9"]
                serve = subprocess.Popen(argv + (["--allow-hint", hint] if hint else []), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                try:
                    self.assertTrue(serve.stdout.readline().startswith(b'{"event":"listening"'))
                    with socket.socket(socket.AF_UNIX) as c:
                        c.settimeout(10)
                        c.connect(socket_path)
                        c.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
                        seen.append(c.makefile("rb").readline().decode().rstrip("\r\n"))
                finally:
                    serve.terminate()
                    serve.wait(timeout=10)
                    serve.stdout.close()
        self.assertEqual(seen, ["HTTP/1.1 403 " + w for w in words] + [hinted])

    def test_the_json_samples(self):
        for marker, schema in (('{"event":"listening","socket":"/run/boxproxy/s1.sock"', "listening-line"),
                               ('{"event":"listening","socket":"/run/egress.sock"', "listening-line"),
                               ('{"ts":"2026-12-01T12:49:22.233Z","id":8,"kind":"connect"', "decision-line"),
                               ('{"event":"stats","open":1,"used":17', "stats-line"),
                               ('{"event":"log-dropped","n":1342}', "log-dropped-line")):
            with self.subTest(schema=schema):
                for line in json_lines(manual_block(marker)):
                    self.assertEqual(errors(schema, json.loads(line)), [], line)
        for marker in ('{"op":"inspect","id":7,"set":', SECRET_OP):
            request, reply = json_lines(manual_block(marker))
            self.assertEqual(errors("control-request", json.loads(request)), [])
            self.assertEqual(errors("control-reply", json.loads(reply)), [])


@unittest.skipUnless(os.path.exists(INSPECTOR), "boxproxy-inspect is not built next to boxproxy")
class ManualInspectionTest(ProxyTestCase):
    """The manual's examples of request inspection, from a real serve and its inspector: the inspect
    op's request and reply on the control channel, and a request line of the log (a TLS origin of
    the test's own on 127.0.0.2 stands for api.example, curl is the box's client)."""

    def test_the_inspect_op(self):
        request, reply = json_lines(manual_block('{"op":"inspect","id":7,"set":'))
        _, client = proxy_with_control_fd(self, "--inspect", "other.example")  # inspection on at start
        client.send_raw(request.encode() + b"\n")
        answer = client.reply()
        self.assertEqual(json.dumps(answer, separators=(",", ":")), reply)

    def test_the_secret_op(self):
        # CREDENTIALS' rotation: the request as shown, to a session whose endpoint injects {llm}.
        request, reply = json_lines(manual_block(SECRET_OP))
        config = os.path.join(self.dir(), "llm.json")
        with open(config, "w") as f:
            f.write(manual_block(LLM_CONFIG))
        p, client = proxy_with_control_fd(self, "--config", config)
        client.send_raw(request.encode() + b"\n")
        answer = client.reply()
        self.assertEqual(json.dumps(answer, separators=(",", ":")), reply)
        p.stop()
        self.assertNotIn(json.loads(request)["value"], p.stderr_text())

    @unittest.skipUnless(CURL, "no curl here")
    def test_the_request_line(self):
        shown = unwrapped(manual_block('egress request host="api.example"').splitlines())
        self.assertEqual(len(shown), 1, shown)
        cert, key = make_certificate(self.dir(), "api.example")
        origin = TlsOrigin(cert, key)
        self.addCleanup(origin.close)
        ca = os.path.join(self.dir(), "session-ca.pem")
        config = os.path.join(self.dir(), "s1.json")
        with open(config, "w") as f:
            json.dump({"inspect": [{"host": f"api.example:{origin.port}",
                                    "deny": [{"method": "DELETE", "path": "/**"}]}]}, f)
        p = self.proxy("--config", config, "--resolve", "api.example=127.0.0.2", "--upstream-ca", cert,
                       "--ca-out", ca)
        code, out, err = curl("--proxy", f"socks5h://localhost{p.socket_path}", "--cacert", ca, "-X", "DELETE",
                              "-o", "/dev/null", "-w", "%{http_code}", f"https://api.example:{origin.port}/repos/1")
        self.assertEqual((code, out), (0, "403"), err)
        line = p.wait_raw(r"^egress request ")
        self.assertEqual(masked(line), masked(shown[0].replace("port=443", f"port={origin.port}")))

    def dir(self):
        if not hasattr(self, "_dir"):
            tmp = tempfile.TemporaryDirectory(prefix="boxproxy-manual-inspect-")
            self.addCleanup(tmp.cleanup)
            self._dir = tmp.name
        return self._dir


if __name__ == "__main__":
    unittest.main()
