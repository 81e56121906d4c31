#!/usr/bin/python3
"""End to end: crx checkpoints, restores and migrates a container that holds
live RC queue pairs (issue 11).

One test bed of three guests for every case (the vm label's time budget):
N0 = g0 the source, N1 = g1 the partner, N2 = g2 the destination. Each
guest boots with rxe-patches' rdma_rxe in its modules tree but without rxe
loaded; `crx rdma setup` loads it with the node's QPN/MR-index range from
/etc/crx/config.yaml (disjoint ranges, so restored numbers never clash) and
adds rxe0 on eth0.

The container is bundles/rdma-seq: a crx-verbs-seq receiver whose JSON
summary goes to /out (a bind mount of the test bed's scratch dir, so the
host reads it wherever the container runs). The partner is a plain
crx-verbs-seq sender on g1 running ~30 s; both must end ok, and the
receiver's checker proves every message arrived exactly once and in order.
Cases are numbered: unittest runs them in name order, on the same guests."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rdma_bed import BUILD, CRX, RdmaBedCase  # noqa: E402


class RdmaMigrateTest(RdmaBedCase):
    # -- cases ---------------------------------------------------------------
    def test_1_checkpoint_restore_under_traffic(self):
        cid, count = "seq1", 3000
        sender = self.start_pair(cid, 18601, count, 100)
        before = self.wait_progress(cid, 200)
        self.sh(self.tb, 0, f"{CRX} checkpoint --image-path /tmp/img-{cid} {cid} "
                            f"|| {{ tail -40 /tmp/img-{cid}/dump.log; exit 1; }}", timeout=600)
        self.assertIsNone(self.state(0, cid), "checkpoint without --leave-running removes it")
        self.assertEqual(self.sh(self.tb, 0, "pgrep -f '[c]rx-verbs-seq recv' || true").strip(), "")
        self.sh(self.tb, 0, f"{CRX} restore -d --image-path /tmp/img-{cid} "
                            f"-b {self.tb.scratch}/bundle-{cid} {cid} "
                            f"|| {{ tail -40 /tmp/img-{cid}/restore.log; exit 1; }}", timeout=600)
        self.assertEqual(self.state(0, cid), "running")
        print(self.sh(self.tb, 0, f"cat /tmp/img-{cid}/crx-verbs-*.json"), flush=True)
        self.wait_progress(cid, before + 100)
        self.finish(cid, sender, count)

    def test_2_migrate_there_and_back_under_traffic(self):
        cid, count = "seq2", 3000
        sender = self.start_pair(cid, 18602, count, 100)
        n = self.wait_progress(cid, 200)
        rep = self.migrate(cid, 0, 2)
        self.assertEqual(rep["verbs"]["objects"]["qp"], 1, f"the report's verbs part: {rep}")
        n = self.wait_progress(cid, n + 100)
        self.migrate(cid, 2, 0)
        self.wait_progress(cid, n + 100)
        self.finish(cid, sender, count)

    def migrate_once(self, cid, port, qps, recv_args):
        count = 3200 // qps
        sender = self.start_pair(cid, port, count, 100, f"--qps {qps}", recv_args)
        n = self.wait_progress(cid, 200)
        rep = self.migrate(cid, 0, 2)
        self.assertEqual(rep["verbs"]["objects"]["qp"], qps, rep)
        self.wait_progress(cid, n + 100)
        self.finish(cid, sender, count, qps=qps, k=2)

    def test_3a_sixteen_qps_migrate(self):
        self.migrate_once("seq3a", 18631, 16, "")

    def test_3b_sixteen_qps_on_an_srq_migrate(self):
        self.migrate_once("seq3b", 18632, 16, "--srq")

    def assert_source_carries_on(self, cid, rc, out, err, rlog):
        """After a failed migration: one copy, running on g0, counting on."""
        print(f"crx migrate ({rc}):\n{out}{err}\nreceiver:\n{rlog}", flush=True)
        self.assertNotEqual(rc, 0, "the migration must fail")
        self.assertEqual(self.state(0, cid), "running", "the source must run on")
        self.assertIsNone(self.state(2, cid), "no copy on the destination")

    def test_4_destination_without_patched_module_is_refused(self):
        cid, count = "seq4", 2000
        # g2 gets Debian's stock rdma_rxe (kept beside the patched one by
        # rxe-patches/build.sh), which crx rdma setup must refuse too
        stock = "/lib/modules/$(uname -r)/stock/rdma_rxe.ko.stock"
        swap = ("rdma link delete rxe0 && rmmod rdma_rxe && insmod {mod} && "
                "rdma link add rxe0 type rxe netdev eth0")
        self.sh(self.tb, 2, swap.format(mod=stock))
        try:
            rc, out, err = self.tb.run(2, f"{CRX} rdma setup")
            self.assertNotEqual(rc, 0, f"crx rdma setup took the stock module:\n{out}{err}")
            self.assertIn("not crx's patched module", err)
            sender = self.start_pair(cid, 18604, count, 100)
            n = self.wait_progress(cid, 200)
            rc, out, err, rrc, rlog, took = self.try_migrate(cid, 0, 2)
            self.assert_source_carries_on(cid, rc, out, err, rlog)
            errors = [line for line in err.splitlines() if line.strip()]
            self.assertEqual(len(errors), 1, f"one line: {err}")
            self.assertIn("rdma_rxe", errors[0])
            self.assertNotIn("freeze", out + err, "refused before the freeze")
            self.wait_progress(cid, n + 100)
        finally:
            print(self.sh(self.tb, 2, "rdma link delete rxe0; rmmod rdma_rxe; "
                                      f"{CRX} rdma setup && {CRX} rdma status"), flush=True)
        self.finish(cid, sender, count)

    def test_5_failed_restore_on_the_destination_rolls_back(self):
        """The destination's CRIU finds no plugin (its dir hidden under an
        empty tmpfs in g2 only): its restore fails after the source was
        frozen and dumped; the source's QPs resume, it thaws, the partner
        completes."""
        cid, count = "seq5", 3000
        plugins = os.path.join(BUILD, "criu-plugins")
        self.sh(self.tb, 2, f"mount -t tmpfs none {plugins}")
        try:
            sender = self.start_pair(cid, 18605, count, 100)
            n = self.wait_progress(cid, 200)
            rc, out, err, rrc, rlog, took = self.try_migrate(cid, 0, 2)
            self.assert_source_carries_on(cid, rc, out, err, rlog)
            self.assertIn("rolled back", (out + err).lower())
            report = json.loads(out.strip().splitlines()[-1])
            phases = [p["name"] for p in report["phases"]]
            self.assertIn("freeze", phases, "it must fail in the restore, after the freeze")
            self.assertIn("restore", report.get("error", "") + err, report)
        finally:
            self.sh(self.tb, 2, f"umount {plugins}")
        self.wait_progress(cid, n + 100)
        self.finish(cid, sender, count)


if __name__ == "__main__":
    unittest.main(verbosity=2)
