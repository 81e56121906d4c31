#!/usr/bin/env python3
"""Soak (label soak): parallel `ctr run --rm` loops through a private
containerd whose runc.v2 shim runs crx, then nothing may be left.

Every run is a busybox container (the image tests/containerd builds) whose
shell prints the fds it holds and its id and exits with a status of its
own; ctr must return that status and that output, and the shell must hold
only its stdio (an fd crx opened and let through is a leak). After all
loops, with containerd still up: no task, container or active snapshot;
no crx state dir; no cgroup, mount or tmpfs of a container; no shim, crx
or container process; no process holding an fd into crx's state or the
tasks' bundles. Then containerd is stopped and its own leftovers are
checked (tests/containerd/containerd_test.py).

Size: CRX_SOAK unset or "ci": 8 loops x 3 runs; CRX_SOAK=full: 8 loops x
125 runs (1000 containers). tests/soak/README.md has the measured times.

Usage (as root):  containerd_loops.py --crx /path/to/crx [unittest args]
"""
import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "containerd"))
import containerd_test as ct  # noqa: E402

# This run's containers only: another run's leftovers (a host_cycles run
# killed half way leaves soak-<its pid>-<n> cgroups) are not this test's.
PREFIX = f"soak-ctr{os.getpid()}-"


def soak_size():
    """(loops, runs per loop) for CRX_SOAK."""
    mode = os.environ.get("CRX_SOAK", "")
    if mode == "full":
        return 8, 125
    if mode not in ("", "ci"):
        raise SystemExit(f"CRX_SOAK must be unset, ci or full, not {mode!r}")
    return 8, 3


def tmpfs_mounts():
    with open("/proc/self/mountinfo") as f:
        return {line.split()[4] for line in f if " - tmpfs " in line}


def crx_processes():
    """Pids running the crx binary under test."""
    crx = os.path.realpath(ct.CRX)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") == crx:
                found.append(int(pid))
        except OSError:
            pass
    return found


def fds_into(paths):
    """'pid fd -> target' for every open fd under one of paths."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if any(target == p or target.startswith(p + "/") for p in paths):
                found.append(f"{pid} {fd} -> {target}")
    return found


def cgroups_named(prefix):
    found = []
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in list(dirs):
            if d.startswith(prefix):
                found.append(os.path.join(top, d))
                dirs.remove(d)
    return found


class CtrRunLoopsTest(ct.ContainerdCase):
    maxDiff = None

    def test_parallel_ctr_run_loops_leave_nothing_behind(self):
        loops, runs = soak_size()
        cd = self.containerd
        tmpfs_before = tmpfs_mounts()
        shm_before = set(os.listdir("/dev/shm"))
        problems, took = [], []
        lock = threading.Lock()

        def loop(k):
            for i in range(runs):
                cid, status = f"{PREFIX}{k}-{i}", (k + i) % 4
                t = time.monotonic()
                # The sleep: containerd 1.6's ctr can lose the output of a
                # process that exits right after writing it (1 run in 1000
                # with runc as with crx, tests/soak/README.md); what the
                # runtime owes is the stdio, the exit status and no leftover.
                try:
                    proc = ct.run(cd.run_argv("--rm") + [
                        ct.IMAGE, cid, "sh", "-c",
                        f"ls /proc/$$/fd; echo {cid}; sleep 0.2; exit {status}"],
                        check=False, timeout=300)
                except Exception as e:  # a hung ctr: note it, the loop goes on
                    with lock:
                        problems.append(f"{cid}: {e!r}")
                    continue
                with lock:
                    took.append(time.monotonic() - t)
                    if proc.returncode != status or proc.stdout != f"0\n1\n2\n{cid}\n":
                        problems.append(f"{cid}: exit {proc.returncode} (want {status}), "
                                        f"stdout {proc.stdout!r} (want fds 0 1 2 and the id), "
                                        f"stderr {proc.stderr.strip()[-300:]!r}")

        t0 = time.monotonic()
        threads = [threading.Thread(target=loop, args=(k,)) for k in range(loops)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        took.sort()
        print(f"soak: {loops} parallel loops x {runs} `ctr run --rm` = {loops * runs} containers "
              f"in {wall:.1f} s ({loops * runs / wall:.2f}/s); one run {took[0]:.2f}-{took[-1]:.2f} s, "
              f"median {took[len(took) // 2]:.2f} s", flush=True)
        self.assertEqual(problems, [], f"{len(problems)} of {loops * runs} runs went wrong")

        runtime_root = os.path.join(cd.runc_root, ct.NAMESPACE)
        bundles = os.path.join(cd.dir, "state", "io.containerd.runtime.v2.task", ct.NAMESPACE)

        def leftovers():
            left = []
            for what in ("task", "containers"):
                names = self.ctr(what, "ls", "-q").stdout.split()
                left += [f"{what} {n}" for n in names]
            left += [f"snapshot {ln.split()[0]}" for ln in self.ctr("snapshots", "ls").stdout.splitlines()[1:]
                     if ln.split()[0].startswith(PREFIX)]
            left += [f"crx state {n}" for n in (os.listdir(runtime_root) if os.path.isdir(runtime_root) else [])]
            left += [f"bundle {n}" for n in (os.listdir(bundles) if os.path.isdir(bundles) else [])]
            left += [f"cgroup {c}" for c in cgroups_named(PREFIX)]
            left += [f"mount {m}" for m in ct.mounts_under(cd.dir)]
            left += [f"tmpfs {m}" for m in sorted(tmpfs_mounts() - tmpfs_before)]
            left += [f"/dev/shm/{n}" for n in sorted(set(os.listdir("/dev/shm")) - shm_before)]
            # the shims (their command line names our socket), not containerd
            left += [f"process {p}" for p in ct.pids_referring_to(cd.dir) if p != cd.proc.pid]
            left += [f"crx process {p}" for p in crx_processes()]
            left += [f"fd {f}" for f in fds_into([runtime_root, bundles])]
            return left

        # A shim exits shortly after its task is deleted: give them a moment.
        deadline = time.monotonic() + 30
        while (left := leftovers()) and time.monotonic() < deadline:
            time.sleep(0.5)
        self.assertEqual(left, [], "left behind after the loops")
        print(f"soak: nothing left behind after {loops * runs} containers", flush=True)


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "--crx":
        ct.CRX = os.path.abspath(args[1])
        args = args[2:]
    if not ct.CRX or not os.access(ct.CRX, os.X_OK):
        sys.exit("usage: containerd_loops.py --crx /path/to/crx [unittest args]")
    soak_size()
    prog = unittest.main(argv=[sys.argv[0], *args], verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
