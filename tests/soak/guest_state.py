#!/usr/bin/python3
"""What a guest holds, as one JSON object on stdout, for migrate_soak.py to
compare after every move: mounts of the initial mount namespace, cgroup
directories, user-space processes, the fds of the processes named on the
command line (comm), the rdma_rxe objects per kind and owner, the files
under the given directories (crx's state root, the receiver's RAM dir),
and the bytes used on every tmpfs.

Usage: guest_state.py --comm NAME... --dir PATH...
Runs in a guest (Python 3 stdlib; the host's python3 over 9p)."""
import argparse
import json
import os
import re
import subprocess


def mounts():
    out = []
    with open("/proc/1/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields = left.split()
            fstype, source = right.split()[:2]
            out.append(f"{fields[4]} {fstype} {source}")
    return sorted(out)


def tmpfs_used():
    used = {}
    with open("/proc/1/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "tmpfs":
                point = left.split()[4]
                try:
                    st = os.statvfs(point)
                except OSError:
                    continue
                used[point] = (st.f_blocks - st.f_bfree) * st.f_frsize
    return used


def cgroups():
    out = []
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        out += [os.path.relpath(os.path.join(top, d), "/sys/fs/cgroup") for d in dirs]
    return sorted(out)


def ancestors():
    """This process and its parents up to (not including) PID 1."""
    chain, pid = set(), os.getpid()
    while pid > 1:
        chain.add(pid)
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return chain


def processes():
    """pid -> [ppid, comm, cmdline] of every user-space process but us."""
    ours, out = ancestors(), {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        # kernel threads: kthreadd and its children (a zombie, whose
        # command line is empty, is listed)
        if int(pid) in ours or ppid == 2 or int(pid) == 2:
            continue
        out[pid] = [ppid, comm, cmdline]
    return out


def fd_targets(pid):
    """fd -> target, numbers of sockets, pipes and anon inodes left out
    (they differ after a restore)."""
    out = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            out[fd] = re.sub(r":\[\d+\]$", "", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rdma_objects():
    """kind -> {owner comm or "kernel": count}, from `rdma -j resource show`."""
    out = {}
    for kind in ("pd", "cq", "mr", "qp", "srq", "ctx"):
        r = subprocess.run(["rdma", "-j", "resource", "show", kind], capture_output=True, text=True)
        if r.returncode != 0:
            out[kind] = {"error": r.stderr.strip()}
            continue
        counts = {}
        for obj in json.loads(r.stdout or "[]"):
            owner = obj.get("comm", "kernel")
            counts[owner] = counts.get(owner, 0) + 1
        out[kind] = counts
    return out


def files_under(path):
    out = []
    for top, dirs, files in os.walk(path):
        out += [os.path.relpath(os.path.join(top, n), path) + "/" for n in dirs]
        out += [os.path.relpath(os.path.join(top, n), path) for n in files]
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--comm", nargs="*", default=[])
    ap.add_argument("--dir", nargs="*", default=[])
    a = ap.parse_args()
    procs = processes()
    watched = {pid: p for pid, p in procs.items() if p[1] in a.comm}
    print(json.dumps({
        "mounts": mounts(),
        "tmpfs_used": tmpfs_used(),
        "cgroups": cgroups(),
        "processes": procs,
        "fds": {pid: fd_targets(pid) for pid in watched},
        "rss_kib": {pid: rss_kib(pid) for pid in watched},
        "rdma": rdma_objects(),
        "files": {d: files_under(d) for d in a.dir},
    }))


if __name__ == "__main__":
    main()
