#!/usr/bin/python3
"""Benchmark: the MigrOS paper's figures redone for crx (issue 11).

What the partner of a migrated RDMA container sees (the partner-visible
stall: the longest gap between its completions) and how long the
migration takes, against the number of QPs and against the size of a
registered MR, each beside the same container migrated without verbs
objects, in one run on the three-guest bed of tests/vm/rdma/rdma_bed.py
(g0 source, g1 partner, g2 destination).

- verbs point (QPS, MIB): bundles/rdma-seq with `crx-verbs-seq recv
  --qps QPS --mr-size MIB` on g0 (the extra MR is registered and every
  page written), a plain `crx-verbs-seq send` on g1 at --rate messages/s
  over all QPs (round robin) with --stall-list; crx migrate g0 -> g2
  under that traffic, then the sender is told to finish (SIGUSR1) and the
  receiver's checker must report every message exactly once and in order.
- baseline point: the same bundle, binary and memory (message buffer and
  MIB written), `crx-verbs-seq idle`: no device opened, no verbs object;
  crx migrate g0 -> g2; it must run on afterwards.
- series: QPs 1,4,16,64,256 at --qp-series-mib MiB of MR, and MR sizes
  1,4,16,64,256 MiB at --mr-series-qps QPs (the shared point is run once);
  verbs and baseline back to back at every point.
- warm-up (not in the series): one sender, the container migrated
  g0 -> g2 -> g0, as in the demo (tests/run-demo.sh), with the partner's
  stall list: shows which migration a run-wide max_stall_s comes from.

Per migration it records crx's reports (sender: phases, downtime, verbs
dump; receiver: verbs recreate, pin, resume), the sender's summary
(max_stall_s: all QPs, ends at the first completion of any QP;
max_qp_stall_s: the longest wait of one QP) and a timeline in host time
(guest clocks are offset-corrected against the host): when the partner's
stall began and ended relative to the freeze and to the moment crx had the
container running again. The report (Markdown on stdout) has the tables,
the ratios of the run, linear fits of the verbs-specific extra (plugin dump
+ recreate + pin + resume) in #QPs and in MiB, and the goal check (16 QPs,
16 MiB: stall <= 1.3 x the baseline's downtime). --plot draws the figure.

Usage: tests/bench/rdma/bench_rdma_migrate.py [--qps 1,4,16,64,256]
           [--mibs 1,4,16,64,256] [--qp-series-mib 16] [--mr-series-qps 16]
           [--rate 100] [--recv-mode ""] [--json FILE] [--plot FILE.png]
       tests/bench/rdma/bench_rdma_migrate.py --report RESULTS.json [--plot FILE.png]
Run as root on the host under the VM lock; not part of ctest.
"""
import argparse
import functools
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "vm", "rdma"))
sys.path.insert(0, os.path.join(ROOT, "tests", "vm"))

GOAL_QPS, GOAL_MIB, GOAL_RATIO = 16, 16, 1.3


def log(msg):
    print(msg, flush=True)


def last_json(text, key=None):
    """The last line of text that is a JSON object (with key, if given)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if key is None or key in j:
                return j
    return None


def phase(rep, name):
    return sum(p["seconds"] for p in rep["phases"] if p["name"] == name)


def bed_case():
    """The bench as an RdmaBedCase (imported late: --report needs no bed)."""
    import rdma_bed
    from rdma_bed import CRX, SEQ, MPORT, RdmaBedCase

    class RdmaBench(RdmaBedCase):
        def runTest(self):  # one instance drives the whole run
            pass

        # -- clocks -------------------------------------------------------
        def clock_offsets(self):
            """Guest CLOCK_REALTIME minus host time.time(), per guest, from
            the fastest of 3 round trips (error: half of it)."""
            offs = []
            for k in range(3):
                best = None
                for _ in range(3):
                    t0 = time.time()
                    out = self.sh(self.tb, k, "date +%s.%N")
                    t1 = time.time()
                    if best is None or t1 - t0 < best[1]:
                        best = (float(out.strip()) - (t0 + t1) / 2, t1 - t0)
                offs.append({"offset_s": best[0], "rtt_s": best[1]})
            return offs

        # -- one migration ------------------------------------------------
        def migrate_timed(self, cid, src, dst):
            """crx migrate src -> dst (crx receive --once on dst): both reports
            and the source guest's clock at the start."""
            log_f = f"/tmp/receive-{cid}-{dst}.log"
            rh = self.start_receive(dst, log_f)
            t = time.monotonic()
            # The source's clock before crx starts and after it ended: crx's
            # own clock started total_seconds before its end (its start-up
            # under TCG, ~0.3 s, lies between the first date and that).
            rc, out, err = self.tb.run(src, f"date +%s.%N; {CRX} migrate {cid} "
                                            f"--to {self.tb.ip(dst)}:{MPORT} --key /tmp/key "
                                            f"--format json; rc=$?; date +%s.%N; exit $rc",
                                       timeout=900)
            took = time.monotonic() - t
            rrc, rout, rerr = self.tb.wait(rh, timeout=300)
            rlog = self.tb.run(dst, f"cat {log_f}")[1]
            self.assertEqual(rc, 0, f"migrate {cid} g{src}->g{dst} failed:\n{out}\n{err}\n"
                                    f"receiver ({rrc}):\n{rout}\n{rlog}")
            self.assertEqual(rrc, 0, f"receiver:\n{rout}\n{rlog}")
            rep, rrep = last_json(out, "outcome"), last_json(rout, "outcome")
            self.assertEqual(rep["outcome"], "migrated", rep)
            return {"report": rep, "receiver": rrep, "started_guest_s": float(out.split()[0]),
                    "ended_guest_s": float(out.split()[-1]),
                    "src": src, "dst": dst, "host_seconds": took}

        # -- verbs point ---------------------------------------------------
        def start_verbs(self, cid, port, qps, mib, a):
            count = 10 ** 9  # the sender ends at SIGUSR1 (FIN on every QP)
            b = self.make_bundle(cid, port, command=(
                f"recv --port {port} --qps {qps} --mr-size {mib}MiB --stall-timeout 0 "
                f"--progress 1 {a.recv_mode} --ready-file /out/{cid}.ready"))
            self.sh(self.tb, 0, f"{CRX} run -d -b {b} {cid} </dev/null >/dev/null 2>&1", timeout=300)
            sh = self.tb.spawn(1, f"echo $$ >/tmp/{cid}.pid; exec {SEQ} send --connect "
                                  f"{self.tb.ip(0)} --port {port} --qps {qps} --count {count} "
                                  f"--rate {a.rate} --stall-timeout 0 --progress 5 "
                                  f"--stall-list {a.stall_list} 2>/tmp/{cid}.send.err")
            deadline = time.monotonic() + 300
            while not os.path.exists(self.out(cid + ".ready")):
                if time.monotonic() > deadline or sh.done.is_set():
                    self.fail(f"receiver not ready: {self.read(cid + '.err')}\nsender: {sh.result} "
                              + self.tb.run(1, f"cat /tmp/{cid}.send.err")[1])
                time.sleep(0.5)
            return sh

        def end_verbs(self, cid, sender, k):
            """SIGUSR1 to the sender; both summaries; every message exactly
            once and in order; the container removed from guest k."""
            self.sh(self.tb, 1, f"kill -USR1 $(cat /tmp/{cid}.pid)")
            rc, sout, serr = self.tb.wait(sender, timeout=600)
            self.assertEqual(rc, 0, f"sender failed:\n{sout}\n"
                             + self.tb.run(1, f"tail -5 /tmp/{cid}.send.err")[1])
            ssum = last_json(sout, "role")
            deadline = time.monotonic() + 120
            while not self.read(cid + ".json").strip() and time.monotonic() < deadline:
                time.sleep(0.5)
            rsum = last_json(self.read(cid + ".json"), "role")
            self.assertIsNotNone(rsum, f"no receiver summary:\n{self.read(cid + '.err')[-2000:]}")
            for key in ("duplicates", "out_of_order", "missing", "unexpected", "errors"):
                self.assertEqual(rsum[key], 0, f"{cid} {key}: {rsum}")
            self.assertTrue(ssum["ok"] and rsum["ok"], f"{ssum}\n{rsum}")
            self.assertEqual(rsum["messages"], ssum["messages"], "every message exactly once")
            # Its summary is out: no need to wait for the container to stop.
            self.tb.run(k, f"{CRX} kill {cid} KILL; sleep 1; {CRX} delete -f {cid}", timeout=120)
            return ssum, rsum

        def verbs_point(self, qps, mib, a, port, tag=""):
            cid = f"v{qps}q{mib}m{tag}"
            sender = self.start_verbs(cid, port, qps, mib, a)
            n = self.wait_progress(cid, a.rate * 2, timeout=300)
            offs = self.clock_offsets()
            m = self.migrate_timed(cid, 0, 2)
            self.wait_progress(cid, n + a.rate, timeout=300)
            ssum, rsum = self.end_verbs(cid, sender, 2)
            r = {"qps": qps, "mib": mib, "clock": offs, "sender": ssum, "receiver_summary": rsum, **m}
            r["timeline"] = timeline(r, ssum)
            return r

        # -- baseline point ------------------------------------------------
        def idle_point(self, qps, mib, a):
            cid = f"i{qps}q{mib}m"
            b = self.make_bundle(cid, 0, command=(
                f"idle --qps {qps} --mr-size {mib}MiB --progress 1 --ready-file /out/{cid}.ready"))
            self.sh(self.tb, 0, f"{CRX} run -d -b {b} {cid} </dev/null >/dev/null 2>&1", timeout=300)
            deadline = time.monotonic() + 300
            while not os.path.exists(self.out(cid + ".ready")):
                if time.monotonic() > deadline:
                    self.fail(f"idle not ready: {self.read(cid + '.err')}")
                time.sleep(0.5)
            time.sleep(1)
            m = self.migrate_timed(cid, 0, 2)
            lines = self.read(cid + ".err").count("progress")
            deadline = time.monotonic() + 60
            while self.read(cid + ".err").count("progress") < lines + 2:
                if time.monotonic() > deadline:
                    self.fail(f"{cid} does not run on after the migration:\n{self.read(cid + '.err')}")
                time.sleep(0.5)
            self.tb.run(2, f"{CRX} kill {cid} KILL; sleep 1; {CRX} delete -f {cid}", timeout=120)
            return {"qps": qps, "mib": mib, **m}

        def cleanup(self, cid):
            """After a failed point: no container, no sender left."""
            for k in (0, 2):
                self.tb.run(k, f"for c in $({CRX} list -q 2>/dev/null); do {CRX} kill $c KILL; "
                               f"sleep 1; {CRX} delete -f $c; done", timeout=120)
            self.tb.run(1, f"kill $(cat /tmp/{cid}.pid) 2>/dev/null || true")

        # -- warm-up: the demo's two migrations with one sender ------------
        def warmup(self, a, port):
            cid = "warm"
            sender = self.start_verbs(cid, port, 1, 1, a)
            n = self.wait_progress(cid, a.rate * 2, timeout=300)
            offs = self.clock_offsets()
            legs = []
            for src, dst in ((0, 2), (2, 0)):
                legs.append(self.migrate_timed(cid, src, dst))
                n = self.wait_progress(cid, n + a.rate, timeout=300)
            ssum, rsum = self.end_verbs(cid, sender, 0)
            for leg in legs:
                leg["clock"] = offs
                leg["timeline"] = timeline(leg, ssum)
            return {"legs": legs, "sender": ssum, "receiver_summary": rsum, "clock": offs}

    return rdma_bed, RdmaBench


def timeline(m, ssum):
    """The partner's longest stall within this migration, in host time,
    relative to the freeze and to the running-again point of crx's report
    (sender side: connect | freeze | checkpoint+transfer | restore | commit)."""
    off = {k: c["offset_s"] for k, c in enumerate(m["clock"])}
    rep = m["report"]
    if "ended_guest_s" in m:  # crx's clock start: its end minus its total
        start = m["ended_guest_s"] - rep["total_seconds"] - off[m["src"]]
    else:  # older runs: before crx's start-up (the times below are late by it)
        start = m["started_guest_s"] - off[m["src"]]
    freeze = start + phase(rep, "connect")
    running = freeze + rep["downtime_seconds"]
    best = None
    for st in ssum.get("stalls", []):
        end = st["end_unix_s"] - off[1]
        begin = end - st["raw_s"]
        if begin < running + 5 and end > freeze - 1 and (best is None or st["s"] > best["s"]):
            best = {"s": st["s"], "raw_s": st["raw_s"], "begin": begin, "end": end}
    if best is None:
        return None
    return {"stall_s": best["s"], "stall_raw_s": best["raw_s"],
            "stall_begins_after_freeze_s": best["begin"] - freeze,
            "stall_ends_after_running_s": best["end"] - running,
            "clock_error_s": max(c["rtt_s"] for c in m["clock"]) / 2}


# -- analysis ------------------------------------------------------------------

def extra_ms(r):
    """The verbs-specific extra: plugin dump (source) + recreate + pin +
    resume (destination), from the two reports' verbs parts."""
    v, rv = r["report"].get("verbs", {}), (r["receiver"] or {}).get("verbs", {})
    return (v.get("dump_ms", 0) + rv.get("recreate_ms", 0) + rv.get("pin_ms", 0)
            + rv.get("resume_ms", 0))


def fit(xs, ys):
    """Least squares y = a + b x: (a, b, r^2)."""
    if len(set(xs)) < 2:
        return None
    b, a = statistics.linear_regression(xs, ys)
    mean = statistics.fmean(ys)
    ss = sum((y - mean) ** 2 for y in ys)
    res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - res / ss) if ss else 1.0


def row(v, i):
    rep, rrep = v["report"], i["report"]
    stall = v["sender"]["max_stall_s"]
    vv, rv = rep.get("verbs", {}), (v["receiver"] or {}).get("verbs", {})
    return {
        "qps": v["qps"], "mib": v["mib"],
        "stall": stall, "qp_stall": v["sender"].get("max_qp_stall_s", float("nan")),
        "down_v": rep["downtime_seconds"], "down_i": rrep["downtime_seconds"],
        "total_v": rep["total_seconds"], "total_i": rrep["total_seconds"],
        "ckpt_v": phase(rep, "checkpoint+transfer"), "ckpt_i": phase(rrep, "checkpoint+transfer"),
        "rest_v": phase(rep, "restore"), "rest_i": phase(rrep, "restore"),
        "commit_v": phase(rep, "commit"), "commit_i": phase(rrep, "commit"),
        "dump_ms": vv.get("dump_ms", 0), "recreate_ms": rv.get("recreate_ms", 0),
        "pin_ms": rv.get("pin_ms", 0), "resume_ms": rv.get("resume_ms", 0),
        "extra_ms": extra_ms(v),
        "pages_v": rep["bytes"]["pages"], "pages_i": rrep["bytes"]["pages"],
        "tl": v.get("timeline"),
    }


def report(runs):
    out = []
    p = out.append
    idle = {(r["qps"], r["mib"]): r for r in runs["idle"]}
    rows = {(v["qps"], v["mib"]): row(v, idle[(v["qps"], v["mib"])]) for v in runs["verbs"]
            if (v["qps"], v["mib"]) in idle}
    p(f"Run {runs.get('date', '?')}: sender rate {runs['args']['rate']} msg/s over all QPs "
      f"(round robin), crx migrate without pre-copy (default), one migration per point, "
      f"g0 -> g2 with the partner on g1; times in seconds unless marked ms.\n")
    p("| QPs | MR MiB | partner stall (all QPs) | longest one-QP stall | downtime verbs | "
      "downtime no-verbs | stall / downtime no-verbs | downtime ratio | total verbs | "
      "total no-verbs | total ratio | stall / downtime verbs |")
    p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    order = sorted(rows)
    for key in order:
        r = rows[key]
        p(f"| {r['qps']} | {r['mib']} | {r['stall']:.2f} | {r['qp_stall']:.2f} | {r['down_v']:.2f} | "
          f"{r['down_i']:.2f} | **{r['stall'] / r['down_i']:.2f}** | {r['down_v'] / r['down_i']:.2f} | "
          f"{r['total_v']:.2f} | {r['total_i']:.2f} | {r['total_v'] / r['total_i']:.2f} | "
          f"{r['stall'] / r['down_v']:.2f} |")
    p("\nBreakdown (sender's report; checkpoint and transfer overlap in crx — pages stream "
      "to the destination while CRIU dumps — so they are one phase; restore = until the "
      "destination's RestoreOk, commit = until its CommitAck, which includes the "
      "destination's QP resume). Verbs columns in ms from the reports' verbs parts.\n")
    p("| QPs | MR MiB | ckpt+transfer v / no-v | restore v / no-v | commit v / no-v | "
      "plugin dump ms | recreate ms | pin ms | resume ms | verbs extra ms | pages v / no-v MiB |")
    p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in order:
        r = rows[key]
        p(f"| {r['qps']} | {r['mib']} | {r['ckpt_v']:.2f} / {r['ckpt_i']:.2f} | "
          f"{r['rest_v']:.2f} / {r['rest_i']:.2f} | {r['commit_v']:.2f} / {r['commit_i']:.2f} | "
          f"{r['dump_ms']:.1f} | {r['recreate_ms']:.1f} | {r['pin_ms']:.1f} | {r['resume_ms']:.1f} | "
          f"{r['extra_ms']:.1f} | {r['pages_v'] / 2**20:.1f} / {r['pages_i'] / 2**20:.1f} |")
    p("\nPartner's longest stall in host time (guest clocks offset-corrected; ± clock error): "
      "begins after the freeze / ends after crx had the container running again.\n")
    p("| QPs | MR MiB | stall | begins after freeze | ends after running | clock error |")
    p("|---:|---:|---:|---:|---:|---:|")
    for key in order:
        t = rows[key]["tl"]
        if t:
            p(f"| {key[0]} | {key[1]} | {t['stall_s']:.2f} | {t['stall_begins_after_freeze_s']:+.2f} | "
              f"{t['stall_ends_after_running_s']:+.2f} | ±{t['clock_error_s']:.2f} |")
    a = runs["args"]
    qs = [k for k in order if k[1] == a["qp_series_mib"]]
    ms = [k for k in order if k[0] == a["mr_series_qps"]]
    p("")
    for name, keys, x, unit in (("#QPs", qs, 0, "QP"), ("MR MiB", ms, 1, "MiB")):
        xs = [k[x] for k in keys]
        for what, f in (("verbs extra (dump+recreate+pin+resume)", lambda r: r["extra_ms"]),
                        ("partner stall - downtime no-verbs", lambda r: 1000 * (r["stall"] - r["down_i"])),
                        ("downtime verbs - no-verbs", lambda r: 1000 * (r["down_v"] - r["down_i"]))):
            ft = fit(xs, [f(rows[k]) for k in keys])
            if ft:
                p(f"- fit of {what} over {name} ({', '.join(map(str, xs))}): "
                  f"**{ft[1]:.3f} ms per {unit}**, intercept {ft[0]:.1f} ms, r² {ft[2]:.3f}")
    g = rows.get((GOAL_QPS, GOAL_MIB))
    if g:
        ratio = g["stall"] / g["down_i"]
        p(f"\n**Goal ({GOAL_QPS} QPs, {GOAL_MIB} MiB): partner stall {g['stall']:.2f} s / downtime "
          f"without verbs {g['down_i']:.2f} s = {ratio:.2f} — "
          f"{'met' if ratio <= GOAL_RATIO else 'NOT met'} (≤ {GOAL_RATIO}).**")
    for f in runs.get("failed", []):
        p(f"\n{f['qps']} QPs, {f['mib']} MiB: FAILED: {f['error'].strip().splitlines()[0]}")
    if runs.get("skipped"):
        p("\nSkipped (time budget): " + ", ".join(f"{q} QPs {m} MiB" for q, m in runs["skipped"]))
    w = runs.get("warmup")
    if w:
        p(f"\nWarm-up (the demo's pattern: one sender, 1 QP, 1 MiB, migrated g0 -> g2 -> g0): "
          f"sender max_stall_s {w['sender']['max_stall_s']:.2f} over the whole run; per leg:")
        for leg in w["legs"]:
            t = leg.get("timeline") or {}
            p(f"- g{leg['src']} -> g{leg['dst']}: downtime {leg['report']['downtime_seconds']:.2f}, "
              f"total {leg['report']['total_seconds']:.2f}, partner stall in this leg "
              f"{t.get('stall_s', float('nan')):.2f} [" + ", ".join(
                  f"{ph['name']} {ph['seconds']:.2f}" for ph in leg["report"]["phases"]) + "]")
        p("- every stall the partner listed (> --stall-list): " + ", ".join(
            f"{s['s']:.2f} s" for s in w["sender"].get("stalls", [])))
    return "\n".join(out), rows


def plot(runs, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    a = runs["args"]
    fig, ax = plt.subplots(2, 2, figsize=(12, 9))
    series = ((sorted(k for k in rows if k[1] == a["qp_series_mib"]), 0,
               f"number of QPs (MR {a['qp_series_mib']} MiB)"),
              (sorted(k for k in rows if k[0] == a["mr_series_qps"]), 1,
               f"MR size, MiB ({a['mr_series_qps']} QPs)"))
    for col, (keys, x, label) in enumerate(series):
        if not keys:
            continue
        xs = [k[x] for k in keys]
        top = ax[0][col]
        for key, name, style in (("stall", "partner stall (verbs)", "o-"),
                                 ("down_v", "downtime verbs", "s-"),
                                 ("down_i", "downtime no verbs", "s--"),
                                 ("total_v", "total verbs", "^-"),
                                 ("total_i", "total no verbs", "^--")):
            top.plot(xs, [rows[k][key] for k in keys], style, label=name)
        top.plot(xs, [GOAL_RATIO * rows[k]["down_i"] for k in keys], ":", color="grey",
                 label=f"{GOAL_RATIO} x downtime no verbs")
        top.set_xscale("log", base=2)
        top.set_xticks(xs, [str(x) for x in xs])
        top.set_xlabel(label)
        top.set_ylabel("seconds")
        top.set_ylim(bottom=0)
        top.legend(fontsize=8)
        top.grid(alpha=0.3)
        bot = ax[1][col]
        pos = list(range(len(keys)))
        parts = (("ckpt_v", "checkpoint+transfer", 1), ("rest_v", "restore", 1),
                 ("commit_v", "commit (incl. resume)", 1))
        bottom = [0.0] * len(keys)
        for key, name, scale in parts:
            vals = [rows[k][key] * scale for k in keys]
            bot.bar([p - 0.2 for p in pos], vals, 0.38, bottom=bottom, label=f"verbs: {name}")
            bottom = [b + v for b, v in zip(bottom, vals)]
        bottom = [0.0] * len(keys)
        for key, name, scale in (("ckpt_i", "checkpoint+transfer", 1), ("rest_i", "restore", 1),
                                 ("commit_i", "commit", 1)):
            vals = [rows[k][key] * scale for k in keys]
            bot.bar([p + 0.2 for p in pos], vals, 0.38, bottom=bottom, label=f"no verbs: {name}",
                    hatch="//", alpha=0.6)
            bottom = [b + v for b, v in zip(bottom, vals)]
        bot.plot(pos, [rows[k]["extra_ms"] / 1000 for k in keys], "kD-",
                 label="verbs extra: dump+recreate+pin+resume")
        top_bar = max(sum(rows[k][c] for c in ("ckpt_v", "rest_v", "commit_v")) for k in keys)
        bot.set_ylim(0, 1.45 * top_bar)  # room for the legend above the bars
        bot.set_xticks(pos, [str(x) for x in xs])
        bot.set_xlabel(label)
        bot.set_ylabel("seconds")
        bot.legend(fontsize=7, ncol=2, loc="upper left")
        bot.grid(alpha=0.3, axis="y")
    fig.suptitle("crx migrate of an RDMA container (crx-verbs-seq receiver) under traffic, "
                 "TCG guests: left bar verbs, right bar the same memory without verbs objects",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qps", default="1,4,16,64,256", help="QP series")
    ap.add_argument("--mibs", default="1,4,16,64,256", help="MR-size series, MiB")
    ap.add_argument("--qp-series-mib", type=int, default=GOAL_MIB)
    ap.add_argument("--mr-series-qps", type=int, default=GOAL_QPS)
    ap.add_argument("--rate", type=int, default=100, help="sender messages/s over all QPs")
    ap.add_argument("--stall-list", type=float, default=0.3,
                    help="the sender lists stalls longer than this (s)")
    ap.add_argument("--recv-mode", default="",
                    help="receiver flag: '' sleeps on the completion channel (default: a "
                         "busy-polling receiver would take the source's and destination's only "
                         "vCPU from crx), '--busy-poll' as tests/vm/rdma")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--budget-min", type=float, default=25,
                    help="start no further point after this many minutes (they are reported "
                         "as skipped)")
    ap.add_argument("--memory-mb", type=int, help="guest memory (default 3 x largest MR + 512)")
    ap.add_argument("--json", help="write all measurements here")
    ap.add_argument("--report", help="only print the report (and --plot) of an earlier --json")
    ap.add_argument("--plot", help="PNG of the figure")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            runs = json.load(f)
        text, rows = report(runs)
        print(text)
        if a.plot:
            plot(runs, rows, a.plot)
        return
    qps = [int(x) for x in a.qps.split(",") if x]
    mibs = [int(x) for x in a.mibs.split(",") if x]
    points = [(q, a.qp_series_mib) for q in qps]
    points += [(a.mr_series_qps, m) for m in mibs if (a.mr_series_qps, m) not in points]
    points.sort(key=lambda p: p[0] * p[1])  # cheap first: the budget cuts the dearest
    memory = a.memory_mb or max(768, 3 * max(m for _, m in points) + 512)
    rdma_bed, RdmaBench = bed_case()
    import testbed
    # The bed boots Testbed(3, ...) with the default 768 MiB; an MR of
    # 256 MiB needs more (the container, its pages in the destination's
    # image tmpfs, the restored copy).
    rdma_bed.Testbed = functools.partial(testbed.Testbed, memory_mb=memory)
    runs = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "args": vars(a),
            "memory_mb": memory, "points": points, "verbs": [], "idle": []}
    t0 = time.monotonic()
    RdmaBench.setUpClass()
    try:
        bench = RdmaBench()
        port = 18700
        if not a.no_warmup:
            runs["warmup"] = w = bench.warmup(a, port)
            for leg in w["legs"]:
                log(f"warm-up g{leg['src']}->g{leg['dst']}: downtime "
                    f"{leg['report']['downtime_seconds']:.2f} s, total "
                    f"{leg['report']['total_seconds']:.2f} s, stall {leg['timeline']}")
            log(f"warm-up sender: {json.dumps(w['sender'])}")
        for n, (q, m) in enumerate(points):
            port += 1
            if time.monotonic() - t0 > 60 * a.budget_min:
                runs.setdefault("skipped", []).append([q, m])
                log(f"{q} QPs {m} MiB: skipped (over --budget-min {a.budget_min})")
                continue
            try:
                v = bench.verbs_point(q, m, a, port)
                i = bench.idle_point(q, m, a)
            except Exception as e:  # one failed point is a result too; go on
                runs.setdefault("failed", []).append({"qps": q, "mib": m, "error": str(e)[-3000:]})
                log(f"{q} QPs {m} MiB: FAILED: {str(e)[-3000:]}")
                bench.cleanup(f"v{q}q{m}m")
                continue
            runs["verbs"].append(v)
            runs["idle"].append(i)
            r = row(v, i)
            log(f"[{time.monotonic() - t0:.0f} s] {q} QPs {m} MiB: stall {r['stall']:.2f} "
                f"(one QP {r['qp_stall']:.2f}), downtime {r['down_v']:.2f} vs {r['down_i']:.2f} "
                f"no verbs, total {r['total_v']:.2f} vs {r['total_i']:.2f}, verbs extra "
                f"{r['extra_ms']:.0f} ms [dump {r['dump_ms']:.1f}, recreate {r['recreate_ms']:.1f}, "
                f"pin {r['pin_ms']:.1f}, resume {r['resume_ms']:.1f}], timeline {r['tl']}")
            log(f"  verbs phases: " + ", ".join(f"{p['name']} {p['seconds']:.2f}"
                                               for p in v["report"]["phases"])
                + "; no verbs: " + ", ".join(f"{p['name']} {p['seconds']:.2f}"
                                             for p in i["report"]["phases"]))
            log(f"  sender: {json.dumps(v['sender'])}")
            if a.json:  # keep what we have if a later point fails
                with open(a.json, "w") as f:
                    json.dump(runs, f, indent=1)
    finally:
        RdmaBench.tearDownClass()
        runs["host_seconds"] = time.monotonic() - t0
        if a.json:
            with open(a.json, "w") as f:
                json.dump(runs, f, indent=1)
    text, rows = report(runs)
    print("\n" + text)
    if a.plot:
        plot(runs, rows, a.plot)


if __name__ == "__main__":
    main()
