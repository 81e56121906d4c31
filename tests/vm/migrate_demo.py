#!/usr/bin/python3
"""The README's run demo: a busybox container counting into a shared file
moves from guest g0 to guest g1 with `crx migrate`; both reports are printed
and the count goes on where it stopped.  Usage: migrate_demo.py BUILD_DIR"""
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
os.environ["CRX_BUILD_DIR"] = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
sys.path[:0] = [here, os.path.join(here, "migrate")]
import test_migrate as tm  # noqa: E402  (bundle recipe, key, port)
from testbed import Testbed  # noqa: E402


def run(tb, k, cmd, timeout=300):
    rc, out, err = tb.run(k, cmd, timeout=timeout)
    if rc != 0:
        sys.exit(f"{tb.name(k)}: `{cmd}` failed ({rc}):\n{out}\n{err}")
    return out


def counts(tb):
    return [int(x) for x in run(tb, 0, f"cat {tb.scratch}/out/count.log 2>/dev/null || true").split()]


def main():
    print("booting two guests (qemu, TCG: this takes a while)...", flush=True)
    with Testbed(2, rxe=False) as tb:
        bundle = tm.make_bundle(tb.scratch)
        for k in (0, 1):
            run(tb, k, f"cp -a {bundle} /tmp/bundle && printf %s {tm.KEY} > /tmp/key && chmod 600 /tmp/key")
        run(tb, 0, f"{tm.CRX} run -d -b /tmp/bundle counter </dev/null >/dev/null 2>&1")
        while len(counts(tb)) < 5:
            time.sleep(0.5)
        print(f"g0: container 'counter' is counting: ... {counts(tb)[-3:]}", flush=True)
        receiver = tb.spawn(1, f"{tm.CRX} receive --listen 0.0.0.0:{tm.PORT} --key /tmp/key --once "
                               "--image-dir /run/crx-migrate")
        while tb.run(1, f"grep -q ':{tm.PORT:04X} ' /proc/net/tcp")[0] != 0:
            time.sleep(0.5)
        print(f"g1: crx receive listening on {tb.ip(1)}:{tm.PORT}", flush=True)
        out = run(tb, 0, f"{tm.CRX} migrate counter --to {tb.ip(1)}:{tm.PORT} --key /tmp/key --pre-copy 2 2>&1",
                  timeout=900)
        print("--- sender (g0) report:\n" + out, flush=True)
        rc, rout, rerr = tb.wait(receiver, timeout=300)
        print("--- receiver (g1) report:\n" + rout + rerr, flush=True)
        before = counts(tb)[-1]
        while counts(tb)[-1] < before + 3:
            time.sleep(0.5)
        c = counts(tb)
        status = json.loads(run(tb, 1, f"{tm.CRX} state counter"))["status"]
        print(f"g1: container 'counter' is {status}; the count went on: ... {c[-4:]}; "
              f"gaps or restarts: {'none' if c == list(range(len(c))) else 'YES'}", flush=True)
        run(tb, 1, f"{tm.CRX} delete -f counter")


if __name__ == "__main__":
    main()
