#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A sandbox supervisor in one page: Python's standard library and boxproxy, nothing else.

    examples/supervisor.py [--boxproxy PATH] [--secret-file NAME=FILE]... [SERVE OPTION]... -- COMMAND [ARG]...

It starts `boxproxy serve` for one session with a control channel (SPEC §15: a socketpair end as
--control-fd) and --ask, runs COMMAND in a box whose only way out is that proxy (`boxproxy run
--socket`), prints every decision live, and asks on the terminal about each host the list does
not hold: once, always (added to the list for the rest of the session) or deny. When COMMAND
exits it closes its end of the channel, which ends the proxy (EOF there is a SIGTERM), and exits
with COMMAND's status.

    examples/supervisor.py --allow pypi.org --allow files.pythonhosted.org -- pip download requests

With --secret-file NAME=FILE it also keeps a credential out of the box (SPEC §19): FILE's
contents (one trailing newline dropped) are sent as the secret NAME over the channel, which the
endpoints' "inject" templates name, and sent again whenever FILE changes: the box's next request
carries the new key, with no restart (an empty or missing FILE revokes it). The value is never
printed. For example, with api.json holding
{"inspect": [{"host": "api.example.com", "inject": {"authorization": "Bearer {api}"}}]}:

    examples/supervisor.py --secret-file api=key.txt --config api.json -- agent

With an endpoint to inspect, the box trusts the session's CA: the supervisor takes it from the
hello reply's "ca" and gives it to `boxproxy run --socket PATH --ca FILE`.

The protocol is JSON lines both ways; every request may carry an "id" that its reply echoes.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading


def split_arguments(argv):
    """(boxproxy binary, {secret name: file}, serve options, command) from our own command line."""
    if "--" not in argv:
        sys.exit("usage: supervisor.py [--boxproxy PATH] [--secret-file NAME=FILE]... [SERVE OPTION]... "
                 "-- COMMAND [ARG]...")
    cut = argv.index("--")
    options, command = argv[:cut], argv[cut + 1:]
    binary = "boxproxy"
    if options[:1] == ["--boxproxy"] and len(options) >= 2:
        binary, options = options[1], options[2:]
    secret_files, serve_options = {}, []
    while options:
        if options[0] == "--secret-file" and len(options) >= 2 and "=" in options[1]:
            name, _, path = options[1].partition("=")
            secret_files[name] = path
            options = options[2:]
        else:
            serve_options.append(options.pop(0))
    options = serve_options
    if not command:
        sys.exit("supervisor.py: a COMMAND is needed after --")
    return binary, secret_files, options, command


def read_secret(path):
    """FILE's contents without one trailing newline, or None (missing or empty: revoke)."""
    try:
        with open(path) as f:
            value = f.read()
    except OSError:
        return None
    value = value[:-1] if value.endswith("\n") else value
    return value or None


def keep_secrets_current(channel, secret_files, stop, sent, interval=0.2):
    """Sends each secret whose file changed since `sent` (name: value last sent), then again on
    each change until `stop` is set (at once when it is set already). A new value reaches the next
    request of every connection the proxy inspects; None revokes."""
    while True:
        for name, path in secret_files.items():
            value = read_secret(path)
            if name in sent and sent[name] == value:
                continue
            channel.send({"op": "secret", "name": name, "value": value})
            what = "revoked" if value is None else ("set" if name not in sent else "rotated")
            print(f"[supervisor] secret {name} {what}", file=sys.stderr, flush=True)  # never the value
            sent[name] = value
        if stop.wait(interval):
            return


class Channel:
    """Our end of the control socketpair: requests out, replies and events in."""

    def __init__(self, sock):
        self.sock = sock
        self.lines = sock.makefile("r", encoding="utf-8", newline="\n")
        self.send_lock = threading.Lock()
        self.next_id = 1

    def send(self, request):
        with self.send_lock:
            request.setdefault("id", self.next_id)
            self.next_id += 1
            self.sock.sendall((json.dumps(request) + "\n").encode())

    def messages(self):
        for line in self.lines:  # ends when the proxy closes its end
            yield json.loads(line)


def ask_on_terminal(host, port, kind):
    """once / always / deny, from the person at the terminal (deny on EOF or anything else)."""
    print(f"? the box wants {host}:{port} ({kind}), which the list does not hold: "
          "[o]nce, [a]lways, [d]eny? ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    return {"o": "once", "once": "once", "a": "always", "always": "always"}.get(answer, "deny")


def show(event):
    """One line per decision or done line, and a note when events were dropped."""
    if event.get("event") == "dropped":
        print(f"[supervisor] {event['n']} events lost (we read too slowly)", file=sys.stderr, flush=True)
        return
    where = f"{event.get('host')}:{event.get('port')}"
    asked = f" asked={event['asked']}" if "asked" in event else ""
    extra = f" up={event['up']} down={event['down']}" if event.get("class") == "done" else ""
    print(f"[decision] {event.get('kind')} {where} -> {event.get('class')}{asked}{extra}", file=sys.stderr,
          flush=True)


def serve_channel(channel, messages):
    """Reads the proxy's messages until it closes: shows decisions, answers asks."""
    for message in messages:
        if "ok" in message:  # a reply to one of our requests
            if not message["ok"]:
                print(f"[supervisor] the proxy said: {message.get('error')}", file=sys.stderr, flush=True)
        elif message.get("event") == "ask":
            verdict = ask_on_terminal(message["host"], message["port"], message.get("kind", "?"))
            channel.send({"op": "answer", "ask": message["ask"], "verdict": verdict})
        else:
            show(message)


def main():
    binary, secret_files, serve_options, command = split_arguments(sys.argv[1:])
    workdir = tempfile.mkdtemp(prefix="supervisor-")
    socket_path = os.path.join(workdir, "egress.sock")
    ours, theirs = socket.socketpair()
    ready_read, ready_write = os.pipe()
    # serve inherits exactly two descriptors: its end of the channel and the readiness pipe.
    proxy = subprocess.Popen(
        [binary, "serve", "--socket", socket_path, "--control-fd", str(theirs.fileno()), "--ask",
         "--ready-fd", str(ready_write), *serve_options],
        pass_fds=(theirs.fileno(), ready_write), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL)  # its listening line: --ready-fd tells us the same; stdout is COMMAND's
    theirs.close()
    os.close(ready_write)
    with os.fdopen(ready_read, "rb") as ready:
        if ready.readline() != b"READY=1\n":  # EOF instead: serve failed and said why on stderr
            sys.exit(f"supervisor.py: boxproxy serve did not start (exit {proxy.wait()})")

    channel = Channel(ours)
    channel.send({"op": "hello"})
    messages = channel.messages()
    hello = next(messages, None)  # the first line: nothing else is sent before we subscribe
    if not hello or not hello.get("ok"):
        sys.exit(f"supervisor.py: no hello from the proxy: {hello}")
    box_options = []
    if "ca" in hello:
        # The proxy inspects: the box must trust its session CA (run --ca makes the bundle, sets the
        # variables and Java's store, as run does for a proxy of its own).
        ca_path = os.path.join(workdir, "session-ca.pem")
        with open(ca_path, "w") as f:
            f.write(hello["ca"])
        box_options += ["--ca", ca_path]
    channel.send({"op": "subscribe"})
    reader = threading.Thread(target=serve_channel, args=(channel, messages), daemon=True)
    reader.start()
    stop_watching = threading.Event()
    if secret_files:
        # The first values are sent before the box starts: its first request finds them set.
        sent, done = {}, threading.Event()
        done.set()
        keep_secrets_current(channel, secret_files, done, sent)
        threading.Thread(target=keep_secrets_current, args=(channel, secret_files, stop_watching, sent),
                         daemon=True).start()

    # The box: COMMAND's standard input is not the terminal (that is ours, for the questions).
    status = subprocess.call([binary, "run", "--socket", socket_path, *box_options, "--", *command],
                             stdin=subprocess.DEVNULL)
    stop_watching.set()

    # Closing our end of the channel is the proxy's SIGTERM: it ends, writes its last lines and
    # its stats line, and exits 0.
    ours.shutdown(socket.SHUT_WR)
    proxy.wait(timeout=10)
    reader.join(timeout=5)
    ours.close()
    shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
