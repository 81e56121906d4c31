#!/usr/bin/python3
"""The peer of usk_client, in the guest outside the container: binds PATH and
appends what arrives to LOG (a stream peer accepts one connection).
Usage: usk_peer.py stream|dgram PATH LOG."""
import socket, sys
kind, path, log = sys.argv[1:4]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM)
srv.bind(path)
if kind == "stream":
    srv.listen(1)
    conn, _ = srv.accept()
    recv = lambda: conn.recv(4096)
else:
    recv = lambda: srv.recv(4096)
with open(log, "ab", buffering=0) as out:
    while True:
        data = recv()
        if not data:
            break
        out.write(data)
