# SPDX-License-Identifier: Apache-2.0
"""Sends what `run --transparent` must refuse, from inside a box (test_transparent_refusals.py).

    python3 refusal_probe.py HOST_NET_NS '[[LABEL, FAMILY, TYPE, PROTOCOL, [HOST, PORT], CONNECTED], ...]'
    python3 refusal_probe.py --hold MARK

Prints one JSON object: LABEL -> {"socket": ..., "connect": ..., "send": [...], "recv": ...,
"send_s": ..., "recv_s": ...}, each step "ok" or the errno name ("EPERM"), the times in seconds.
Every datagram carries a few bytes of payload (for ICMP an echo request); a receive waits at most
RECV_TIMEOUT.

It sends nothing unless it is in a network namespace that is not the host's (HOST_NET_NS, the
inode of the test's own /proc/self/ns/net) and whose only interface is the loopback: the
addresses it names are documentation addresses (192.0.2.1, 2001:db8::1), and a box that failed to
isolate its network must not send them anywhere.

--hold waits (at most HOLD_SECONDS) for its standard input to end, so the test can enter the box's
network namespace meanwhile; it prints {"held": true} when the input ended in time. MARK is not
read: it is a word in the command line by which the test finds the process.
"""

import errno
import json
import os
import select
import socket
import sys
import time

RECV_TIMEOUT = 1.0
SENDS = 3  # every datagram is refused, not only the first
HOLD_SECONDS = 60.0

# An ICMP echo request (type 8, code 0, id 0, seq 0), its checksum filled in; for ICMPv6
# (type 128) the kernel computes the checksum itself.
ICMP_ECHO = bytes([8, 0, 0xF7, 0xFF, 0, 0, 0, 0])
ICMPV6_ECHO = bytes([128, 0, 0, 0, 0, 0, 0, 0])


def errno_name(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def isolated(host_namespace):
    """None when this process may send: not the host's network namespace, only a loopback."""
    mine = os.stat("/proc/self/ns/net").st_ino
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if mine == host_namespace or interfaces != ["lo"]:
        return f"not sent: network namespace {mine} (the host's is {host_namespace}), interfaces {interfaces}"
    return None


def payload(family, protocol):
    if protocol == socket.IPPROTO_ICMP:
        return ICMP_ECHO
    if protocol == socket.IPPROTO_ICMPV6:
        return ICMPV6_ECHO
    return b"boxproxy refusal probe"


def probe(family, kind, protocol, address, connected):
    result = {}
    try:
        s = socket.socket(family, kind, protocol)
    except OSError as e:
        result["socket"] = errno_name(e)
        return result
    result["socket"] = "ok"
    address = tuple(address)
    data = payload(family, protocol)
    with s:
        if connected:
            try:
                s.connect(address)
                result["connect"] = "ok"
            except OSError as e:
                result["connect"] = errno_name(e)
                return result
        sends = []
        started = time.monotonic()
        for _ in range(SENDS):
            try:
                if connected:
                    s.send(data)
                else:
                    s.sendto(data, address)
                sends.append("ok")
            except OSError as e:
                sends.append(errno_name(e))
        result["send"] = sends
        result["send_s"] = round(time.monotonic() - started, 3)
        s.settimeout(RECV_TIMEOUT)
        started = time.monotonic()
        try:
            s.recv(512)
            result["recv"] = "data"
        except TimeoutError:
            result["recv"] = "timeout"
        except OSError as e:
            result["recv"] = errno_name(e)
        result["recv_s"] = round(time.monotonic() - started, 3)
    return result


def hold():
    # The test closes its end of our standard input (run passes it on to COMMAND) to release us.
    readable, _, _ = select.select([0], [], [], HOLD_SECONDS)
    print(json.dumps({"held": bool(readable) and os.read(0, 1) == b""}))


def main():
    if sys.argv[1] == "--hold":
        hold()
        return
    why = isolated(int(sys.argv[1]))
    if why:
        print(json.dumps({"refused_to_send": why}))
        sys.exit(3)
    out = {}
    for label, family, kind, protocol, address, connected in json.loads(sys.argv[2]):
        out[label] = probe(family, kind, protocol, address, connected)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
