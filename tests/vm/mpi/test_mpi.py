#!/usr/bin/python3
"""Open MPI + UCX over RC on rxe, one rank per crx container on three guests
(label vm, ctest vm_mpi), and rank 0 of a running job moved to a fourth
guest and back.

The bed is the RDMA bed of tests/vm/rdma (crx's rdma_rxe from rxe-patches,
`crx rdma setup` with disjoint QPN/MR ranges per guest), in smaller guests.
Every guest runs `crx-mpi-agent serve`; mpirun on g0 launches through
`crx-mpi-agent rsh` (bundles/mpi/README.md): rank hosts r0, r1, r2 on
g0, g1, g2, each a crx container holding its orted and its rank, in its own
network namespace with its own address (routed veth from the guest). The ranks talk UCX rc_verbs (ud_verbs for
wire-up) on rxe0. Checked: mpi-probe's payloads all arrive intact, eager
and rendezvous sizes; mpi-jacobi's checksum equals the one of a run of the
same binary on the host over shared memory/TCP; every rank ran in its own
container (processor names r0..r2); the containers and addresses are gone
afterwards. Each guest's QPs are printed while the job runs (what else
the job holds, TCP connections, GIDs: bundles/mpi/README.md); each rank's orted reaches mpirun from the rank's
own address (its container's network namespace), the connection that has
to move with the rank.

A fourth guest, g3, runs no rank at launch: it is where rank 0 moves
(`crx-mpi-agent move r0 --to g3`, crx migrate --tcp-established of its
container, its address and namespace re-made on g3) while mpi-jacobi runs;
the job must finish with the unmigrated checksum. Over UCX's TCP transport
(the rank's TCP connections to its peers move with its address; with
CRX_VM_MPI_ALL=1) and over UCX rc_v on rxe (RC QPs plus the UD QP of
UCX's wire-up and its address handles), there and back in one run; there every 100th iteration also
sends a 512 KiB block to each neighbour, above UCX's rendezvous threshold,
so that eager (halo rows), rendezvous (RDMA read/write of the blocks) and
collective traffic all cross the moves. The bed itself: mpi_bed.py, shared
with tests/bench/mpi."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_bed import (RANKS, UCX_ENV, UCX_TCP_ENV, MpiBed, host_reference,  # noqa: E402
                     missing, rank_address)
from vmtest import VmTestCase, main, report_line, wait_until  # noqa: E402

# Kills the receiver and its criu mid-restore (how: the script's header).
KILL_MID_RESTORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "rdma",
                                "kill-mid-restore.sh")
# Move rank 0 once the job is this far (of JACOBI_ARGS' --iters).
MOVE_AT_ITER = int(os.environ.get("CRX_VM_MPI_MOVE_AT", "500"))
MOVE_BACK_AT_ITER = int(os.environ.get("CRX_VM_MPI_MOVE_BACK_AT", "1250"))
# in rank 0's container (its own /tmp, which moves with it): mpi-jacobi --hold
HOLD_FILE = "/tmp/jacobi-release"
# The kernel: tens of seconds under TCG (about 13 ms per iteration with
# three guests on two cores), halo rows of 2 KiB (eager).
JACOBI_ARGS = os.environ.get("CRX_VM_MPI_JACOBI", "--n 256 --iters 2500 --check 10 --progress 250")
# With a move: every 100 iterations also 512 KiB to each neighbour, above
# UCX's rendezvous threshold (checked: 394325 bytes for tag sends over
# rc_v on rxe0, ucx_info; below it UCX sends eagerly, zero-copy), so that
# rendezvous transfers (RDMA read/write of the sender's buffer) run across
# the move.
BULK = 524288
BULK_EVERY = 100
BULK_ARGS = f"--bulk {BULK} --bulk-every {BULK_EVERY}"
PROBE_MAX = 1048576
# The default run (CI's) moves ranks over RC only: the cases. The
# move of a rank over UCX's TCP transport (test_3, about two minutes under
# TCG) runs with CRX_VM_MPI_ALL=1; what it moves beyond the RC cases (the
# rank's TCP connections to its peers) is the kind of connection that the
# OOB links of every move and tests/vm/migrate's TcpMigrateTest carry too.
ALL = os.environ.get("CRX_VM_MPI_ALL") == "1"
PROBE_ARGS = f"--max-size {PROBE_MAX} --reps 4 --window 4"


class MpiTest(VmTestCase):
    bed = None

    @classmethod
    def setUpClass(cls):
        why = missing()
        if why:
            raise unittest.SkipTest(why)
        t = time.monotonic()
        cls.reference = host_reference(JACOBI_ARGS)
        print(f"host reference ({time.monotonic() - t:.1f} s): {cls.reference}", flush=True)
        cls.bed = MpiBed()
        cls.tb = cls.bed.tb
        try:
            cls.rndv = cls.bed.rndv_threshold()
        except BaseException:
            cls.bed.close()
            raise
        print(f"UCX rc_v on rxe0: tag sends of {cls.rndv} bytes and more take the rendezvous "
              f"protocol", flush=True)

    @classmethod
    def tearDownClass(cls):
        if cls.bed:
            cls.bed.close()

    def mpirun(self, prog, args, tag, during=None, ucx=UCX_ENV):
        """The bed's mpirun; fails unless it exits 0 with a summary.
        Returns (summary, mpirun's seconds)."""
        rc, res, took = self.bed.mpirun(prog, args, tag, during, ucx)
        out, err = self.bed.read(f"{tag}.out"), self.bed.read(f"{tag}.err")
        print(f"{tag}: mpirun {prog} took {took:.1f} s (rc {rc})\n{out}{err[-1500:]}", flush=True)
        self.assertEqual(rc, 0, f"mpirun {prog} failed:\n{out}\n{err}\n{self.bed.logs()}")
        self.assertIsNotNone(res, f"no summary from {prog}:\n{out}\n{err}")
        return res, took

    def snapshot(self, tag):
        """While mpi-jacobi runs (as tag): every guest's QPs, printed in one line (the
        whole listing, with TCP, GIDs and threads, only when a check fails);
        checks that every rank's OOB connection to mpirun starts at the
        rank's own address."""
        def rc_qps(k):
            # a rank's QPs are named after the thread that made them: the
            # program's main thread or UCX's "async" thread (lazy wire-up)
            if os.path.exists(os.path.join(self.tb.scratch, f"{tag}.done")):
                raise AssertionError(f"g{k}: no RC QPs of mpi-jacobi seen while it ran")
            rc, out, _ = self.tb.run(k, "rdma resource show qp | "
                                        "grep -cE 'type RC.*comm (mpi-jacobi|async)'")
            return rc == 0 and int(out.strip() or 0) >= 2
        for k in range(3):
            wait_until(lambda: rc_qps(k), 600, f"g{k}: RC QPs of mpi-jacobi", interval=1)
        # the three listings at once: each takes 10-25 s under TCG, and the
        # move waits for them
        t = time.monotonic()
        listings = {}
        for k in range(3):
            ns = f"crx-mpi-{RANKS[k]}"
            listings[k] = self.tb.spawn(
                k, f"echo '# QPs'; rdma resource show qp | grep -v GSI; "
                   f"echo '# TCP in {ns}'; ip netns exec {ns} ss -tnpH; "
                   f"echo '# listening'; ip netns exec {ns} ss -tlnpH; "
                   "echo '# GIDs'; for g in 0 1 2 3; do echo $g $(cat "
                   "/sys/class/infiniband/rxe0/ports/1/gids/$g); done; "
                   "echo '# threads'; for p in $(pgrep mpi-jacobi) $(pgrep orted); do "
                   "echo $p $(cat /proc/$p/comm): $(cat /proc/$p/task/*/comm | tr '\\n' ' '); done; "
                   "echo '# memory'; free -m | sed -n 2p")
        for k in range(3):
            rc, out, err = self.tb.wait(listings[k], timeout=120)
            qps = [ln.split(" pid ")[0] for ln in out.splitlines() if ln.startswith("link ")]
            print(f"g{k} during mpi-jacobi ({time.monotonic() - t:.1f} s): "
                  f"{len(qps)} QPs: {'; '.join(q.split(' type ')[1] for q in qps)}", flush=True)
            oob = [ln for ln in out.splitlines() if ln.startswith("ESTAB") and '"orted"' in ln
                   and f" {self.tb.ip(0)}:" in ln]
            self.assertTrue(oob, f"g{k}: no OOB connection from the orted to mpirun:\n{out}{err}")
            for ln in oob:
                self.assertEqual(ln.split()[3].rsplit(":", 1)[0], rank_address(k),
                                 f"g{k}: the orted's connection must start at the rank's "
                                 f"address:\n{out}")

    def test_1_probe_eager_and_rendezvous(self):
        res, took = self.mpirun("mpi-probe", PROBE_ARGS, "probe")
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["errors"], 0)
        self.assertEqual(res["hosts"], RANKS, "one rank in each rank container")
        self.assertEqual([p["peer"] for p in res["pairs"]], [1, 2])
        for p in res["pairs"]:
            sizes = [x["size"] for x in p["sizes"]]
            # eager (small) and rendezvous (above UCX's threshold)
            self.assertEqual(sizes[0], 1)
            self.assertEqual(sizes[-1], PROBE_MAX)
        self.assertGreater(PROBE_MAX, self.rndv, "the largest probe must take UCX's rendezvous")
        self.bed.wait_gone()

    # -- rank 0 moves mid-run ----------------------------------------------------
    def jacobi_with_move(self, tag, ucx, back=False, args=JACOBI_ARGS, pre_copy=0, first=None):
        """mpi-jacobi (args) over the three ranks; rank 0 moves g0 -> g3 once
        the job passed MOVE_AT_ITER (with `pre_copy` rounds), and with `back`
        g3 -> g0 again once it passed MOVE_BACK_AT_ITER; `first` runs
        while the job does, before the first move. Rank 0 holds the job
        after its last iteration (--hold) until the moves are done and
        looked at: on a slow host a move can outlast the rest of the job. Returns (summary,
        mpirun seconds, move: the first move's record, the second's under
        "back")."""
        move = {}

        def one(rec, at, src, dst):
            rec["at"] = self.bed.wait_iter(tag, at)
            rec["qps_before"] = self.bed.qps(src)
            rec["rc"], rec["report"], rec["err"], rec["took"] = self.bed.move("r0", src, dst,
                                                                              pre_copy=pre_copy)
            rec["where"] = self.bed.where("mpi-r0")
            rec["ns_dst"] = self.tb.run(dst, "ip netns exec crx-mpi-r0 ss -tnpH; ip route; "
                                             "rdma resource show qp | grep -v GSI")[1]
            print(f"{tag}: moved r0 g{src} -> g{dst} at iteration {rec['at']} (rc {rec['rc']}, "
                  f"{rec['took']:.1f} s): {rec['err'].strip()}\n{report_line(rec['report'])}\n"
                  f"QPs of rank 0 on g{src} before: {rec['qps_before']}; r0 now: {rec['where']}",
                  flush=True)

        def during():
            try:
                if first:
                    first()
                one(move, MOVE_AT_ITER, 0, 3)
                if back and move["rc"] == 0:
                    move["back"] = {}
                    one(move["back"], MOVE_BACK_AT_ITER, 3, 0)
            finally:
                self.bed.release_hold("mpi-r0", HOLD_FILE)

        res, took = self.mpirun("mpi-jacobi", f"{args} --hold {HOLD_FILE}", tag, during=during,
                                ucx=ucx)
        return res, took, move

    def assert_moved(self, move, dst):
        self.assertEqual(move["rc"], 0, f"crx-mpi-agent move failed: {move['err']}\n{self.bed.logs()}")
        self.assertEqual(move["report"]["outcome"], "migrated", move["report"])
        # The final dump ran on the CRIU whose request went before the
        # freeze: what the rank showed then (its namespaces, the verbs
        # plugin, the libraries) was what it showed frozen
        # (runtime/migrate/README.md, "The final dump's request sent
        # before the freeze").
        final = move["report"]["rounds"][-1]
        self.assertTrue(final.get("final") and final.get("dump_request_ahead"), final)
        self.assertEqual(move["where"], {dst: "running"}, f"rank 0's container runs on g{dst} only")
        self.assertIn(rank_address(0), move["ns_dst"],
                      f"rank 0's address moved to g{dst}:\n{move['ns_dst']}")

    def assert_moved_run(self, res, move):
        self.assert_moved(move, 3)
        if "back" in move:
            self.assert_moved(move["back"], 0)
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["mismatches"], 0)
        self.assertEqual(res["hosts"], RANKS, "one rank in each rank container")
        self.assertEqual(res["checksum"], self.reference["checksum"],
                         "a migrated run must give the unmigrated run's grid bit for bit")

    @unittest.skipUnless(ALL, "UCX over TCP moved (CRX_VM_MPI_ALL=1 runs it)")
    def test_3_jacobi_over_tcp_rank0_moves_to_g3(self):
        """UCX over TCP between the ranks' own addresses: rank 0's container
        (orted, rank, its TCP connections to mpirun and to both peers) moves
        g0 -> g3 mid-run with its address; the job finishes right. (No
        unmigrated TCP run beside it: the checksum to meet is the host
        run's, and the job's delay is tests/bench/mpi's to measure.)
        With one pre-copy round, as an operator moving a TCP rank would:
        UCX's TCP keepalive resets an idle connection after about 18 s
        of silence (bundles/mpi/README.md, "Timers"), and the single final
        round of this rank's pages took 17-23 s on a loaded 2-core host."""
        res, took, move = self.jacobi_with_move("jacobi-tcp-moved", UCX_TCP_ENV, pre_copy=1)
        self.assert_moved_run(res, move)
        rep = move["report"]
        print(f"jacobi over tcp: migrated in {took:.1f} s, downtime "
              f"{rep.get('downtime_seconds', 0):.2f} s, move {move['took']:.1f} s", flush=True)
        self.bed.wait_gone()

    def test_4_jacobi_over_rc_rank0_moves_to_g3_and_back(self):
        """UCX rc_v on rxe: rank 0 moves g0 -> g3 mid-run and later
        g3 -> g0, each time with its RC QPs, the UD QP of UCX's wire-up and
        its address handles; the job finishes with the host run's checksum
        (bit for bit: UCX/rxe in containers computes the host's grid, and
        the moves lose nothing) and no rank reports an error. Eager (halo
        rows), collectives (allreduce, reduce) and rendezvous (the bulk
        blocks) run across both moves."""
        self.assertGreater(BULK, self.rndv, "the bulk blocks must take UCX's rendezvous path")
        res, took, move = self.jacobi_with_move("jacobi-rc-moved", UCX_ENV, back=True,
                                                args=f"{JACOBI_ARGS} {BULK_ARGS}")
        self.assert_moved_run(res, move)
        self.assertTrue(res["verified"], res)
        self.assertEqual((res["n"], res["iters"], res["ranks"]),
                         (self.reference["n"], self.reference["iters"], 3))
        err = self.bed.read("jacobi-rc-moved.err")
        self.assertIn('"progress"', err)
        self.assertIn('"hold"', err, "rank 0 held the job until the moves were looked at")
        self.assertEqual((res["bulk"]["bytes"], res["bulk"]["errors"]), (BULK, 0), res)
        self.assertEqual(res["bulk"]["exchanges"], res["iters"] // BULK_EVERY, res)
        for m in (move, move["back"]):
            objects = m["report"]["verbs"]["objects"]
            self.assertGreaterEqual(objects.get("ah", 0), 1, "UCX's UD wire-up AHs moved")
            self.assertIn("UD", [t for t, _ in m["qps_before"]])
            # UCX's registered pools are faulted in zeroed and mostly stay
            # so: those pages cross as their count (zero_runs.hpp)
            final = m["report"]["rounds"][-1]
            self.assertGreater(final.get("zero_page_bytes", 0), 1 << 20, final)
        reps = [move["report"], move["back"]["report"]]
        print(f"jacobi over rc: migrated twice in {took:.1f} s, downtime "
              + ", ".join(f"{r.get('downtime_seconds', 0):.2f} s" for r in reps)
              + f", moves {move['took']:.1f} s and {move['back']['took']:.1f} s", flush=True)
        self.bed.wait_gone()

    def test_5_rank_keeps_running_when_the_destination_dies_mid_restore(self):
        """The receiver on g3 and its criu are killed while they restore
        rank 0 (tests/vm/rdma/kill-mid-restore.sh): the move fails, rank 0
        runs on at g0 with its QPs resumed, and the job finishes right.
        Before the move, the job's QPs and OOB connections are checked where
        the launch put them (snapshot: here, where a late move costs
        nothing, not in test_4, whose move back must come before the job
        ends; a run of its own took a minute of the vm label)."""
        killer = self.tb.spawn(3, f"sh {KILL_MID_RESTORE}")
        try:
            res, took, move = self.jacobi_with_move("jacobi-rc-killed", UCX_ENV,
                                                    args=f"{JACOBI_ARGS} {BULK_ARGS}",
                                                    first=lambda: self.snapshot("jacobi-rc-killed"))
        finally:
            krc, kout, kerr = self.tb.wait(killer, timeout=900)
        print(f"in g3 ({krc}): {kout}{kerr}", flush=True)
        self.assertEqual(krc, 0, f"the receiver was not killed mid-restore: {kerr}")
        self.assertNotEqual(move["rc"], 0, f"the move must fail: {move['report']}")
        self.assertEqual(move["where"], {0: "running"}, "rank 0 runs on at g0 only")
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["mismatches"], 0)
        self.assertEqual(res["bulk"]["errors"], 0, res)
        self.assertEqual(res["checksum"], self.reference["checksum"])
        self.bed.wait_gone()


if __name__ == "__main__":
    main()
