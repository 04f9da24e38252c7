# SPDX-License-Identifier: Apache-2.0
"""The manual's container recipes (man/boxproxy.1, EXAMPLES: "A container with no network" and
"The boxproxy image"; issue 23 item 2), run with podman as they are written, and the image
scripts/build-image makes from the tree.

Nothing is pulled: there may be no registry at all. The boxproxy image is FROM scratch with this
build's binary (scripts/build-image --binary), and the recipes' IMAGE is a test image made here FROM
scratch too: busybox-static for the shell and the tools the bridge recipe runs (sh, seq, sleep),
the host's curl with the libraries ldd names for it (Debian has no static curl), a /tmp, the
test origin's certificate as the image's trust store, and boxproxy copied out of the boxproxy image
(COPY --from, as the manual says to do).

Loopback only: the origins listen on the host's 127.0.0.2, the recipes' example.com becomes a name
the proxy is given with --resolve (and 127.0.0.2 let through with --permit), and a DNS server of the
test's own answers every other name with NXDOMAIN. What a recipe says is changed only where a test
must: the paths, the names, the image, and flags added after `podman run`: --runtime runc (what
the manual says they were tried with), a --name of the test's own (removed afterwards, as are the
images), --timeout (conmon kills a container that outlives it), and the ulimits a machine may need
(found by trying without them first; the manual says when they are needed).

Skips, saying why, where podman is not installed or cannot run a container here."""

import datetime
import json
import os
import resource
import shutil
import subprocess
import tarfile
import tempfile
import unittest
import uuid

from box_support import TlsOrigin, make_certificate
from harness import DnsServer, HttpOrigin, Proxy, binary, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANUAL = os.path.join(ROOT, "man", "boxproxy.1")
BUILD_IMAGE = os.path.join(ROOT, "scripts", "build-image")
BUILD_TIMEOUT = 300  # building one image (no compiling: the binary is this build's)
PODMAN_TIMEOUT = 120  # one podman command or recipe, start to exit
CONTAINER_SECONDS = 60  # podman run --timeout: conmon kills a container that runs longer
START_SECONDS = 20  # a containerised serve's socket appears
NAME = "origin.test"  # what the recipes' example.com becomes
# The variables a client or podman itself would take a proxy from (podman hands the host's proxy
# variables into every container it starts): none of them may lead anywhere but where a recipe says.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                   "no_proxy")


def groff_text(line):
    """A line of an .EX block as the reader sees it."""
    for escape, text in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\&", ""), ("\\e", "\\")):
        line = line.replace(escape, text)
    return line


def manual_block(marker):
    """The one .EX block of the manual's container sections that holds `marker`, as the reader
    copies it."""
    with open(MANUAL, encoding="utf-8") as f:
        text = f.read()
    start = text.index(".SS A container with no network\n")
    end = text.index("\n.SS ", text.index(".SS The boxproxy image\n"))
    blocks = [groff_text(b) for b in text[start:end].split(".EX\n")[1:]]
    found = [b[:b.index(".EE\n")] for b in blocks if marker in b[:b.index(".EE\n")]]
    if len(found) != 1:
        raise AssertionError(f"the manual's container sections hold {len(found)} blocks with {marker!r}, not one")
    return found[0]


def replaced(text, old, new):
    """`text` with `old` replaced by `new`; `old` must be there (a recipe that changed fails the
    test instead of running something else)."""
    if old not in text:
        raise AssertionError(f"the recipe no longer holds {old!r}:\n{text}")
    return text.replace(old, new)


def podman_env():
    env = dict(os.environ)
    for name in PROXY_VARIABLES:
        env.pop(name, None)
    return env


def podman(*args, timeout=PODMAN_TIMEOUT):
    """One podman command, bounded; returns the CompletedProcess (text)."""
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, env=podman_env(),
                          stdin=subprocess.DEVNULL)


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(nothing)"


def ulimit_flags():
    """What a machine like the one the manual names needs: ulimits runc can set without
    CAP_SYS_RESOURCE. Open files: no more than this process's hard limit; processes: no more than
    32768 (podman 4.3 as root lowers its own limit to that, and asks runc for more)."""
    flags = []
    for option, limit, ceiling in (("nofile", resource.RLIMIT_NOFILE, 1 << 20),
                                   ("nproc", resource.RLIMIT_NPROC, 32768)):
        hard = resource.getrlimit(limit)[1]
        value = ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)
        flags += ["--ulimit", f"{option}={value}:{value}"]
    return flags


def image_files(tag, directory):
    """{path: tarinfo} of everything in the image's layers (podman save, docker-archive)."""
    archive = os.path.join(directory, "image.tar")
    saved = podman("save", "--format", "docker-archive", "-o", archive, tag)
    if saved.returncode != 0:
        raise AssertionError(f"podman save {tag}: {saved.stderr}")
    files = {}
    with tarfile.open(archive) as outer:
        (manifest,) = json.load(outer.extractfile("manifest.json"))
        for layer in manifest["Layers"]:
            with tarfile.open(fileobj=outer.extractfile(layer), mode="r:*") as inner:
                for member in inner.getmembers():
                    files[os.path.normpath(member.name).lstrip("/")] = member
    return files


def client_rootfs(root, certificate):
    """Makes the recipes' IMAGE as a directory: busybox, curl and its libraries, /tmp, the trust
    store. Returns None, or the reason it cannot where a part is missing here."""
    busybox = shutil.which("busybox")
    curl = shutil.which("curl")
    if busybox is None or curl is None:
        return "busybox (Debian's busybox-static) and curl are needed for the test image (scripts/install-deps)"
    headers = subprocess.run(["readelf", "-lW", busybox], capture_output=True, text=True, timeout=30).stdout
    if "program interpreter" in headers:  # a scratch image has no loader for it
        return f"{busybox} is linked dynamically: the test image needs Debian's busybox-static"
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy(busybox, os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "seq", "sleep"):  # the bridge recipe's shell and loop
        os.symlink("busybox", os.path.join(root, "bin", applet))
    os.makedirs(os.path.join(root, "usr", "bin"))
    shutil.copy(curl, os.path.join(root, "usr", "bin", "curl"))
    ldd = subprocess.run(["ldd", curl], capture_output=True, text=True, timeout=30, check=True).stdout
    for word in ldd.split():
        if word.startswith("/"):  # "libx.so => /lib/.../libx.so (0x...)" and the loader's own line
            target = os.path.join(root, word.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(word, target)  # follows links: the loader's /lib64 path becomes a file
    os.makedirs(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    trust = os.path.join(root, "etc", "ssl", "certs")
    os.makedirs(trust)
    shutil.copy(certificate, os.path.join(trust, "ca-certificates.crt"))  # curl's default CA file on Debian
    return None


class ContainerRecipesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if shutil.which("podman") is None:
            raise unittest.SkipTest("podman is not installed (scripts/install-deps installs podman, buildah, runc)")
        headers = subprocess.run(["readelf", "-lW", binary()], capture_output=True, text=True, timeout=30).stdout
        if "program interpreter" in headers:
            # The sanitizer build links the shared libraries; a scratch image has none of them.
            raise unittest.SkipTest("this build's boxproxy is linked dynamically (a sanitizer build?): the image "
                                    "and the recipes need the static binary of a plain build")
        cls.unique = f"boxproxy-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        cls.image = f"localhost/{cls.unique}:latest"
        cls.client_image = f"localhost/{cls.unique}-client:latest"
        tmp = tempfile.TemporaryDirectory(prefix="boxproxy-container-")
        cls.addClassCleanup(tmp.cleanup)
        cls.dir = tmp.name
        cls.certificate, cls.key = make_certificate(cls.dir, NAME)

        cls.addClassCleanup(podman, "rmi", "--force", "--ignore", cls.image)
        built = subprocess.run([BUILD_IMAGE, "--binary", binary(), "--tag", cls.image], capture_output=True,
                               text=True, timeout=BUILD_TIMEOUT, env=podman_env())
        if built.returncode != 0:
            raise AssertionError(f"scripts/build-image failed: {built.stdout}{built.stderr}")
        cls.image_id = built.stdout.strip().splitlines()[-1]

        # Can podman run a container here, and with which flags? The image's own --version, bare
        # first, then with the ulimits a machine with low hard limits needs.
        version = subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=30).stdout
        reasons = []
        cls.flags = None
        for attempt, flags in enumerate(([], ulimit_flags())):
            name = f"{cls.unique}-probe-{attempt}"
            cls.addClassCleanup(podman, "rm", "--force", "--ignore", "--time", "0", name)
            probe = podman("--runtime", "runc", "run", "--rm", "--name", name, "--timeout", str(CONTAINER_SECONDS),
                           *flags, "--network", "none", cls.image, "--version")
            if probe.returncode == 0:
                if probe.stdout != version:
                    raise AssertionError(f"the image's boxproxy says {probe.stdout!r}, the build's {version!r}")
                cls.flags = flags
                break
            reasons.append(f"{' '.join(flags) or 'no extra flags'}: {last_line(probe.stderr)}")
        if cls.flags is None:
            raise unittest.SkipTest("podman cannot run a container here: " + "; ".join(reasons))
        print(f"podman runs containers here with: --runtime runc {' '.join(cls.flags)}")

        context = os.path.join(cls.dir, "client")
        why = client_rootfs(os.path.join(context, "rootfs"), cls.certificate)
        if why:
            raise unittest.SkipTest(why)
        with open(os.path.join(context, "Containerfile"), "w") as f:
            f.write("FROM scratch\nCOPY rootfs/ /\n"
                    f"COPY --from={cls.image} /usr/bin/boxproxy /usr/bin/boxproxy\n")
        cls.addClassCleanup(podman, "rmi", "--force", "--ignore", cls.client_image)
        client = podman("build", "--quiet", "--pull=false", "--tag", cls.client_image, context, timeout=BUILD_TIMEOUT)
        if client.returncode != 0:
            raise AssertionError(f"podman build of the test image failed: {client.stderr}")

    def setUp(self):
        self.names = 0

    # -- helpers

    def container_name(self):
        """A container name of this test's own, removed (forcibly, bounded) after the test."""
        self.names += 1
        name = f"{self.unique}-{self._testMethodName[5:].replace('_', '-')}-{self.names}"
        self.addCleanup(podman, "rm", "--force", "--ignore", "--time", "0", name)
        return name

    def run_args(self, name):
        """What the test adds after `podman run`."""
        return f"--name {name} --timeout {CONTAINER_SECONDS} {' '.join(self.flags)}".rstrip()

    def localised(self, recipe, socket_dir, url):
        """A client recipe made to run here: its socket directory, image, URL and name."""
        text = replaced(recipe, "podman run ", f"podman --runtime runc run {self.run_args(self.container_name())} ")
        text = replaced(text, "-v /run/egress:/run/egress", f"-v {socket_dir}:/run/egress")
        text = replaced(text, " IMAGE ", f" {self.client_image} ")
        return replaced(text, "https://example.com/", url)

    def run_recipe(self, text):
        """The recipe through bash, bounded; returns the CompletedProcess (text)."""
        return subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=PODMAN_TIMEOUT,
                              env=podman_env(), stdin=subprocess.DEVNULL)

    def tls_origin(self):
        origin = TlsOrigin(self.certificate, self.key)
        self.addCleanup(origin.close)
        return origin, f"https://{NAME}:{origin.port}/"

    def host_proxy(self):
        """The recipes' `boxproxy serve --socket /run/egress/egress.sock` on the host, in a
        directory of its own (mounted where the recipe mounts /run/egress)."""
        proxy = Proxy("--resolve", f"{NAME}=127.0.0.2")
        self.addCleanup(proxy.cleanup)
        return proxy.start()

    # -- the tests

    def test_the_image_holds_the_binary_and_nothing_else(self):
        inspected = podman("image", "inspect", self.image)
        self.assertEqual(inspected.returncode, 0, inspected.stderr)
        (config,) = json.loads(inspected.stdout)
        self.assertEqual(config["Config"]["Entrypoint"], ["/usr/bin/boxproxy"])
        self.assertEqual(len(config["RootFS"]["Layers"]), 1)
        with tempfile.TemporaryDirectory(prefix="boxproxy-image-", dir=self.dir) as directory:
            files = image_files(self.image, directory)
        self.assertEqual(sorted(files), ["usr", "usr/bin", "usr/bin/boxproxy", "usr/bin/boxproxy-inspect"])
        for name in ("usr/bin/boxproxy", "usr/bin/boxproxy-inspect"):
            self.assertTrue(files[name].isfile())
            self.assertEqual(files[name].mode & 0o7777, 0o755)
        # Stripped: well under the build's binary (with its debugging sections).
        self.assertLess(files["usr/bin/boxproxy"].size, os.path.getsize(binary()) // 2 + 1)
        # The same binary makes the same image (the manual says so: its creation time is
        # SOURCE_DATE_EPOCH, or 0 where that is not set, never the time of the build).
        again = f"localhost/{self.unique}-again:latest"
        self.addCleanup(podman, "rmi", "--force", "--ignore", again)
        built = subprocess.run([BUILD_IMAGE, "--binary", binary(), "--tag", again], capture_output=True, text=True,
                               timeout=BUILD_TIMEOUT, env=podman_env())
        self.assertEqual(built.returncode, 0, built.stderr)
        self.assertEqual(built.stdout.strip().splitlines()[-1], self.image_id)

    def test_the_image_is_dated_at_source_date_epoch(self):
        # scripts/release dates the image at its last commit through SOURCE_DATE_EPOCH: the image's
        # creation time and every file in its layer; without it, the epoch itself.
        epoch = 1700000000  # 2023-11-14 22:13:20 UTC
        dated = f"localhost/{self.unique}-dated:latest"
        self.addCleanup(podman, "rmi", "--force", "--ignore", dated)
        built = subprocess.run([BUILD_IMAGE, "--binary", binary(), "--tag", dated], capture_output=True, text=True,
                               timeout=BUILD_TIMEOUT, env=dict(podman_env(), SOURCE_DATE_EPOCH=str(epoch)))
        self.assertEqual(built.returncode, 0, built.stderr)
        for image, when in ((dated, epoch), (self.image, int(os.environ.get("SOURCE_DATE_EPOCH", "0")))):
            inspected = podman("image", "inspect", image)
            self.assertEqual(inspected.returncode, 0, inspected.stderr)
            (config,) = json.loads(inspected.stdout)
            self.assertEqual(datetime.datetime.fromisoformat(config["Created"]).timestamp(), when, image)
            with tempfile.TemporaryDirectory(prefix="boxproxy-image-", dir=self.dir) as directory:
                dates = {path: member.mtime for path, member in image_files(image, directory).items()}
            self.assertEqual(dates, dict.fromkeys(dates, when), image)

    def test_curl_over_the_mounted_socket(self):
        proxy = self.host_proxy()
        origin, url = self.tls_origin()
        recipe = manual_block("curl --proxy socks5h://localhost/run/egress/egress.sock")
        result = self.run_recipe(self.localised(recipe, proxy.dir, url))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "x" * 511 + "\n")
        self.assertEqual(len(origin.requests), 1)
        proxy.wait_log(kind="socks", host=NAME, cls="ok")

    def test_the_bridge_inside(self):
        proxy = self.host_proxy()
        origin, url = self.tls_origin()
        recipe = manual_block("boxproxy bridge --socket /run/egress/egress.sock")
        text = replaced(self.localised(recipe, proxy.dir, url),
                        "-v /usr/local/bin/boxproxy:/usr/local/bin/boxproxy:ro",
                        f"-v {os.path.abspath(binary())}:/usr/local/bin/boxproxy:ro")
        result = self.run_recipe(text)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "x" * 511 + "\n")
        self.assertEqual(len(origin.requests), 1)
        # https_proxy: curl asked the bridge for a CONNECT tunnel, which the bridge took to the
        # proxy over the socket.
        proxy.wait_log(host=NAME, cls="ok")

    def test_the_socket_is_the_only_way_out(self):
        # --network none leaves the container its own loopback and nothing else: 127.0.0.2 in it
        # is not the host's 127.0.0.2, where this origin listens.
        recipe = manual_block("curl --proxy socks5h://localhost/run/egress/egress.sock")
        self.assertIn("--network none", recipe)
        origin = HttpOrigin()
        self.addCleanup(origin.close)
        direct = ["curl", "-sS", "--max-time", "10", "--noproxy", "*", f"http://127.0.0.2:{origin.port}/"]

        def run(network):
            return podman("--runtime", "runc", "run", "--rm", "--name", self.container_name(),
                          "--timeout", str(CONTAINER_SECONDS), *self.flags, "--network", network,
                          self.client_image, *direct)

        boxed = run("none")
        self.assertEqual(boxed.returncode, 7, f"curl reached something: {boxed.stdout!r} {boxed.stderr!r}")
        self.assertEqual(origin.requests, [])
        # The same container on the host's network does reach it: the check above can see a way
        # out where there is one.
        open_door = run("host")
        self.assertEqual(open_door.returncode, 0, open_door.stderr)
        self.assertEqual(len(origin.requests), 1)

    def test_serve_in_the_image_inspects(self):
        # The image holds the inspector too: serve in it terminates TLS for an inspected endpoint
        # (the origin's CA mounted and given with --upstream-ca: the image has no trust store), and
        # curl on the host, trusting the session CA serve wrote, gets its answer with a leaf of it.
        origin, url = self.tls_origin()
        socket_dir = os.path.join(self.dir, f"inspect-{self.unique}")
        os.mkdir(socket_dir, 0o700)
        self.addCleanup(shutil.rmtree, socket_dir, True)
        shutil.copy(self.certificate, os.path.join(socket_dir, "origin-ca.pem"))
        name = self.container_name()
        started = podman("--runtime", "runc", "run", "-d", "--rm", "--name", name, "--timeout",
                         str(CONTAINER_SECONDS * 3), *self.flags, "--network", "host", "--read-only",
                         "--cap-drop", "all", "-v", f"{socket_dir}:/run/egress", self.image,
                         "serve", "--socket", "/run/egress/egress.sock", "--permit", "127.0.0.2/32",
                         "--resolve", f"{NAME}=127.0.0.2", "--inspect", f"{NAME}:{origin.port}",
                         "--upstream-ca", "/run/egress/origin-ca.pem", "--ca-out", "/run/egress/ca.pem",
                         "--log", "json")
        self.assertEqual(started.returncode, 0, started.stderr)
        socket_path = os.path.join(socket_dir, "egress.sock")
        self.assertTrue(wait_until(lambda: os.path.exists(socket_path), START_SECONDS),
                        f"no socket within {START_SECONDS}s: {podman('logs', name).stderr}")
        got = subprocess.run(["curl", "-sS", "--max-time", "20", "--proxy", f"socks5h://localhost{socket_path}",
                              "--cacert", os.path.join(socket_dir, "ca.pem"), url], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(got.returncode, 0, got.stderr + podman("logs", name).stderr)
        self.assertEqual(got.stdout, "x" * 511 + "\n")
        self.assertEqual(len(origin.requests), 1)
        # Judged as a request, by the inspector in the image (a request line, not only a tunnel's).
        self.assertTrue(wait_until(lambda: '"kind":"request"' in podman("logs", name).stderr, 5),
                        podman("logs", name).stderr)

    def test_serve_in_the_image(self):
        # The image's serve, as the manual runs it, with the socket's directory mounted; the first
        # recipe's container then goes out through it.
        dns = DnsServer({})
        self.addCleanup(dns.close)
        origin, url = self.tls_origin()
        socket_dir = os.path.join(self.dir, f"serve-{self.unique}")
        os.mkdir(socket_dir, 0o700)
        self.addCleanup(shutil.rmtree, socket_dir, True)
        socket_path = os.path.join(socket_dir, "egress.sock")
        name = self.container_name()
        recipe = manual_block("serve --socket /run/egress/egress.sock --allow")
        text = replaced(recipe, "podman run ", f"podman --runtime runc run {' '.join(self.flags)} ")
        text = replaced(text, "--name egress", f"--name {name} --timeout {CONTAINER_SECONDS * 3}")
        text = replaced(text, "-v /run/egress:/run/egress", f"-v {socket_dir}:/run/egress")
        text = replaced(text, " localhost/boxproxy ", f" {self.image} ")
        # A bare name on the list opens ports 80 and 443 only; the origin's port is another.
        text = replaced(text, "--allow example.com", f"--allow {NAME}:{origin.port}")
        text = (text.rstrip("\n") + " \\\n"
                f"    --resolve {NAME}=127.0.0.2 --permit 127.0.0.2/32 --nameserver {dns.address}\n")
        started = self.run_recipe(text)
        self.assertEqual(started.returncode, 0, started.stderr)
        self.assertTrue(wait_until(lambda: os.path.exists(socket_path), START_SECONDS),
                        f"no socket within {START_SECONDS}s: {podman('logs', name).stderr}")

        client = self.localised(manual_block("curl --proxy socks5h://localhost/run/egress/egress.sock"),
                                socket_dir, url)
        result = self.run_recipe(client)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "x" * 511 + "\n")
        self.assertEqual(len(origin.requests), 1)
        # A name off the host list the recipe gave it is refused (its options reached the serve).
        refused = self.run_recipe(replaced(client, f"https://{NAME}:", "https://elsewhere.test:"))
        self.assertNotEqual(refused.returncode, 0)
        self.assertEqual(len(origin.requests), 1)

        # Its log, while it runs (--rm takes it away with the container).
        expected = ['{"event":"listening","socket":"/run/egress/egress.sock","pid":1}',
                    f'egress socks host="{NAME}" port={origin.port} ip=127.0.0.2 class=ok',
                    f'egress socks host="elsewhere.test" port={origin.port} ip=- class=not-listed']

        def log():
            logged = podman("logs", name)  # the listening line on its standard output, the rest on error
            return logged.stdout + logged.stderr

        self.assertTrue(wait_until(lambda: all(line in log() for line in expected), 10.0, 0.2), log())

        stopped = podman("stop", "--time", "10", name)
        self.assertEqual(stopped.returncode, 0, stopped.stderr)
        # A SIGTERM, not the SIGKILL after --time: a serve removes its socket only on a clean
        # shutdown.
        self.assertFalse(os.path.exists(socket_path))


if __name__ == "__main__":
    unittest.main()
