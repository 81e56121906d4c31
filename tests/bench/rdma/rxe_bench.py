#!/usr/bin/python3
"""Patched vs stock rdma_rxe in the same two guests, one interleaved run:
ib_send_bw and ib_send_lat (Debian perftest) over message sizes 2 B..1 MiB,
with an A/A control that measures the noise floor.

Three arms share the SAME booted guests: "stock", "patched" and "stock2" (the
stock module again, measured as if it were a third module: the A/A control).
Each round loads every arm once (rdma_rxe swapped in place) and runs every
size once with it, short runs; the arm order rotates from round to round
(stock, patched, stock2 / patched, stock2, stock / ...), so drift of the
shared, TCG-emulated host hits every arm alike. Per size and round the
ratios patched/stock and stock2/stock are taken; the report gives the median
over rounds of each, and next to the A/B ratio the spread (min..max) of the
A/A ratio: an A/B ratio inside the A/A spread cannot be told from noise.
Goal: bandwidth ratio >= 0.98, latency ratio <= 1.02.

    rxe_bench.py [--modules DIR] [--rounds N] [--sizes LIST|all|quick]
                 [--bw-bytes B] [--min-iters N] [--max-iters N] [--lat-iters N]
                 [--icount [SPEC]] [--no-aa] [--out DIR]

--icount: ONE guest under qemu -icount (guest time = executed instructions,
independent of the host's load), both ends in it on two rxe devices over a
veth pair (OneGuestBench); the mode that can resolve the 2 % goal under TCG.
Without it: two guests timed in wall clock (Bench), noise far above 2 %.

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
    """Two guests: server on g0's rxe0, client on g1's rxe0, over the bridge."""
    server, client = SERVER, CLIENT       # guest indices
    dev = {SERVER: "rxe0", CLIENT: "rxe0"}
    tool_flags = ""

    def __init__(self, tb, args, rel):
        self.tb, self.args, self.rel = tb, args, rel
        self.port = 19000

    def server_ip(self):
        return self.tb.ip(SERVER)

    def gid_index(self, k, dev):
        return int(self.sh(k, GID_INDEX.replace("rxe0", dev)))

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
        self.gid = [self.gid_index(k, "rxe0") for k in (SERVER, CLIENT)]
        return versions[0]

    def counters(self):
        return {}

    def perftest(self, tool, size, extra):
        """Run tool server on g0, client on g1; returns the client's result line."""
        self.port += 1
        common = f"-p {self.port} -s {size} -F {self.tool_flags}{extra}"
        before = self.counters()
        h = self.tb.spawn(self.server, f"{tool} -d {self.dev[SERVER]} {common} -x {self.gid[SERVER]}")
        try:
            # perftest's client does not retry: wait until the server listens.
            self.sh(self.server, f"for i in $(seq 300); do ss -Hltn 'sport = :{self.port}' | grep -q . "
                                 "&& exit 0; sleep 0.2; done; exit 1")
            rc, out, err = self.tb.run(
                self.client, f"{tool} -d {self.dev[CLIENT]} {common} -x {self.gid[CLIENT]} "
                             f"{self.server_ip()}", timeout=600)
        finally:
            src, sout, serr = self.tb.wait(h, timeout=600)
        if rc or src:
            raise RuntimeError(f"{tool} -s {size}: client {rc} server {src}\n{out}{err}\n{sout}{serr}")
        self.check_path(tool, size, before, self.counters())
        for line in (out + sout).splitlines():
            f = line.split()
            if len(f) >= 5 and f[0] == str(size) and re.match(r"^\d+$", f[1]):
                return [float(x) for x in f[2:]]
        raise RuntimeError(f"no result line for {size} in {tool} output:\n{out}")

    def check_path(self, tool, size, before, after):
        pass

    def bandwidth(self, size):
        iters = max(self.args.min_iters, min(self.args.max_iters, self.args.bw_bytes // size))
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


# One guest, two rxe devices on the two ends of a veth pair, for --icount.
# rxe in 6.1 keeps its UDP socket and routes in the initial network namespace,
# so both ends stay there; policy routing sends 10.99.0.1 <-> 10.99.0.2 out of
# the veth instead of through the local table (loopback), and accept_local lets
# the other end take a packet from an address of its own host.
VETH_ADDR = {SERVER: "10.99.0.2", CLIENT: "10.99.0.1"}
VETH_SETUP = f"""set -e
ip link add vethA type veth peer name vethB
ip addr add {VETH_ADDR[CLIENT]}/24 dev vethA; ip addr add {VETH_ADDR[SERVER]}/24 dev vethB
ip link set vethA up; ip link set vethB up
for d in all vethA vethB; do
  sysctl -qw net.ipv4.conf.$d.accept_local=1 net.ipv4.conf.$d.rp_filter=0
done
# rxe sends a whole message's packets before NET_RX runs: no drop in the backlog.
sysctl -qw net.core.netdev_max_backlog=1000000
ip rule add pref 100 lookup local; ip rule del pref 0
ip rule add pref 10 iif vethA lookup local; ip rule add pref 11 iif vethB lookup local
ip route add {VETH_ADDR[SERVER]} dev vethA table 10; ip route add {VETH_ADDR[CLIENT]} dev vethB table 11
ip rule add pref 20 from {VETH_ADDR[CLIENT]} to {VETH_ADDR[SERVER]} lookup 10
ip rule add pref 21 from {VETH_ADDR[SERVER]} to {VETH_ADDR[CLIENT]} lookup 11
ip neigh replace {VETH_ADDR[SERVER]} lladdr $(cat /sys/class/net/vethB/address) dev vethA nud permanent
ip neigh replace {VETH_ADDR[CLIENT]} lladdr $(cat /sys/class/net/vethA/address) dev vethB nud permanent
ip route get {VETH_ADDR[SERVER]} from {VETH_ADDR[CLIENT]} | grep -q 'dev vethA'
ip route get {VETH_ADDR[CLIENT]} from {VETH_ADDR[SERVER]} | grep -q 'dev vethB'
"""
# rxe's counters that grow only when a packet was lost, retried or refused.
TROUBLE_COUNTERS = ("completer_retry_err", "duplicate_request", "out_of_seq_request",
                    "rcvd_seq_err", "rcvd_rnr_err", "send_rnr_err", "retry_exceeded_err",
                    "retry_rnr_exceeded_err", "send_err")


class OneGuestBench(Bench):
    """--icount: server on rxeB (vethB), client on rxeA (vethA), in ONE guest.

    The guest's clock counts executed instructions (qemu -icount), so a
    measurement inside it is the CPU work of perftest, verbs, rxe and the
    network stack, independent of the host's load; two guests would bring
    real time back (the link between them). With one vCPU, both perftest
    processes wait for completions by events (-e): busy polling would hand
    the CPU over only at scheduler ticks and measure those. And with one CPU
    the sender runs ahead of the receiver by a whole send queue (128 x 64 KiB
    take ~140 ms of guest time to receive), longer than perftest's ACK
    time-out (-u 14: 67 ms): the requester then retransmits for nothing and
    the run counts the time-out. -u 20 (4.3 s) lets it wait; a real loss still
    shows in the rxe counters that check_path watches."""
    server = client = 0
    dev = {SERVER: "rxeB", CLIENT: "rxeA"}
    tool_flags = "-e -u 20 "

    def __init__(self, tb, args, rel):
        super().__init__(tb, args, rel)
        self.sh(0, VETH_SETUP)
        self.paths = []  # per perftest run: what went over the veth and through rxe

    def server_ip(self):
        return VETH_ADDR[SERVER]

    def load(self, variant):
        ko = f"/lib/modules/$(uname -r)/{self.rel[variant]}"
        out = self.sh(0, "rdma link del rxeA 2>/dev/null; rdma link del rxeB 2>/dev/null; "
                         "rmmod rdma_rxe 2>/dev/null; "
                         "modprobe -a ib_uverbs ip6_udp_tunnel udp_tunnel && "
                         f"insmod {ko} && rdma link add rxeA type rxe netdev vethA && "
                         "rdma link add rxeB type rxe netdev vethB && "
                         f"echo $(sha256sum {ko} | cut -c1-12) taint=$(cat /sys/module/rdma_rxe/taint)")
        self.gid = {k: self.gid_index(0, self.dev[k]) for k in (SERVER, CLIENT)}
        # Let what the module swap left behind (deferred frees, GID work) run
        # now, not inside the first measurement, and warm perftest up: in a
        # test run the first run after each load (2 B bandwidth) differed by
        # 5 % between modules while the second (4 B) agreed within 0.2 %.
        self.sh(0, "sleep 2")
        self.perftest("ib_send_bw", 2, "-n 64")
        return out.strip()

    def counters(self):
        """rxe hw counters of both devices and the veth's packet counts."""
        out = self.sh(0, "cd /sys/class/infiniband && grep . rxeA/ports/1/hw_counters/* "
                         "rxeB/ports/1/hw_counters/*; for d in vethA vethB; do "
                         "echo $d:tx:$(cat /sys/class/net/$d/statistics/tx_packets); done; "
                         "for x in $(cut -d' ' -f2 /proc/net/softnet_stat); do echo softnet:drop:$x; done")
        c = {"softnet:drop": 0}
        for line in out.split():
            key, _, val = line.rpartition(":")
            if key == "softnet:drop":  # per CPU, hex
                c[key] += int(val, 16)
            else:
                c[key.replace("/ports/1/hw_counters/", ":")] = int(val)
        return c

    def check_path(self, tool, size, before, after):
        d = {k: after[k] - before.get(k, 0) for k in after}
        path = {"tool": tool, "size": size,
                "sent": {dev: d[f"{dev}:sent_pkts"] for dev in ("rxeA", "rxeB")},
                "rcvd": {dev: d[f"{dev}:rcvd_pkts"] for dev in ("rxeA", "rxeB")},
                "veth_tx": {v: d[f"{v}:tx"] for v in ("vethA", "vethB")},
                "trouble": {f"{dev}:{n}": d[f"{dev}:{n}"] for dev in ("rxeA", "rxeB")
                            for n in TROUBLE_COUNTERS if d.get(f"{dev}:{n}")},
                "backlog_drops": d["softnet:drop"]}
        self.paths.append(path)
        # Every packet one rxe sent, the other received, and the veth carried it.
        if not (path["sent"]["rxeA"] > 0 and path["sent"]["rxeA"] == path["rcvd"]["rxeB"]
                and path["sent"]["rxeB"] == path["rcvd"]["rxeA"]
                and path["veth_tx"]["vethA"] >= path["sent"]["rxeA"]
                and path["veth_tx"]["vethB"] >= path["sent"]["rxeB"]):
            raise RuntimeError(f"{tool} -s {size}: packets did not go rxeA -> vethA -> vethB -> "
                               f"rxeB and back: {path}")
        if path["trouble"] or path["backlog_drops"]:
            log(f"{tool} -s {size}: packets lost or retried, this run waited for a time-out: {path}")


ARMS = ("stock", "patched", "stock2")
ICOUNT_DEFAULT = "shift=0,sleep=off"


def ratios(results, arm, base, metric, size):
    """Per-round ratios arm/base of one metric and size (rounds where both ran)."""
    a, b = results[arm][metric][str(size)], results[base][metric][str(size)]
    return [x / y for x, y in zip(a, b) if y]


def markdown(results, sizes, note, srcversions, args, elapsed, icount=None, paths=None):
    aa = bool(results.get("stock2", {}).get("bw", {}).get(str(sizes[0])))
    lines = ["# rdma_rxe: patched vs stock (ib_send_bw / ib_send_lat)", ""]
    if note:
        lines += [note, ""]
    where = ("Two qemu guests (TCG)" if icount is None else
             f"ONE qemu guest under `-icount {icount}` (guest time = executed instructions), "
             "server on rxeB/vethB, client on rxeA/vethA, perftest with events (-e) and "
             "ACK time-out -u 20")
    lines += [f"{where}, one interleaved run: {args.rounds} rounds; every round "
              "loads each arm (stock, patched" + (", stock again as A/A control" if aa else "") +
              ") once in rotating order and runs every size once. Ratios are per round "
              "(arm / stock of the same round), median over rounds" +
              ("; A/A = stock2 / stock, its min..max over rounds is the noise floor" if aa else "") +
              ". bw = BW average or message rate x size, whichever perftest printed with more "
              "digits; lat = t_typical. Goal: bw ratio >= 0.98, lat ratio <= 1.02.",
              f"Modules (sha256 prefix, module taint): stock {srcversions.get('stock')}, "
              f"patched {srcversions.get('patched')}. "
              f"Run took {elapsed / 60:.1f} min.", ""]
    if aa:
        lines += ["| size | bw patched/stock median (min..max) | bw A/A median (min..max) | "
                  "lat patched/stock median (min..max) | lat A/A median (min..max) |",
                  "|---:|---:|---:|---:|---:|"]
    else:
        lines += ["| size | bw patched/stock | lat patched/stock |", "|---:|---:|---:|"]
    verdicts = []
    for s in sizes:
        rb, rl = ratios(results, "patched", "stock", "bw", s), ratios(results, "patched", "stock", "lat", s)
        if not rb or not rl:
            lines.append(f"| {human(s)} | (incomplete run) |" + (" | | |" if aa else " |"))
            continue
        mb, ml = statistics.median(rb), statistics.median(rl)
        if aa:
            ab, al = ratios(results, "stock2", "stock", "bw", s), ratios(results, "stock2", "stock", "lat", s)
            if not ab or not al:
                lines.append(f"| {human(s)} | {mb:.3f} | (incomplete) | {ml:.3f} | (incomplete) |")
                continue
            inside_b = min(ab) <= mb <= max(ab)
            inside_l = min(al) <= ml <= max(al)
            verdicts.append((s, mb, ml, inside_b, inside_l, min(ab), max(al)))
            lines.append(f"| {human(s)} | **{mb:.3f}** ({min(rb):.3f}..{max(rb):.3f})"
                         f"{'' if inside_b else ' outside A/A'} | "
                         f"{statistics.median(ab):.3f} ({min(ab):.3f}..{max(ab):.3f}) | "
                         f"**{ml:.3f}** ({min(rl):.3f}..{max(rl):.3f})"
                         f"{'' if inside_l else ' outside A/A'} | "
                         f"{statistics.median(al):.3f} ({min(al):.3f}..{max(al):.3f}) |")
        else:
            lines.append(f"| {human(s)} | {mb:.3f} | {ml:.3f} |")
    if verdicts:
        out_b = [human(v[0]) for v in verdicts if not v[3]]
        out_l = [human(v[0]) for v in verdicts if not v[4]]
        lines += ["", "A/B median outside the A/A range: bandwidth " + (", ".join(out_b) or "none") +
                  "; latency " + (", ".join(out_l) or "none") + "."]
        miss_b = [human(v[0]) for v in verdicts if v[1] < 0.98]
        miss_l = [human(v[0]) for v in verdicts if v[2] > 1.02]
        lines += ["", "Goal (median bw ratio >= 0.98, lat ratio <= 1.02) missed at: bandwidth " +
                  (", ".join(miss_b) or "no size") + "; latency " + (", ".join(miss_l) or "no size") +
                  ". Widest A/A range: bandwidth " +
                  f"{min(min(ratios(results, 'stock2', 'stock', 'bw', s)) for s in sizes):.4f}.."
                  f"{max(max(ratios(results, 'stock2', 'stock', 'bw', s)) for s in sizes):.4f}, latency "
                  f"{min(min(ratios(results, 'stock2', 'stock', 'lat', s)) for s in sizes):.4f}.."
                  f"{max(max(ratios(results, 'stock2', 'stock', 'lat', s)) for s in sizes):.4f}."]
    if paths:
        bad = [p for p in paths if p["trouble"] or p["backlog_drops"]]
        lines += ["", f"Packet path checked after each of the {len(paths)} perftest runs (rxe hw "
                  "counters and veth tx counts): every packet rxeA sent, rxeB received and vice "
                  "versa, all over the veth pair. Runs with a lost, retried or refused packet "
                  f"(they count a time-out): {len(bad)}" +
                  ("" if not bad else " - " + "; ".join(f"{p['tool']} {human(p['size'])} {p['trouble']}"
                                                        for p in bad)) + "."]
    if aa and icount is not None:
        # No host drift under icount for a per-round ratio to cancel: the
        # ratio of the arms' medians also drops one odd run per arm.
        def mr(arm, m, s):
            a, b = results[arm][m][str(s)], results["stock"][m][str(s)]
            return f"{statistics.median(a) / statistics.median(b):.4f}" if a and b else "-"
        lines += ["", "Ratio of the medians over rounds (median(arm) / median(stock)):", "",
                  "| size | bw patched/stock | bw stock2/stock | lat patched/stock | lat stock2/stock |",
                  "|---:|---:|---:|---:|---:|"]
        for s in sizes:
            lines.append(f"| {human(s)} | {mr('patched', 'bw', s)} | {mr('stock2', 'bw', s)} | "
                         f"{mr('patched', 'lat', s)} | {mr('stock2', 'lat', s)} |")
    lines += ["", "Medians per arm (bw MB/s, lat us):", "",
              "| size | " + " | ".join(f"bw {a}" for a in ARMS if a in results) + " | " +
              " | ".join(f"lat {a}" for a in ARMS if a in results) + " |",
              "|---:|" + "---:|" * (2 * len([a for a in ARMS if a in results]))]
    for s in sizes:
        def med(a, m):
            v = results[a][m][str(s)]
            return f"{statistics.median(v):.4g}" if v else "-"
        lines.append(f"| {human(s)} | " + " | ".join(med(a, "bw") for a in ARMS if a in results) +
                     " | " + " | ".join(med(a, "lat") for a in ARMS if a in results) + " |")
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
    ap.add_argument("--min-iters", type=int, default=64,
                    help="at least this many ib_send_bw iterations per run")
    ap.add_argument("--max-iters", type=int, default=1000,
                    help="at most this many ib_send_bw iterations per run")
    ap.add_argument("--lat-iters", type=int, default=100, help="ib_send_lat iterations (/4 above 64 KiB)")
    ap.add_argument("--icount", nargs="?", const=ICOUNT_DEFAULT, metavar="SPEC",
                    help="ONE guest under qemu -icount SPEC (default %(const)s): both ends on two "
                         "rxe devices over a veth pair, timed in executed instructions")
    ap.add_argument("--no-aa", action="store_true", help="no A/A control arm (stock2)")
    ap.add_argument("--report-only", metavar="RAW_JSON",
                    help="only (re)write the report of an earlier run's raw.json")
    ap.add_argument("--out", default=f"/tmp/crx-rdma-bench-{time.strftime('%Y%m%d-%H%M%S')}")
    args = ap.parse_args()
    sizes = ALL_SIZES if args.sizes == "all" else QUICK_SIZES if args.sizes == "quick" else \
        [int(s) for s in args.sizes.split(",")]

    if args.report_only:
        raw = json.load(open(args.report_only))
        args.rounds = min(len(raw["results"][a]["bw"][str(raw["sizes"][0])])
                          for a in raw["results"])
        print(markdown(raw["results"], raw["sizes"], raw["note"], raw["srcversion"], args,
                       raw.get("elapsed", 0), raw.get("icount"), raw.get("paths")))
        return
    tree, patched_rel, stock_rel, note = resolve_modules(args.modules)
    if note:
        log(note)
    os.makedirs(args.out, exist_ok=True)
    arms = ARMS[:2] if args.no_aa else ARMS
    results = {v: {"bw": {str(s): [] for s in sizes}, "lat": {str(s): [] for s in sizes}}
               for v in arms}
    srcversions = {}
    t0 = time.monotonic()
    one = args.icount is not None
    with Testbed(1 if one else 2, modules_dir=tree, rxe=False, icount=args.icount) as tb:
        log(f"booted in {max(tb.boot_seconds):.1f} s")
        bench = (OneGuestBench if one else Bench)(
            tb, args, {"stock": stock_rel, "patched": patched_rel, "stock2": stock_rel})
        for r in range(args.rounds):
            order = arms[r % len(arms):] + arms[:r % len(arms)]
            for variant in order:
                srcversions[variant] = bench.load(variant)
                for s in sizes:
                    bw, lat = bench.bandwidth(s), bench.latency(s)
                    results[variant]["bw"][str(s)].append(bw)
                    results[variant]["lat"][str(s)].append(lat)
                    log(f"round {r + 1}/{args.rounds} {variant:7} {human(s):>7}: "
                        f"{bw:9.4g} MB/s {lat:9.1f} us")
                json.dump({"note": note, "sizes": sizes, "results": results,
                           "srcversion": srcversions, "elapsed": time.monotonic() - t0,
                           "icount": args.icount, "paths": getattr(bench, "paths", None)},
                          open(os.path.join(args.out, "raw.json"), "w"), indent=1)
        for k in range(tb.n):
            dmesg = tb.run(k, "dmesg", timeout=60)[1]
            if re.search(r"Oops|BUG:|WARNING:|Call Trace", dmesg):
                note += f"\n\n**{tb.name(k)} kernel log shows a warning or oops** (see raw.json dir)."
                open(os.path.join(args.out, f"dmesg-{tb.name(k)}.txt"), "w").write(dmesg)
    report = markdown(results, sizes, note, srcversions, args, time.monotonic() - t0,
                      args.icount, getattr(bench, "paths", None))
    open(os.path.join(args.out, "report.md"), "w").write(report + "\n")
    print(report)
    log(f"results in {args.out}")


if __name__ == "__main__":
    main()
