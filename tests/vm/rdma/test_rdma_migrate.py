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
Cases are numbered: unittest runs them in name order, on the same guests.

CRX_VM_RDMA_MIGRATIONS (default 4) sets how many migrations in a row
test_7 makes; README.md beside this file records a run with 20."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rdma_bed import BUILD, CRX, MPORT, RECV_MODE, SEQ, RdmaBedCase  # noqa: E402
from vmtest import main, wait_until  # noqa: E402

MIGRATIONS = int(os.environ.get("CRX_VM_RDMA_MIGRATIONS", "4"))
# CRX_VM_RDMA_RXE_DEBUG=1: test_10 turns on rxe's debug messages on the
# partner and the destination and prints them if it fails
RXE_DEBUG = os.environ.get("CRX_VM_RDMA_RXE_DEBUG") == "1"
# A small retry budget for test_9: local ack timeout 4.096 us * 2^16 =
# 268 ms and three retries, so ~1.07 s without an ack exhausts it (test_9a
# shows it does), against a migration of 10 s and more. Smaller does not
# hold on the TCG bed, whose guests answer late when the host's two cores
# are busy: with --timeout 8 (one jiffy, 4 ms) the sender ran out of
# retries while CRIU pre-dumped its live peer; with --timeout 14
# --retry-cnt 1 (0.13 s) it did so once when a compile loaded the host
# (2026-11-28, before the freeze, no pause involved); with --timeout 15
# --retry-cnt 3 (0.54 s) once in CI (2026-12-03). Under two busy loops
# on the host the partner's timeouts outnumber its RNR NAKs (32 to 17),
# unloaded they are about one per RNR NAK.
BUDGET = "--timeout 16 --retry-cnt 3"
BUDGET_S = 4 * 4.096e-6 * 2 ** 16


class RdmaMigrateTest(RdmaBedCase):
    # -- cases ---------------------------------------------------------------
    def test_1_checkpoint_restore_under_traffic(self):
        cid, count = "seq1", None
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
        # `crx restore` has its images from the start: no criu waits ahead
        # of them, so nothing is preloaded
        restored = json.loads(self.sh(self.tb, 0, f"cat /tmp/img-{cid}/crx-verbs-restore.json"))
        self.assertFalse(restored["providers_preloaded"], restored)
        self.wait_progress(cid, before + 100)
        self.finish(cid, sender, count)

    def test_2_migrate_there_and_back_under_traffic(self):
        # The receiver's verbs objects are made and used by a second thread
        # (as UCX's async thread does): CRIU gives every restored thread its
        # own struct cred and ib_uverbs refuses write() (the CQ's notify)
        # from a thread whose cred is not the file's, unless the plugin has
        # the threads share one (rxe-patches 0015, ADOPT_CRED's THREADS).
        # It polls only every 0.3 s, so completions wait in its CQ: the
        # plugin's image carries a CQ's live window only (cq_window.hpp),
        # and every message must still arrive once and in order. Moved
        # until a dump has found completions there (the report counts
        # them), at most three times.
        cid, count = "seq2", None
        sender = self.start_pair(cid, 18602, count, 100,
                                 recv_args="--worker-thread --poll-every 0.3")
        n = self.wait_progress(cid, 100)
        rep = self.migrate(cid, 0, 2)
        self.assertEqual(rep["verbs"]["objects"]["qp"], 1, f"the report's verbs part: {rep}")
        # the destination's part came back with CommitAck
        for key in ("dump_ms", "plugin_init_ms", "recreate_ms", "pin_ms", "resume_ms",
                    "image_bytes"):
            self.assertIn(key, rep["verbs"], f"the report's verbs part: {rep}")
        self.assertTrue(rep["verbs"]["restore_ok"], rep)
        # the receiver's criu, started while pre-copy ran, had the plugin
        # and libibverbs' providers loaded before the images came
        self.assertTrue(rep["verbs"]["providers_preloaded"], rep)
        # the plugin's fds sat just above CRIU's during the restore, not at
        # half the fd limit: the restored process's fd table stayed small
        # (it was 2^20 entries, 8 MiB; growing it cost 25-46 ms)
        fdsize = int(self.sh(self.tb, 2, f"p=$({CRX} state {cid} | sed -n "
                                         "'s/.*\"pid\": *\\([0-9]*\\).*/\\1/p'); "
                                         "awk '/^FDSize:/ {print $2}' /proc/$p/status"))
        print(f"restored process FDSize {fdsize}", flush=True)
        self.assertLess(fdsize, 4096, "the restored process's fd table")
        print("verbs times (ms): " + ", ".join(f"{k} {rep['verbs'][k]:.1f}" for k in (
            "dump_ms", "plugin_init_ms", "recreate_ms", "pin_ms", "resume_ms"))
              + f"; recreate by step: {rep['verbs']['recreate_parts_ms']}", flush=True)
        queued = [rep["verbs"]["completions_queued"]]
        n = self.wait_progress(cid, n + 50)
        rep = self.migrate(cid, 2, 0)
        queued.append(rep["verbs"]["completions_queued"])
        where = 0
        if not any(queued):  # both dumps came between a poll and the next completion
            n = self.wait_progress(cid, n + 50)
            queued.append(self.migrate(cid, 0, 2)["verbs"]["completions_queued"])
            where = 2
        print(f"completions queued at each dump: {queued}", flush=True)
        self.assertGreater(max(queued), 0, f"no dump found completions in the CQ: {queued}")
        self.wait_progress(cid, n + 50)
        self.finish(cid, sender, count, k=where)

    def migrate_once(self, cid, port, qps, recv_args):
        count = None
        sender = self.start_pair(cid, port, count, 100, f"--qps {qps}", recv_args)
        n = self.wait_progress(cid, 200)
        rep = self.migrate(cid, 0, 2)
        self.assertEqual(rep["verbs"]["objects"]["qp"], qps, rep)
        print(f"{qps} QPs: recreate {rep['verbs']['recreate_ms']:.1f} ms by step "
              f"{rep['verbs']['recreate_parts_ms']}", flush=True)
        self.wait_progress(cid, n + 100)
        self.finish(cid, sender, count, qps=qps, k=2)

    def test_3a_sixteen_qps_busy_polling_migrate(self):
        """The receiver polls its CQ instead of sleeping on its channel."""
        self.migrate_once("seq3a", 18631, 16, "--busy-poll")

    def test_3b_sixteen_qps_on_an_srq_migrate(self):
        self.migrate_once("seq3b", 18632, 16, "--srq")

    def test_4_destination_without_patched_module_is_refused(self):
        cid, count = "seq4", None
        # g2 gets Debian's stock rdma_rxe (kept beside the patched one by
        # rxe-patches/build.sh), which crx rdma setup must refuse too
        stock = "/lib/modules/$(uname -r)/stock/rdma_rxe.ko.stock"
        swap = ("rmmod rdma_rxe && insmod {mod} && "
                "rdma link add rxe0 type rxe netdev eth0")
        self.unlink_rxe(2)
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

    def unlink_rxe(self, k):
        """`rdma link delete rxe0` on gk, bounded: it waits for every user
        of the device to let go, and it hung once right after test_3b
        (2026-11-29, the guest killed at 120 s). If it does not finish in
        60 s, fail with what holds the device: the command's kernel stack,
        the verbs objects left, the processes with a uverbs file open."""
        # In the background and polled: a command stuck in the kernel does
        # not die of timeout(1)'s signals.
        rc, out, err = self.tb.run(k, "rdma link delete rxe0 & p=$!; for i in $(seq 60); do "
                                      "kill -0 $p 2>/dev/null || { wait $p; exit $?; }; sleep 1; "
                                      "done; exit 124", timeout=120)
        if rc == 0:
            return
        diag = self.tb.run(k, "for p in $(pgrep -x rdma); do echo rdma $p; cat /proc/$p/stack; done; "
                              "rdma resource show; ls -l /proc/[0-9]*/fd 2>/dev/null | grep -B99 uverbs "
                              "| grep -e '^/proc' -e uverbs; ps -eo pid,stat,wchan:32,cmd; "
                              "dmesg | tail -30", timeout=120)[1]
        self.fail(f"rdma link delete rxe0 on g{k} did not finish ({rc}): {out}{err}\n{diag}")

    def test_4b_lazy_is_refused_before_the_freeze(self):
        """crx migrate --lazy (post-copy) of a container with verbs objects:
        its pinned MRs must be in place before it resumes, which CRIU's lazy
        pages cannot order (runtime/migrate/README.md, "Post-copy"). One
        line, before anything is frozen; the source and its partner carry
        on untouched."""
        cid, count = "seq4b", None
        sender = self.start_pair(cid, 18614, count, 100)
        n = self.wait_progress(cid, 200)
        # A receiver listens on g2, so that a refusal that failed to happen
        # would go on to migrate. The source refuses before it connects:
        # the state is checked before the receiver is let go (try_migrate
        # would give a receiver that saw no sender a minute, in which this
        # 20 s run ends).
        log = "/tmp/receive-seq4b-2.log"
        rh = self.start_receive(2, log)
        rc, out, err = self.tb.run(0, f"{CRX} migrate {cid} --to {self.tb.ip(2)}:{MPORT} "
                                      "--key /tmp/key --format json --lazy", timeout=900)
        self.assert_source_carries_on(cid, rc, out, err, "(not read yet)")
        self.tb.kill(rh)
        self.tb.wait(rh, 30)
        rlog = self.tb.run(2, f"cat {log}")[1]
        heard = [line for line in rlog.splitlines() if line.strip() and "listening on" not in line]
        self.assertEqual(heard, [], f"the receiver heard from the sender:\n{rlog}")
        errors = [line for line in err.splitlines() if line.strip()]
        self.assertEqual(len(errors), 1, f"one line: {err}")
        self.assertIn("--lazy", errors[0])
        self.assertIn("verbs objects", errors[0])
        self.assertNotIn("freeze", out + err, "refused before the freeze")
        self.wait_progress(cid, n + 100)
        self.finish(cid, sender, count)

    def test_5_failed_restore_on_the_destination_rolls_back(self):
        """The destination's CRIU finds no plugin (its dir hidden under an
        empty tmpfs in g2 only): its restore fails after the source was
        frozen and dumped; the source's QPs resume, it thaws, the partner
        completes."""
        cid, count = "seq5", None
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

    def test_6_sixty_four_qps_migrate(self):
        self.migrate_once("seq6", 18606, 64, "")

    def test_7_many_migrations_in_a_row(self):
        """CRX_VM_RDMA_MIGRATIONS moves g0->g2->g0->... under one sender;
        traffic must progress after every move."""
        cid, moves, rate, port = "seq7", MIGRATIONS, 100, 18607
        # The sender runs until finish() ends it: a move takes 6 s here and
        # 11 s on a loaded CI host, where a sender sized for 8 s a move
        # ended before the last one.
        sender = self.start_pair(cid, port, None, rate)
        n = self.wait_progress(cid, 200)
        where, rows = 0, []
        for i in range(1, moves + 1):
            self.assertFalse(sender.done.is_set(),
                             f"the sender ended before move {i}: {sender.result}")
            dst = 2 if where == 0 else 0
            t = time.monotonic()
            rep = self.migrate(cid, where, dst)
            took = time.monotonic() - t
            self.assertEqual(rep["verbs"]["objects"]["qp"], 1, rep)
            n = self.wait_progress(cid, n + 100)
            rows.append(f"move {i:2} g{where}->g{dst}: {took:5.1f} s, downtime "
                        f"{rep['downtime_seconds']:.2f} s, receiver at {n} messages after it")
            where = dst
        print(f"{cid}: {moves} migrations in a row\n" + "\n".join(rows), flush=True)
        self.finish(cid, sender, None, k=where)

    def test_8_partner_in_a_container_migrates_next(self):
        """The sender runs in an rdma-seq container on g1 too. The receiver
        moves g0->g2, then the sender g1->g0 (free by then): both ends of
        the QP have moved, traffic flowing all along. The sender runs until
        told to end (SIGUSR1 through crx kill), not for a count: a count at
        a rate lasts as long as the guest's clock says, and a loaded host's
        guest once ran through 6000 messages at full speed before the
        first move (2026-12-05)."""
        rcid, scid, port, count, rate = "seq8r", "seq8s", 18608, 10 ** 9, 100
        rb = self.make_bundle(rcid, port)
        self.sh(self.tb, 0, f"{CRX} run -d -b {rb} {rcid} </dev/null >/dev/null 2>&1", timeout=300)
        # RECV_MODE for the sender as well: it is restored too (see rdma_bed)
        sb = self.make_bundle(scid, port, command=(
            f"send --connect {self.tb.ip(0)} --port {port} --count {count} --rate {rate} "
            f"--stall-timeout 0 --progress 5 {RECV_MODE} --ready-file /out/{scid}.ready"))
        self.sh(self.tb, 1, f"{CRX} run -d -b {sb} {scid} </dev/null >/dev/null 2>&1", timeout=300)
        wait_until(lambda: (os.path.exists(self.out(rcid + ".ready")) and
                            os.path.exists(self.out(scid + ".ready"))), 180,
                   lambda: f"both containers to be ready: receiver {self.read(rcid + '.err')}\n"
                           f"sender {self.read(scid + '.err')}")
        n = self.wait_progress(rcid, 200)
        rep = self.migrate(rcid, 0, 2)
        self.assertEqual(rep["verbs"]["objects"]["qp"], 1, rep)
        n = self.wait_progress(rcid, n + 100)
        rep = self.migrate(scid, 1, 0)
        self.assertEqual(rep["verbs"]["objects"]["qp"], 1, rep)
        self.wait_progress(rcid, n + 100)
        # finish() waits for a sender handle and shows /tmp/<cid>.send.err
        # of g1 when it fails: here the handle waits for the sender
        # container's summary on g0, and that file points at its stderr.
        summary = self.out(scid + ".json")
        self.sh(self.tb, 1, f"ln -sf {self.out(scid + '.err')} /tmp/{rcid}.send.err")
        waiter = self.tb.spawn(0, f"until [ -s {summary} ]; do sleep 1; done; cat {summary}")
        self.finish(rcid, waiter, None, k=2,
                    end=lambda: self.sh(self.tb, 0, f"{CRX} kill {scid} USR1"))
        wait_until(lambda: self.state(0, scid) == "stopped", 60,
                   lambda: f"the sender container to stop (it is {self.state(0, scid)})",
                   interval=1)
        self.sh(self.tb, 0, f"{CRX} delete {scid}")

    def test_9a_retry_budget_fails_on_a_silent_peer(self):
        """The control for test_9b: with BUDGET, a partner whose peer goes
        silent (what it sees of a migration without crx's NAK_STOPPED pause:
        the source's QPs just vanish) fails with a retry error. Plain
        processes, sender g1, receiver g2, whose acks (UDP 4791) are
        dropped for 3 s."""
        port = 18690
        recv = self.tb.spawn(2, f"{SEQ} recv --port {port} --stall-timeout 0 {RECV_MODE} {BUDGET}")
        send = self.tb.spawn(1, f"{SEQ} send --connect {self.tb.ip(2)} --port {port} "
                                f"--count 100000 --rate 100 --stall-timeout 0 {BUDGET}")
        try:
            time.sleep(8)  # set-up, then traffic within the budget
            self.assertFalse(send.done.is_set(), f"the sender ended before the drop: {send.result}")
            self.tc(2, "tc filter add dev eth0 parent 1: protocol ip prio 1 u32 "
                       "match ip protocol 17 0xff match ip dport 4791 0xffff action drop")
            try:
                time.sleep(3)
            finally:
                self.untc(2)
            rc, out, err = self.tb.wait(send, timeout=60)
        finally:
            self.tb.kill(recv)
            self.tb.kill(send)
        print(f"sender ({rc}): {out}{err}", flush=True)
        summary = json.loads(out.strip().splitlines()[-1])
        self.assertNotEqual(rc, 0, "the budget must run out on a silent peer")
        self.assertFalse(summary["ok"], summary)
        self.assertIn("retry", summary.get("first_error", ""), summary)
        self.tb.wait(recv, timeout=60)

    def rxe_counters(self, k):
        return self.sh(self.tb, k, "rdma statistic show link rxe0/1").strip()

    # Seen failing twice on 2026-11-24 (before rxe-patches 0005 refilled a
    # resumed partner's retry counts, with the stop right after the freeze
    # new): the sender's 16-message window stayed outstanding after the
    # move, g2 answering with RNR NAKs. Not reproduced since in 10 runs
    # (4 with rxe's debug messages). If it fails again, the output below
    # (both guests' counters and QPs, the moved receiver's threads, its
    # queue mappings, and with CRX_VM_RDMA_RXE_DEBUG=1 rxe's trail) is
    # what to look at.
    # Failed 4 of 4 runs in the first session of 2026-11-27 and was opt-in
    # for two sessions: a test bug, found 2026-11-28 (the receiver's
    # summary, now in the output below, said ok, 3000 of 3000). On a loaded
    # host the sender, held back longer by the move, catches up at full
    # speed after `crx resume`, and the receiver got the rest and ended
    # before its next 5-s progress line, so a wait on progress lines alone
    # timed out; RdmaBedCase.progress() now counts the summary too.
    def test_10_paused_container_arrives_paused(self):
        """crx pause, then migrate: the container arrives paused, its QPs
        resumed (the partner's sends meet RNR NAKs until it runs: rnr_retry
        7), and counts on after crx resume (issue 16)."""
        cid, count = "seq10", None
        sender = self.start_pair(cid, 18610, count, 100)
        self.wait_progress(cid, 200)
        if RXE_DEBUG:
            for k in (1, 2):
                self.sh(self.tb, k, "dmesg -C; for f in rxe_comp.c rxe_req.c rxe_migr.c; do "
                                    "echo \"module rdma_rxe file $f +p\" "
                                    ">/sys/kernel/debug/dynamic_debug/control; done")
        self.sh(self.tb, 0, f"{CRX} pause {cid}")
        self.assertEqual(self.state(0, cid), "paused")
        rep = self.migrate(cid, 0, 2, arrives="paused")
        self.assertTrue(rep.get("paused"), rep)
        held = self.progress(cid)
        time.sleep(3)
        self.assertEqual(self.progress(cid), held, "the paused receiver counted on")
        self.sh(self.tb, 2, f"{CRX} resume {cid}")
        try:
            self.wait_progress(cid, held + 100)
        except AssertionError:
            print(f"sender: {self.tb.run(1, f'cat /tmp/{cid}.send.err')[1][-1500:]}\n"
                  f"g1 {self.rxe_counters(1)}\ng2 {self.rxe_counters(2)}\n"
                  + self.tb.run(1, "rdma resource show qp")[1]
                  + self.tb.run(2, "rdma resource show qp; dmesg | tail -20")[1]
                  + f"crx state on g2: {self.tb.run(2, f'{CRX} state {cid}')}\n"
                  + "uptime g0 g2: " + self.tb.run(0, "cat /proc/uptime")[1].strip() + " / "
                  + self.tb.run(2, "cat /proc/uptime")[1].strip() + "\n"
                  + "the receiver's threads on g2 (found by name, not through crx):\n"
                  + self.tb.run(2, "for p in $(pgrep -f 'recv --port'); do "
                                   "echo \"== $p $(cat /proc/$p/cgroup | tr '\\n' ' ')\"; "
                                   "for t in /proc/$p/task/*; do echo $t $(cat $t/comm) "
                                   "$(cat $t/wchan); grep -E '^(State|SigBlk|SigPnd)' $t/status; "
                                   "cat $t/stack; done; done; "
                                   "cat /sys/fs/cgroup/freezer/*/*/freezer.state "
                                   "/sys/fs/cgroup/*/*/cgroup.freeze 2>/dev/null | sort | uniq -c")[1]
                  + f"the receiver's stderr, last lines:\n{self.read(cid + '.err')[-600:]}\n"
                  + f"the receiver's stdout (its summary, once it ended):\n{self.read(cid + '.json')[-1500:]}\n"
                  + "g2's kernel log since the move:\n"
                  + self.tb.run(2, "dmesg | tail -n 40 | grep -v 'speed is unknown'")[1],
                  flush=True)
            if RXE_DEBUG:
                for k in (1, 2):
                    print(f"--- g{k} rxe debug (completer state lines dropped):\n"
                          + self.tb.run(k, "dmesg | grep -v 'state = ' | tail -150; echo ...; "
                                           "dmesg | tail -60")[1], flush=True)
            raise
        self.finish(cid, sender, count, k=2)

    def slow_migration_under_budget(self, cid, port, args, budget=BUDGET):
        """Sender on g1 with budget; crx migrate g0->g2 with args, its
        traffic (TCP to MPORT, nothing else) leaving g0 through a 128 kbit/s
        tbf; both ends must finish ok. (512 kbit/s until the page channel
        compressed what it can: the receiver's ~530 KB of pages cross as
        ~130 KB, and the stop at 512 kbit/s fell to 3.3 s.)"""
        count = None  # the dump crawls for 10-25 s: the sender outlasts it
        sender = self.start_pair(cid, port, count, 100, budget)
        n = self.wait_progress(cid, 200)
        self.tc(0, "tc qdisc add dev eth0 parent 1:3 handle 30: "
                   "tbf rate 128kbit burst 8kb latency 30s && "
                   "tc filter add dev eth0 parent 1: protocol ip prio 1 u32 "
                   f"match ip protocol 6 0xff match ip dport {MPORT} 0xffff flowid 1:3")
        try:
            rep = self.migrate(cid, 0, 2, args)
        finally:
            self.untc(0)
            print(f"g1 (sender) rxe counters after the move: {self.rxe_counters(1)}", flush=True)
        self.assertEqual(rep["verbs"]["objects"]["qp"], 1, rep)
        # the premise, not a speed goal: the stop outlasted the budget
        # many times over (11-14 s here)
        self.assertGreater(rep["downtime_seconds"], 5 * BUDGET_S, rep)
        self.wait_progress(cid, n + 100)
        self.finish(cid, sender, count, k=2)

    # Between the freeze and the stop of the source's QPs the frozen
    # receiver reposts nothing and rxe answers the partner with RNR NAKs.
    # Before rxe-patches 0002 the partner's transport timer kept running
    # through the RNR backoff and used up retry_cnt ("transport retry
    # counter exceeded" after a 1.2 s stall); before 0005 refilled the
    # counts on resume, what the partner had spent there was missing
    # after the move. The partner keeps rnr_retry 7 (as UCX and perftest
    # do): with one RNR retry it failed 1 run in 6, when the restored
    # receiver, cold on the TCG guest, reposted later than two 4 ms RNR
    # waits after its release - the receiver's latency, not the move's.
    def test_9b_migration_longer_than_the_retry_budget(self):
        """No pre-copy: the whole dump crawls through the tbf while the
        source is frozen, seconds, about ten transport retry budgets: the
        partner must not run out of its retries."""
        self.slow_migration_under_budget("seq9b", 18692, "", BUDGET)

    def test_11_receive_caught_mid_message(self):
        """Messages of 1 MiB (1024 packets) on a QP with its own RQ, sent
        as fast as the link takes them, every payload byte checked: the
        freeze finds the receiver's responder in the middle of a message,
        and the restored one goes on writing that message where it stood
        (rxe keeps its position in its copy of the receive WQE, which the
        dump carries: rxe-patches 0007/0010; without that the message was
        written from its start again: "message without magic"). 16 MiB of
        posted receives keep the frozen receiver's RQ from draining before
        the dump (4 of 4 moves caught one here; 256 KiB x 4 caught 2 of 3).
        Moved until a dump has caught one (the report counts them), at
        most three times."""
        cid, count, size = "seq11", None, 1024 * 1024
        sender = self.start_pair(cid, 18611, count, 0,
                                 f"--size {size} --window 16 --verify-payload")
        n = self.wait_progress(cid, 20)
        caught, where = [], 0
        for dst in (2, 0, 2):
            rep = self.migrate(cid, where, dst)
            where = dst
            caught.append(rep["verbs"].get("receives_in_progress", 0))
            n = self.wait_progress(cid, n + 20)
            if caught[-1]:
                break
        self.assertGreater(caught[-1], 0, f"no dump caught a receive in progress: {caught}")
        self.finish(cid, sender, count, k=where)

    def test_12_pinned_pages_unchanged_since_pre_copy_are_not_sent_again(self):
        """A registered MR stays soft-dirty (the kernel does not clear the
        bit of a pinned page), so CRIU dumps all of it in every round; the
        source's page filter (runtime/migrate/page_dedup.hpp) sends only
        the pages whose content changed since the round before. The
        receiver's 16 MiB MR gets a sixteenth of its pages rewritten every
        2 s and every page checked against what it was last given
        (--mr-rewrite), so a page left out that had changed fails the
        receiver at its next check; with one pre-copy round, the final
        round must leave most of the MR out. crx-verbs-seq keeps the MR
        off transparent huge pages, whose bits a pre-dump does clear
        (test_13 is that case): in a CI run (2026-12-05) the guest's
        kernel put this MR on THPs, CRIU took them from the parent, and
        the filter had nothing to leave out."""
        cid, count, mr = "seq12", None, 16 << 20
        sender = self.start_pair(cid, 18612, count, 100,
                                 recv_args=f"--mr-size {mr} --mr-rewrite 2")
        n = self.wait_progress(cid, 200)
        huge_kib = int(self.sh(self.tb, 0,
                               "p=$(pgrep -f '^crx-verbs-seq recv --port 18612 ' | head -1); "
                               "awk '/^AnonHugePages:/ {print $2}' /proc/$p/smaps_rollup").strip())
        self.assertEqual(huge_kib, 0, "the MR is on huge pages: this case would prove nothing")
        rep = self.migrate(cid, 0, 2, "--pre-copy 1 --pre-dump-mode read")
        rounds = rep["rounds"]
        self.assertEqual([r["final"] for r in rounds], [False, True], rounds)
        self.assertNotIn("unchanged_page_bytes", rounds[0], "round 1 has nothing to compare with")
        # Round 1 read the pages while the pair ran (--pre-dump-mode read),
        # the NIC writing into the MR meanwhile: what it read is the parent
        # the final dump's check compares with.
        self.assertTrue(rounds[0].get("pre_dump_read"), rounds[0])
        # Left out: pages CRIU dumped that had not changed, and pages CRIU
        # took from the parent that crx checked and found unchanged.
        final = rounds[1]
        left_out = (final.get("unchanged_page_bytes", 0) + final.get("parent_checked_bytes", 0)
                    - final.get("parent_changed_bytes", 0))
        print(f"{cid}: final round {rounds[1]['page_bytes']} B sent, {left_out} B left out", flush=True)
        self.assertGreater(left_out, mr // 4, f"most of the MR did not change: {rounds}")
        self.assertLess(rounds[1]["page_bytes"], mr, rounds)
        self.wait_progress(cid, n + 200)
        self.finish(cid, sender, count, k=2)

    # The MR test_13 and test_13b have the sender's NIC write: two huge pages.
    NIC_WRITTEN_MR = 4 << 20

    def start_nic_written_pair(self, cid, port, progress):
        """start_pair() of a receiver whose NIC_WRITTEN_MR is on huge pages
        and written only by the sender's NIC (--mr-remote-write 0.5), until
        it counted `progress` messages; fails unless the MR is on huge
        pages (without them test_13 and test_13b prove nothing). The
        sender.

        A pass of 4 MiB takes the NIC ~0.25 s in the test bed, so a pass
        starts every 0.5 s and every page of the MR is rewritten in any
        stretch of that length: the ~2 s between a pre-dump and the final
        dump hold a write of every page wherever the passes' edges fall.
        With 16 MiB every 2 s a pass could straddle the pre-dump and the
        next start after the final dump (CI, 2026-12-07: the write logs
        named 14.2 of the 16 MiB); 16 MiB every 0.5 s took the link's
        whole rate (a pass ~1 s) and slowed the messages sixfold."""
        mr = self.NIC_WRITTEN_MR
        sender = self.start_pair(cid, port, None, 100,
                                 seq_args=f"--mr-size {mr} --mr-huge --mr-remote-write 0.5")
        self.wait_progress(cid, progress)
        huge_kib = int(self.sh(self.tb, 0,
                               f"p=$(pgrep -f '^crx-verbs-seq recv --port {port} ' | head -1); "
                               "awk '/^AnonHugePages:/ {print $2}' /proc/$p/smaps_rollup").strip())
        print(f"{cid}: the receiver has {huge_kib} KiB on huge pages", flush=True)
        self.assertGreaterEqual(huge_kib * 1024, mr // 2,
                                "the MR is not on huge pages: this case would prove nothing")
        return sender

    def test_13_nic_writes_into_huge_pages_after_pre_copy_arrive(self):
        """The NIC's writes set no soft-dirty bit, and a pre-dump clears
        the bit of a pinned transparent huge page (clear_soft_dirty_pmd()
        has no pinned check, unlike the PTE path): the final dump must not
        trust the bits for such an MR. The receiver's 4 MiB MR is on huge
        pages (--mr-huge); every 0.5 s the sender RDMA-WRITEs a new pass
        into every page of it and announces the pass on its next message
        (--mr-remote-write); the receiver fails when a page holds an older
        pass than the last announced, and it checks every 50 ms, before the
        restored QPs let any new write in. Moved with one pre-copy round,
        so passes land between the pre-dump and the freeze. Failed while
        the final dump took the pre-dump as its parent unchecked
        (2026-11-29: the final round sent 28 KiB of a 16 MiB MR the NIC had
        rewritten, and "MR page 53 holds remote write pass 29, but pass 30
        was announced as in place"); now the parent's pages are read and
        compared (ParentPages::Check). Since rxe-patches 0028 only those
        the MRs' write logs name are (rdma/mr_writes.hpp): every page of
        the MR, which the passes rewrite, and none outside an MR."""
        cid = "seq13"
        sender = self.start_nic_written_pair(cid, 18613, 500)
        rep = self.migrate(cid, 0, 2, "--pre-copy 1")
        # The final dump keeps its parent and crx reads what CRIU took from
        # it that the device wrote (runtime/migrate/written_task_memory.hpp):
        # the whole huge-page MR.
        final = rep["rounds"][-1]
        print(f"{cid}: final round: {final.get('parent_checked_bytes', 0)} B CRIU took from "
              f"the parent checked, {final.get('parent_changed_bytes', 0)} B of it changed, "
              f"{final.get('device_written_bytes', 0)} B the device wrote", flush=True)
        self.assertGreaterEqual(final.get("parent_checked_bytes", 0), self.NIC_WRITTEN_MR, final)
        # The write logs were read and named the MR; nothing they did not
        # name was checked (without them: the process's every page CRIU
        # took from the parent, its heap and libraries too).
        self.assertGreaterEqual(final.get("device_written_bytes", 0), self.NIC_WRITTEN_MR, final)
        self.assertLessEqual(final["parent_checked_bytes"], final["device_written_bytes"], final)
        self.wait_progress(cid, self.progress(cid) + 500)
        self.finish(cid, sender, None, k=2)
        rsum = json.loads(self.read(cid + ".json").strip().splitlines()[-1])
        self.assertGreaterEqual(rsum.get("mr_remote_passes", 0), 4, rsum)

    def test_13b_checkpoint_on_a_pre_dump_keeps_nic_writes(self):
        """The runc way's incremental checkpoint of test_13's receiver:
        `crx checkpoint --pre-dump`, passes of NIC writes, then `crx
        checkpoint --parent-path` and a restore. The same hole as
        test_13 (the pre-dump clears the soft-dirty bits of the pinned
        huge pages), so crx checkpoint gives CRIU no parent for a
        container with verbs objects. Failed without that (2026-11-29:
        "MR page 0 holds remote write pass 4, but pass 7 was announced
        as in place")."""
        cid = "seq13b"
        sender = self.start_nic_written_pair(cid, 18614, 300)
        pre, img = f"/tmp/pre-{cid}", f"/tmp/img-{cid}"
        self.sh(self.tb, 0, f"{CRX} checkpoint --pre-dump --image-path {pre} {cid} "
                            f"|| {{ tail -40 {pre}/pre-dump.log; exit 1; }}", timeout=600)
        n = self.wait_progress(cid, self.progress(cid) + 150)  # passes after the pre-dump
        self.sh(self.tb, 0, f"{CRX} checkpoint --parent-path ../pre-{cid} --image-path {img} {cid} "
                            f"|| {{ tail -40 {img}/dump.log; exit 1; }}", timeout=600)
        self.sh(self.tb, 0, f"{CRX} restore -d --image-path {img} -b {self.tb.scratch}/bundle-{cid} "
                            f"{cid} || {{ tail -40 {img}/restore.log; exit 1; }}", timeout=600)
        self.assertEqual(self.state(0, cid), "running",
                         f"the receiver's output:\n{self.read(cid + '.json')}")
        self.wait_progress(cid, n + 300)
        self.finish(cid, sender, None)

if __name__ == "__main__":
    main()
