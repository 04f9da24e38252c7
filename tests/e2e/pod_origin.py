# SPDX-License-Identifier: Apache-2.0
"""The origin container of test_pod.py's pod (the host's python3, mounted read-only): an HTTP
server on the pod's 127.0.0.2:8080, the same behind TLS on 127.0.0.2:8443 (the certificate in
/probe), a UDP socket on 127.0.0.2:6969 and a TCP one on 127.0.0.3:8081 that nothing should
reach. Each event is one JSON line on standard output."""

import http.server
import json
import select
import os
import socket
import ssl
import sys
import threading


def say(**event):
    print(json.dumps(event), flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        say(event="http", path=self.path, host=self.headers.get("Host"),
            authorization=self.headers.get("Authorization"), tls=isinstance(self.connection, ssl.SSLSocket))
        body = b"x" * 511 + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def baits():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.2", 6969))
    tcp = socket.socket()
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.3", 8081))
    tcp.listen(8)
    say(event="ready")
    while True:
        ready, _, _ = select.select([udp, tcp], [], [])
        if udp in ready:
            data, peer = udp.recvfrom(2048)
            say(event="udp", peer=peer[0], size=len(data))
        if tcp in ready:
            conn, peer = tcp.accept()
            say(event="tcp", peer=peer[0])
            conn.close()


server = http.server.ThreadingHTTPServer(("127.0.0.2", 8080), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
if os.path.exists("/probe/origin.pem"):
    tls = http.server.ThreadingHTTPServer(("127.0.0.2", 8443), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain("/probe/origin.pem", "/probe/origin.key")
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    threading.Thread(target=tls.serve_forever, daemon=True).start()
try:
    baits()
except KeyboardInterrupt:
    sys.exit(0)
