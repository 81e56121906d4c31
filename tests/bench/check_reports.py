#!/usr/bin/python3
"""Every benchmark driver that saves its runs (--json) must still read
each saved run back: for every results/*.json beside bench_migrate.py,
bench_mpi.py and bench_tls.py, `--from-json F --plot P` must exit 0,
print a table and write a PNG. The measurements themselves need the qemu
test bed and minutes; this keeps the summarizing and plotting code, which
the READMEs' tables come from, from rotting between runs. ctest runs it
with the host label (tests/bench/CMakeLists.txt)."""
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVERS = {"migrate": "bench_migrate.py", "mpi": "bench_mpi.py", "tls": "bench_tls.py"}
# Saved beside the drivers' runs but written by something else.
NOT_A_RUN = {
    "migrate/results/2026-11-28-final-round-ahead-ab.json":
        "phases of an A/B of two builds, collected by hand (runtime/migrate/README.md)",
}


def main():
    failed, checked = [], 0
    with tempfile.TemporaryDirectory(prefix="crx-bench-reports-") as tmp:
        for folder, driver in DRIVERS.items():
            script = os.path.join(HERE, folder, driver)
            runs = sorted(glob.glob(os.path.join(HERE, folder, "results", "*.json")))
            if not runs:
                failed.append(f"{folder}: no results/*.json to read")
            for run in runs:
                name = f"{folder}/results/{os.path.basename(run)}"
                if name in NOT_A_RUN:
                    continue
                png = os.path.join(tmp, f"{folder}-{os.path.basename(run)}.png")
                p = subprocess.run([sys.executable, script, "--from-json", run, "--plot", png],
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   env={**os.environ, "MPLBACKEND": "Agg"}, timeout=300)
                checked += 1
                if p.returncode != 0:
                    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                    failed.append(f"{name}: exit {p.returncode}: {tail}")
                elif not p.stdout.strip():
                    failed.append(f"{name}: printed no table")
                elif not os.path.isfile(png) or os.path.getsize(png) == 0:
                    failed.append(f"{name}: wrote no plot")
    for f in failed:
        print(f"check_reports: {f}", file=sys.stderr)
    print(f"check_reports: {checked - len(failed)} of {checked} saved runs read back")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
