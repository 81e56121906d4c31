#!/usr/bin/python3
"""Runs ARGV on a new pty as its controlling terminal (a shell job) and
appends what it writes to OUT_PATH.  Usage: pty_run.py OUT_PATH ARGV... (in a guest)."""
import os, pty, sys, time
out_path, argv = sys.argv[1], sys.argv[2:]
master, slave = pty.openpty()
pid = os.fork()
if pid == 0:
    os.close(master)
    os.setsid()
    import fcntl, termios
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    os.execvp(argv[0], argv)
os.close(slave)
with open(out_path, "ab", buffering=0) as out:
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        out.write(data)
os.waitpid(pid, 0)
