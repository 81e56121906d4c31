#!/usr/bin/python3
"""An on-path attacker without the key, for the migration tests:
`tamper_relay.py LISTEN_PORT TARGET_HOST TARGET_PORT CONN OFFSET` forwards
every TCP connection on LISTEN_PORT to TARGET and flips one bit of byte
OFFSET of the CONN-th connection's client->server stream (1: the control
connection, 2: the first page channel).  Prints "tampered" when it did.
Runs in a guest with the host's python3 (stdlib only)."""
import socket
import sys
import threading


def pump(src, dst, tamper_at=None):
    seen = 0
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if tamper_at is not None and seen <= tamper_at < seen + len(data):
                i = tamper_at - seen
                data = data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]
                print("tampered", flush=True)
            seen += len(data)
            dst.sendall(data)
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_WR if s is dst else socket.SHUT_RD)
        except OSError:
            pass


def main():
    port, host, tport, conn, offset = sys.argv[1:6]
    conn, offset = int(conn), int(offset)
    lsn = socket.socket()
    lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsn.bind(("0.0.0.0", int(port)))
    lsn.listen(8)
    print("listening", flush=True)
    n = 0
    while True:
        client, _ = lsn.accept()
        n += 1
        server = socket.create_connection((host, int(tport)))
        threading.Thread(target=pump, args=(client, server, offset if n == conn else None),
                         daemon=True).start()
        threading.Thread(target=pump, args=(server, client), daemon=True).start()


if __name__ == "__main__":
    main()
