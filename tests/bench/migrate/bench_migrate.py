#!/usr/bin/python3
"""Benchmark: `crx migrate` vs the runc way (runc checkpoint to a directory,
copy it over the same guest link, runc restore) for containers with 16, 64
and 256 MiB of touched memory, interleaved in one run between two guests.

For every size and repetition both ways run back to back (the order flips
each repetition), so both see the same machine load. A 1 MiB container
migrated the crx way gives CRIU's fixed cost (the part of a migration that
does not grow with memory). The physical limit of a migration is its
memory bytes over the link bandwidth, measured with a plain TCP copy
between the same two guests before and after the runs.

Prints per-run lines, the phase profile of every crx migration (its JSON
report) and a Markdown table of medians with the ratios. Under TCG only
the ratios mean something.

Usage: tests/bench/migrate/bench_migrate.py [--sizes 16,64,256] [--reps 2]
           [--pre-copy 2] [--crx-flags ""] [--build DIR]
           [--json FILE] [--bandwidth-only]
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
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "vm"))
from testbed import Testbed  # noqa: E402
from vmtest import criu_times  # noqa: E402

KEY = "0123456789abcdef0123456789abcdef"
PORT = 7070
BASELINE_MIB = 1  # CRIU's fixed cost: a container with (almost) no memory

# A plain TCP copy between the guests (python3 of the shared host root):
# the receiver writes what it gets to stdout, the sender reads stdin.
COPY_RECV = ("python3 -c \"import socket,sys;s=socket.socket();"
             "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',{port}));"
             "s.listen(1);c,_=s.accept();o=sys.stdout.buffer\n"
             "while True:\n d=c.recv(1<<20)\n if not d: break\n o.write(d)\"")
COPY_SEND = ("python3 -c \"import socket,sys;s=socket.create_connection(('{ip}',{port}));"
             "i=sys.stdin.buffer\n"
             "while True:\n d=i.read(1<<20)\n if not d: break\n s.sendall(d)\"")
# The link itself: sendfile(2) from RAM on one end, recv_into a reused
# buffer (nothing written) on the other: no copy tool in the way.
SINK_RECV = ("python3 -c \"import socket;s=socket.socket();"
             "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',{port}));"
             "s.listen(1);c,_=s.accept();m=memoryview(bytearray(4<<20))\n"
             "while c.recv_into(m): pass\"")
SENDFILE = ("python3 -c \"import socket;s=socket.create_connection(('{ip}',{port}));"
            "s.sendfile(open('{path}','rb'))\"")


def sh(tb, k, cmd, timeout=900):
    rc, out, err = tb.run(k, cmd, timeout=timeout)
    if rc != 0:
        raise RuntimeError(f"g{k}: `{cmd}` -> {rc}\n{out}\n{err}")
    return out


def wait_ok(tb, h, what, timeout=900):
    rc, out, err = tb.wait(h, timeout=timeout)
    if rc != 0:
        raise RuntimeError(f"{what} -> {rc}\n{out}\n{err}")
    return out


def wait_listening(tb, k, port, timeout=60):
    """Until something listens on TCP `port` in guest k."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        rc, out, _ = tb.run(k, f"ss -Htln 'sport = :{port}'", timeout=30)
        if rc == 0 and out.strip():
            return
        time.sleep(0.2)
    raise RuntimeError(f"g{k}: nothing listens on port {port}")


# Open MPI's components, which an MPI rank dlopens at MPI_Init.
MCA_DIR = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"


def shared_objects(n):
    """What --libs n makes memhog dlopen: libmpi (and the libraries it
    needs) and the first n of Open MPI's components, as a rank maps them."""
    if n <= 0:
        return []
    if not os.path.isdir(MCA_DIR):
        sys.exit(f"--libs needs Open MPI ({MCA_DIR}): run tests/setup.sh")
    mca = sorted(f for f in os.listdir(MCA_DIR) if f.startswith("mca_") and f.endswith(".so"))
    return ["libmpi.so.40"] + [os.path.join(MCA_DIR, f) for f in mca[:n]]


def make_bundle(scratch, crx, libs=()):
    """The bundle every way runs: memhog, static in a busybox rootfs; with
    libs, built dynamically and dlopening them from the guest's /usr,
    bound in read-only."""
    b = os.path.join(scratch, "bundle")
    rootfs = os.path.join(b, "rootfs")
    os.makedirs(rootfs, exist_ok=True)
    subprocess.run([os.path.join(ROOT, "bundles", "busybox", "make-rootfs.sh"), rootfs],
                   check=True)
    if libs:
        subprocess.run(["cc", "-O2", "-o", os.path.join(rootfs, "memhog"),
                        os.path.join(HERE, "memhog.c")], check=True)
        for d in ("lib", "lib64"):  # merged /usr, as on the host
            os.symlink(f"usr/{d}", os.path.join(rootfs, d))
    else:
        subprocess.run(["cc", "-O2", "-static", "-DMEMHOG_STATIC", "-o",
                        os.path.join(rootfs, "memhog"), os.path.join(HERE, "memhog.c")],
                       check=True)
    subprocess.run([crx, "spec", "--bundle", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/memhog", "16", "/out/count.log", *libs]
    spec["root"]["readonly"] = False
    spec["mounts"].append({"destination": "/out", "type": "bind",
                           "source": os.path.join(scratch, "out"), "options": ["rbind", "rw"]})
    if libs:
        # Not rbind: the guest's /usr/lib/modules is a 9p mount CRIU cannot dump.
        spec["mounts"].append({"destination": "/usr", "type": "bind", "source": "/usr",
                               "options": ["bind", "ro"]})
    os.makedirs(os.path.join(scratch, "out"), exist_ok=True)
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f, indent=2)
    return b


def set_size(tb, mib, cid):
    """Both guests' /tmp/bundle run memhog MIB with the log of `cid` (the
    same bytes on both ends, so the config hashes match); the libraries
    it loads stay."""
    for k in (0, 1):
        sh(tb, k, "python3 - <<'E'\nimport json\np='/tmp/bundle/config.json'\n"
                  "s=json.load(open(p))\n"
                  f"s['process']['args'][1:3]=['{mib}','/out/{cid}.log']\n"
                  "json.dump(s,open(p,'w'))\nE")


def count_log(scratch, cid):
    try:
        with open(os.path.join(scratch, "out", f"{cid}.log")) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def start_memhog(tb, scratch, cid, start_cmd):
    """Starts the container and waits until memhog has touched its memory
    (it logs its first count only after that)."""
    sh(tb, 0, start_cmd)
    until = time.monotonic() + 600
    while len(count_log(scratch, cid)) < 3:
        if time.monotonic() > until:
            raise RuntimeError(f"{cid}: memhog never started counting")
        time.sleep(0.5)
    return len(count_log(scratch, cid))


def mapped_files(tb, crx, cid):
    """How many files the container's memhog maps (on g0)."""
    pid = json.loads(sh(tb, 0, f"{crx} state {cid}"))["pid"]
    return int(sh(tb, 0, f"awk '$6 ~ /^\\//{{print $6}}' /proc/{pid}/maps | sort -u | wc -l"))


def check_counts_on(scratch, cid, before):
    """After the migration the counter goes on from where it stopped: one
    unbroken sequence 0..n, longer than before (a restart would log 0
    again)."""
    until = time.monotonic() + 120
    while True:
        n = count_log(scratch, cid)
        if n != list(range(len(n))):
            raise RuntimeError(f"{cid}: the count did not go on where it stopped: ...{n[-20:]}")
        if len(n) > before + 3:
            return
        if time.monotonic() > until:
            raise RuntimeError(f"{cid}: the migrated container does not count ({len(n)} lines)")
        time.sleep(0.5)


def link_bandwidth(tb, mib=64, tool="sendfile"):
    """Bytes/s of MIB MiB over TCP from RAM, g0 -> g1: with sendfile into a
    discarding receiver (the link: the limit), or with the stdin/stdout
    copy the runc way uses ("pipe")."""
    sh(tb, 0, f"head -c {mib << 20} /dev/urandom > /tmp/blob")
    if tool == "sendfile":
        h = tb.spawn(1, SINK_RECV.format(port=PORT + 1))
    else:
        h = tb.spawn(1, COPY_RECV.format(port=PORT + 1) + " >/dev/null")
    wait_listening(tb, 1, PORT + 1)
    t = time.monotonic()
    if tool == "sendfile":
        sh(tb, 0, SENDFILE.format(ip=tb.ip(1), port=PORT + 1, path="/tmp/blob"))
    else:
        sh(tb, 0, COPY_SEND.format(ip=tb.ip(1), port=PORT + 1) + " </tmp/blob")
    wait_ok(tb, h, "bandwidth receiver")
    dt = time.monotonic() - t
    sh(tb, 0, "rm -f /tmp/blob")
    return (mib << 20) / dt


# crx receive's config for the way "unprepared": the restore prepared in the
# frozen window, as before the prepared restore (runtime/migrate/README.md).
UNPREPARED_CONFIG = "/tmp/unprepared.yaml"
# ... and for "no-fill": every page copied in by CRIU's restore, before the
# resume, as before the fill after the resume (runtime/migrate/README.md);
# for "fill": the pages filled after the resume whatever the size (crx's
# default, auto, fills from kFillAfterResumeMinBytes on).
NO_FILL_CONFIG = "/tmp/no-fill.yaml"
FILL_CONFIG = "/tmp/fill.yaml"


def crx_way(tb, crx, mib, cid, pre_copy, flags="", prepared=True, plaintext=False, fill="auto",
            wrap=""):
    """wrap: a command prefix for crx receive and crx migrate (a profiler)."""
    set_size(tb, mib, cid)
    before = start_memhog(tb, tb.scratch, cid,
                          f"{crx} run -d -b /tmp/bundle {cid} </dev/null >/dev/null 2>&1")
    files = mapped_files(tb, crx, cid)
    config = (f"--config {UNPREPARED_CONFIG} " if not prepared else
              f"--config {NO_FILL_CONFIG} " if fill == "never" else
              f"--config {FILL_CONFIG} " if fill == "always" else "")
    # TLS by default; clear text on both ends for the "plaintext" way (what
    # the cipher costs under TCG: the runc way's copy is clear text). The
    # shared key authenticates the peers either way.
    security = "--key /tmp/key" + (" --insecure-plaintext" if plaintext else "")
    h = tb.spawn(1, f"{wrap}{crx} receive --listen 0.0.0.0:{PORT} {security} --once {config}"
                    f"--image-dir /run/crx-migrate --format json")
    wait_listening(tb, 1, PORT)
    t = time.monotonic()
    out = sh(tb, 0, f"{wrap}{crx} migrate {cid} --to {tb.ip(1)}:{PORT} {security} "
                    f"--pre-copy {pre_copy} {flags} --format json")
    total = time.monotonic() - t
    recv = wait_ok(tb, h, "crx receive")
    check_counts_on(tb.scratch, cid, before)
    sh(tb, 1, f"{crx} kill {cid} KILL; sleep 1; {crx} delete -f {cid}")
    rep = json.loads(out.strip().splitlines()[-1])
    rrep = json.loads(recv.strip().splitlines()[-1])
    return {"downtime": rep["downtime_seconds"], "total": total, "report": rep,
            "receiver": rrep, "mapped_files": files}


def runc_way(tb, mib, cid, keep_logs=None):
    set_size(tb, mib, cid)
    before = start_memhog(tb, tb.scratch, cid,
                          f"cd /tmp/bundle && runc run -d {cid} </dev/null >/dev/null 2>&1")
    img = f"/tmp/img-{cid}"  # tmpfs (RAM) on both ends, as crx's images
    h = tb.spawn(1, f"mkdir -p {img} && " + COPY_RECV.format(port=PORT + 2) +
                 f" | tar -C {img} -xf -")
    wait_listening(tb, 1, PORT + 2)
    t0 = time.monotonic()
    sh(tb, 0, f"runc checkpoint --image-path {img} {cid}")
    t1 = time.monotonic()
    sh(tb, 0, f"tar -C {img} -cf - . | " + COPY_SEND.format(ip=tb.ip(1), port=PORT + 2))
    wait_ok(tb, h, "image copy receiver")
    t2 = time.monotonic()
    sh(tb, 1, f"cd /tmp/bundle && runc restore -d --image-path {img} {cid} "
              "</dev/null >/dev/null 2>&1")
    t3 = time.monotonic()
    check_counts_on(tb.scratch, cid, before)
    sh(tb, 1, f"runc kill {cid} KILL; sleep 1; runc delete -f {cid}")
    if keep_logs:  # CRIU's logs of the checkpoint (source) and restore (destination)
        sh(tb, 0, f"cp {img}/dump.log {keep_logs}/runc-dump.log")
        sh(tb, 1, f"cp {img}/restore.log {keep_logs}/runc-restore.log")
    sh(tb, 0, f"rm -rf {img}")
    sh(tb, 1, f"rm -rf {img}")
    # The container is stopped from the checkpoint's start to the restore's end.
    return {"downtime": t3 - t0, "total": t3 - t0,
            "phases": {"checkpoint": t1 - t0, "copy": t2 - t1, "restore": t3 - t2}}


def criu_floor(tb):
    """Issue 17's floor: a bare `criu dump` then `criu restore` of a trivial
    process (a sleep in its own session) in the same guest, nothing else:
    CRIU's fixed work with no container, no memory to speak of, no
    network. Returns the two times."""
    img = "/tmp/floor"
    pid = sh(tb, 0, f"rm -rf {img} && mkdir -p {img} && "
                    "{ setsid sleep 1000 </dev/null >/dev/null 2>&1 & p=$!; }; "
                    # dumped once it is the sleep (not setsid before its exec)
                    "until [ \"$(cat /proc/$p/comm)\" = sleep ]; do sleep 0.05; done; "
                    "echo $p").strip()
    t0 = time.monotonic()
    dumped = sh(tb, 0, f"criu dump --display-stats -t {pid} -D {img} -o dump.log "
                       f"|| {{ tail -5 {img}/dump.log; exit 1; }}")
    t1 = time.monotonic()
    restored = sh(tb, 0, f"criu restore --display-stats -D {img} -o restore.log -d "
                         f"|| {{ tail -5 {img}/restore.log; exit 1; }}")
    t2 = time.monotonic()
    sh(tb, 0, f"pkill -KILL -f '^sleep 1000$'; rm -rf {img}")
    return {"dump": t1 - t0, "restore": t2 - t1, "downtime": t2 - t0,
            "criu": criu_displayed_stats(dumped + restored)}


def criu_displayed_stats(text):
    """CRIU's own times from `--display-stats` ("Frozen time: 812345 us"),
    in seconds: frozen, memdump, restore, forking (those it printed)."""
    names = {"frozen": "Frozen time", "memdump": "Memory dump time",
             "restore": "Restore time", "forking": "Forking time"}
    out = {}
    for key, label in names.items():
        m = re.search(rf"^{label}: (\d+) us$", text, re.M)
        if m:
            out[key] = int(m.group(1)) / 1e6
    return out


def print_criu_table(runs, sizes, floor_runs):
    """crx's downtime beside CRIU's own account of it (medians), and the
    bare floor's: what of the frozen window is CRIU's work, and how much
    more a container's is than a sleep's. Nothing for runs before crx
    reported CRIU's statistics."""
    med = statistics.median
    fl = [r["criu"] for r in floor_runs if r.get("criu", {}).get("frozen") is not None]
    rows = []
    if fl:
        d = med(r["downtime"] for r in floor_runs)
        rows.append(f"| - | bare CRIU floor | {d:.2f} s | {med(c['frozen'] for c in fl):.2f} s | "
                    f"{med(c.get('memdump', 0) for c in fl):.2f} s | "
                    f"{med(c.get('restore', 0) for c in fl):.2f} s | "
                    f"{med(c.get('forking', 0) for c in fl):.3f} s |")
    for mib in sizes:
        for way in ("crx", "base", "unprepared", "no-fill", "fill", "plaintext"):
            cs = [c for c in (criu_times(r["report"]) for r in runs[way].get(mib, [])) if c]
            if not cs:
                continue
            d = med(r["downtime"] for r in runs[way][mib])
            rows.append(f"| {mib} MiB | {way} | {d:.2f} s | {med(c['frozen'] for c in cs):.2f} s | "
                        f"{med(c['memdump'] for c in cs):.2f} s | "
                        f"{med(c['restore'] for c in cs):.2f} s | "
                        f"{med(c['forking'] for c in cs):.3f} s |")
    if not rows:
        return
    print("CRIU's own account (its --display-stats for the floor, crx's report otherwise), "
          "medians:\n")
    print("| memory | way | downtime | CRIU frozen in the final dump | of it the pages | "
          "CRIU's restore | of it forking |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()


def phases(rep):
    return ", ".join(f"{p['name']} {p['seconds']:.2f}" for p in rep["phases"])


def phase_seconds(rep, name):
    return sum(p["seconds"] for p in rep["phases"] if p["name"] == name)


def runs_by_size(runs, sizes, ways):
    """(size, way, that way's runs at that size) for every pair that ran."""
    for mib in sizes:
        for way in ways:
            rs = runs[way].get(mib)
            if rs:
                yield mib, way, rs


def print_prepared_table(runs, sizes):
    """crx with the prepared restore (default) against crx with
    migration.prepare_restore: false on the receiver: downtime and the
    receiver's prepare and restore phases, medians."""
    med = statistics.median
    print("| memory | way | downtime | total | receiver prepare (before the freeze) | "
          "receiver restore (frozen) |")
    print("|---|---|---|---|---|---|")
    for mib, way, rs in runs_by_size(runs, sizes, ("crx", "unprepared")):
        print(f"| {mib} MiB | {'prepared' if way == 'crx' else 'not prepared'} | "
              f"{med(r['downtime'] for r in rs):.2f} s | {med(r['total'] for r in rs):.2f} s | "
              f"{med(phase_seconds(r['receiver'], 'prepare') for r in rs):.2f} s | "
              f"{med(phase_seconds(r['receiver'], 'restore') for r in rs):.2f} s |")
    print()


def print_fill_table(runs, sizes):
    """crx (the pages filled after the resume where there are enough) against
    crx with migration.fill_after_resume: never on the receiver: downtime,
    the receiver's restore phase and the fill after the resume, medians."""
    med = statistics.median
    print("| memory | way | downtime | receiver restore (frozen) | fill after the resume | "
          "CRIU's restore | total |")
    print("|---|---|---|---|---|---|---|")
    label = {"crx": "crx's default (auto)", "fill": "filled after the resume (always)",
             "no-fill": "every page before"}
    for mib, way, rs in runs_by_size(runs, sizes, ("crx", "fill", "no-fill")):
        cr = [c["restore"] for c in (criu_times(r["report"]) for r in rs) if c]
        print(f"| {mib} MiB | {label[way]} | "
              f"{med(r['downtime'] for r in rs):.2f} s | "
              f"{med(phase_seconds(r['receiver'], 'restore') for r in rs):.2f} s | "
              f"{med(phase_seconds(r['report'], 'fill after resume') for r in rs):.2f} s | "
              f"{(f'{med(cr):.2f} s' if cr else '-')} | {med(r['total'] for r in rs):.2f} s |")
    print()


def print_base_table(runs, sizes):
    """crx of --build against crx of --base-build (the way 'base'), medians:
    downtime, CRIU's frozen time in the final dump, the sender's
    checkpoint+transfer and the receiver's restore phase."""
    med = statistics.median
    print(f"crx of this build against crx of {runs.get('base_build', '--base-build')}:\n")
    files = [r["mapped_files"] for rs in runs["crx"].values() for r in rs if "mapped_files" in r]
    if files:
        print(f"The workload maps {statistics.median(files):.0f} files "
              f"(--libs {runs.get('libs', 0)}).\n")
    print("| memory | way | downtime | total | CRIU frozen in the final dump | CRIU's restore | "
          "checkpoint+transfer | restore |")
    print("|---|---|---|---|---|---|---|---|")
    for mib, way, rs in runs_by_size(runs, sizes, ("crx", "base")):
        cs = [c for c in (criu_times(r["report"]) for r in rs) if c]
        frozen = f"{med(c['frozen'] for c in cs):.2f} s" if cs else "-"
        restore = f"{med(c['restore'] for c in cs):.2f} s" if cs else "-"
        print(f"| {mib} MiB | {way} | {med(r['downtime'] for r in rs):.2f} s | "
              f"{med(r['total'] for r in rs):.2f} s | {frozen} | {restore} | "
              f"{med(phase_seconds(r['report'], 'checkpoint+transfer') for r in rs):.2f} s | "
              f"{med(phase_seconds(r['report'], 'restore') for r in rs):.2f} s |")
    print()
    for mib in sizes:
        new, old = runs["crx"].get(mib), runs["base"].get(mib)
        if new and old:
            print(f"{mib} MiB: downtime this build / base "
                  f"{med(r['downtime'] for r in new) / med(r['downtime'] for r in old):.2f}")
    print()


def print_plaintext_table(runs, sizes):
    """crx (TLS, pages in kernel TLS) against crx in clear text: what the
    cipher costs, medians."""
    med = statistics.median
    print("| memory | downtime TLS | downtime clear | total TLS | total clear | "
          "pre-copy 1 TLS | pre-copy 1 clear |")
    print("|---|---|---|---|---|---|---|")
    for mib in sizes:
        tls, clear = runs["crx"].get(mib), runs["plaintext"].get(mib)
        if not tls or not clear:
            continue
        cols = []
        for key in ("downtime", "total"):
            cols += [med(r[key] for r in tls), med(r[key] for r in clear)]
        cols += [med(phase_seconds(r["report"], "pre-copy 1") for r in rs) for rs in (tls, clear)]
        print(f"| {mib} MiB | " + " | ".join(f"{c:.2f} s" for c in cols) + " |")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,64,256")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--pre-copy", type=int, default=2)
    ap.add_argument("--build", default=os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--crx-flags", default="",
                    help="CRIU flags for crx migrate (default none: crx moves the "
                         "container's network namespace, which nobody configured, empty "
                         "itself, as runc always does; before 2026-12-02 the bench passed "
                         "--empty-ns network for that)")
    ap.add_argument("--json", help="write all measurements here")
    ap.add_argument("--no-lazy", action="store_true",
                    help="leave out crx migrate --lazy (post-copy), interleaved by default")
    ap.add_argument("--ways", default=None,
                    help="comma-separated ways to interleave (crx, runc, lazy, unprepared: crx "
                         "with migration.prepare_restore false on the receiver, no-fill: crx "
                         "with migration.fill_after_resume never on the receiver, fill: crx with "
                         "it always, plaintext: crx "
                         "with --insecure-plaintext on both ends, base: crx of --base-build); "
                         "default crx,runc,lazy "
                         "(crx,runc with --no-lazy)")
    ap.add_argument("--base-build",
                    help="another build dir (e.g. of the parent commit, under the same root so "
                         "that the guests see it): the way 'base' is crx migrate of that build, "
                         "for an A/B of two builds in one interleaved run")
    ap.add_argument("--libs", type=int, default=0, metavar="N",
                    help="the workload maps shared objects as an MPI rank does: libmpi and "
                         "N of Open MPI's components (memhog built dynamically, the guest's "
                         "/usr bound in); 0 (default): one static binary")
    ap.add_argument("--bandwidth-only", action="store_true",
                    help="only measure the link (sendfile) and the runc way's copy tool")
    ap.add_argument("--plot", help="write a plot (PNG) of downtime and total per size and way")
    ap.add_argument("--from-json", help="measure nothing: report (and --plot) a run that "
                                        "--json saved")
    a = ap.parse_args()
    if a.from_json:
        runs = load_runs(a.from_json)
        report(runs)
        if a.plot:
            plot(runs, a.plot)
        return
    crx = os.path.join(a.build, "crx")
    base_crx = os.path.join(os.path.abspath(a.base_build), "crx") if a.base_build else None
    sizes = [int(x) for x in a.sizes.split(",")]
    runs = {"sizes": sizes, "pre_copy": a.pre_copy, "crx_flags": a.crx_flags, "crx": {}, "runc": {},
            "lazy": {}, "unprepared": {}, "no-fill": {}, "fill": {}, "plaintext": {}, "base": {},
            "baseline": [],
            "floor": []}
    if base_crx:
        runs["base_build"] = base_crx
    if a.libs:
        runs["libs"] = a.libs
    # crx --lazy (post-copy): no pre-copy round, the memory after the resume.
    ways = ("crx", "runc") if a.no_lazy else ("crx", "runc", "lazy")
    if a.ways:
        ways = tuple(a.ways.split(","))
    if "base" in ways and not base_crx:
        sys.exit("the way 'base' needs --base-build")
    # Memory: the container, its image in RAM on the receiving end (runc way:
    # also the source's image dir), and the guest itself.
    with Testbed(2, rxe=False, memory_mb=max(768, 3 * max(sizes) + 512)) as tb:
        tb.start()
        b = make_bundle(tb.scratch, crx, shared_objects(a.libs))
        for k in (0, 1):
            sh(tb, k, f"cp -a {b} /tmp/bundle && printf %s {KEY} > /tmp/key && chmod 600 /tmp/key")
        sh(tb, 1, f"printf 'migration:\\n  prepare_restore: false\\n' > {UNPREPARED_CONFIG}")
        sh(tb, 1, f"printf 'migration:\\n  fill_after_resume: never\\n' > {NO_FILL_CONFIG}")
        sh(tb, 1, f"printf 'migration:\\n  fill_after_resume: always\\n' > {FILL_CONFIG}")
        if a.bandwidth_only:
            for _ in range(2):
                for tool in ("sendfile", "pipe"):
                    print(f"{tool}: {link_bandwidth(tb, tool=tool) / 1e6:.1f} MB/s", flush=True)
            return
        bw = [link_bandwidth(tb)]
        pipe = [link_bandwidth(tb, tool="pipe")]
        print(f"link: {bw[0] / 1e6:.1f} MB/s (the runc way's copy tool: {pipe[0] / 1e6:.1f} MB/s)",
              flush=True)
        # Warm-up (not counted): the first CRIU, runc and crx runs read their
        # binaries over 9p and are several times slower than the later ones.
        crx_way(tb, crx, BASELINE_MIB, "warmcrx", a.pre_copy, a.crx_flags)
        if "runc" in ways:
            runc_way(tb, BASELINE_MIB, "warmrunc")
        if "lazy" in ways:
            crx_way(tb, crx, BASELINE_MIB, "warmlazy", 0, a.crx_flags + " --lazy")
        if "base" in ways:
            crx_way(tb, base_crx, BASELINE_MIB, "warmbase", a.pre_copy, a.crx_flags)
        for rep in range(a.reps):
            r = crx_way(tb, crx, BASELINE_MIB, f"base{rep}", a.pre_copy, a.crx_flags)
            runs["baseline"].append(r)
            print(f"{BASELINE_MIB} MiB crx (fixed cost): downtime {r['downtime']:.2f} s, "
                  f"total {r['total']:.2f} s [{phases(r['report'])}]", flush=True)
        criu_floor(tb)  # warm-up
        for mib in sizes:
            for rep in range(a.reps):
                if mib == sizes[0]:
                    r = criu_floor(tb)
                    runs["floor"].append(r)
                    print(f"bare CRIU floor #{rep}: dump {r['dump']:.2f} s + restore "
                          f"{r['restore']:.2f} s = {r['downtime']:.2f} s", flush=True)
                # Each way goes first in turn.
                order = ways[rep % len(ways):] + ways[:rep % len(ways)]
                for way in order:
                    cid = f"{way}{mib}r{rep}"
                    if way == "lazy":
                        r = crx_way(tb, crx, mib, cid, 0, a.crx_flags + " --lazy")
                        lz = r["report"].get("lazy") or {}
                        detail = (f"[{phases(r['report'])}] lazy {lz.get('seconds', 0):.2f} s: "
                                  f"{lz.get('on_demand_pages', 0)} pages on demand, "
                                  f"{lz.get('pushed_pages', 0)} pushed")
                    elif way in ("crx", "unprepared", "no-fill", "fill", "plaintext", "base"):
                        r = crx_way(tb, base_crx if way == "base" else crx, mib, cid, a.pre_copy,
                                    a.crx_flags,
                                    prepared=way != "unprepared", plaintext=way == "plaintext",
                                    fill={"no-fill": "never", "fill": "always"}.get(way, "auto"))
                        detail = (f"[{phases(r['report'])}] rounds " +
                                  ", ".join(f"{x['page_bytes'] >> 10} KiB"
                                            for x in r["report"]["rounds"]) +
                                  f"; receiver [{phases(r['receiver'])}]")
                    else:
                        r = runc_way(tb, mib, cid)
                        detail = "[" + ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items()) + "]"
                    runs[way].setdefault(mib, []).append(r)
                    print(f"{mib} MiB {way} #{rep}: downtime {r['downtime']:.2f} s, "
                          f"total {r['total']:.2f} s {detail}", flush=True)
        bw.append(link_bandwidth(tb))
        pipe.append(link_bandwidth(tb, tool="pipe"))
        print(f"link: {bw[1] / 1e6:.1f} MB/s (the runc way's copy tool: {pipe[1] / 1e6:.1f} MB/s)",
              flush=True)
    runs["bandwidth"] = bw
    runs["pipe_bandwidth"] = pipe
    runs["reps"] = a.reps
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    report(runs)
    if a.plot:
        plot(runs, a.plot)


WAYS = ("crx", "base", "unprepared", "no-fill", "fill", "plaintext", "lazy", "runc")


def load_runs(path):
    """A run --json saved (sizes became strings as JSON keys)."""
    with open(path) as f:
        runs = json.load(f)
    for way in WAYS:
        runs[way] = {int(k): v for k, v in runs.get(way, {}).items()}
    runs.setdefault("reps", max((len(v) for way in WAYS for v in runs[way].values()), default=0))
    return runs


def report(runs):
    """The tables of a run (medians; only the ratios mean something under
    TCG)."""
    # Runs before 2026-11-22 13:18 lack the copy tool's bandwidth, and
    # before 2026-11-23 the floor.
    sizes, bw, pipe = runs["sizes"], runs["bandwidth"], runs.get("pipe_bandwidth")
    link = statistics.mean(bw)
    med = statistics.median
    fixed = med(r["total"] for r in runs["baseline"])
    tool = f"{statistics.mean(pipe) / 1e6:.1f}" if pipe else "not measured"
    print(f"\nlink bandwidth between the guests: {link / 1e6:.1f} MB/s "
          f"(before {bw[0] / 1e6:.1f}, after {bw[1] / 1e6:.1f}; the runc way's copy tool "
          f"{tool}); CRIU's fixed cost "
          f"(crx total for a {BASELINE_MIB} MiB container): {fixed:.2f} s; "
          f"medians of {runs['reps']} runs, crx with --pre-copy {runs['pre_copy']} "
          f"{runs['crx_flags']}\n")
    if runs["unprepared"]:
        print_prepared_table(runs, sizes)
    if runs.get("no-fill") or runs.get("fill"):
        print_fill_table(runs, sizes)
    if runs["plaintext"]:
        print_plaintext_table(runs, sizes)
    if runs["base"]:
        print_base_table(runs, sizes)
    floor = med(r["downtime"] for r in runs["floor"]) if runs.get("floor") else None
    if floor is None:
        print("bare CRIU floor: not measured in this run")
    else:
        print(f"bare CRIU floor (dump + restore of a sleep, medians): {floor:.2f} s "
              f"(dump {med(r['dump'] for r in runs['floor']):.2f} s, restore "
              f"{med(r['restore'] for r in runs['floor']):.2f} s)")
    print()
    print_criu_table(runs, sizes, runs.get("floor") or [])
    for way in ("crx", "base", "unprepared", "no-fill", "fill"):
        if floor is not None and runs[way].get(sizes[0]):
            d = med(r["downtime"] for r in runs[way][sizes[0]])
            print(f"{sizes[0]} MiB {way}: downtime {d:.2f} s = {d / floor:.2f} x the floor "
                  "(issue 17's goal for the prepared restore: <= 0.7)")
    print()
    if runs["runc"]:
        print_runc_table(runs, sizes, link, fixed)
    if runs["lazy"] and runs["crx"]:
        print_lazy_table(runs, sizes)


def median_times(runs, way, mib):
    """(downtime, total): the medians of one way's repetitions at one size."""
    rs = runs[way][mib]
    return (statistics.median(r["downtime"] for r in rs),
            statistics.median(r["total"] for r in rs))


def print_runc_table(runs, sizes, link, fixed):
    """crx against the runc way at every size, and both against the
    link's limit."""
    print("| memory | crx downtime | runc-way downtime | downtime ratio | crx total | "
          "runc-way total | total ratio | limit (mem/bw) | crx total / (1.3 limit + fixed) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mib in sizes:
        cd, ct = median_times(runs, "crx", mib)
        rd, rt = median_times(runs, "runc", mib)
        limit = (mib << 20) / link
        print(f"| {mib} MiB | {cd:.2f} s | {rd:.2f} s | {cd / rd:.2f} | {ct:.2f} s | "
              f"{rt:.2f} s | {ct / rt:.2f} | {limit:.2f} s | {ct / (1.3 * limit + fixed):.2f} |")


def print_lazy_table(runs, sizes):
    """crx --lazy against crx's pre-copy at every size, and its downtime
    against its own at the smallest size (issue 17's goal: <= 1.2 at
    256 MiB). Needs no runc way in the run."""
    l16, _ = median_times(runs, "lazy", sizes[0])
    print(f"\ncrx --lazy (post-copy) against crx with --pre-copy {runs['pre_copy']}; the last "
          f"column: its downtime over its own at {sizes[0]} MiB\n")
    print("| memory | lazy downtime | lazy total | downtime / pre-copy's | total / pre-copy's | "
          f"downtime / at {sizes[0]} MiB |")
    print("|---|---|---|---|---|---|")
    for mib in sizes:
        ld, lt = median_times(runs, "lazy", mib)
        cd, ct = median_times(runs, "crx", mib)
        print(f"| {mib} MiB | {ld:.2f} s | {lt:.2f} s | {ld / cd:.2f} | {lt / ct:.2f} | "
              f"{ld / l16:.2f} |")


def plot(runs, path):
    """Downtime (left) and total (right) against memory for every way that
    ran, medians with the spread of the repetitions as error bars, the
    bare-CRIU floor as a line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401 (matplotlib.ticker below)
    names = {"crx": "crx (prepared restore)", "unprepared": "crx (restore not prepared)",
             "plaintext": "crx, clear text (--insecure-plaintext)",
             "base": "crx of --base-build",
             "no-fill": "crx, every page before the resume",
             "fill": "crx, pages filled after the resume",
             "lazy": "crx --lazy (post-copy)", "runc": "runc way"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, key, title in ((axes[0], "downtime", "downtime"), (axes[1], "total", "total")):
        for way in WAYS:
            sizes = sorted(runs[way])
            if not sizes:
                continue
            vals = [[r[key] for r in runs[way][m]] for m in sizes]
            med = [statistics.median(v) for v in vals]
            err = [[m - min(v) for m, v in zip(med, vals)], [max(v) - m for m, v in zip(med, vals)]]
            ax.errorbar(sizes, med, yerr=err, fmt="o-", capsize=3, label=names[way])
        if key == "downtime" and runs.get("floor"):
            floor = statistics.median(r["downtime"] for r in runs["floor"])
            ax.axhline(floor, ls=":", color="grey", label="bare CRIU dump + restore (floor)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(runs["sizes"], [str(m) for m in runs["sizes"]])
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.set_xlabel("container memory, MiB")
        ax.set_ylabel("seconds (log)")
        ax.set_title(f"{title}, medians of {runs['reps']} runs (bars: min-max)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle("Live migration between two TCG guests: crx vs the runc way")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
