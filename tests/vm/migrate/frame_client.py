#!/usr/bin/python3
"""A tiny client for crx's migration frames (runtime/migrate/frame.hpp) that
sends bad input on purpose: `frame_client.py CASE HOST PORT KEYFILE`.
It speaks the clear-text handshake (a receiver with --insecure-plaintext):
python3's ssl module has no TLS 1.3 external PSK; before authentication
the framing is the same for a TLS receiver.

It prints one JSON line: the text of the Error frame the receiver answered
with (if any) and whether the receiver then closed the connection.  Runs in
a guest with the host's python3 (stdlib only)."""
import hashlib
import hmac
import json
import os
import socket
import struct
import sys
import zlib

MAGIC = 0x4352584D  # "CRXM"
VERSION = 1
HELLO, CHALLENGE, RESPONSE, AUTH_OK, MANIFEST, ROUND_START, IMAGE_DATA, ERROR = \
    1, 2, 3, 4, 10, 20, 30, 50


def header(ftype, length, crc, magic=MAGIC, version=VERSION, reserved=0):
    return struct.pack(">IBBHII", magic, version, ftype, reserved, length, crc)


def frame(ftype, payload=b""):
    return header(ftype, len(payload), zlib.crc32(payload)) + payload


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_frame(s):
    h = recv_exact(s, 16)
    if h is None:
        return None
    magic, version, ftype, _, length, crc = struct.unpack(">IBBHII", h)
    if magic != MAGIC or version != VERSION:
        raise SystemExit(f"the receiver sent a bad frame header {h!r}")
    payload = recv_exact(s, length)
    if payload is None or zlib.crc32(payload) != crc:
        raise SystemExit("the receiver sent a truncated or corrupt frame")
    return ftype, payload


def proof(key, role, channel, session, first, second):
    msg = b"crx-migrate-v1|" + role + b"|" + channel + b"|" + session + b"|" + first + b"|" + second
    return hmac.new(key, msg, hashlib.sha256).digest()


def authenticate(s, key, channel=b"control"):
    session = os.urandom(16).hex().encode()
    nonce_c = os.urandom(32)
    s.sendall(frame(HELLO, json.dumps({"version": 1, "channel": channel.decode(),
                                       "session": session.decode(),
                                       "nonce": nonce_c.hex(),
                                       "security": "plaintext"}).encode()))
    ftype, payload = recv_frame(s)
    if ftype != CHALLENGE:
        raise SystemExit(f"expected a challenge, got frame type {ftype}: {payload!r}")
    ch = json.loads(payload)
    nonce_s = bytes.fromhex(ch["nonce"])
    if not hmac.compare_digest(bytes.fromhex(ch["proof"]),
                               proof(key, b"server", channel, session, nonce_c, nonce_s)):
        raise SystemExit("the receiver does not know the key")
    s.sendall(frame(RESPONSE, json.dumps(
        {"proof": proof(key, b"client", channel, session, nonce_s, nonce_c).hex()}).encode()))
    ftype, payload = recv_frame(s)
    if ftype != AUTH_OK:
        raise SystemExit(f"authentication refused: {payload!r}")


def manifest():
    return json.dumps({"id": "bad-input", "bundle": "/nonexistent", "config_sha256": "0" * 64,
                       "config_json": "{}", "send_rootfs": False, "pre_copy_rounds": 0,
                       "criu_version": "3.17.1", "kernel": os.uname().release,
                       "flags": {"tcp_established": False, "ext_unix_sk": False,
                                 "shell_job": False, "file_locks": False,
                                 "manage_cgroups_mode": ""}}).encode()


# Each case sends its bad bytes on a fresh connection.
def garbage_before_auth(s, key):
    s.sendall(b"GET / HTTP/1.1\r\nHost: crx\r\n\r\n")


def oversized_before_auth(s, key):
    # A Hello that claims 1 GiB: refused from the header alone.
    s.sendall(header(HELLO, 1 << 30, 0) + b"x" * 64)


def unknown_type_before_auth(s, key):
    s.sendall(frame(99, b"{}"))


def truncated_before_auth(s, key):
    s.sendall(header(HELLO, 200, 0) + b'{"version": 1')
    s.shutdown(socket.SHUT_WR)


def manifest_before_auth(s, key):
    s.sendall(frame(MANIFEST, manifest()))


def oversized_after_auth(s, key):
    authenticate(s, key)
    s.sendall(header(MANIFEST, 64 << 20, 0) + b"{" * 4096)


def unknown_type_after_auth(s, key):
    authenticate(s, key)
    s.sendall(frame(77, b"hello"))


def corrupt_after_auth(s, key):
    authenticate(s, key)
    body = manifest()
    s.sendall(header(MANIFEST, len(body), zlib.crc32(body) ^ 1) + body)


def truncated_after_auth(s, key):
    authenticate(s, key)
    body = manifest()
    s.sendall(header(MANIFEST, len(body), zlib.crc32(body)) + body[:len(body) // 2])
    s.shutdown(socket.SHUT_WR)


def image_outside_round_after_auth(s, key):
    # A well-formed frame at the wrong moment: the manifest must come first.
    authenticate(s, key)
    s.sendall(frame(IMAGE_DATA, b"pages-1.img\0" + b"\0" * 32))


def clear_text_hello(s, key):
    # A clear-text sender against a TLS receiver: refused at the hello.
    s.sendall(frame(HELLO, json.dumps({"version": 1, "channel": "control", "session": "00",
                                       "nonce": os.urandom(32).hex(),
                                       "security": "plaintext"}).encode()))


CASES = {f.__name__: f for f in (
    garbage_before_auth, oversized_before_auth, unknown_type_before_auth,
    truncated_before_auth, manifest_before_auth, oversized_after_auth,
    unknown_type_after_auth, corrupt_after_auth, truncated_after_auth,
    image_outside_round_after_auth, clear_text_hello)}


def main():
    case, host, port, keyfile = sys.argv[1:5]
    with open(keyfile, "rb") as f:
        key = f.read().rstrip()
    s = socket.create_connection((host, int(port)), timeout=120)
    try:
        CASES[case](s, key)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the receiver may hang up before reading all the junk
    error, closed = None, False
    try:
        while True:
            f = recv_frame(s)
            if f is None:
                closed = True
                break
            if f[0] == ERROR:
                error = f[1].decode("utf-8", "replace")
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        pass
    print(json.dumps({"case": case, "error": error, "closed": closed}), flush=True)


if __name__ == "__main__":
    main()
