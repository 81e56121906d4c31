"""The test-bed agent: PID 1 of a guest, driven by the host over virtio-serial.

Protocol: frames on the port named "crx.agent", each a 4-byte big-endian
length and a marshal'ed dict (host and guest run the same /usr/bin/python3).
Host -> guest:
  {"op": "spawn", "id": N, "cmd": "...", "env": {...}}   run `bash -c cmd`
  {"op": "kill", "id": N, "sig": S}                      signal its process group
  {"op": "ping", "id": N}
Guest -> host:
  {"op": "hello", "name": ..., "kernel": ...}            once, when ready
  {"op": "started", "id": N, "pid": P}
  {"op": "exit", "id": N, "rc": RC, "out": bytes, "err": bytes}  RC < 0: signal -RC
  {"op": "pong", "id": N}
  {"op": "error", "id": N, "msg": "..."}
Each command runs in its own session, stdin /dev/null; its stdout/stderr go
to files in /run (so daemons that keep them open do not hold the reply
back).  As PID 1 the agent reaps every child, orphans included.
Only built-in modules are imported: every import is a slow read over 9p
under TCG.
"""
import _signal
import _thread
import marshal
import os
import time

OUT_DIR = "/run/crx-vm"
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}
CHILD_DEFAULT_SIGNALS = (_signal.SIGPIPE, _signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


def find_port(name="crx.agent"):
    base = "/sys/class/virtio-ports"
    for _ in range(400):
        if os.path.isdir(base):
            for port in os.listdir(base):
                try:
                    with open(base + "/" + port + "/name") as f:
                        if f.read().strip() == name:
                            return "/dev/" + port
                except OSError:
                    pass
        time.sleep(0.05)
    raise RuntimeError("no virtio port named " + name)


class Agent:
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR)
        self.write_lock = _thread.allocate_lock()
        self.jobs_lock = _thread.allocate_lock()
        self.jobs = {}  # pid -> job id
        self.wake = _thread.allocate_lock()  # released when a child is spawned
        self.wake.acquire()

    def send(self, msg):
        body = marshal.dumps(msg)
        data = len(body).to_bytes(4, "big") + body
        with self.write_lock:
            while data:
                n = os.write(self.fd, data)
                data = data[n:]

    def spawn(self, msg):
        jid = msg["id"]
        env = dict(BASE_ENV)
        env.update(msg.get("env") or {})
        out = "%s/%d.out" % (OUT_DIR, jid)
        err = "%s/%d.err" % (OUT_DIR, jid)
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        ]
        with self.jobs_lock:
            pid = os.posix_spawn("/bin/bash", ["bash", "-c", msg["cmd"]], env,
                                 file_actions=actions, setsid=True,
                                 setsigdef=CHILD_DEFAULT_SIGNALS)
            self.jobs[pid] = jid
        if self.wake.locked():
            try:
                self.wake.release()
            except RuntimeError:
                pass
        self.send({"op": "started", "id": jid, "pid": pid})

    def finished(self, jid, status):
        reply = {"op": "exit", "id": jid, "rc": os.waitstatus_to_exitcode(status)}
        for stream in ("out", "err"):
            path = "%s/%d.%s" % (OUT_DIR, jid, stream)
            try:
                with open(path, "rb") as f:
                    reply[stream] = f.read()
                os.unlink(path)
            except OSError:
                reply[stream] = b""
        self.send(reply)

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                self.wake.acquire(timeout=1.0)
                continue
            with self.jobs_lock:
                jid = self.jobs.pop(pid, None)
            if jid is not None:
                _thread.start_new_thread(self.finished, (jid, status))

    def kill(self, msg):
        with self.jobs_lock:
            pids = [p for p, j in self.jobs.items() if j == msg["id"]]
        for pid in pids:
            try:
                os.killpg(pid, msg.get("sig", _signal.SIGKILL))
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
                raise ValueError("unknown op %r" % (op,))
        except Exception as e:  # report, keep serving
            self.send({"op": "error", "id": msg.get("id"),
                       "msg": "%s: %s" % (type(e).__name__, e)})

    def serve(self):
        os.makedirs(OUT_DIR, exist_ok=True)
        _thread.start_new_thread(self.reap, ())
        with open("/proc/uptime") as f:
            print("crx-vm: agent up after %s s" % f.read().split()[0], flush=True)
        self.send({"op": "hello", "name": os.uname().nodename, "kernel": os.uname().release})
        buf = b""
        while True:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:  # host side not connected: wait for it
                time.sleep(0.2)
                continue
            buf += chunk
            while len(buf) >= 4:
                size = int.from_bytes(buf[:4], "big")
                if len(buf) < 4 + size:
                    break
                msg, buf = marshal.loads(buf[4:4 + size]), buf[4 + size:]
                self.handle(msg)


def main():
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGPIPE):
        _signal.signal(sig, _signal.SIG_IGN)
    try:
        Agent(find_port()).serve()
    except BaseException as e:
        print("crx-vm agent: FAILED: %s: %s" % (type(e).__name__, e), flush=True)
        time.sleep(1)
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("o")


if __name__ == "__main__":
    main()
