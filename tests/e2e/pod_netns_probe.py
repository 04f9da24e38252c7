# SPDX-License-Identifier: Apache-2.0
"""Run by test_pod.py as root in a network namespace of its own (`unshare -n`): the bridge on the
namespace's loopback, optionally `boxproxy capture`, then what a process that is not the exempt
user can reach. Prints one JSON object. Only ever sends to 127.0.0.0/8 and ::1.

    python3 pod_netns_probe.py BOXPROXY SOCKET ORIGIN_PORT CAPTURES EXEMPT_UID

CAPTURES: how many times capture runs (0: the same probes with no rules, the test's control)."""

import ctypes
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

BOXPROXY, SOCKET, ORIGIN_PORT, CAPTURES, EXEMPT = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5])
WAIT = 1.0  # how long a datagram or an answer that should not come is waited for
result = {}


def tables():
    """The namespace's nftables tables, through libnftables (there may be no nft program)."""
    lib = ctypes.CDLL("libnftables.so.1")
    lib.nft_ctx_new.restype = ctypes.c_void_p
    lib.nft_ctx_get_output_buffer.restype = ctypes.c_char_p
    lib.nft_ctx_get_output_buffer.argtypes = [ctypes.c_void_p]
    lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
    lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
    ctx = lib.nft_ctx_new(0)
    lib.nft_ctx_buffer_output(ctx)
    lib.nft_run_cmd_from_buffer(ctx, b"list tables")
    out = (lib.nft_ctx_get_output_buffer(ctx) or b"").decode()
    lib.nft_ctx_free(ctx)
    return [line.strip() for line in out.splitlines() if line.strip()]


def as_exempt(action):
    """`action()` in a child running as the exempt user; its result (a bool) by exit status."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(EXEMPT, EXEMPT, EXEMPT)
            os.setresuid(EXEMPT, EXEMPT, EXEMPT)
            os._exit(0 if action() else 1)
        except BaseException:
            os._exit(2)
    return os.waitpid(pid, 0)[1] == 0


def udp_arrives(family, address, sender=None):
    """Sends a datagram to a listener of this namespace; whether it arrived within WAIT."""
    with socket.socket(family, socket.SOCK_DGRAM) as listener:
        listener.bind((address, 0))
        port = listener.getsockname()[1]

        def send():
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                try:
                    s.sendto(b"escape", (address, port))
                except PermissionError:  # dropped in the output hook: the sender is told EPERM
                    return False
            return True

        (sender or (lambda f: f()))(send)
        ready, _, _ = select.select([listener], [], [], WAIT)
        return bool(ready)


def tcp_accepted(address, dialer=None):
    """Dials a listener of this namespace; whether the listener saw the connection within WAIT."""
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as listener:
        listener.bind((address, 0))
        listener.listen(4)
        port = listener.getsockname()[1]

        def dial():
            with socket.socket(listener.family) as s:
                s.settimeout(WAIT)
                try:
                    s.connect((address, port))
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    s.recv(100)
                except OSError:
                    pass
            return True

        (dialer or (lambda f: f()))(dial)
        ready, _, _ = select.select([listener], [], [], WAIT)
        return bool(ready)


def http_get(address, port, host):
    """GET / straight to ADDRESS:PORT (no proxy variable, no CONNECT); the status line or the error."""
    try:
        with socket.create_connection((address, port), timeout=10) as s:
            s.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while len(data) < 1 << 16:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            return data.split(b"\r\n", 1)[0].decode() or "closed"
    except OSError as e:
        return f"error {e.errno}"


def dns_a(name, server="127.0.0.3"):
    """An A query over UDP to SERVER:53; ("rcode", [addresses]) or ("none", [])."""
    query = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    query += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00" + struct.pack("!HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(query, (server, 53))
        ready, _, _ = select.select([s], [], [], WAIT * 3)
        if not ready:
            return "none", []
        answer = s.recv(4096)
    rcode = answer[3] & 0x0F
    addresses = []
    if rcode == 0 and struct.unpack("!H", answer[6:8])[0] > 0:
        addresses.append(socket.inet_ntoa(answer[-4:]))
    return str(rcode), addresses


def icmp_echo_answered(address="127.0.0.2"):
    """A raw ICMP echo request; whether a reply came within WAIT."""
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as s:
        body = struct.pack("!BBHHH", 8, 0, 0, 0x4242, 1) + b"boxproxy"
        total = sum(struct.unpack("!%dH" % (len(body) // 2), body))
        total = (total >> 16) + (total & 0xFFFF)
        checksum = ~(total + (total >> 16)) & 0xFFFF
        try:
            s.sendto(body[:2] + struct.pack("!H", checksum) + body[4:], (address, 0))
        except PermissionError:  # dropped in the output hook
            return False
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return False
            packet = s.recv(1024)
            if packet[20] == 0:  # an echo reply (a request seen on loopback has type 8)
                return True
        return False


def main():
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=10)
    bridge = subprocess.Popen([BOXPROXY, "bridge", "--socket", SOCKET, "--listen", "127.0.0.1:3128",
                               "--transparent", "127.0.0.1:3129", "--transparent", "[::1]:3129",
                               "--dns", "127.0.0.1:1053", "--dns", "[::1]:1053"],
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        result["bridge"] = json.loads(bridge.stdout.readline() or b"null")
        codes = []
        for _ in range(CAPTURES):
            done = subprocess.run([BOXPROXY, "capture", "--exempt-uid", str(EXEMPT)], capture_output=True, text=True,
                                  timeout=30)
            codes.append([done.returncode, done.stderr])
        result["captures"] = codes
        result["tables"] = tables()
        result["origin_by_address"] = http_get("127.0.0.2", ORIGIN_PORT, "127.0.0.2")
        result["dns_allowed"] = dns_a("origin.test")
        result["dns_refused"] = dns_a("elsewhere.test")
        name_address = result["dns_allowed"][1]
        result["origin_by_name"] = http_get(name_address[0], ORIGIN_PORT, "origin.test") if name_address else "-"
        result["origin_via_listen"] = proxy_get()
        result["tcp_bait_v4"] = tcp_accepted("127.0.0.3")
        result["tcp_bait_v6"] = tcp_accepted("::1")
        result["tcp_bait_exempt"] = tcp_accepted("127.0.0.3", as_exempt)
        result["udp_v4"] = udp_arrives(socket.AF_INET, "127.0.0.2")
        result["udp_v6"] = udp_arrives(socket.AF_INET6, "::1")
        result["udp_exempt"] = udp_arrives(socket.AF_INET, "127.0.0.2", as_exempt)
        result["icmp"] = icmp_echo_answered()
    finally:
        bridge.terminate()
        bridge.wait(timeout=10)
    print(json.dumps(result))


def proxy_get():
    """GET http://origin.test:PORT/ through the bridge's --listen port, as HTTP_PROXY would."""
    try:
        with socket.create_connection(("127.0.0.1", 3128), timeout=10) as s:
            s.sendall(f"GET http://origin.test:{ORIGIN_PORT}/ HTTP/1.1\r\nHost: origin.test:{ORIGIN_PORT}\r\n"
                      "Connection: close\r\n\r\n".encode())
            return s.recv(4096).split(b"\r\n", 1)[0].decode() or "closed"
    except OSError as e:
        return f"error {e.errno}"


main()
