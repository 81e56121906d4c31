#!/usr/bin/python3
"""crx migrate --lazy (post-copy) between two guests, real CRIU 3.17.1 and
userfaultfd in Debian's 6.1 kernel.

The container is dirtier.c in "idle" mode over MIB MiB: it writes every
page once (its index in the first 8 bytes), then checks every page over
and over, so after the resume it touches all of its memory (each first
touch of a page not yet there is a fault CRIU's lazy-pages daemon serves on
demand) and a page that arrived wrong, or as zeros, makes it log BAD and
exit.

MIB is 32 by default (CI): CRIU 3.17's lazy-pages daemon moves about
0.6-0.9 MiB/s under TCG, so the issue's 256 MiB (CRX_VM_LAZY_MIB=256) make
a lazy phase of about 5 min; that run's result is in
runtime/migrate/README.md ("Post-copy")."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from test_migrate import (CRX, DIRTIER, KEY, Base, Receiving,  # noqa: E402
                          make_bundle)
from vmtest import main, report_line, wait_for_count, wait_until  # noqa: E402

MIB = int(os.environ.get("CRX_VM_LAZY_MIB", "32"))


class LazyMigrateTest(Receiving, Base):
    guests = 2

    @classmethod
    def prepare(cls, tb):
        super().prepare(tb)
        b = make_bundle(tb.scratch, name="bundle-lazy",
                        script=f"exec /dirtier idle {MIB} /out/lazy.log")
        subprocess.run(["cc", "-O2", "-static", "-o", os.path.join(b, "rootfs", "dirtier"),
                        DIRTIER], check=True)
        cls.lazy_bundle = b

    def setUp(self):
        super().setUp()
        for k in (0, 1):
            self.sh(self.tb, k, f"cp -a {self.lazy_bundle} /tmp/bundle && "
                                f"printf %s {KEY} > /tmp/key && chmod 600 /tmp/key", timeout=600)

    def log(self):
        out = self.sh(self.tb, 0, f"cat {self.tb.scratch}/out/lazy.log 2>/dev/null || true")
        self.assertNotIn("BAD", out, "the memory is not what the container wrote")
        return [int(x) for x in out.split()]

    def start_dirtier(self):
        self.sh(self.tb, 0, f"{CRX} run -d -b /tmp/bundle c1 </dev/null >/dev/null 2>&1",
                timeout=300)
        # Counting: all MIB MiB written once and checked at least once.
        wait_for_count(self.log, 3, 300)

    def one_copy_counting_on_g1(self):
        """Exactly one copy, on g1, counting on where it stopped with every
        page checked again (a BAD line fails self.log()); then removed."""
        tb = self.tb
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 1)[0], "running")
        c = self.log()
        after = wait_for_count(self.log, c[-1] + 3, 300)
        self.assertEqual(after, list(range(len(after))), "the count restarted or skipped")
        self.sh(tb, 1, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)

    def migrate_to(self, rh, flags):
        """`crx migrate c1 <flags>` to the receiver rh, both exiting 0: the
        sender's and the receiver's JSON reports."""
        rc, out, err = self.migrate(self.tb, flags)
        rrc, rout, rerr = self.tb.wait(rh, timeout=900)
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        report = json.loads(out.strip().splitlines()[-1])
        print("sender report:", report_line(report), flush=True)
        self.receiver_stderr = rerr
        return report, json.loads(rout.strip().splitlines()[-1])

    def test_lazy_memory_arrives_intact_and_downtime_does_not_carry_it(self):
        tb = self.tb
        self.start_dirtier()
        report, rreport = self.migrate_to(self.start_receiver(tb), "--lazy")
        print("lazy phase:", json.dumps(report.get("lazy")), flush=True)
        self.assertEqual(report["outcome"], "migrated")
        self.assertEqual(report["security"], "tls+ktls")
        # One final round without the heap: it came in the lazy phase, after
        # the resume, fetched on demand and pushed in the background.
        rounds = report["rounds"]
        self.assertEqual(len(rounds), 1, rounds)
        self.assertLess(rounds[0]["page_bytes"], min(16, MIB // 4) << 20, rounds)
        # The lazy dump's choices are reported as the final dump's are.
        self.assertTrue(rounds[0].get("cgroup_left_to_destination"), rounds[0])
        lazy = report["lazy"]
        self.assertGreaterEqual(lazy["pages"] * 4096, (MIB - 1) << 20, lazy)
        self.assertGreater(lazy["on_demand_pages"], 0, lazy)
        self.assertGreater(lazy["pushed_pages"], 0, lazy)
        self.assertGreater(lazy["seconds"], 0, lazy)
        self.assertIn("lazy pages", [p["name"] for p in report["phases"]])
        self.assertEqual(rreport["lazy"]["pages"], lazy["pages"])
        self.one_copy_counting_on_g1()

    def test_pages_filled_after_the_resume_arrive_intact(self):
        """runtime/migrate/README.md, "Pages filled after the resume": a
        pre-copy migration whose destination resumes the container before
        the pages the rounds brought are copied in; CRIU's lazy-pages daemon
        fills them from the images there. The dirtier checks every page
        again after the move, and the source goes only once all are in."""
        tb = self.tb
        self.start_dirtier()
        self.sh(tb, 1, "printf 'migration:\\n  fill_after_resume: always\\n' > /tmp/fill.yaml")
        report, rreport = self.migrate_to(
            self.start_receiver(tb, flags="--config /tmp/fill.yaml"), "--pre-copy 1")
        print("fill:", json.dumps(report.get("fill_after_resume")), flush=True)
        self.assertEqual(report["outcome"], "migrated")
        # The memory crossed in the pre-copy round, before the freeze ...
        rounds = report["rounds"]
        self.assertEqual(len(rounds), 2, rounds)
        self.assertGreaterEqual(rounds[0]["page_bytes"], (MIB - 1) << 20, rounds)
        # ... and went into the tasks after the resume, from g1's images.
        fill = report["fill_after_resume"]
        self.assertGreaterEqual(fill["pages"] * 4096, (MIB - 1) << 20, fill)
        # Its daemon was started when the final round opened, before the
        # freeze, and let go once the images came: a fall-back to starting
        # it in the window, or to copying every page, is a warning.
        self.assertNotIn("warning:", self.receiver_stderr)
        self.assertNotIn("lazy", report)
        names = [p["name"] for p in report["phases"]]
        self.assertLess(names.index("commit"), names.index("fill after resume"), names)
        self.assertLess(names.index("fill after resume"), names.index("destroy source"), names)
        self.assertEqual(rreport["fill_after_resume"]["pages"], fill["pages"])
        # CRIU's restore copied no page of the heap: the daemon did.
        self.assertLess(rreport["criu_restore"]["pages_restored"] * 4096, MIB << 19,
                        rreport["criu_restore"])
        self.assertEqual(tb.run(1, "pgrep -x criu")[0], 1, "criu left running on the destination")
        self.one_copy_counting_on_g1()

    def test_link_lost_in_the_lazy_phase_kills_the_destination_copy_keeps_the_source_frozen(self):
        """README.md, "Post-copy": the destination's copy runs without part
        of its memory; when the link dies it is killed (before CRIU's daemon
        lets go of its userfaultfd, so no page reads as zeros: no BAD), and
        the source stays frozen as it was at the freeze, never resumed by
        crx. `crx resume` there brings it back from that point."""
        tb = self.tb
        self.start_dirtier()
        # A slow link from the source keeps the lazy phase going for minutes.
        rh, mh = self.slow_link_migration(tb, "8mbit", "32kb", "--lazy")
        log = self.RECEIVER_LOG
        self.wait_for_receiver_phase(tb, log, "lazy pages", timeout=600)
        time.sleep(3)  # it runs on g1 and faults its pages in
        self.sh(tb, 1, "ip link set eth0 down")
        rc, out, err = tb.wait(mh, timeout=600)
        rrc, _, _ = tb.wait(rh, timeout=600)
        rlog = self.sh(tb, 1, f"cat {log}")
        print("sender:", out, err, "receiver:", rlog, sep="\n", flush=True)
        self.sh(tb, 1, "ip link set eth0 up")
        self.assertNotEqual(rc, 0)
        report = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(report["outcome"], "lazy phase failed", report.get("error"))
        self.assertIn("crx resume c1", report["error"])
        self.assertNotEqual(rrc, 0)
        self.assertIn("lazy phase failed", rlog)
        # The destination's copy is gone, and it never read a missing page
        # as zeros (self.log() fails on BAD).
        self.assertIsNone(self.state(tb, 1)[0])
        self.assertEqual(tb.run(1, "pgrep -x criu")[0], 1, "criu left running on the destination")
        self.log()
        # The source: there, frozen, not counting.
        self.assertIsNotNone(self.state(tb, 0)[0])
        before = self.log()
        time.sleep(2)
        self.assertEqual(self.log(), before, "the source must stay frozen")
        # The operator's choice: resume it from the freeze.
        self.sh(tb, 0, "tc qdisc del dev eth0 root 2>/dev/null; true")
        self.sh(tb, 0, f"{CRX} resume c1")
        wait_until(lambda: len(self.log()) > len(before) + 3, 300, "the resumed source to count")
        self.sh(tb, 0, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)


if __name__ == "__main__":
    main()
