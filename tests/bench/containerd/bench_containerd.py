#!/usr/bin/env python3
"""`ctr run --rm IMAGE ID /bin/true` through containerd: crx vs runc vs crun.

One private containerd (the one tests/containerd uses: own dirs, CRI off,
the busybox image built with umoci) and one interleaved run: every round
starts one container with each runtime as the runc.v2 shim's binary
(`--runc-binary`), the order rotating per round.  The wall time of the whole
`ctr run --rm` (shim start, create, start, wait, delete, shim exit) is
measured; prints medians and crx's ratios as markdown.  Everything runs in
a mount namespace where /sys/fs/cgroup shows only cgroup v1 (crun 1.8.1
refuses the hybrid layout), entered once for the whole run.

Usage (root): bench_containerd.py --crx build/crx [--rounds 30]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TESTS, "containerd"))
sys.path.insert(0, os.path.join(TESTS, "bench", "runtime"))
import cgroup_v1_view  # noqa: E402
import containerd_test as ctrd  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crx", required=True)
    parser.add_argument("--runc", default="/usr/sbin/runc")
    parser.add_argument("--crun", default="/usr/bin/crun")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_containerd: needs root")
    runtimes = {"crx": os.path.abspath(args.crx), "runc": args.runc, "crun": args.crun}

    cgroup_v1_view.enter()
    containerd = ctrd.PrivateContainerd()
    leftovers = []
    try:
        containerd.start()
        tarball = ctrd.build_busybox_image(containerd.dir)
        containerd.ctr("images", "import", "--base-name", "docker.io/library/busybox",
                       tarball)
        samples = {name: [] for name in runtimes}
        names = list(runtimes)
        for round_no in range(args.rounds):
            order = names[round_no % len(names):] + names[:round_no % len(names)]
            for name in order:
                argv = containerd.ctr_argv(
                    "run", "--rm", "--runc-binary", runtimes[name],
                    "--runc-root", os.path.join(containerd.dir, "root-" + name),
                    "--fifo-dir", containerd.fifo_dir, ctrd.IMAGE,
                    f"{name}-{round_no}", "/bin/true")
                start = time.perf_counter()
                proc = subprocess.run(argv, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                wall = time.perf_counter() - start
                if proc.returncode != 0:
                    sys.exit(f"bench_containerd: {name}: {proc.stderr.strip()}")
                samples[name].append(wall)
    finally:
        leftovers = containerd.stop()
    if leftovers:
        sys.exit("bench_containerd: left behind: " + "; ".join(leftovers))
    med = {name: statistics.median(rows) for name, rows in samples.items()}
    print(f"`ctr run --rm` of /bin/true through containerd 1.6 (runc.v2 shim), "
          f"{args.rounds} interleaved rounds, median wall time (cgroup v1 view):\n")
    print("| runtime | wall ms |")
    print("|---|---:|")
    for name, wall in med.items():
        print(f"| {name} | {wall * 1e3:.1f} |")
    print(f"\ncrx/runc = {med['crx'] / med['runc']:.2f}, "
          f"crx/crun = {med['crx'] / med['crun']:.2f}")


if __name__ == "__main__":
    main()
