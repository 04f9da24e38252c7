# SPDX-License-Identifier: Apache-2.0
"""A pod of examples/kubernetes/ under `podman kube play --network none`, with images built
offline: what tests/e2e/test_pod.py and bench/pod share.

PodPlay builds the three images (scripts/build-image's boxproxy image, the capture image as
Containerfile.capture makes it but from this host's libnftables, and an agent image of busybox and
curl with files of the caller's own), localises pod.yaml and policy.yaml (the images, the names,
the policy, a container of the caller's own beside the agent) and plays the pod. Everything it
makes is removed by close()."""

import os
import shutil
import subprocess
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples", "kubernetes")
LIBNFTABLES = "/usr/lib/x86_64-linux-gnu/libnftables.so.1"
POD_TIMEOUT = 240  # podman kube play, from nothing to running


def podman(*args, timeout=120, env=None):
    from test_container import podman_env
    return subprocess.run(["podman", "--runtime", "runc", *args], capture_output=True, text=True, timeout=timeout,
                          env=env or podman_env(), stdin=subprocess.DEVNULL)


def copy_with_libraries(root, program):
    """`program` and every library ldd names for it, at the same paths under `root`; the loader
    also beside libc, where a static binary's dlopen looks for it (libc names it as a library)."""
    paths = [w for w in subprocess.run(["ldd", program], capture_output=True, text=True, timeout=30,
                                       check=True).stdout.split() if w.startswith("/")]
    libc = next(p for p in paths if os.path.basename(p) == "libc.so.6")
    loaders = [os.path.join(os.path.dirname(libc), os.path.basename(p)) for p in paths
               if os.path.basename(p).startswith("ld-linux")]
    for path, where in [(p, p) for p in [program] + paths] + [(loader, loader) for loader in loaders]:
        target = os.path.join(root, where.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(path, target)


def why_not(binary):
    """None when a pod can be played here with `binary`, else the reason it cannot."""
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/install-deps)"
    if shutil.which("catatonit") is None and not os.path.exists("/usr/libexec/podman/catatonit"):
        return "a pod's infra container needs catatonit (scripts/install-deps)"
    if os.geteuid() != 0:
        return "the capture container needs NET_ADMIN in the pod: rootful podman here"
    headers = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, timeout=30).stdout
    if "program interpreter" in headers:
        return "this build's boxproxy is linked dynamically: the images need the static one"
    if not os.path.exists(LIBNFTABLES):
        return f"{LIBNFTABLES} is missing (libnftables1)"
    return None


class PodPlay:
    """The images and the pod. `prefix` names everything (images, pod, ConfigMap, Secret)."""

    def __init__(self, binary, prefix):
        from test_container import podman_env, ulimit_flags
        self.binary = binary
        self.tmp = tempfile.TemporaryDirectory(prefix=f"boxproxy-{prefix}-")
        self.dir = self.tmp.name
        self.unique = f"bxp-{prefix}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.cleanups = []
        # Ulimits runc can set without CAP_SYS_RESOURCE (as test_container's): kube play has no
        # --ulimit, so through a containers.conf of our own.
        flags = ulimit_flags()
        conf = os.path.join(self.dir, "containers.conf")
        with open(conf, "w") as f:
            f.write("[containers]\ndefault_ulimits = [%s]\n" % ", ".join(
                f'"{flags[i + 1]}"' for i in range(0, len(flags), 2)))
        self.env = dict(podman_env(), CONTAINERS_CONF=conf)
        self.images = {name: f"localhost/{self.unique}-{name}:latest" for name in ("boxproxy", "capture", "agent")}
        self.pod = self.unique

    def close(self):
        for cleanup in reversed(self.cleanups):
            cleanup()
        self.cleanups = []
        self.tmp.cleanup()

    def podman(self, *args, timeout=120):
        return podman(*args, timeout=timeout, env=self.env)

    def build_images(self, certificate, agent_files=()):
        """The three images; the agent's is busybox and curl (test_container's client image,
        trusting `certificate`) with `agent_files` ((host path, path in the image) pairs) and a
        few more applets."""
        from test_container import BUILD_IMAGE, client_rootfs
        for image in self.images.values():
            self.cleanups.append(lambda image=image: self.podman("rmi", "--force", "--ignore", image))
        built = subprocess.run([BUILD_IMAGE, "--binary", self.binary, "--tag", self.images["boxproxy"]],
                               capture_output=True, text=True, timeout=300, env=self.env)
        if built.returncode != 0:
            raise AssertionError(f"scripts/build-image: {built.stderr}")
        # The capture image as Containerfile.capture makes it, offline: the binary, libnftables
        # and what it links, from this host.
        capture = os.path.join(self.dir, "capture")
        copy_with_libraries(os.path.join(capture, "rootfs"), LIBNFTABLES)
        os.makedirs(os.path.join(capture, "rootfs", "tmp"))
        self.build(capture, f"FROM scratch\nCOPY rootfs/ /\nCOPY --from={self.images['boxproxy']} /usr/bin/boxproxy "
                   "/usr/bin/boxproxy\nENTRYPOINT [\"/usr/bin/boxproxy\"]\n", self.images["capture"])
        agent = os.path.join(self.dir, "agent")
        why = client_rootfs(os.path.join(agent, "rootfs"), certificate)
        if why:
            return why
        for applet in ("ls", "cat", "test", "tftp", "timeout", "grep", "id"):
            os.symlink("busybox", os.path.join(agent, "rootfs", "bin", applet))
        for source, where in agent_files:
            target = os.path.join(agent, "rootfs", where.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(source, target)
        self.build(agent, "FROM scratch\nCOPY rootfs/ /\n", self.images["agent"])
        return None

    def build(self, context, containerfile, tag):
        with open(os.path.join(context, "Containerfile"), "w") as f:
            f.write(containerfile)
        done = self.podman("build", "--quiet", "--pull=false", "--tag", tag, context, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"podman build {tag}: {done.stderr}")

    def localised(self, config, secret, origin, config_files=None):
        """pod.yaml and policy.yaml as written, but for: the images, the names, the policy
        (`config`, serve's --config as a dict; `config_files` more files beside it in the
        ConfigMap), the Secret's data (`secret`), a restart policy podman 4.3 needs, and
        `origin`, one more container (a dict of the Pod's) with the agent's image."""
        import yaml  # python3-yaml (scripts/install-deps)
        import json
        docs = []
        for name in ("policy.yaml", "pod.yaml"):
            with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
                docs += [d for d in yaml.safe_load_all(f) if d]
        by_kind = {d["kind"]: d for d in docs}
        by_kind["ConfigMap"]["data"].update(config_files or {})
        by_kind["ConfigMap"]["data"]["config.json"] = json.dumps(config)
        # podman 4.3 reads a Secret's data only (not stringData, as Kubernetes does).
        by_kind["Secret"].pop("stringData")
        by_kind["Secret"]["data"] = {"llm": secret}
        pod = by_kind["Pod"]
        pod["metadata"]["name"] = self.unique
        # Names of our own: kube play keeps a Secret as a podman secret (removed after).
        by_kind["ConfigMap"]["metadata"]["name"] = f"{self.unique}-policy"
        by_kind["Secret"]["metadata"]["name"] = f"{self.unique}-secrets"
        spec = pod["spec"]
        spec["restartPolicy"] = "OnFailure"  # podman 4.3 restarts an init container under Always
        containers = {c["name"]: c for c in spec["initContainers"] + spec["containers"]}
        containers["capture"]["image"] = self.images["capture"]
        containers["egress"]["image"] = self.images["boxproxy"]
        containers["agent"]["image"] = self.images["agent"]
        spec["containers"].append(dict(origin, image=self.images["agent"]))
        volumes = {v["name"]: v for v in spec["volumes"]}
        volumes["policy"]["configMap"]["name"] = f"{self.unique}-policy"
        volumes["secrets"]["secret"]["secretName"] = f"{self.unique}-secrets"
        # podman 4.3 gives an emptyDir to the user of whichever container mounts it first (the
        # agent's, at times: the sidecar could not write the CA); Kubernetes makes it writable by
        # all. A directory of our own, as Kubernetes would make it, instead.
        trust = os.path.join(self.dir, "trust")
        os.mkdir(trust)
        os.chmod(trust, 0o777)
        volumes["trust"].pop("emptyDir")
        volumes["trust"]["hostPath"] = {"path": trust}
        return by_kind["ConfigMap"], by_kind["Secret"], pod

    def play(self, docs, extra_volumes=()):
        """Plays the pod (`docs` from localised(), `extra_volumes` added to the Pod's), then waits
        for the sidecar's ready file. Raises AssertionError, saying why, when it does not start."""
        import yaml
        docs[2]["spec"]["volumes"] += list(extra_volumes)
        manifest = os.path.join(self.dir, "pod.yaml")
        with open(manifest, "w") as f:
            yaml.safe_dump_all(docs, f)
        self.cleanups.append(lambda: self.podman("secret", "rm", f"{self.unique}-secrets"))
        self.cleanups.append(lambda: self.podman("pod", "rm", "--force", "--ignore", "--time", "0", self.pod))
        played = self.podman("kube", "play", "--network", "none", manifest, timeout=POD_TIMEOUT)
        if played.returncode != 0:
            raise AssertionError(f"podman kube play: {played.stdout}{played.stderr}")
        ready = self.podman("exec", f"{self.pod}-egress", "/usr/bin/boxproxy", "sidecar", "--probe",
                            "--ready-file=/run/egress/ready", "--probe-timeout=60", timeout=90)
        if ready.returncode != 0:
            raise AssertionError(f"the sidecar is not ready: {ready.stderr}\n{self.logs('egress')}")

    def logs(self, container):
        got = self.podman("logs", f"{self.pod}-{container}")
        return got.stdout + got.stderr

    def exec(self, container, *command, timeout=60, user=None):
        return self.podman("exec", *(["--user", user] if user else []), f"{self.pod}-{container}", *command,
                           timeout=timeout)

    def pids(self, container):
        """The host pids of every process in `container` (podman top's hpid)."""
        got = self.podman("top", f"{self.pod}-{container}", "hpid", "args")
        return [(int(line.split(None, 1)[0]), line.split(None, 1)[1]) for line in got.stdout.splitlines()[1:]
                if line.split() and line.split()[0].isdigit()]
