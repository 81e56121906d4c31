#!/usr/bin/python3
"""Benchmark: the MigrOS paper's MPI figure redone for crx (issue 12).

An MPI job (bundles/mpi's mpi-jacobi, three ranks in crx containers on
g0-g2 of the bed of tests/vm/mpi/mpi_bed.py) has rank 0 moved to g3 once
it passed iteration --move-at; mpirun runs on g1 (--mpirun-on: g1 holds
rank 1 in every run, so mpirun's share of a vCPU is the same in migrated
and unmigrated runs; on g0 it shares rank 0's vCPU only until the move);
per repetition, interleaved:

- rc: the job over UCX rc_v on rxe, unmigrated;
- rc+crx: the same job, rank 0 moved by `crx migrate` (crx-mpi-agent move,
  --pre-copy N), its verbs objects with it;
- rc+crx-frozen: rc+crx with --pre-copy 0 whatever --pre-copy says: no
  work before the freeze, every page in the window (the A/B of the
  pre-copy round, which on this bed takes CPU from the running job);
- rc+crx-aes: rc+crx with --tls-cipher aes-128-gcm (crx's suite before
  it measured the kernel's: the A/B of that choice, which picks
  ChaCha20-Poly1305 in the bed's guests);
- rc+crx-resend: rc+crx with --no-page-dedup (every page CRIU dumps is
  sent, as before crx's page filter: the A/B of that filter);
- rc+crx-clear: rc+crx with --insecure-plaintext on both ends (what the
  page channel's encryption costs the job: before the freeze, the pre-copy
  round's cipher runs on the rank's vCPU and the destination's);
- rc+crx-uncompressed: rc+crx with --no-page-compression (the encrypted
  page channel's frames not LZ4-compressed, as before: the A/B of that);
- rc+crx-read: rc+crx with --pre-dump-mode read (the pre-copy round's
  pages read while the rank runs instead of spliced while it stays
  stopped, crx's and CRIU's default: the A/B of that choice, Result 28);
- rc-lean, rc-lean+crx: the same two with UCX's receive pools sized for
  the job (UCX_LEAN below) instead of UCX's defaults;
- tcp: the job over UCX's TCP transport, unmigrated;
- tcp+crx: the same, rank 0 moved by `crx migrate` (what crx's method does
  to the same rank, memory and transport as the runc way's);
- tcp+crx-clear: the same with --insecure-plaintext on both ends (what
  TLS costs: under TCG the guests' AES-GCM is emulated, no AES-NI);
- tcp+runc-way: the same, rank 0 moved the runc way (crx-mpi-agent move
  --way checkpoint: crx checkpoint --tcp-established into a tmpfs dir, the
  dir as a tar stream over TCP, crx restore there) -- the comparison the
  paper made against Docker. runc itself cannot checkpoint a verbs
  process, hence TCP; the runc way's steps run with crx's runc-compatible
  commands, so both ways use the same CRIU and plugin.

Every run must give the unmigrated checksum (and no bulk errors), else the
benchmark fails. The last rank (never moved) prints the time of every
10th iteration (mpi-jacobi --timeline); against the unmigrated runs'
times of the same iterations, that splits a job's delay into the stall
(the slowest stretch, which holds the downtime), what the job lost before
it (the move's work while the rank still runs) and after it. Per
migration: the report's phases (checkpoint and transfer are one streamed
phase for crx, separate for the runc way; then restore), the downtime (the rank frozen: crx's own figure; the runc way:
from the checkpoint's start to the restore's end) and the job's delay (its
mpirun time minus the mean of the unmigrated runs over the same
transport). Goals (issue 12): delay <= 1.2 x downtime; crx downtime <= 0.3 x
the runc way's.

  sudo tests/bench/mpi/bench_mpi.py [--reps 3] [--pre-copy 1] [--move-at 500]
      [--json out.json] [--plot out.png]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "vm", "mpi"))
from mpi_bed import UCX_ENV, UCX_TCP_ENV, MpiBed, host_reference, missing  # noqa: E402
from vmtest import criu_times  # noqa: E402  (on the path since mpi_bed)
sys.path.insert(0, os.path.join(HERE, "..", "migrate"))
from profile_migrate import KEEP_LOGS, slow_steps  # noqa: E402

JACOBI = ("--n 256 --iters 2500 --check 10 --progress 250 --bulk 524288 --bulk-every 100 "
          "--timeline 10")
DELAY_GOAL = 1.2
DOWNTIME_GOAL = 0.3
# UCX's receive pools sized for a 3-rank job instead of its defaults
# (rc_verbs 4095 and ud_verbs 4096 receive buffers of 8 KiB, ~60 MB of
# registered, pinned memory that every migration's final round carries):
# bundles/mpi/README.md, "Receive pools".
UCX_LEAN = " -x UCX_RC_VERBS_RX_QUEUE_LEN=256 -x UCX_UD_VERBS_RX_QUEUE_LEN=256"
# UCX's TCP transport resets a connection after ~18 s of silence (keepalive
# idle 10 s, then 9 probes 2 s apart: bundles/mpi/README.md, "Timers"); the
# runc way's rank is silent for its whole downtime, which on a loaded bed
# has passed 18 s (2026-11-29: the job's final MPI_Reduce to rank 0 failed
# with "Endpoint timeout"). Probes 10 s apart give the TCP jobs ~100 s, as
# an operator who moves TCP ranks would set; the same for every TCP way.
UCX_TCP = UCX_TCP_ENV + " -x UCX_TCP_KEEPINTVL=10s"
WAYS = (("rc", UCX_ENV, None), ("rc+crx", UCX_ENV, "live"),
        ("rc+crx-frozen", UCX_ENV, "live-frozen"), ("rc+crx-aes", UCX_ENV, "live-aes"),
        ("rc+crx-resend", UCX_ENV, "live-resend"), ("rc+crx-clear", UCX_ENV, "live-clear"),
        ("rc+crx-uncompressed", UCX_ENV, "live-uncompressed"),
        ("rc+crx-read", UCX_ENV, "live-read"),
        ("rc-lean", UCX_ENV + UCX_LEAN, None), ("rc-lean+crx", UCX_ENV + UCX_LEAN, "live"),
        ("tcp", UCX_TCP, None), ("tcp+crx", UCX_TCP, "live"),
        ("tcp+crx-clear", UCX_TCP, "live-clear"),
        ("tcp+runc-way", UCX_TCP, "checkpoint"))
BASE = {"rc+crx": "rc", "rc+crx-frozen": "rc", "rc+crx-clear": "rc", "rc+crx-uncompressed": "rc", "rc+crx-read": "rc", "rc+crx-aes": "rc", "rc+crx-resend": "rc", "rc-lean+crx": "rc-lean", "tcp+crx": "tcp", "tcp+crx-clear": "tcp", "tcp+runc-way": "tcp"}


def keeping_logs(bed, tag, keep_dir, gap):
    """Starts copying CRIU's logs out of the work dirs of a crx move g0 ->
    g3 while it runs (they vanish when crx is done); returns what stops
    it, keeps the logs in keep_dir/<tag>/g<k> and prints their steps of
    gap seconds or more."""
    dst = f"/tmp/criu-logs-{tag}"
    copiers = [bed.tb.spawn(k, f"mkdir -p {dst}; " + KEEP_LOGS.format(src=src, dst=dst, every=0.2))
               for k, src in ((0, "/run/crx-migrate/out-*"), (3, "/run/crx-migrate/*"))]

    def stop():
        time.sleep(1)  # the copier's last pass over the restore's log
        for c in copiers:
            bed.tb.kill(c)
        for k in (0, 3):
            shared = os.path.join(bed.tb.scratch, f"criu-logs-{tag}-g{k}")
            bed.tb.run(k, f"mkdir -p {shared} && cp {dst}/* {shared}/ 2>/dev/null; true")
            kept = os.path.join(keep_dir, tag, f"g{k}")
            shutil.copytree(shared, kept, dirs_exist_ok=True)
            for n in sorted(os.listdir(kept)):
                with open(os.path.join(kept, n), errors="replace") as f:
                    print(f"== g{k} {n}\n{slow_steps(f.read(), gap)}", flush=True)
    return stop


def run_one(bed, ref, name, ucx, way, tag, move_at, pre_copy, mpirun_on, logs=None,
            cpu=False):
    """One job; rank 0 moved g0 -> g3 at move_at unless way is None.
    Returns {"took", "report", "move_s"} and fails on a wrong result.
    logs: (dir, gap): CRIU's logs of a crx move kept in dir, their steps
    of gap seconds or more printed. cpu: rec["cpu"] is where g0's and g3's
    CPU went during the move (cpu_account.py)."""
    rec = {}
    account = f"python3 {bed.tb.scratch}/cpu_account.py {{}} /tmp/cpu-{tag}"

    def during():
        if way:
            rec["at"] = bed.wait_iter(tag, move_at)
            live = way.startswith("live")
            stop_logs = keeping_logs(bed, tag, *logs) if live and logs else None
            rounds = pre_copy if live and way != "live-frozen" else 0
            if cpu:
                for k in (0, 3):
                    bed.tb.run(k, account.format("start"), timeout=60)
            rc, report, err, took = bed.move("r0", 0, 3, pre_copy=rounds,
                                             way="live" if live else way,
                                             plaintext=way == "live-clear",
                                             no_page_dedup=way == "live-resend",
                                             no_page_compression=way == "live-uncompressed",
                                             pre_dump_mode="read" if way == "live-read"
                                             else None,
                                             tls_cipher="aes-128-gcm" if way == "live-aes"
                                             else None)
            if stop_logs:
                stop_logs()
            if cpu:
                rec["cpu"] = {}
                for k in (0, 3):
                    _, out, _ = bed.tb.run(k, account.format("stop"), timeout=60)
                    rec["cpu"][f"g{k}"] = json.loads(out.strip().splitlines()[-1])
            if rc != 0:
                raise AssertionError(f"{name}: move failed ({rc}): {err}\n{bed.logs()}")
            rec["report"], rec["move_s"] = report, took

    rc, res, took = bed.mpirun("mpi-jacobi", JACOBI, tag, during=during, ucx=ucx,
                               node=mpirun_on)
    rec["timeline"] = timeline(bed.read(tag + ".err"))
    if rc != 0 or not res or not res["ok"] or res["checksum"] != ref["checksum"] \
            or res["bulk"]["errors"]:
        raise AssertionError(f"{name}: wrong result ({rc}): {res}\n"
                             f"{bed.read(tag + '.err')[-2000:]}")
    bed.wait_gone()
    rec["took"] = took
    return rec


def timeline(err):
    """[[iteration, seconds], ...] from mpi-jacobi --timeline lines."""
    points = []
    for line in err.splitlines():
        if line.startswith('{"timeline"'):
            t = json.loads(line)["timeline"]
            points.append([t["iter"], t["t"]])
    return points


def delay_curve(run, base_runs):
    """(iterations, seconds lost so far) of a migrated run against the
    mean of the unmigrated runs' timelines, for the plot."""
    tl = run["timeline"]
    bases = [r["timeline"] for r in base_runs if r.get("timeline")]
    mean = [statistics.mean(b[i][1] for b in bases) for i in range(len(tl))]
    return [p[0] for p in tl], [p[1] - m for p, m in zip(tl, mean)]


def delay_split(run, base_runs):
    """Where a migrated job lost its time, against the unmigrated runs'
    timelines: {"before", "stall", "after", "timeline"} seconds, or None
    without timelines. Each stretch between two timeline points is
    compared with the mean of the same stretch unmigrated; the stall is the
    stretch that lost most."""
    tl = run.get("timeline") or []
    bases = [r["timeline"] for r in base_runs if r.get("timeline")]
    if len(tl) < 2 or not bases or any(len(b) != len(tl) for b in bases):
        return None
    _, lost = delay_curve(run, base_runs)
    excess = [b - a for a, b in zip(lost, lost[1:])]
    worst = max(range(len(excess)), key=lambda i: excess[i])
    return {"before": sum(excess[:worst]), "stall": excess[worst],
            "after": sum(excess[worst + 1:]), "timeline": sum(excess),
            "stall_at": tl[worst][0]}


def phases(report):
    """(checkpoint+transfer, restore, other frozen) seconds of a move, and
    the seconds before the freeze (pre-copy, connect)."""
    ph = {p["name"]: p["seconds"] for p in report.get("phases", [])}
    down = report["downtime_seconds"]
    if report.get("way") == "checkpoint":
        ckpt = ph.get("checkpoint", 0) + ph.get("copy", 0)
        return {"checkpoint+transfer": ckpt, "restore": ph.get("restore", 0),
                "other": max(down - ckpt - ph.get("restore", 0), 0), "before": 0.0,
                "checkpoint": ph.get("checkpoint", 0), "copy": ph.get("copy", 0)}
    ckpt, rest = ph.get("checkpoint+transfer", 0), ph.get("restore", 0)
    return {"checkpoint+transfer": ckpt, "restore": rest,
            "other": max(down - ckpt - rest, 0),
            "before": report.get("total_seconds", down) - down}


def moved_bytes(report):
    """What a move carried: crx's pages and images (every round), or the
    runc way's image dir."""
    if report.get("way") == "checkpoint":
        return report.get("image_bytes", 0)
    b = report.get("bytes", {})
    return b.get("pages", 0) + b.get("images", 0)


def final_round_bytes(report):
    """crx: the frozen round's pages (None for the runc way, which has no
    rounds: all it moves is in the window)."""
    rounds = report.get("rounds") or []
    return rounds[-1].get("page_bytes", 0) if rounds and rounds[-1].get("final") else None


def mean_sd(xs):
    xs = list(xs)
    return (statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0)


def summarize(runs):
    """Per migrated way: downtime, phases, delay (means and spreads)."""
    base = {w: mean_sd(r["took"] for r in runs[w]) for w in ("rc", "rc-lean", "tcp") if runs.get(w)}
    rows = {}
    for way, ref in BASE.items():
        rs = runs.get(way)
        if not rs or ref not in base:
            continue
        ph = [phases(r["report"]) for r in rs]
        rows[way] = {
            "unmigrated": base[ref],
            "took": mean_sd(r["took"] for r in rs),
            "downtime": mean_sd(r["report"]["downtime_seconds"] for r in rs),
            "delay": mean_sd(r["took"] - base[ref][0] for r in rs),
            "ratio": mean_sd((r["took"] - base[ref][0]) / r["report"]["downtime_seconds"]
                             for r in rs),
            "phases": {k: statistics.mean(p[k] for p in ph) for k in ph[0]},
            "move": mean_sd(r["move_s"] for r in rs),
            "mb": statistics.mean(moved_bytes(r["report"]) for r in rs) / 1e6,
        }
        splits = [delay_split(r, runs[ref]) for r in rs]
        if splits and all(splits):
            rows[way]["split"] = {k: statistics.mean(s[k] for s in splits)
                                  for k in ("before", "stall", "after", "timeline")}
        criu = [criu_times(r["report"]) for r in rs]
        if criu and all(criu):
            rows[way]["criu"] = {k: statistics.mean(c[k] for c in criu) for k in criu[0]}
        finals = [final_round_bytes(r["report"]) for r in rs]
        if all(f is not None for f in finals):
            rows[way]["final_mb"] = statistics.mean(finals) / 1e6
    return rows


def section(title, header, lines):
    """A titled markdown table under the main one."""
    return ["", title, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + lines


def table(rows):
    out = ["| way | moved | final round | unmigrated job | migrated job | job delay | downtime "
           "| delay / downtime | checkpoint+transfer | restore | other frozen "
           "| before the freeze |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for way, r in rows.items():
        ph = r["phases"]
        final = f"{r['final_mb']:.1f} MB" if "final_mb" in r else "-"
        out.append(f"| {way} | {r['mb']:.1f} MB | {final} | {r['unmigrated'][0]:.1f} ± "
                   f"{r['unmigrated'][1]:.1f} s "
                   f"| {r['took'][0]:.1f} ± {r['took'][1]:.1f} s "
                   f"| {r['delay'][0]:.1f} ± {r['delay'][1]:.1f} s "
                   f"| {r['downtime'][0]:.2f} ± {r['downtime'][1]:.2f} s "
                   f"| {r['ratio'][0]:.2f} ± {r['ratio'][1]:.2f} "
                   f"| {ph['checkpoint+transfer']:.2f} s | {ph['restore']:.2f} s "
                   f"| {ph['other']:.2f} s | {ph['before']:.2f} s |")
    out.append("")
    if "tcp+runc-way" in rows:
        runc = rows["tcp+runc-way"]["downtime"][0]
        for way in ("rc+crx", "rc+crx-frozen", "rc+crx-resend", "rc+crx-clear",
                    "rc+crx-uncompressed", "rc+crx-read", "rc-lean+crx", "tcp+crx",
                    "tcp+crx-clear"):
            if way in rows:
                out.append(f"- {way} downtime / tcp+runc-way downtime: "
                           f"**{rows[way]['downtime'][0] / runc:.2f}** (goal <= {DOWNTIME_GOAL})")
    for way, r in rows.items():
        out.append(f"- {way}: job delay / downtime **{r['ratio'][0]:.2f}** (goal <= {DELAY_GOAL})")
    criu = {w: r for w, r in rows.items() if "criu" in r}
    if criu:
        lines = []
        for way, r in criu.items():
            c, ph = r["criu"], r["phases"]
            lines.append(f"| {way} | {ph['checkpoint+transfer']:.2f} s | {c['frozen']:.2f} s "
                         f"| {c['memdump']:.2f} s | {c['memwrite']:.2f} s | {ph['restore']:.2f} s "
                         f"| {c['restore']:.2f} s | {c['forking']:.2f} s |")
        out += section("CRIU's own account of crx's frozen window (its stats-dump of the final "
                       "round and stats-restore, means):",
                       ["way", "checkpoint+transfer", "CRIU frozen", "of it the pages",
                        "of those the write", "restore", "CRIU's restore", "of it forking"], lines)
    split = {w: r for w, r in rows.items() if "split" in r}
    if split:
        lines = []
        for way, r in split.items():
            s, down = r["split"], r["downtime"][0]
            lines.append(f"| {way} | {r['delay'][0]:.1f} s | {s['timeline']:.1f} s "
                         f"| {s['before']:.1f} s | {s['stall']:.1f} s | {down:.1f} s "
                         f"| {s['stall'] - down:.1f} s | {s['after']:.1f} s |")
        out += section("Where the delay went (the last rank's timeline against the unmigrated "
                       "runs', means):",
                       ["way", "job delay", "in the timeline", "before the stall", "the stall",
                        "downtime", "stall - downtime", "after the stall"], lines)
    return "\n".join(out)


def cpu_table(runs, top=8):
    """Where g0's and g3's CPU went during the moves (--cpu-account): the
    mean seconds per command over each way's moves, the busiest first."""
    out = []
    for way, recs in runs.items():
        recs = [r for r in recs if isinstance(r, dict) and r.get("cpu")] if way != "args" else []
        if not recs:
            continue
        out.append(f"\nCPU during the move, {way} (guest's view, mean of {len(recs)}):\n")
        out.append("| guest | wall | busy | idle | " + " | ".join(["command: seconds"] * top) + " |")
        out.append("|---|---|---|---|" + "---|" * top)
        for g in ("g0", "g3"):
            per = {}
            for r in recs:
                for comm, secs in r["cpu"][g]["by_command"].items():
                    per[comm] = per.get(comm, 0.0) + secs / len(recs)
            busiest = sorted(per.items(), key=lambda kv: -kv[1])[:top]
            mean = {k: statistics.mean(r["cpu"][g][k] for r in recs) for k in ("wall", "busy", "idle")}
            out.append(f"| {g} | {mean['wall']:.1f} s | {mean['busy']:.1f} s | {mean['idle']:.1f} s | "
                       + " | ".join(f"{c}: {s:.2f}" for c, s in busiest)
                       + " |" * (top - len(busiest) + 1))
        for g in ("g0", "g3"):
            asked = {}
            for r in recs:
                for mod, n in (r["cpu"][g].get("module_requests") or {}).items():
                    asked[mod] = asked.get(mod, 0) + n / len(recs)
            if asked:
                out.append(f"\n{g}: the kernel's module requests per move (each not loaded runs "
                           "a modprobe): " + ", ".join(f"{m} {n:g}" for m, n in
                                                      sorted(asked.items(), key=lambda kv: -kv[1])))
    return "\n".join(out)


def crx_cpu_table(runs):
    """crx's own CPU on the source per move, from its report: each phase's
    (crx's threads; CRIU where crx reaped it in the phase) and the page
    filter thread's share of each round. Before the freeze it is taken
    from the running rank's vCPU; in the window, from CRIU's."""
    out = []
    for way, recs in runs.items():
        reps = [r["report"] for r in recs if isinstance(r, dict) and r.get("report")] \
            if way != "args" else []
        reps = [r for r in reps if any("cpu_seconds" in p for p in r.get("phases", []))]
        if not reps:
            continue

        def part(rep, before_freeze):
            names = [p["name"] for p in rep["phases"]]
            cut = names.index("freeze") if "freeze" in names else len(names)
            cut_end = names.index("restore") if "restore" in names else len(names)
            ph = rep["phases"][:cut] if before_freeze else rep["phases"][cut:cut_end]
            return (sum(p["cpu_seconds"] for p in ph), sum(p["child_cpu_seconds"] for p in ph))

        def filt(rep, final):
            return sum(r.get("filter_cpu_seconds", 0.0) for r in rep.get("rounds", [])
                       if bool(r.get("final")) == final)
        out.append(f"\ncrx's CPU on the source, {way} (its report, mean of {len(reps)} moves, "
                   "seconds):\n")
        out.append("| | crx | of it the page filter | CRIU reaped in it |")
        out.append("|---|---|---|---|")
        for label, before in (("before the freeze (connect, pre-copy)", True),
                              ("frozen: freeze to the images sent", False)):
            parts = [part(r, before) for r in reps]
            crx = statistics.mean(c for c, _ in parts)
            criu = statistics.mean(k for _, k in parts)
            f = statistics.mean(filt(r, not before) for r in reps)
            out.append(f"| {label} | {crx:.2f} | {f:.2f} | {criu:.2f} |")
    return "\n".join(out)


def plot(runs, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lost = {w: [(r, delay_curve(r, runs[BASE[w]])) for r in runs[w]] for w in rows
            if "split" in rows[w]}
    if lost:
        fig, (left, right, third) = plt.subplots(1, 3, figsize=(18, 5))
    else:
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    ways = list(rows)
    bottom = [0.0] * len(ways)
    for part, color in (("checkpoint+transfer", "tab:blue"), ("restore", "tab:orange"),
                        ("other", "tab:grey")):
        vals = [rows[w]["phases"][part] for w in ways]
        left.bar(ways, vals, 0.5, bottom=bottom, label=part, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    left.errorbar(ways, [rows[w]["downtime"][0] for w in ways],
                  yerr=[rows[w]["downtime"][1] for w in ways], fmt="kD", label="downtime (mean, sd)")
    left.set_ylabel("seconds the rank is frozen")
    left.set_title("migration latency of rank 0 (mean of the repetitions)")
    left.legend(fontsize=8)
    left.grid(axis="y", alpha=0.3)
    for i, w in enumerate(ways):
        xs = [r["report"]["downtime_seconds"] for r in runs[w]]
        ref = rows[w]["unmigrated"][0]
        ys = [r["took"] - ref for r in runs[w]]
        right.plot(xs, ys, "o", label=w)
    top = max(max(r["report"]["downtime_seconds"] for r in runs[w]) for w in ways) * 1.1
    right.plot([0, top], [0, top], ":", color="grey", label="delay = downtime")
    right.plot([0, top], [0, DELAY_GOAL * top], "--", color="grey",
               label=f"delay = {DELAY_GOAL} x downtime")
    right.set_xlabel("downtime, s")
    right.set_ylabel("job delay against the unmigrated mean, s")
    right.set_title("what the job loses, per repetition")
    right.set_xlim(left=0)
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    if lost:
        for i, (way, curves) in enumerate(lost.items()):
            for k, (run, (iters, secs)) in enumerate(curves):
                third.plot(iters, secs, color=f"C{i}", alpha=0.8,
                           label=way if k == 0 else None)
                at = run.get("at")
                if at:
                    third.axvline(at, color=f"C{i}", ls=":", alpha=0.4)
        third.set_xlabel("iteration (dotted: the move starts)")
        third.set_ylabel("seconds lost against the unmigrated runs")
        third.set_title("when the job loses its time (last rank's timeline)")
        third.legend(fontsize=8)
        third.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pre-copy", type=int, default=1)
    ap.add_argument("--move-at", type=int, default=500)
    ap.add_argument("--mpirun-on", type=int, default=1, choices=(0, 1, 2),
                    help="the guest mpirun runs on (default g1: it holds rank 1 in "
                         "every run; on g0 it shares rank 0's vCPU only until the move)")
    ap.add_argument("--json")
    ap.add_argument("--plot")
    ap.add_argument("--ways", default=",".join(w for w, _, _ in WAYS),
                    help="which runs, comma-separated (default: all)")
    ap.add_argument("--from-json", help="only summarize and plot an earlier --json")
    ap.add_argument("--criu-logs", metavar="DIR",
                    help="keep CRIU's logs of every crx move in DIR/<run>/g<k> and print "
                         "their steps of --log-gap seconds or more")
    ap.add_argument("--log-gap", type=float, default=0.15)
    ap.add_argument("--spare-core", type=float, metavar="SHARE",
                    help="nodes with a core for the system, as the paper's: each rank's "
                         "vCPU capped at SHARE of a host core (e.g. 0.45), the moving "
                         "rank's guests a second vCPU for crx and CRIU (Result 27)")
    ap.add_argument("--cpu-account", action="store_true",
                    help="per move, where g0's and g3's CPU went (cpu_account.py: CPU seconds "
                         "per command, the guest's view)")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            runs = json.load(f)
    else:
        why = missing()
        if why:
            sys.exit(f"bench_mpi: {why}")
        ref = host_reference(JACOBI)
        ways = [w for w in WAYS if w[0] in a.ways.split(",")]
        if len(ways) != len(a.ways.split(",")):
            sys.exit(f"bench_mpi: --ways: one of {a.ways!r} is none of "
                     + ", ".join(w for w, _, _ in WAYS))
        runs = {w: [] for w, _, _ in ways}
        runs["args"] = {"reps": a.reps, "pre_copy": a.pre_copy, "move_at": a.move_at,
                        "mpirun_on": a.mpirun_on, "spare_core": a.spare_core,
                        "jacobi": JACOBI, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                    time.gmtime())}
        bed = MpiBed(spare_core=a.spare_core)
        try:
            if a.cpu_account:
                shutil.copy(os.path.join(HERE, "cpu_account.py"), bed.tb.scratch)
            try:
                runs["args"]["rndv_threshold"] = bed.rndv_threshold()
            except AssertionError as e:
                print(f"UCX's rendezvous threshold not known: {e}", flush=True)
            for rep in range(a.reps):
                order = ways if rep % 2 == 0 else ways[::-1]
                for name, ucx, way in order:
                    tag = f"{name.replace('+', '-')}-{rep}"
                    rec = run_one(bed, ref, name, ucx, way, tag, a.move_at, a.pre_copy,
                                  a.mpirun_on,
                                  (a.criu_logs, a.log_gap) if a.criu_logs else None,
                                  a.cpu_account)
                    runs[name].append(rec)
                    rep_ = rec.get("report") or {}
                    print(f"rep {rep} {name}: job {rec['took']:.1f} s"
                          + (f", downtime {rep_['downtime_seconds']:.2f} s, move "
                             f"{rec['move_s']:.1f} s, phases " + json.dumps(rep_.get("phases"))
                             if rep_ else ""), flush=True)
                    if a.json:
                        with open(a.json, "w") as f:
                            json.dump(runs, f, indent=1)
        finally:
            bed.close()
    rows = summarize(runs)
    print(f"\n{runs['args']['reps']} repetitions, crx with --pre-copy {runs['args']['pre_copy']}, "
          f"rank 0 moved at iteration {runs['args']['move_at']}, mpirun on "
          f"g{runs['args'].get('mpirun_on', 0)}"
          + (f", each rank's vCPU capped at {runs['args']['spare_core']} of a host core, "
             "crx and CRIU on a second vCPU" if runs["args"].get("spare_core") else "")
          + "; mean ± sd\n")
    print(table(rows))
    print(cpu_table(runs))
    print(crx_cpu_table(runs))
    if a.plot:
        plot(runs, rows, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
