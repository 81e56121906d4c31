#!/usr/bin/python3
"""What a running MPI rank's memory holds: how much of it the page channel's
zero pages and compression can leave off the wire (tests/bench/mpi README,
Result 24; runtime/migrate/README.md, "The rest compressed").

Boots the bed of tests/vm/mpi (mpi_bed.py), runs bench_mpi's job, and once
rank 0 passed iteration --at reads the present pages of rank 0's processes
(mpi-jacobi and its orted) on g0 through /proc/PID/pagemap and
/proc/PID/mem: per kind of mapping, the pages, the zero pages, the share
of zero bytes in the others, and how far zlib at level 1 (the stand-in
for LZ4 that python has) shrinks them page by page. Pages of the page
cache (pagemap's file bit: CRIU does not dump them) are counted apart.

  sudo tests/bench/mpi/page_content.py [--at 500] [--json out.json]
"""
import argparse
import json
import os
import shutil
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = 4096


def sample(pid):
    """In the guest: the present pages of pid, by kind of mapping."""
    kinds = {}
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem, \
            open(f"/proc/{pid}/pagemap", "rb", 0) as pagemap:
        for line in maps:
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            name = f[5] if len(f) > 5 else ""
            if "r" not in f[1] or name in ("[vvar]", "[vsyscall]"):
                continue
            kind = "file" if name.startswith("/") else (name or "anonymous")
            k = kinds.setdefault(kind, {"pages": 0, "zero_pages": 0, "zero_bytes": 0,
                                        "zlib1_bytes": 0, "page_cache_pages": 0})
            n = (hi - lo) // PAGE
            pagemap.seek(lo // PAGE * 8)
            entries = pagemap.read(n * 8)
            for i in range(n):
                if not entries[i * 8 + 7] & 0x80:  # bit 63: present
                    continue
                if entries[i * 8 + 7] & 0x20:  # bit 61: a file page (or shared), not dumped
                    k["page_cache_pages"] += 1
                    continue
                try:
                    mem.seek(lo + i * PAGE)
                    page = mem.read(PAGE)
                except OSError:
                    continue
                k["pages"] += 1
                zeros = page.count(0)
                if zeros == PAGE:
                    k["zero_pages"] += 1
                    continue
                k["zero_bytes"] += zeros
                k["zlib1_bytes"] += len(zlib.compress(page, 1))
    return kinds


def summary(kinds):
    data = sum(k["pages"] - k["zero_pages"] for k in kinds.values())
    return {"pages": sum(k["pages"] for k in kinds.values()),
            "page_cache_pages": sum(k["page_cache_pages"] for k in kinds.values()),
            "zero_pages": sum(k["zero_pages"] for k in kinds.values()),
            "data_pages": data,
            "zero_byte_share_of_data_pages":
                sum(k["zero_bytes"] for k in kinds.values()) / max(1, data * PAGE),
            "zlib1_ratio_of_data_pages":
                data * PAGE / max(1, sum(k["zlib1_bytes"] for k in kinds.values())),
            "kinds": kinds}


def in_guest(pids):
    print(json.dumps({pid: summary(sample(int(pid))) for pid in pids}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--at", type=int, default=500, help="sample once rank 0 passed this iteration")
    ap.add_argument("--json", help="write the samples here")
    ap.add_argument("--in-guest", nargs="+", metavar="PID", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_guest:
        return in_guest(args.in_guest)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "vm", "mpi"))
    from mpi_bed import MpiBed, missing  # noqa: E402
    sys.path.insert(0, HERE)
    from bench_mpi import JACOBI  # noqa: E402
    why = missing()
    if why:
        sys.exit(f"page_content: {why}")
    bed = MpiBed()
    got = {}
    try:
        s = bed.tb.scratch
        shutil.copy(os.path.abspath(__file__), os.path.join(s, "page_content.py"))

        def during():
            got["at"] = bed.wait_iter("content", args.at)
            rc, out, err = bed.tb.run(0, f"python3 {s}/page_content.py --in-guest "
                                         f"$(pgrep -x mpi-jacobi) $(pgrep -x orted)", timeout=600)
            if rc != 0:
                raise AssertionError(f"sampling on g0 failed ({rc}): {err}")
            got["samples"] = json.loads(out.strip().splitlines()[-1])
        rc, res, _ = bed.mpirun("mpi-jacobi", JACOBI, "content", during=during, node=1)
        if rc != 0 or not res or not res.get("verified"):
            raise AssertionError(f"the job failed ({rc}): {bed.read('content.err')[-2000:]}")
    finally:
        bed.close()
    print(f"rank 0's processes on g0 at iteration {got['at']}:")
    print("| process pid | present, CRIU's to dump | zero pages | data pages | zero bytes in them "
          "| zlib -1 on them | page cache (not dumped) |")
    print("|---|---|---|---|---|---|---|")
    for pid, x in got["samples"].items():
        print(f"| {pid} | {x['pages'] * PAGE / 2**20:.1f} MiB | {x['zero_pages'] * PAGE / 2**20:.1f} MiB "
              f"| {x['data_pages'] * PAGE / 2**20:.1f} MiB | {100 * x['zero_byte_share_of_data_pages']:.0f}% "
              f"| {x['zlib1_ratio_of_data_pages']:.1f}x | {x['page_cache_pages'] * PAGE / 2**20:.1f} MiB |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(got, f, indent=1)


if __name__ == "__main__":
    main()
