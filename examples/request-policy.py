#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A supervisor that answers boxproxy's request asks from a policy of its own: Python's standard
library, nothing else.

    examples/request-policy.py --control-socket PATH --policy FILE

`boxproxy serve --control-socket PATH` holds each request that an inspected endpoint's "ask" rule
allows and asks every control client about it (boxproxy(1), SUPERVISOR CHANNEL, Ask per request):

    {"event":"ask","ask":K,"kind":"request","host":H,"port":N,"method":M,"path":P,"rule":R,"id":C}

This program connects to PATH, and answers each such ask by the first rule of FILE that matches
(a person at a terminal, or a model, would stand here instead; the proxy knows neither):

    {"rules": [{"host": "api.github.com", "method": "GET", "path": "/repos/acme/*", "verdict": "always"},
               {"method": "POST", "path": "/repos/acme/*/issues", "verdict": "once"}],
     "default": "deny"}

"host" (optional) is compared with the ask's host, "method" with its method ("*": any; case
ignored), "path" is an fnmatch glob over the path as sent, without its query ("*" crosses "/").
"verdict" is once, always (the proxy then lets the same method and path through for the rest of
the session without asking) or deny. No rule matching gives "default" (deny when not given). An
ask about a name off the host list (serve --ask) gets "default" too. FILE is read again when it
changes, so a policy can be edited while the session runs. It prints "connected" once the proxy
has greeted it, then each answer, one a line:

    ask 3: GET api.github.com/repos/acme/x -> always

The program ends when the proxy closes the channel.
"""

import argparse
import fnmatch
import json
import os
import socket
import sys
import time

VERDICTS = ("once", "always", "deny")


def load_policy(path):
    """The policy file, checked: ({"rules": [...], "default": V}). Exits naming what is wrong."""
    try:
        with open(path) as f:
            policy = json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"request-policy: {path}: {error}")
    rules = policy.get("rules", [])
    default = policy.get("default", "deny")
    if not isinstance(rules, list) or default not in VERDICTS:
        sys.exit(f"request-policy: {path}: \"rules\" must be a list and \"default\" one of {', '.join(VERDICTS)}")
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict) or rule.get("verdict") not in VERDICTS or "path" not in rule:
            sys.exit(f"request-policy: {path}: rules[{i}] needs a \"path\" and a \"verdict\" ({', '.join(VERDICTS)})")
    return {"rules": rules, "default": default}


def verdict_for(policy, ask):
    """The first matching rule's verdict for a request ask, else the policy's default."""
    if ask.get("kind") != "request":
        return policy["default"]
    for rule in policy["rules"]:
        if "host" in rule and rule["host"].lower() != ask["host"].lower():
            continue
        method = rule.get("method", "*")
        if method != "*" and method.upper() != ask["method"].upper():
            continue
        if fnmatch.fnmatchcase(ask["path"], rule["path"]):
            return rule["verdict"]
    return policy["default"]


class Policy:
    """The policy file, read again whenever its modification time changes."""

    def __init__(self, path):
        self.path = path
        self.stamp = None
        self.policy = None

    def current(self):
        stamp = os.stat(self.path).st_mtime_ns
        if stamp != self.stamp:
            self.policy, self.stamp = load_policy(self.path), stamp
        return self.policy


def connect(path, wait=10.0):
    """The control socket, once serve has made it (waiting at most `wait` seconds)."""
    deadline = time.monotonic() + wait
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def serve(channel, policy):
    """Answers asks until the proxy closes the channel."""
    channel.sendall(b'{"op":"hello","id":"hello"}\n')
    buffered = b""
    while True:
        data = channel.recv(65536)
        if not data:
            return
        buffered += data
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if message.get("id") == "hello":
                print("connected", flush=True)  # asks from now on reach us
            if message.get("event") != "ask":
                continue  # replies to our answers, and other events
            verdict = verdict_for(policy.current(), message)
            answer = {"op": "answer", "ask": message["ask"], "verdict": verdict}
            channel.sendall(json.dumps(answer).encode() + b"\n")
            what = (f"{message['method']} {message['host']}{message['path']}" if message.get("kind") == "request"
                    else f"{message['kind']} {message['host']}:{message['port']}")
            print(f"ask {message['ask']}: {what} -> {verdict}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="Answers boxproxy's request asks from a policy file.")
    parser.add_argument("--control-socket", required=True, help="serve's --control-socket PATH")
    parser.add_argument("--policy", required=True, help="the policy file (JSON)")
    args = parser.parse_args()
    policy = Policy(args.policy)
    policy.current()  # a bad file is said before anything is answered
    with connect(args.control_socket) as channel:
        serve(channel, policy)


if __name__ == "__main__":
    main()
