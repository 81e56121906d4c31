#!/usr/bin/python3
"""Benchmark: `crx migrate` vs the runc way (runc checkpoint to a directory,
copy it over the same guest link, runc restore) for containers with 16, 64
and 256 MiB of touched memory, interleaved in one run between two guests.

Prints a Markdown table: downtime and total time of both, their ratios, and
the physical limit (memory bytes / link bandwidth measured between the same
guests with a plain TCP copy). Under TCG only the ratios mean something.

Usage: tests/bench/migrate/bench_migrate.py [--sizes 16,64,256] [--build DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "vm"))
from testbed import Testbed  # noqa: E402

KEY = "0123456789abcdef0123456789abcdef"
PORT = 7070

# A plain TCP copy between the guests (python3 of the shared host root).
COPY_RECV = ("python3 -c \"import socket,sys;s=socket.socket();"
             "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',{port}));"
             "s.listen(1);c,_=s.accept();f=open('{path}','wb')\n"
             "while True:\n d=c.recv(1<<20)\n if not d: break\n f.write(d)\"")
COPY_SEND = ("python3 -c \"import socket;s=socket.create_connection(('{ip}',{port}));"
             "f=open('{path}','rb')\n"
             "while True:\n d=f.read(1<<20)\n if not d: break\n s.sendall(d)\"")


def sh(tb, k, cmd, timeout=900):
    rc, out, err = tb.run(k, cmd, timeout=timeout)
    if rc != 0:
        raise RuntimeError(f"g{k}: `{cmd}` -> {rc}\n{out}\n{err}")
    return out


def make_bundle(scratch, crx):
    b = os.path.join(scratch, "bundle")
    os.makedirs(os.path.join(b, "rootfs"), exist_ok=True)
    subprocess.run([os.path.join(ROOT, "bundles", "busybox", "make-rootfs.sh"),
                    os.path.join(b, "rootfs")], check=True)
    subprocess.run(["cc", "-O2", "-static", "-o", os.path.join(b, "rootfs", "memhog"),
                    os.path.join(HERE, "memhog.c")], check=True)
    subprocess.run([crx, "spec", "--bundle", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["root"]["readonly"] = False
    spec["mounts"].append({"destination": "/out", "type": "bind",
                           "source": os.path.join(scratch, "out"), "options": ["rbind", "rw"]})
    os.makedirs(os.path.join(scratch, "out"), exist_ok=True)
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f, indent=2)
    return b


def set_size(tb, k, mib, cid):
    sh(tb, k, "python3 - <<'E'\nimport json\np='/tmp/bundle/config.json'\n"
              "s=json.load(open(p))\n"
              f"s['process']['args']=['/memhog','{mib}','/out/{cid}.log']\n"
              "json.dump(s,open(p,'w'))\nE")


def link_bandwidth(tb, mib=64):
    sh(tb, 0, f"head -c {mib << 20} /dev/urandom > /tmp/blob")
    h = tb.spawn(1, COPY_RECV.format(port=PORT + 1, path="/tmp/blob"))
    time.sleep(2)
    t = time.monotonic()
    sh(tb, 0, COPY_SEND.format(ip=tb.ip(1), port=PORT + 1, path="/tmp/blob"))
    tb.wait(h, timeout=600)
    dt = time.monotonic() - t
    sh(tb, 0, "rm -f /tmp/blob")
    sh(tb, 1, "rm -f /tmp/blob")
    return (mib << 20) / dt


def crx_way(tb, crx, mib, cid):
    set_size(tb, 0, mib, cid)
    set_size(tb, 1, mib, cid)
    sh(tb, 0, f"{crx} run -d -b /tmp/bundle {cid} </dev/null >/dev/null 2>&1")
    time.sleep(3)
    h = tb.spawn(1, f"{crx} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                    f"--image-dir /run/crx-migrate --format json")
    time.sleep(2)
    t = time.monotonic()
    out = sh(tb, 0, f"{crx} migrate {cid} --to {tb.ip(1)}:{PORT} --key /tmp/key --format json")
    total = time.monotonic() - t
    tb.wait(h, timeout=600)
    rep = json.loads(out.strip().splitlines()[-1])
    sh(tb, 1, f"{crx} kill {cid} KILL; sleep 1; {crx} delete -f {cid}")
    return rep["downtime_seconds"], total


def runc_way(tb, mib, cid):
    set_size(tb, 0, mib, cid)
    set_size(tb, 1, mib, cid)
    sh(tb, 0, f"cd /tmp/bundle && runc run -d {cid} </dev/null >/dev/null 2>&1")
    time.sleep(3)
    t = time.monotonic()
    sh(tb, 0, f"runc checkpoint --image-path /tmp/img-{cid} {cid}")
    sh(tb, 0, f"tar -C /tmp/img-{cid} -cf /tmp/img-{cid}.tar .")
    h = tb.spawn(1, COPY_RECV.format(port=PORT + 2, path=f"/tmp/img-{cid}.tar"))
    time.sleep(1)
    sh(tb, 0, COPY_SEND.format(ip=tb.ip(1), port=PORT + 2, path=f"/tmp/img-{cid}.tar"))
    tb.wait(h, timeout=600)
    sh(tb, 1, f"mkdir -p /tmp/img-{cid} && tar -C /tmp/img-{cid} -xf /tmp/img-{cid}.tar && "
              f"cd /tmp/bundle && runc restore -d --image-path /tmp/img-{cid} {cid} "
              "</dev/null >/dev/null 2>&1")
    total = time.monotonic() - t
    sh(tb, 1, f"runc kill {cid} KILL; sleep 1; runc delete -f {cid}")
    sh(tb, 0, f"rm -rf /tmp/img-{cid} /tmp/img-{cid}.tar")
    sh(tb, 1, f"rm -rf /tmp/img-{cid} /tmp/img-{cid}.tar")
    return total, total  # the container is stopped from checkpoint to restore


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,64,256")
    ap.add_argument("--build", default=os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build")))
    a = ap.parse_args()
    crx = os.path.join(a.build, "crx")
    sizes = [int(x) for x in a.sizes.split(",")]
    with Testbed(2, rxe=False, memory_mb=max(768, 3 * max(sizes) + 512)) as tb:
        tb.start()
        b = make_bundle(tb.scratch, crx)
        for k in (0, 1):
            sh(tb, k, f"cp -a {b} /tmp/bundle && printf %s {KEY} > /tmp/key && chmod 600 /tmp/key")
        bw = link_bandwidth(tb)
        rows = []
        for mib in sizes:  # interleaved: crx, runc, for each size
            cd, ct = crx_way(tb, crx, mib, f"crx{mib}")
            rd, rt = runc_way(tb, mib, f"runc{mib}")
            limit = (mib << 20) / bw
            rows.append((mib, cd, rd, ct, rt, limit))
            print(f"{mib} MiB: crx downtime {cd:.2f}s total {ct:.2f}s; runc-way {rd:.2f}s; "
                  f"limit {limit:.2f}s", flush=True)
    print(f"\nlink bandwidth between the guests: {bw / 1e6:.1f} MB/s\n")
    print("| memory | crx downtime | runc-way downtime | ratio | crx total | "
          "runc-way total | limit (mem/bw) | crx total / limit |")
    print("|---|---|---|---|---|---|---|---|")
    for mib, cd, rd, ct, rt, limit in rows:
        print(f"| {mib} MiB | {cd:.2f} s | {rd:.2f} s | {cd / rd:.2f} | {ct:.2f} s | "
              f"{rt:.2f} s | {limit:.2f} s | {ct / limit:.2f} |")


if __name__ == "__main__":
    main()
