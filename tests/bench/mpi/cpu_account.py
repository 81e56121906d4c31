#!/usr/bin/python3
"""Where a guest's CPU went while a rank moved: CPU seconds per command
name over a window, from every process's /proc/PID/stat at its start and
end and the kernel's process accounting (acct(2), BSD acct v3) for the
processes that ended inside it. bench_mpi.py --cpu-account runs it on the
source and destination guests around each crx move.

In a guest (root):
  cpu_account.py start DIR   # snapshot, accounting on into DIR/pacct
  cpu_account.py stop DIR    # snapshot, accounting off; prints JSON:
                             # {"wall", "busy", "idle", "by_command": {comm: seconds},
                             #  "module_requests": {name: count}}

The kernel's module requests in the window are counted too (tracefs
event module:module_request): each one that does not find its module
loaded runs a modprobe, which costs a TCG guest ~0.1-0.3 s of CPU.

The guest's own view: under TCG a vCPU the host does not run looks busy
to the guest, so this splits what the guest ran, not what the host gave it.
"""
import ctypes
import json
import os
import struct
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
AHZ = 100  # acct's comp_t unit (linux/acct.h)
ACCT_V3 = struct.Struct("<BBHIIIIIIf8H16s")  # 64 bytes


def comp_t(c):
    return (c & 0x1fff) << (3 * (c >> 13))


def snapshot():
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        # fields 14, 15 (utime, stime) and 22 (starttime); rest starts at field 3
        procs[int(d)] = (comm, (int(rest[11]) + int(rest[12])) / TICK, int(rest[19]))
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    return {"t": time.time(), "procs": procs, "busy": (sum(cpu) - cpu[3] - cpu[4]) / TICK,
            "idle": (cpu[3] + cpu[4]) / TICK}


TRACEFS = "/sys/kernel/tracing"


def tracing(on):
    """The module_request event on or off (tracefs mounted if need be);
    False where there is no tracefs."""
    try:
        if not os.path.exists(os.path.join(TRACEFS, "events")):
            os.makedirs(TRACEFS, exist_ok=True)
            if os.system(f"mount -t tracefs nodev {TRACEFS} 2>/dev/null") != 0:
                return False
        if on:
            with open(os.path.join(TRACEFS, "trace"), "w") as f:
                f.write("")
        with open(os.path.join(TRACEFS, "events/module/module_request/enable"), "w") as f:
            f.write("1" if on else "0")
        return True
    except OSError:
        return False


def module_requests():
    counts = {}
    try:
        with open(os.path.join(TRACEFS, "trace")) as f:
            for line in f:
                if "module_request:" in line:
                    name = line.split("module_request:", 1)[1].split()[0]
                    counts[name] = counts.get(name, 0) + 1
    except OSError:
        pass
    return counts


def start(d):
    os.makedirs(d, exist_ok=True)
    tracing(True)
    path = os.path.join(d, "pacct")
    open(path, "wb").close()
    snap = snapshot()
    if ctypes.CDLL(None, use_errno=True).acct(path.encode()) != 0:
        sys.exit(f"acct({path}): {os.strerror(ctypes.get_errno())}")
    with open(os.path.join(d, "start.json"), "w") as f:
        json.dump(snap, f)


def stop(d):
    snap = snapshot()
    ctypes.CDLL(None, use_errno=True).acct(None)
    requests = module_requests() if tracing(False) else None
    with open(os.path.join(d, "start.json")) as f:
        first = json.load(f)
    before = {int(p): v for p, v in first["procs"].items()}
    by = {}

    def add(comm, secs):
        if secs > 0:
            by[comm] = by.get(comm, 0.0) + secs
    ended = {}
    with open(os.path.join(d, "pacct"), "rb") as f:
        data = f.read()
    for off in range(0, len(data) - ACCT_V3.size + 1, ACCT_V3.size):
        r = ACCT_V3.unpack_from(data, off)
        pid, comm = r[6], r[18].split(b"\0")[0].decode(errors="replace")
        ended[pid] = (comm, (comp_t(r[10]) + comp_t(r[11])) / AHZ)
    # acct names a process by the thread that exited last (UCX's "async"
    # for a rank, say): a process seen at the start keeps its name from then.
    for pid, (comm, secs) in ended.items():
        if pid in before:
            add(before[pid][0], secs - before[pid][1])
        else:
            add(comm, secs)
    for pid, (comm, secs, started) in snap["procs"].items():
        if pid in ended:
            continue
        was = before.get(pid)
        add(comm, secs - (was[1] if was and was[2] == started else 0.0))
    print(json.dumps({"wall": snap["t"] - first["t"], "busy": snap["busy"] - first["busy"],
                      "idle": snap["idle"] - first["idle"],
                      "by_command": dict(sorted(by.items(), key=lambda kv: -kv[1])),
                      "module_requests": requests}))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    (start if sys.argv[1] == "start" else stop)(sys.argv[2])
