# SPDX-License-Identifier: Apache-2.0
"""A pod whose only way out is boxproxy (issue 38; man/boxproxy.1, PODS): `boxproxy capture`,
`boxproxy sidecar` and examples/kubernetes/.

CaptureInANamespaceTest: capture in a network namespace of its own (`unshare -n`, as root), with the
bridge there and serve outside: what a process that is not the exempt user reaches, against the
same probes with no rules (so each check can see a way out where there is one).
PodTest: `podman kube play` of examples/kubernetes/pod.yaml as written, but for the images, the
policy and an origin container of the test's own, with --network none: from the agent container.

Loopback only: origins on 127.0.0.2, every name given with --resolve, nothing else resolved."""

import json
import os
import shutil
import subprocess
import sys
import unittest

from harness import HttpOrigin, Proxy, binary

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OK_LINE = r"^HTTP/1\.[01] 200 OK$"  # the origin's, or the proxy's for a plain request
EXEMPT = 4242  # the exempt user in the namespace test
PROBE_TIMEOUT = 120


def can_unshare():
    if os.geteuid() != 0:
        return "needs root (unshare -n, nftables in the new namespace)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2)"
    tried = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, timeout=30)
    return None if tried.returncode == 0 else f"unshare -n fails here: {tried.stderr.strip()}"


class CaptureCommandTest(unittest.TestCase):
    """What needs no namespace: --check, the option errors, the refusal without CAP_NET_ADMIN."""

    def capture(self, *args, preexec=None):
        return subprocess.run([binary(), "capture", *args], capture_output=True, text=True, timeout=30,
                              preexec_fn=preexec)

    def test_check_prints_the_rules_and_loads_nothing(self):
        done = self.capture("--exempt-uid", "1337", "--check")
        self.assertEqual(done.returncode, 0, done.stderr)
        rules = done.stdout
        # One transaction that replaces the table: idempotent.
        self.assertTrue(rules.startswith("table inet boxproxy_capture {}\ndelete table inet boxproxy_capture\n"))
        for line in ("meta skuid 1337 return;", "meta l4proto { tcp, udp } th dport 53 redirect to :1053;",
                     "ip daddr 127.0.0.1 tcp dport 3128 return;", "meta l4proto tcp redirect to :3129;",
                     "type filter hook output priority 0; policy drop;", "meta skuid 1337 accept;",
                     "ip6 daddr ::1 tcp dport 3129 accept;"):
            self.assertIn(line, rules)
        other = self.capture("--exempt-uid", "7", "--port", "4000", "--dns-port", "0", "--listen-port", "0", "--check")
        self.assertEqual(other.returncode, 0, other.stderr)
        self.assertIn("redirect to :4000;", other.stdout)
        self.assertNotIn("dport 53", other.stdout)  # --dns-port 0: DNS falls to the drop policy
        self.assertNotIn("3128", other.stdout)

    def test_bad_options_exit_2_naming_them(self):
        for args, words in ((["--check"], "--exempt-uid N is required"),
                            (["--exempt-uid", "0", "--check"], '--exempt-uid: "0"'),
                            (["--exempt-uid", "x", "--check"], '--exempt-uid: "x"'),
                            (["--exempt-uid", "5", "--port", "70000", "--check"], '--port: "70000"'),
                            (["--exempt-uid", "5", "--dns-port", "3129", "--check"], "must differ"),
                            (["--exempt-uid", "5", "--bogus", "--check"], "--bogus")):
            done = self.capture(*args)
            self.assertEqual(done.returncode, 2, (args, done.stderr))
            self.assertIn(words, done.stderr, args)
            self.assertEqual(done.stdout, "")

    def test_refuses_without_net_admin(self):
        if os.geteuid() != 0:
            # Not root: the capability is missing already.
            done = self.capture("--exempt-uid", "1337")
        else:
            def drop():  # nobody, with no capability at all
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            done = self.capture("--exempt-uid", "1337", preexec=drop)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("needs CAP_NET_ADMIN", done.stderr)
        self.assertIn("nothing was changed", done.stderr)


class SidecarCommandTest(unittest.TestCase):
    """sidecar's own options (PodTest runs it in the pod)."""

    def sidecar(self, *args):
        return subprocess.run([binary(), "sidecar", *args], capture_output=True, text=True, timeout=60)

    def test_bad_options_exit_2_naming_them(self):
        for args, words in (([], "--socket PATH is required"),
                            (["--probe"], "--probe needs --ready-file PATH"),
                            (["--socket", "/tmp/x.sock", "--dns-port", "3129"], "must differ"),
                            (["--socket", "/tmp/x.sock", "--port", "0"], '--port: "0"'),
                            (["--socket", "/tmp/x.sock", "--", "--socket=/tmp/y.sock"], '"--socket=/tmp/y.sock"'),
                            (["--socket", "/tmp/x.sock", "--", "--max-tunnels", "zero"], "--max-tunnels")):
            done = self.sidecar(*args)
            self.assertEqual(done.returncode, 2, (args, done.stderr))
            self.assertIn(words, done.stderr, args)

    def test_probe(self):
        import tempfile
        with tempfile.TemporaryDirectory(prefix="boxproxy-sidecar-") as directory:
            ready = os.path.join(directory, "ready")
            missing = self.sidecar("--probe", "--ready-file", ready)
            self.assertEqual(missing.returncode, 1)
            self.assertIn("not ready", missing.stderr)
            with open(ready, "w"):
                pass
            self.assertEqual(self.sidecar("--probe", "--ready-file", ready, "--probe-timeout", "5").returncode, 0)

    def test_idle_each_process_costs_what_a_session_does(self):
        # The sidecar, serve and the bridge idle: each one process of the same binary, whose own
        # memory after start is the relocated tables, .data, .bss, a stack and a small heap
        # (bench/README.md, bench/density). A table made at start for what the bridge might hold
        # later is more than that: the names' index table, made whole at start, was 128 KiB.
        # The bound: serve's own figure (a session's) plus 32 KiB, a quarter of that table.
        from fault_support import memory_compared
        from harness import free_port, wait_until
        import tempfile
        if not memory_compared("an idle sidecar's processes"):
            return
        with tempfile.TemporaryDirectory(prefix="boxproxy-sidecar-") as directory:
            ready = os.path.join(directory, "ready")
            ports = [str(free_port("127.0.0.1")) for _ in range(3)]
            if len(set(ports)) < 3:
                self.skipTest("no three free ports on 127.0.0.1")
            sidecar = subprocess.Popen([binary(), "sidecar", "--socket", os.path.join(directory, "s.sock"),
                                        "--ready-file", ready, "--port", ports[0], "--dns-port", ports[1],
                                        "--listen-port", ports[2]],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                self.assertTrue(wait_until(lambda: os.path.exists(ready), 30, 0.05), sidecar.stderr)
                with open(f"/proc/{sidecar.pid}/task/{sidecar.pid}/children", encoding="ascii") as f:
                    serve, bridge = (int(pid) for pid in f.read().split())
                own = {name: anonymous_kib(pid) for name, pid in
                       (("sidecar", sidecar.pid), ("serve", serve), ("bridge", bridge))}
            finally:
                sidecar.terminate()
                sidecar.communicate(timeout=30)
        self.assertLessEqual(own["bridge"], own["serve"] + 32, own)
        self.assertLessEqual(own["sidecar"], own["serve"] + 32, own)


def anonymous_kib(pid):
    """A process's anonymous memory (its own: heap, stack, relocated and written data), KiB."""
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Anonymous:"))


class CaptureInANamespaceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        why = can_unshare()
        if why:
            raise unittest.SkipTest(why)

    def probe(self, captures):
        origin = HttpOrigin()
        self.addCleanup(origin.close)
        proxy = Proxy("--resolve", "origin.test=127.0.0.2")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        done = subprocess.run(["unshare", "-n", sys.executable, os.path.join(HERE, "pod_netns_probe.py"), binary(),
                               proxy.socket_path, str(origin.port), str(captures), str(EXEMPT)],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout), origin, proxy

    def test_without_rules_the_probes_see_the_ways_out(self):
        # The control: each probe below finds its way where nothing captures it.
        got, origin, _ = self.probe(0)
        self.assertEqual(got["tables"], [])
        self.assertEqual(got["origin_by_address"], "error 111")  # nothing of the host's is here
        self.assertEqual(got["dns_allowed"], ["none", []])
        self.assertTrue(got["tcp_bait_v4"])
        self.assertTrue(got["tcp_bait_v6"])
        self.assertTrue(got["udp_v4"])
        self.assertTrue(got["udp_v6"])
        self.assertTrue(got["icmp"])
        # Only the bridge's --listen port (HTTP_PROXY) led to the origin.
        self.assertRegex(got["origin_via_listen"], OK_LINE)  # the proxy's answer line
        self.assertEqual(len(origin.requests), 1)

    def test_capture_sends_tcp_and_dns_to_the_bridge_and_drops_the_rest(self):
        got, origin, proxy = self.probe(2)
        # Twice, each exit 0, and one table.
        self.assertEqual([code for code, _ in got["captures"]], [0, 0], got["captures"])
        self.assertEqual(got["tables"], ["table inet boxproxy_capture"])
        # A dial to a loopback address that is not the proxy's ends at the bridge, and the proxy
        # (outside the namespace) reaches the origin it names.
        self.assertRegex(got["origin_by_address"], OK_LINE)
        proxy.wait_log(host="127.0.0.2", port=origin.port, cls="ok")
        # DNS to any server goes to the bridge: an allowed name gets one of the bridge's addresses,
        # which leads back to the name; a name the proxy refuses is NXDOMAIN.
        rcode, addresses = got["dns_allowed"]
        self.assertEqual(rcode, "0")
        self.assertTrue(addresses[0].startswith("198.1"), addresses)
        self.assertEqual(got["dns_refused"], ["3", []])
        self.assertRegex(got["origin_by_name"], OK_LINE)
        self.assertRegex(got["origin_via_listen"], OK_LINE)
        self.assertEqual(len(origin.requests), 3)
        # A server of the namespace that is not the proxy is reached only through it (here
        # refused: 127.0.0.3 and ::1 are loopback), and only the exempt user dials it directly.
        self.assertFalse(got["tcp_bait_v4"])
        self.assertFalse(got["tcp_bait_v6"])
        self.assertTrue(got["tcp_bait_exempt"])
        proxy.wait_log(ip="127.0.0.3", cls="loopback")
        proxy.wait_log(ip="::1", cls="loopback")
        # Other UDP and ICMP go nowhere, IPv4 and IPv6; the exempt user's datagrams pass.
        self.assertFalse(got["udp_v4"])
        self.assertFalse(got["udp_v6"])
        self.assertTrue(got["udp_exempt"])
        self.assertFalse(got["icmp"])


ORIGIN_PORT = 8080  # the origin container's, in the pod's own namespace: any port is free there
TLS_PORT = 8443  # the same origin behind TLS: the inspected endpoint
# The Secret's key, which only the origin may see. Valid base64 (podman 4.3 checks a Secret's data
# as base64, then mounts the text as written): the file holds one of the two, whichever it is.
SECRET = "c2stcG9kLXRlc3QtNGYxYw=="
SECRET_DECODED = "sk-pod-test-4f1c"
EXAMPLES = os.path.join(ROOT, "examples", "kubernetes")


class PodTest(unittest.TestCase):
    """examples/kubernetes/pod.yaml through `podman kube play --network none` (pod_support.PodPlay)."""

    @classmethod
    def setUpClass(cls):
        from pod_support import PodPlay, why_not
        why = why_not(binary())
        if why:
            raise unittest.SkipTest(why)
        play = PodPlay(binary(), "pod")
        cls.addClassCleanup(play.close)
        cls.play, cls.dir, cls.env, cls.pod = play, play.dir, play.env, play.unique
        from box_support import make_certificate
        cls.certificate, cls.key = make_certificate(cls.dir, "origin.test")
        why = play.build_images(cls.certificate)
        if why:
            raise unittest.SkipTest(why)
        # The origin container's user (2000) reads its script through a hostPath.
        cls.probe_dir = os.path.join(cls.dir, "probe")
        os.mkdir(cls.probe_dir)
        os.chmod(cls.dir, 0o711)
        os.chmod(cls.probe_dir, 0o755)
        shutil.copy(os.path.join(HERE, "pod_origin.py"), os.path.join(cls.probe_dir, "pod_origin.py"))
        shutil.copy(cls.certificate, os.path.join(cls.probe_dir, "origin.pem"))
        shutil.copy(cls.key, os.path.join(cls.probe_dir, "origin.key"))  # a test key, for the origin
        for name in ("pod_origin.py", "origin.pem", "origin.key"):
            os.chmod(os.path.join(cls.probe_dir, name), 0o644)
        play.play(cls.localised(), extra_volumes=[{"name": "host-usr", "hostPath": {"path": "/usr"}},
                                                  {"name": "probe", "hostPath": {"path": cls.probe_dir}}])
        from harness import wait_until
        if not wait_until(lambda: '"ready"' in cls.logs("origin"), 30, 0.2):
            raise AssertionError(f"the origin container did not start: {cls.logs('origin')}")

    @classmethod
    def localised(cls):
        """The policy: the origin's plain port, and its TLS port inspected, with a rule and the
        secret injected (the origin's CA for the inspector beside it, in the ConfigMap); an origin
        container of the test's own."""
        with open(cls.certificate, encoding="ascii") as f:
            origin_ca = f.read()
        config = {
            "allow": [f"origin.test:{ORIGIN_PORT}", f"origin.test:{TLS_PORT}"], "permit": ["127.0.0.2/32"],
            "resolve": ["origin.test=127.0.0.2"], "log": "json", "upstream-ca": "/etc/boxproxy/origin-ca.pem",
            "inspect": [{"host": f"origin.test:{TLS_PORT}", "rules": [{"method": "GET", "path": "/allowed/**"}],
                         "inject": {"authorization": "Bearer {llm}"}}]}
        origin = {
            "name": "origin", "command": ["/usr/bin/python3", "-u", "/probe/pod_origin.py"],
            "securityContext": {"runAsUser": 2000, "runAsGroup": 2000, "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "host-usr", "mountPath": "/usr", "readOnly": True},
                             {"name": "probe", "mountPath": "/probe", "readOnly": True}]}
        return list(cls.play.localised(config, SECRET, origin, {"origin-ca.pem": origin_ca}))

    @classmethod
    def logs(cls, container):
        return cls.play.logs(container)

    def agent(self, *command, timeout=60):
        return self.play.exec("agent", *command, timeout=timeout)

    def curl(self, *args):
        return self.agent("curl", "-sS", "--max-time", "10", *args)

    def egress_lines(self):
        """The sidecar's decision lines (JSON, one a line, on its standard error)."""
        return [json.loads(line) for line in self.logs("egress").splitlines() if line.startswith("{")]

    def origin_events(self, kind):
        return [json.loads(line) for line in self.logs("origin").splitlines()
                if line.startswith("{") and json.loads(line).get("event") == kind]

    # -- the tests

    def test_the_manifests_agree(self):
        import yaml
        with open(os.path.join(EXAMPLES, "pod.yaml"), encoding="utf-8") as f:
            pod = yaml.safe_load(f)
        with open(os.path.join(EXAMPLES, "deployment.yaml"), encoding="utf-8") as f:
            deployment = yaml.safe_load(f)
        self.assertEqual(deployment["spec"]["template"]["spec"], pod["spec"])

    def test_the_agent_is_another_user_with_nothing_of_the_proxy(self):
        status = self.agent("cat", "/proc/self/status")
        self.assertEqual(status.returncode, 0, status.stderr)
        fields = dict(line.split(":\t", 1) for line in status.stdout.splitlines() if ":\t" in line)
        self.assertEqual(fields["Uid"].split()[0], "1000")
        self.assertEqual(fields["CapEff"].strip(), "0000000000000000")
        # Neither the socket's volume nor the policy nor the secret is in its container.
        for path in ("/run/egress", "/run/egress/egress.sock", "/etc/boxproxy", "/etc/boxproxy-secrets"):
            self.assertNotEqual(self.agent("test", "-e", path).returncode, 0, path)
        self.assertEqual(self.agent("test", "-S", "/run/egress/egress.sock").returncode, 1)
        # The sidecar's container does hold it (the test above could see it).
        held = self.play.exec("egress", "/usr/bin/boxproxy", "sidecar", "--probe",
                              "--ready-file=/run/egress/egress.sock")
        self.assertEqual(held.returncode, 0, held.stderr)

    def test_an_allowed_name_is_reached_by_capture_and_by_http_proxy(self):
        before = len(self.origin_events("http"))
        captured = self.curl("--noproxy", "*", f"http://origin.test:{ORIGIN_PORT}/")
        self.assertEqual(captured.returncode, 0, captured.stderr + self.logs("egress"))
        self.assertEqual(captured.stdout, "x" * 511 + "\n")
        proxied = self.curl("--proxy", "http://127.0.0.1:3128", f"http://origin.test:{ORIGIN_PORT}/")
        self.assertEqual(proxied.returncode, 0, proxied.stderr)
        self.assertEqual(proxied.stdout, "x" * 511 + "\n")
        self.assertEqual(len(self.origin_events("http")), before + 2)
        # The sidecar's log: JSON lines on standard error (--log json in the policy).
        lines = self.egress_lines()
        self.assertTrue(any(line.get("host") == "origin.test" and line.get("class") == "ok" for line in lines),
                        lines)

    def test_an_off_list_name_is_refused(self):
        # By the bridge's DNS: no address for it (curl: could not resolve).
        by_name = self.curl("--noproxy", "*", f"http://elsewhere.test:{ORIGIN_PORT}/")
        self.assertEqual(by_name.returncode, 6, by_name.stderr)
        # By the proxy, asked through HTTP_PROXY.
        proxied = self.curl("-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:3128",
                            f"http://elsewhere.test:{ORIGIN_PORT}/")
        self.assertEqual(proxied.stdout, "403", proxied.stderr)

    def test_a_literal_address_and_a_direct_dial_are_refused(self):
        # 127.0.0.3:8081: the origin container's own server in the pod, on the pod's loopback.
        # The dial is captured; the proxy refuses the address (loopback is not permitted).
        direct = self.curl("--noproxy", "*", "http://127.0.0.3:8081/")
        self.assertNotEqual(direct.returncode, 0)
        proxied = self.curl("-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:3128",
                            "http://127.0.0.3:8081/")
        self.assertEqual(proxied.stdout, "403", proxied.stderr)
        self.assertEqual(self.origin_events("tcp"), [])
        refused = [line for line in self.egress_lines() if line.get("host") == "127.0.0.3"]
        self.assertEqual({(line["kind"], line["class"]) for line in refused},
                         {("socks", "not-listed"), ("http", "not-listed")}, refused)

    def test_an_inspected_endpoint_rules_and_injects(self):
        # The agent trusts the session CA the sidecar wrote into the shared emptyDir.
        url = f"https://origin.test:{TLS_PORT}"
        allowed = self.curl("--noproxy", "*", "--cacert", "/run/boxproxy-trust/ca.pem", f"{url}/allowed/x")
        self.assertEqual(allowed.returncode, 0, allowed.stderr + self.logs("egress"))
        self.assertEqual(allowed.stdout, "x" * 511 + "\n")
        denied = self.curl("--noproxy", "*", "--cacert", "/run/boxproxy-trust/ca.pem", "-o", "/dev/null", "-w",
                           "%{http_code}", f"{url}/other")
        self.assertEqual(denied.stdout, "403", denied.stderr)
        seen = [e for e in self.origin_events("http") if e["tls"]]
        self.assertEqual([e["path"] for e in seen], ["/allowed/x"])
        # The key reached the origin, put there by the proxy; the agent never held it.
        self.assertIn(seen[0]["authorization"], (f"Bearer {SECRET}", f"Bearer {SECRET_DECODED}"))
        key = seen[0]["authorization"].split()[1]
        env = self.agent("cat", "/proc/self/environ")
        self.assertNotIn(key, env.stdout)
        self.assertNotEqual(self.agent("grep", "-r", key, "/run", "/tmp", "/etc").returncode, 0)

    def test_udp_goes_nowhere(self):
        # busybox tftp: a read request, one UDP datagram to the origin container's socket (it
        # retries until timeout stops it).
        sent = self.agent("timeout", "3", "tftp", "-g", "-r", "x", "-l", "/tmp/x", "127.0.0.2", "6969")
        self.assertNotEqual(sent.returncode, 0)
        self.assertEqual(self.origin_events("udp"), [])


if __name__ == "__main__":
    unittest.main()
