#!/usr/bin/python3
"""Migration time and downtime with TLS (the default) and with
--insecure-plaintext on the same pair of guests, interleaved: g0 -> g1 with
TLS, back with clear text, and so on (CRX_MEASURE_RUNS pairs, default 1).
Prints one line per migration and the ratios; no asserts on time (a
measurement, not a ctest case; runtime/migrate/README.md has the numbers).

  flock /tmp/crx-vm.lock python3 tests/vm/migrate/measure_tls.py"""
import json
import os
import sys
import time

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmtest import main  # noqa: E402
from test_migrate import COUNTER, CRX, PORT, Base, make_bundle  # noqa: E402

# The counter, holding 16 MB of non-zero memory (pages CRIU must send).
FILLED = "x=$(yes abcdefgh | head -c 16000000); " + COUNTER


class MeasureTls(Base):
    def migrate_once(self, tb, src, dst, extra):
        h = tb.spawn(dst, f"{CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                          f"--image-dir /run/crx-migrate --format json {extra}")
        while tb.run(dst, f"grep -q ':{PORT:04X} ' /proc/net/tcp")[0] != 0:
            time.sleep(0.3)
        rc, out, err = tb.run(src, f"{CRX} migrate c1 --to {tb.ip(dst)}:{PORT} --key /tmp/key "
                                   f"--format json {extra}", timeout=900)
        rrc, rout, rerr = tb.wait(h, timeout=300)
        self.assertEqual(rc, 0, f"{out}\n{err}\n{rerr}")
        return json.loads(out.strip().splitlines()[-1])

    def test_tls_against_clear_text(self):
        tb = self.boot(2, rxe=False)
        b = make_bundle(tb.scratch, script=FILLED)
        self.setup_guest(tb, 0, b)
        self.setup_guest(tb, 1, b)
        self.run_counter(tb)
        runs = int(os.environ.get("CRX_MEASURE_RUNS", "1"))
        results = {"tls": [], "plaintext": []}
        where = 0
        for _ in range(runs):
            for mode, extra in (("tls", ""), ("plaintext", "--insecure-plaintext")):
                r = self.migrate_once(tb, where, 1 - where, extra)
                where = 1 - where
                results[mode].append(r)
                print(f"{mode:9s} security={r.get('security')} total={r['total_seconds']:.3f} s "
                      f"downtime={r['downtime_seconds']:.3f} s pages={r['bytes']['pages']} "
                      f"images={r['bytes']['images']}", flush=True)
        for key in ("total_seconds", "downtime_seconds"):
            t = sum(r[key] for r in results["tls"]) / runs
            p = sum(r[key] for r in results["plaintext"]) / runs
            print(f"{key}: tls {t:.3f} s, plaintext {p:.3f} s, ratio {t / p:.2f}", flush=True)


if __name__ == "__main__":
    main()
