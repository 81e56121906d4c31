#!/usr/bin/python3
"""Where does a crx migration spend its time? Boots two guests, migrates one
memhog container (the benchmark's workload) the crx way with CRIU's logs
kept, and prints the crx reports of both ends plus the steps of each CRIU
log (dump on the source, page server and restore on the destination) that
took longer than --gap seconds. The logs are copied by a shell loop in each
guest while crx runs (its work dirs vanish at the end), which costs the
guests some CPU: use this for where the time goes, bench_migrate.py for
how long.

Usage: tests/bench/migrate/profile_migrate.py [--mib 16] [--pre-copy 0]
           [--build DIR] [--gap 0.2] [--copy-every 0.01] [--runc] [--keep DIR] [--libs N]
           [--perf]
"""
import argparse
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, HERE)
import bench_migrate as bm  # noqa: E402

# CRIU's work dirs vanish when crx is done: a shell loop in each guest
# hard-links every log it finds into a dir on the same tmpfs (/run), once
# per file; the link keeps all that CRIU writes afterwards, and the logs
# are copied out at the end. (Copying them in the loop, as before, caught
# the restore's log of a small container, whose work dir lives ~0.3 s,
# only in part, and only when it ran every 0.01 s.) The loop forks only
# for a log it has not linked yet: under TCG each fork costs the guest.
KEEP_LOGS = ("mkdir -p {dst}; seen=; while :; do for f in {src}/*/*.log {src}/*.log; do "
             "[ -f \"$f\" ] || continue; case \"$seen\" in *\" $f \"*) continue;; esac; "
             "seen=\"$seen $f \"; IFS=/; set -- ${{f#/run/crx-migrate/}}; IFS=_; n=\"$*\"; "
             "IFS=' '; ln \"$f\" \"{dst}/$n\"; done; sleep {every}; done")
LINKS = "/run/crx-profile-logs"
PERF_DATA = "/tmp/crx-perf.data"
STAMP = re.compile(r"^\((\d+\.\d+)\)")


def slow_steps(text, gap):
    out, prev_t, prev_line = [], None, ""
    for line in text.splitlines():
        m = STAMP.match(line)
        if not m:
            continue
        t = float(m.group(1))
        if prev_t is not None and t - prev_t >= gap:
            out.append(f"  +{t - prev_t:6.2f} s  after: {prev_line[:110]}\n"
                       f"             before: {line[:110]}")
        prev_t, prev_line = t, line
    if prev_t is not None:
        out.append(f"  log spans {prev_t:.2f} s")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--pre-copy", type=int, default=0)
    ap.add_argument("--gap", type=float, default=0.2)
    ap.add_argument("--copy-every", type=float, default=0.01,
                    help="seconds between the guests' looks for new CRIU logs")
    ap.add_argument("--runc", action="store_true", help="also profile the runc way")
    ap.add_argument("--crx-flags", default="")
    ap.add_argument("--libs", type=int, default=0, metavar="N",
                    help="the workload maps a rank's libraries (bench_migrate.py --libs)")
    ap.add_argument("--keep", help="copy the full CRIU logs into this host dir")
    ap.add_argument("--crx-debug", action="store_true",
                    help="the profiled move's crx commands log at debug level, with times "
                         "(crx-g0.log, crx-g1.log among the kept logs)")
    ap.add_argument("--perf", action="store_true",
                    help="the profiled move's crx migrate and crx receive run under perf record "
                         "(their threads and children, CRIU among them); perf's report by "
                         "thread and symbol is printed for each")
    ap.add_argument("--build", default=os.environ.get("CRX_BUILD_DIR", os.path.join(bm.ROOT, "build")))
    a = ap.parse_args()
    crx = os.path.join(a.build, "crx")
    with bm.Testbed(2, rxe=False, memory_mb=max(768, 3 * a.mib + 512)) as tb:
        tb.start()
        b = bm.make_bundle(tb.scratch, crx, bm.shared_objects(a.libs))
        for k in (0, 1):
            bm.sh(tb, k, f"cp -a {b} /tmp/bundle && printf %s {bm.KEY} > /tmp/key && "
                         "chmod 600 /tmp/key && mkdir -p /tmp/logs")
        bm.crx_way(tb, crx, 1, "warm", a.pre_copy, a.crx_flags)  # binaries into the page cache
        keep = [tb.spawn(0, KEEP_LOGS.format(src="/run/crx-migrate/out-*", dst=LINKS,
                                                 every=a.copy_every)),
                tb.spawn(1, KEEP_LOGS.format(src="/run/crx-migrate/*", dst=LINKS,
                                                 every=a.copy_every))]
        time.sleep(1)
        logged = f"{crx} --debug --log /tmp/crx.log" if a.crx_debug else crx
        wrap = (f"perf record -q -g -e cpu-clock -F 499 -o {PERF_DATA} -- " if a.perf else "")
        r = bm.crx_way(tb, logged, a.mib, "prof", a.pre_copy, a.crx_flags, wrap=wrap)
        for h in keep:
            tb.kill(h)
        for k in (0, 1):
            bm.sh(tb, k, f"cp {LINKS}/* /tmp/logs/ && rm -rf {LINKS}")
        print("sender:", bm.phases(r["report"]))
        print("rounds:", r["report"]["rounds"])
        print("receiver:", bm.phases(r["receiver"]))
        if a.perf:
            for k, who in ((0, "crx migrate"), (1, "crx receive")):
                print(f"\n== g{k} {who}: perf's samples by command and object")
                report = f"perf report -q -i {PERF_DATA} --stdio --no-children -g none "
                print(bm.sh(tb, k, report + "--sort comm,dso --percent-limit 1 2>/dev/null"))
                print("-- crx's own samples by symbol (percent of crx's)")
                print(bm.sh(tb, k, report + "--comms crx-migrate --percentage relative "
                                            "--sort sym --percent-limit 1 2>/dev/null"))
        for k in (0, 1):
            names = bm.sh(tb, k, "ls /tmp/logs").split()
            for n in names:
                if "warm" in n:
                    continue
                print(f"\n== g{k} {n}")
                print(slow_steps(bm.sh(tb, k, f"cat /tmp/logs/{n}"), a.gap))
        logs = os.path.join(tb.scratch, "logs")
        os.makedirs(logs, exist_ok=True)
        for k in (0, 1):
            bm.sh(tb, k, f"cp /tmp/logs/* {logs}/")
            if a.crx_debug:
                bm.sh(tb, k, f"cp /tmp/crx.log {logs}/crx-g{k}.log")
        if a.runc:
            r = bm.runc_way(tb, a.mib, "rprof", keep_logs=logs)
            print("\nrunc way:", r["phases"])
            for n in ("runc-dump.log", "runc-restore.log"):
                with open(os.path.join(logs, n)) as f:
                    print(f"\n== {n}\n" + slow_steps(f.read(), a.gap))
        if a.keep:
            shutil.copytree(logs, a.keep, dirs_exist_ok=True)
            print(f"\nfull logs in {a.keep}")


if __name__ == "__main__":
    main()
