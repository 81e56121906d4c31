#!/usr/bin/env python3
"""`<runtime> run` of /bin/true: crx vs runc vs crun, one interleaved run.

Every round runs each runtime once (the order rotates per round) on the same
busybox bundle, each with its own state root in a temp dir.  Per call:
wall time (fork to reap), CPU time (user+sys of the runtime and everything it
reaped) and peak RSS (GNU time's %M: the largest of the runtime and the
processes it reaped).  Prints the medians and crx's ratios as markdown.
Runs inside a mount namespace where /sys/fs/cgroup shows only cgroup v1
(crun 1.8.1 refuses the hybrid layout), entered once for the whole run.

Usage (root): bench_runtime.py --crx build/crx [--rounds 100] [--also NAME=PATH]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
import cgroup_v1_view  # noqa: E402

GNU_TIME = "/usr/bin/time"  # package time


def make_bundle(workdir):
    bundle = os.path.join(workdir, "bundle")
    os.mkdir(bundle)
    subprocess.run(["sh", os.path.join(SOURCE_DIR, "bundles/busybox/make-rootfs.sh"),
                    os.path.join(bundle, "rootfs")], check=True)
    # runc's default spec: the one config every runtime here accepts.
    subprocess.run(["runc", "spec"], cwd=bundle, check=True)
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/true"]
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)
    return bundle


def timed_run(argv, rss_file):
    """(wall s, cpu s, peak rss KiB, exit status) of one call.

    Peak RSS comes from GNU time (%M), which forks the runtime from a ~1 MiB
    process: measured from Python, ru_maxrss would keep the forked
    interpreter's size across exec.  Wall and CPU (user+sys, microsecond
    resolution) come from wait4 on time, whose own share is negligible.
    """
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.execv(GNU_TIME, [GNU_TIME, "-q", "-o", rss_file, "-f", "%M", *argv])
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    with open(rss_file) as f:
        rss = int(f.read().split()[-1])
    return wall, usage.ru_utime + usage.ru_stime, rss, \
        os.waitstatus_to_exitcode(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crx", required=True)
    parser.add_argument("--runc", default="/usr/sbin/runc")
    parser.add_argument("--crun", default="/usr/bin/crun")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                        help="one more runtime in the rotation, e.g. an older crx build")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_runtime: needs root")
    runtimes = {"crx": os.path.abspath(args.crx), "runc": args.runc, "crun": args.crun}
    for extra in args.also:
        name, sep, path = extra.partition("=")
        if not sep or not name or name in runtimes:
            sys.exit(f"bench_runtime: --also wants a new NAME=PATH, got {extra!r}")
        runtimes[name] = os.path.abspath(path)

    cgroup_v1_view.enter()
    workdir = tempfile.mkdtemp(prefix="crx-bench-runtime-")
    try:
        bundle = make_bundle(workdir)
        samples = {name: [] for name in runtimes}
        names = list(runtimes)
        for round_no in range(args.rounds):
            order = names[round_no % len(names):] + names[:round_no % len(names)]
            for name in order:
                root = os.path.join(workdir, "root-" + name)
                argv = [runtimes[name], "--root", root, "run", "--bundle", bundle,
                        f"bench-{round_no}"]
                wall, cpu, rss, code = timed_run(argv, os.path.join(workdir, "rss"))
                if code != 0:
                    sys.exit(f"bench_runtime: {' '.join(argv)} exited {code}")
                samples[name].append((wall, cpu, rss))
        for name in names:
            left = os.listdir(os.path.join(workdir, "root-" + name))
            if left:
                sys.exit(f"bench_runtime: {name} left state behind: {left}")
        print_table(samples, args.rounds)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def print_table(samples, rounds):
    med = {name: [statistics.median(s[i] for s in rows) for i in range(3)]
           for name, rows in samples.items()}
    print(f"`run` of /bin/true, {rounds} interleaved rounds, medians "
          f"(cgroup v1 view):\n")
    print("| runtime | wall ms | CPU ms | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for name, (wall, cpu, rss) in med.items():
        print(f"| {name} | {wall * 1e3:.1f} | {cpu * 1e3:.1f} | {rss / 1024:.1f} |")
    print("\n| ratio | wall | CPU | peak RSS |")
    print("|---|---:|---:|---:|")
    pairs = [("crx", "runc"), ("crx", "crun")]
    pairs += [(name, "crun") for name in med if name not in ("crx", "runc", "crun")]
    for mine, other in pairs:
        r = [med[mine][i] / med[other][i] for i in range(3)]
        print(f"| {mine}/{other} | {r[0]:.2f} | {r[1]:.2f} | {r[2]:.2f} |")


if __name__ == "__main__":
    main()
