#!/usr/bin/python3
"""Patched vs stock rdma_rxe in the same two guests, one interleaved run:
ib_send_bw and ib_send_lat (Debian perftest) over message sizes 2 B..1 MiB.

Both modules are swapped in and out of the SAME booted guests; every round
runs all sizes with both modules, and the order of the modules alternates
from round to round, so drift of the (shared, TCG-emulated) host hits both
alike. Per size and module the median over rounds is taken; the report gives
bandwidth ratio patched/stock (goal >= 0.98) and latency ratio patched/stock
(goal <= 1.02), plus the size of the patch series.

    rxe_bench.py [--modules DIR] [--rounds N] [--sizes LIST|all|quick]
                 [--bw-bytes B] [--lat-iters N] [--out DIR]

--modules: a modules tree from rxe-patches/build.sh (its last stdout line):
<abi>/kernel/.../rdma_rxe.ko is the patched module, <abi>/stock/
rdma_rxe.ko.stock the stock one. Without --modules, build.sh is run; if that
fails, or the tree has no stock copy, the run is stock vs stock and the
report says so (the ratios then show the noise floor of this machine).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "../../.."))
sys.path.insert(0, os.path.join(TOP, "tests/vm"))
sys.path.insert(0, HERE)
from testbed import Testbed, load_config  # noqa: E402
import patch_size  # noqa: E402

RXE_REL = "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"
STOCK_REL = "stock/rdma_rxe.ko.stock"
SERVER, CLIENT = 0, 1
GID_INDEX = ("for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do "
             "case $(cat $f) in 0000:0000:0000:0000:0000:ffff:*) basename $f; exit 0;; esac; "
             "done; exit 1")
ALL_SIZES = [2 ** k for k in range(1, 21)]          # 2 B .. 1 MiB
QUICK_SIZES = [2, 8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288, 1048576]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def resolve_modules(arg):
    """(modules tree, patched path rel. to <abi>, stock path, note)."""
    note = ""
    tree = arg
    if not tree:
        build = os.path.join(TOP, "rxe-patches/build.sh")
        if os.access(build, os.X_OK):
            log("no --modules: running rxe-patches/build.sh")
            r = subprocess.run([build], capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.strip():
                tree = r.stdout.strip().splitlines()[-1]
            else:
                note = f"rxe-patches/build.sh failed ({r.stderr.strip().splitlines()[-1:]})"
        else:
            note = "rxe-patches/build.sh does not exist"
    if tree:
        abi = load_config()["CRX_VM_ABI"]
        base = os.path.join(tree, abi) if os.path.isdir(os.path.join(tree, abi)) else tree
        if os.path.exists(os.path.join(base, STOCK_REL)):
            return tree, RXE_REL, STOCK_REL, ""
        note = f"{tree} has no {STOCK_REL}"
        tree = None
    return None, RXE_REL, RXE_REL, (
        f"**STOCK vs STOCK**: {note}; both columns are the stock module, so the ratios "
        "only show this machine's noise floor.")


class Bench:
    def __init__(self, tb, args, rel):
        self.tb, self.args, self.rel = tb, args, rel
        self.port = 19000

    def sh(self, k, cmd, timeout=300):
        rc, out, err = self.tb.run(k, cmd, timeout=timeout)
        if rc != 0:
            raise RuntimeError(f"{self.tb.name(k)}: `{cmd}` -> {rc}\n{out}\n{err}")
        return out

    def load(self, variant):
        """Replace rdma_rxe in both guests by the module of `variant`."""
        ko = f"/lib/modules/$(uname -r)/{self.rel[variant]}"
        cmd = ("rdma link del rxe0 2>/dev/null; rmmod rdma_rxe 2>/dev/null; "
               "modprobe -a ib_uverbs ip6_udp_tunnel udp_tunnel && "
               f"insmod {ko} && rdma link add rxe0 type rxe netdev eth0 && "
               f"echo $(sha256sum {ko} | cut -c1-12) taint=$(cat /sys/module/rdma_rxe/taint)")
        versions = [self.sh(k, cmd).strip() for k in (SERVER, CLIENT)]
        self.gid = [int(self.sh(k, GID_INDEX)) for k in (SERVER, CLIENT)]
        return versions[0]

    def perftest(self, tool, size, extra):
        """Run tool server on g0, client on g1; returns the client's result line."""
        self.port += 1
        common = f"-d rxe0 -p {self.port} -s {size} -F {extra}"
        h = self.tb.spawn(SERVER, f"{tool} {common} -x {self.gid[SERVER]}")
        try:
            # perftest's client does not retry: wait until the server listens.
            self.sh(SERVER, f"for i in $(seq 300); do ss -Hltn 'sport = :{self.port}' | grep -q . "
                            "&& exit 0; sleep 0.2; done; exit 1")
            rc, out, err = self.tb.run(
                CLIENT, f"{tool} {common} -x {self.gid[CLIENT]} {self.tb.ip(SERVER)}", timeout=600)
        finally:
            src, sout, serr = self.tb.wait(h, timeout=600)
        if rc or src:
            raise RuntimeError(f"{tool} -s {size}: client {rc} server {src}\n{out}{err}\n{sout}{serr}")
        for line in (out + sout).splitlines():
            f = line.split()
            if len(f) >= 5 and f[0] == str(size) and re.match(r"^\d+$", f[1]):
                return [float(x) for x in f[2:]]
        raise RuntimeError(f"no result line for {size} in {tool} output:\n{out}")

    def bandwidth(self, size):
        iters = max(64, min(1000, self.args.bw_bytes // size))
        r = self.perftest("ib_send_bw", size, f"-n {iters} -t {min(128, iters)}")
        # perftest prints BW average [MB/s] with two decimals and MsgRate [Mpps]
        # with six: under TCG the first is 0.00 for tiny messages, the second
        # is quantised to 1 msg/s for large ones. Take the more precise one.
        bw_avg, mpps = r[1], r[2]
        from_rate = mpps * size  # Mpps x bytes = MB/s
        if bw_avg > 0 and 0.005 / bw_avg < 0.0000005 / max(mpps, 1e-9):
            return bw_avg
        return from_rate

    def latency(self, size):
        iters = self.args.lat_iters if size <= 65536 else max(10, self.args.lat_iters // 4)
        r = self.perftest("ib_send_lat", size, f"-n {iters}")
        return r[2]  # t_typical [usec]


def markdown(results, sizes, note, srcversions, args, elapsed):
    def med(v, s, m):
        values = results[v][m][str(s)]
        return statistics.median(values) if values else None

    lines = ["# rdma_rxe: patched vs stock (ib_send_bw / ib_send_lat)", ""]
    if note:
        lines += [note, ""]
    lines += [f"Two qemu guests (TCG), one interleaved run: {args.rounds} rounds, module order "
              "alternating per round; medians over rounds. bw = BW average or message rate x size, whichever perftest printed with more digits (MB/s), "
              "lat = t_typical (usec). Goal: bw ratio >= 0.98, lat ratio <= 1.02.",
              f"Modules (sha256 prefix, module taint): stock {srcversions.get('stock')}, "
              f"patched {srcversions.get('patched')}. "
              f"Run took {elapsed / 60:.1f} min.", "",
              "| size | bw stock | bw patched | bw ratio | lat stock | lat patched | lat ratio |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    worst_bw, worst_lat = 9.0, 0.0
    for s in sizes:
        bs, bp = med("stock", s, "bw"), med("patched", s, "bw")
        ls, lp = med("stock", s, "lat"), med("patched", s, "lat")
        if None in (bs, bp, ls, lp):
            lines.append(f"| {human(s)} | (incomplete run) | | | | | |")
            continue
        rb, rl = bp / bs if bs else float("nan"), lp / ls if ls else float("nan")
        worst_bw, worst_lat = min(worst_bw, rb), max(worst_lat, rl)
        mb = "" if rb >= 0.98 else " ✗"
        ml = "" if rl <= 1.02 else " ✗"
        lines.append(f"| {human(s)} | {bs:.4g} | {bp:.4g} | {rb:.3f}{mb} | {ls:.1f} | {lp:.1f} | "
                     f"{rl:.3f}{ml} |")
    if worst_lat > 0:
        lines += ["", f"Worst bandwidth ratio {worst_bw:.3f}, worst latency ratio {worst_lat:.3f}."]
    lines += ["", "## Size of the patch series", "", patch_size.table(os.path.join(TOP, "rxe-patches"))]
    return "\n".join(lines)


def human(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n // div} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", help="modules tree from rxe-patches/build.sh")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="quick",
                    help="'all' (every power of 2, 2 B..1 MiB), 'quick' (every power of 4 and 1 MiB), "
                         "or a comma list")
    ap.add_argument("--bw-bytes", type=int, default=8 << 20,
                    help="bytes per ib_send_bw run (iterations = this / size, 64..1000)")
    ap.add_argument("--lat-iters", type=int, default=100, help="ib_send_lat iterations (/4 above 64 KiB)")
    ap.add_argument("--report-only", metavar="RAW_JSON",
                    help="only (re)write the report of an earlier run's raw.json")
    ap.add_argument("--out", default=f"/tmp/crx-rdma-bench-{time.strftime('%Y%m%d-%H%M%S')}")
    args = ap.parse_args()
    sizes = ALL_SIZES if args.sizes == "all" else QUICK_SIZES if args.sizes == "quick" else \
        [int(s) for s in args.sizes.split(",")]

    if args.report_only:
        raw = json.load(open(args.report_only))
        args.rounds = len(raw["results"]["stock"]["bw"][str(raw["sizes"][0])])
        print(markdown(raw["results"], raw["sizes"], raw["note"], raw["srcversion"], args,
                       raw.get("elapsed", 0)))
        return
    tree, patched_rel, stock_rel, note = resolve_modules(args.modules)
    if note:
        log(note)
    os.makedirs(args.out, exist_ok=True)
    results = {v: {"bw": {str(s): [] for s in sizes}, "lat": {str(s): [] for s in sizes}}
               for v in ("stock", "patched")}
    srcversions = {}
    t0 = time.monotonic()
    with Testbed(2, modules_dir=tree, rxe=False) as tb:
        log(f"booted in {max(tb.boot_seconds):.1f} s")
        bench = Bench(tb, args, {"stock": stock_rel, "patched": patched_rel})
        for r in range(args.rounds):
            order = ("stock", "patched") if r % 2 == 0 else ("patched", "stock")
            for variant in order:
                srcversions[variant] = bench.load(variant)
                for s in sizes:
                    bw, lat = bench.bandwidth(s), bench.latency(s)
                    results[variant]["bw"][str(s)].append(bw)
                    results[variant]["lat"][str(s)].append(lat)
                    log(f"round {r + 1}/{args.rounds} {variant:7} {human(s):>7}: "
                        f"{bw:9.4g} MB/s {lat:9.1f} us")
                json.dump({"note": note, "sizes": sizes, "results": results,
                           "srcversion": srcversions, "elapsed": time.monotonic() - t0}, open(os.path.join(args.out, "raw.json"), "w"),
                          indent=1)
        for k in (SERVER, CLIENT):
            dmesg = tb.run(k, "dmesg", timeout=60)[1]
            if re.search(r"Oops|BUG:|WARNING:|Call Trace", dmesg):
                note += f"\n\n**{tb.name(k)} kernel log shows a warning or oops** (see raw.json dir)."
                open(os.path.join(args.out, f"dmesg-{tb.name(k)}.txt"), "w").write(dmesg)
    report = markdown(results, sizes, note, srcversions, args, time.monotonic() - t0)
    open(os.path.join(args.out, "report.md"), "w").write(report + "\n")
    print(report)
    log(f"results in {args.out}")


if __name__ == "__main__":
    main()
