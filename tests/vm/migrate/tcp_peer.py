#!/usr/bin/python3
"""The far end of the migrated container's TCP connection (runs in a guest,
outside any container): `tcp_peer.py HOST PORT STATUS_FILE STOP_FILE`.

Connects once, never reconnects. Checks that the container's counter
arrives as 0, 1, 2, ... with no gap, repeat or reset, and sends
"ping <n>" twice a second the other way. Rewrites STATUS_FILE (JSON) as it
goes; ends when STOP_FILE appears, printing the final status."""
import json
import os
import socket
import sys
import threading
import time

host, port, status_file, stop_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
status = {"connected": False, "numbers": 0, "last": None, "errors": [], "closed": None,
          "pings_sent": 0, "received_at": None}
lock = threading.Lock()


def save():
    with lock:
        text = json.dumps(status)
    tmp = status_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, status_file)


def reader(sock):
    buf = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except OSError as e:
            with lock:
                status["closed"] = f"recv: {e}"
            return
        if not chunk:
            with lock:
                status["closed"] = "the container closed the connection"
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            with lock:
                try:
                    n = int(line)
                except ValueError:
                    status["errors"].append(f"garbage line {line!r}")
                    continue
                expect = 0 if status["last"] is None else status["last"] + 1
                if n != expect:
                    status["errors"].append(f"got {n} after {status['last']}")
                status["last"] = n
                status["numbers"] += 1
                status["received_at"] = time.time()


deadline = time.monotonic() + 120
while True:
    try:
        sock = socket.create_connection((host, port), timeout=10)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
sock.settimeout(None)
status["connected"] = True
t = threading.Thread(target=reader, args=(sock,), daemon=True)
t.start()
ping = 0
while not os.path.exists(stop_file):
    with lock:
        closed = status["closed"]
    if closed is None:
        try:
            sock.sendall(f"ping {ping}\n".encode())
            ping += 1
            with lock:
                status["pings_sent"] = ping
        except OSError as e:
            with lock:
                status["closed"] = f"send: {e}"
    save()
    time.sleep(0.5)
save()
print(json.dumps(status), flush=True)
