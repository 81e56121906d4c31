#!/usr/bin/python3
"""--console-socket's other end: receives the pty master, appends what the
container writes to OUT_PATH and writes CMD_PATH's content to it when that file
appears.  Usage: console_peer.py SOCK_PATH CMD_PATH OUT_PATH (in a guest)."""
import array, os, socket, sys, time
sock_path, cmd_path, out_path = sys.argv[1:4]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sock_path)
srv.listen(1)
conn, _ = srv.accept()
fds = array.array("i")
msg, anc, _, _ = conn.recvmsg(256, socket.CMSG_SPACE(4))
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[:4])
master = fds[0]
os.set_blocking(master, False)
with open(out_path, "ab", buffering=0) as out:
    out.write(b"[pty " + msg + b"]\n")
    while True:
        try:
            data = os.read(master, 4096)
            if not data:
                break
            out.write(data)
        except BlockingIOError:
            pass
        except OSError:
            break  # EIO: every slave fd is closed
        if os.path.exists(cmd_path):
            with open(cmd_path, "rb") as f:
                os.write(master, f.read())
            os.unlink(cmd_path)
        time.sleep(0.1)
