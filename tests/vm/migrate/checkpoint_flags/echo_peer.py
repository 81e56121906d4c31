#!/usr/bin/python3
"""A TCP peer for --tcp-established: accepts one connection on HOST:PORT,
appends each line it receives to LOG and sends it back.
Usage: echo_peer.py PORT LOG [HOST] (in a guest; HOST defaults to 127.0.0.1)."""
import socket, sys
port, log = int(sys.argv[1]), sys.argv[2]
host = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((host, port))
srv.listen(1)
conn, _ = srv.accept()
srv.close()  # one connection only: a reconnect would not be served
with open(log, "a") as out:
    for line in conn.makefile("r"):
        out.write(line)
        out.flush()
        conn.sendall(line.encode())
