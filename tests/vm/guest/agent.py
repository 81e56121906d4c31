"""The test-bed agent: PID 1 of a guest, driven by the host over virtio-serial.

Protocol: one JSON object per line in each direction on the port named
"crx.agent".  Host -> guest:
  {"op": "spawn", "id": N, "cmd": "...", "env": {...}}   run `bash -c cmd`
  {"op": "kill", "id": N, "sig": S}                      signal its process group
  {"op": "ping", "id": N}
Guest -> host:
  {"op": "hello", "name": ..., "kernel": ...}            once, when ready
  {"op": "started", "id": N, "pid": P}
  {"op": "exit", "id": N, "rc": RC, "out": b64, "err": b64}  RC < 0: killed by -RC
  {"op": "pong", "id": N}
  {"op": "error", "id": N, "msg": "..."}
Each command runs in its own session; its stdout/stderr go to files in /run
(so daemons that keep them open do not hold the reply back).  As PID 1 the
agent reaps every child, orphans included.
"""
import base64
import json
import os
import signal
import socket
import threading
import time

OUT_DIR = "/run/crx-vm"
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}


def find_port(name="crx.agent"):
    base = "/sys/class/virtio-ports"
    for _ in range(200):
        if os.path.isdir(base):
            for port in os.listdir(base):
                try:
                    with open(os.path.join(base, port, "name")) as f:
                        if f.read().strip() == name:
                            return "/dev/" + port
                except OSError:
                    pass
        time.sleep(0.05)
    raise RuntimeError("no virtio port named " + name)


class Agent:
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR)
        self.write_lock = threading.Lock()
        self.jobs_lock = threading.Lock()
        self.jobs = {}  # pid -> job id
        self.have_children = threading.Event()

    def send(self, msg):
        data = (json.dumps(msg) + "\n").encode()
        with self.write_lock:
            while data:
                n = os.write(self.fd, data)
                data = data[n:]

    def spawn(self, msg):
        jid = msg["id"]
        env = dict(BASE_ENV)
        env.update(msg.get("env") or {})
        out, err = (f"{OUT_DIR}/{jid}.{s}" for s in ("out", "err"))
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        ]
        with self.jobs_lock:
            pid = os.posix_spawn("/bin/bash", ["bash", "-c", msg["cmd"]], env,
                                 file_actions=actions, setsid=True,
                                 setsigdef=(signal.SIGPIPE, signal.SIGINT, signal.SIGTERM,
                                            signal.SIGHUP))
            self.jobs[pid] = jid
        self.have_children.set()
        self.send({"op": "started", "id": jid, "pid": pid})

    def finished(self, jid, status):
        rc = os.waitstatus_to_exitcode(status)
        reply = {"op": "exit", "id": jid, "rc": rc}
        for stream in ("out", "err"):
            path = f"{OUT_DIR}/{jid}.{stream}"
            try:
                with open(path, "rb") as f:
                    reply[stream] = base64.b64encode(f.read()).decode()
                os.unlink(path)
            except OSError:
                reply[stream] = ""
        self.send(reply)

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                self.have_children.clear()
                self.have_children.wait(1.0)
                continue
            with self.jobs_lock:
                jid = self.jobs.pop(pid, None)
            if jid is not None:
                threading.Thread(target=self.finished, args=(jid, status), daemon=True).start()

    def kill(self, msg):
        with self.jobs_lock:
            pids = [p for p, j in self.jobs.items() if j == msg["id"]]
        for pid in pids:
            try:
                os.killpg(pid, msg.get("sig", signal.SIGKILL))
            except ProcessLookupError:
                pass

    def handle(self, msg):
        op = msg.get("op")
        try:
            if op == "spawn":
                self.spawn(msg)
            elif op == "kill":
                self.kill(msg)
            elif op == "ping":
                self.send({"op": "pong", "id": msg.get("id")})
            else:
                raise ValueError(f"unknown op {op!r}")
        except Exception as e:  # report, keep serving
            self.send({"op": "error", "id": msg.get("id"), "msg": f"{type(e).__name__}: {e}"})

    def serve(self):
        os.makedirs(OUT_DIR, exist_ok=True)
        threading.Thread(target=self.reap, daemon=True).start()
        self.send({"op": "hello", "name": socket.gethostname(), "kernel": os.uname().release})
        buf = b""
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:  # host side not connected: wait for it
                time.sleep(0.2)
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    self.handle(json.loads(line))


def main():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    try:
        Agent(find_port()).serve()
    except BaseException as e:
        print(f"crx-vm agent: FAILED: {type(e).__name__}: {e}", flush=True)
        time.sleep(1)
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("o")


if __name__ == "__main__":
    main()
